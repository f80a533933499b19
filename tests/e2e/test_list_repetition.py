"""Python's sequence repetition (``[v] * 3``, ``(a, b) * 2``, ``n * [x]``) inside a
differentiated function: each copy's cotangent goes back to the item it repeats. It was
refused in reverse mode ("repetition with * is not differentiable here") and in hessian.

A list of numbers times an array in a helper compiled without its arguments' types
(``def helper(v): return W * v``) is NumPy's arithmetic: it raised Python's TypeError "can't
multiply sequence by non-int of type 'list'" (the result was taken for a list), and hessian of
``list(W) * v`` raised the repetition refusal."""
import numpy as np
import pytest

import adgen
from tests.gradcheck import numerical_grad, numerical_hessian

V = np.array([0.3, -0.7, 1.1])
T = np.array([1.0, -2.0, 0.5])


def copies_summed(v):
    vs = [v] * 3
    return sum(np.sum(x ** 2 * (k + 1)) for k, x in enumerate(vs))


def repeated_then_joined(v):
    vs = [v * 2.0] * 2 + [np.sin(v)]
    return np.sum(vs[0] * vs[1] * vs[2])


def loop_over_repeated(v):
    acc = 0.0
    for x in [np.cos(v)] * 4:
        acc = acc + np.sum(x * v)
    return acc


def stacked_copies(v):
    return np.sum(np.stack([v] * 3) ** 2 * np.arange(1.0, 4.0)[:, None])


def tuple_repeated(v):
    t = (v, np.sin(v)) * 2
    return np.sum(t[0] * t[3]) + np.sum(t[2] ** 3)


def rows_repeated(v):
    rows = [[v, 2.0 * v]] * 2
    return np.sum(rows[0][1] * np.exp(rows[1][0]))


def slots_filled(v):
    zs = [0.0] * 3
    for i in range(3):
        zs[i] = v[i] ** 2
    return zs[0] + zs[1] * zs[2]


WEIGHTS = [1.0, 2.0, 3.0]
BLOCKS = [np.eye(3), 2.0 * np.eye(3)]


def weighted(v):
    return WEIGHTS * v


def weighted_energy(v):
    return np.sum(weighted(v) ** 2)


def scaled_blocks(v):
    return BLOCKS * v


def blocks_energy(v):
    return np.sum(scaled_blocks(v) ** 2)


def copied_weights(v):
    return np.sum((list(WEIGHTS) * v) ** 2)


REPEATING = [copies_summed, repeated_then_joined, loop_over_repeated, stacked_copies,
             tuple_repeated, rows_repeated, slots_filled]
ARITHMETIC = [weighted_energy, blocks_energy, copied_weights]
ALL = REPEATING + ARITHMETIC


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", ALL, ids=lambda f: f.__name__)
def test_gradient(f, mutation):
    g = adgen.grad(f, mutation=mutation)(V)
    np.testing.assert_allclose(g, numerical_grad(f, (V,), 0), rtol=1e-6, atol=1e-8)


def test_gradient_by_hand():
    # sum_k (k + 1) |v|^2 over three copies: 2 * (1 + 2 + 3) v
    np.testing.assert_allclose(adgen.grad(copies_summed)(V), 12.0 * V, rtol=1e-12)
    # sum (w v)^2 with w = (1, 2, 3): 2 w^2 v
    np.testing.assert_allclose(adgen.grad(weighted_energy)(V),
                               2.0 * np.array(WEIGHTS) ** 2 * V, rtol=1e-12)


@pytest.mark.parametrize("f", ALL, ids=lambda f: f.__name__)
def test_jvp(f):
    _, dy = adgen.jvp(f, (V,), (T,))
    assert dy == pytest.approx(np.dot(numerical_grad(f, (V,), 0), T), rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("f", ALL, ids=lambda f: f.__name__)
def test_hessian(f):
    H = adgen.hessian(f)(V)
    np.testing.assert_allclose(H, numerical_hessian(f, V), rtol=1e-4, atol=1e-5)
