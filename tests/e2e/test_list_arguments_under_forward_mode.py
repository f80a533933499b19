"""Lists and tuples a function is given, handed to a ufunc whose derivative multiplies them,
under jvp, jacfwd, hessian, and grad of a helper taking the list.

NumPy takes ``np.square(L)``, ``np.power(L, 3)`` and ``np.hypot(L, c)`` of a list as arrays.
Before session 23 forward mode (compiled for any arguments) applied the rules' templates to
the list itself: ``2.0 * L * L_dot`` raised ``TypeError: can't multiply sequence by non-int of
type 'float'`` in ``adgen.jvp(np.square, ([1.0, 2.0],), ...)``, in jvp and jacfwd of a
function squaring its list argument, in a loop over the rows of a list of lists, and in
hessian; so did grad of a loss calling a helper with the list (a callee compiles without the
argument's kind: ``L ** 2`` of ``np.power(L, 3)``'s pullback). Expected values: central
differences (tests/gradcheck.py) on the same list, and a hand formula.
"""

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

L0 = [0.3, -1.2, 0.7]
T0 = [1.0, 0.5, -2.0]
C0 = [2.0, 0.5, 1.5]


def energy(L, c):
    return np.sum(np.square(L) * c + np.hypot(L, c) + np.power(L, 3) - np.divide(c, L)
                  + np.multiply(L, 2.0) * np.tanh(L))


def cubes(L):
    return np.sum(np.power(L, 3))


def loss_through_a_helper(L):
    return cubes(L) + energy(L, C0)


def row_norms(M):
    s = 0.0
    for row in M:
        s = s + np.sqrt(np.sum(np.square(row)))
    return s


def as_list(f):
    """f of an array, for central differences: the same list built from it."""
    return lambda *xs: f(*[list(x) for x in xs])


def directional(f, args, tangents):
    """Central differences of f along the tangents (arrays of the lists)."""
    arrays = tuple(np.array(a) for a in args)
    return sum(numerical_grad(as_list(f), arrays, k) @ np.array(t)
               for k, t in enumerate(tangents) if t is not None)


def test_jvp_of_np_square_itself_on_a_list():
    out, t = adgen.jvp(np.square, (L0,), (T0,))
    np.testing.assert_allclose(out, np.square(L0))
    np.testing.assert_allclose(t, 2 * np.array(L0) * np.array(T0))  # by hand
    # an int item of a list has no tangent (as in a list given to a function)
    _, t = adgen.jvp(np.power, ([2, 3.0], 3), ([1.0, 1.0], None))
    np.testing.assert_allclose(t, [0.0, 27.0])


@pytest.mark.parametrize("c_dot", [None, [0.3, -0.1, 1.0]])
def test_jvp_of_a_function_of_two_lists(c_dot):
    out, t = adgen.jvp(energy, (L0, C0), (T0, c_dot))
    assert out == pytest.approx(energy(L0, C0))
    assert t == pytest.approx(directional(energy, (L0, C0), (T0, c_dot)), rel=1e-6)


def test_tuples_and_a_list_of_rows():
    _, t = adgen.jvp(cubes, (tuple(L0),), (tuple(T0),))
    assert t == pytest.approx(float(np.sum(3 * np.array(L0) ** 2 * np.array(T0))))
    M = [[0.3, -1.2], [0.7, 2.0]]
    V = [[1.0, 0.0], [0.5, 2.0]]
    _, t = adgen.jvp(row_norms, (M,), (V,))
    by_hand = sum(np.dot(r, v) / np.linalg.norm(r) for r, v in zip(M, V))
    assert t == pytest.approx(by_hand)


def test_jacfwd_and_hessian_of_a_list_argument():
    jac = adgen.jacfwd(lambda L: np.square(L))(L0)
    np.testing.assert_allclose(np.array(jac, dtype=float).T, np.diag(2 * np.array(L0)))
    h = np.array(adgen.hessian(cubes)(L0), dtype=float)
    np.testing.assert_allclose(h, np.diag(6 * np.array(L0)))  # by hand
    h = np.array(adgen.hessian(lambda L: energy(L, C0))(L0), dtype=float)
    step = 1e-4
    expected = np.zeros((3, 3))
    for j in range(3):
        up, down = list(L0), list(L0)
        up[j] += step
        down[j] -= step
        grad_at = [numerical_grad(as_list(lambda L: energy(L, C0)), (np.array(p),), 0)
                   for p in (up, down)]
        expected[:, j] = (grad_at[0] - grad_at[1]) / (2 * step)
    np.testing.assert_allclose(h, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("policy", ["save", "strict"])
def test_grad_of_a_loss_handing_the_list_to_a_helper(policy):
    g = adgen.grad(loss_through_a_helper, mutation=policy)(L0)
    np.testing.assert_allclose(np.array(g, dtype=float),
                               numerical_grad(as_list(loss_through_a_helper),
                                              (np.array(L0),), 0), rtol=1e-6)
    g = adgen.grad(lambda L: cubes(L), mutation=policy)(L0)
    np.testing.assert_allclose(np.array(g, dtype=float), 3 * np.array(L0) ** 2)  # by hand


def sines(L):
    return np.sum(np.sin(L))


def exponentials(L):
    return np.sum(np.exp(L))


def two_helpers(L):
    return sines(L) + exponentials(L)


def through_a_middle_helper(L):
    return two_helpers(L) * 3.0 + sines(L)


@pytest.mark.parametrize("policy", ["save", "strict"])
@pytest.mark.parametrize("container", [list, tuple])
def test_a_list_handed_to_two_helpers(policy, container):
    # SILENT WRONG GRADIENT before session 23: each helper's pullback gave the list's
    # cotangent as an array, which the caller added to its list: zeros (both policies)
    x = np.array(L0)
    g = adgen.grad(two_helpers, mutation=policy)(container(L0))
    np.testing.assert_allclose(np.array(g, dtype=float), np.cos(x) + np.exp(x))  # by hand
    g = adgen.grad(through_a_middle_helper, mutation=policy)(container(L0))
    np.testing.assert_allclose(np.array(g, dtype=float),
                               numerical_grad(as_list(through_a_middle_helper), (x,), 0),
                               rtol=1e-6)
    rows = [x, 2.0 * x]
    g = adgen.grad(two_helpers, mutation=policy)(rows)
    np.testing.assert_allclose(np.array(g), np.cos(rows) + np.exp(rows))
