"""A list the function is given, or a slice of one, handed to a ufunc as an operand:
``np.add(L[:1], L[1:])``, ``np.square(L)``. NumPy takes the list as an array. Before
session 21 the jvp code applied the rule's ``d1 + d2`` to the slices' list tangents
(concatenated them: a silently wrong jvp, 0.2 where central differences give 0.3), and
``grad`` of ``np.square(L)`` raised TypeError in the pullback (``2.0 * L * g``); hessian of
``np.add(L[:1], L[1:])`` was refused. ``L[:1] + L[1:]`` of lists is still concatenation.
"""

import numpy as np
import pytest

import adgen

L0 = [0.3, -0.2, 0.7, 0.1]
T0 = [1.0, 0.5, 2.0, -1.0]
EPS = 1e-6


def pair_sum_squared(L):
    return np.add(L[:1], L[1:2])[0] ** 2


def halves_weighted(L):
    return np.sum(np.add(L[:2], L[2:]) * np.array([1.0, 3.0]))


def hypot_of_slices(L):
    return np.sum(np.hypot(L[1:], L[:-1]) * np.array([1.0, 2.0, 3.0]))


def concatenated(L):
    both = L[:2] + L[2:]  # lists: a longer list, not a sum
    return np.sum(np.array(both) * np.array([1.0, 2.0, 3.0, 4.0]) ** 2 * np.array(both))


def squared(L):
    return np.sum(np.square(L) * np.array([1.0, 2.0, 3.0, 4.0]))


def value(f, L):
    return float(f(list(L)))


def numerical_gradient(f, L):
    g = []
    for i in range(len(L)):
        up, down = list(L), list(L)
        up[i] += EPS
        down[i] -= EPS
        g.append((value(f, up) - value(f, down)) / (2 * EPS))
    return np.array(g)


JVP_CASES = [pair_sum_squared, halves_weighted, hypot_of_slices, concatenated]
GRAD_CASES = JVP_CASES + [squared]


@pytest.mark.parametrize("f", JVP_CASES)
def test_jvp(f):
    _, tangent = adgen.jvp(f, (L0,), (T0,))
    assert tangent == pytest.approx(float(numerical_gradient(f, L0) @ np.array(T0)),
                                    rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("f", GRAD_CASES)
@pytest.mark.parametrize("policy", ["save", "strict"])
def test_gradient(f, policy):
    g = adgen.grad(f, mutation=policy)(L0)
    np.testing.assert_allclose(np.array(g, dtype=float), numerical_gradient(f, L0),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", [pair_sum_squared, halves_weighted])
def test_hessian(f):
    h = np.array(adgen.hessian(f)(L0), dtype=float)
    n = len(L0)
    expected = np.zeros((n, n))
    for j in range(n):
        up, down = list(L0), list(L0)
        up[j] += 1e-4
        down[j] -= 1e-4
        expected[:, j] = (numerical_gradient(f, up) - numerical_gradient(f, down)) / 2e-4
    np.testing.assert_allclose(h, expected, rtol=1e-4, atol=1e-4)
