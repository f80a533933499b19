"""The matrix adjoint of a matrix-vector product in a loop, on the numba backend: the default
pipeline writes it out as ``W_bar += g[:, None] * x`` (specialize.inline_matmul), and
numba_call_forms rewrites that into ``add_outer(W_bar, g, x)``, which adds the outer product in
place instead of allocating it at every step (the RNN's pullback went from about 150 to 265 us when
the written-out form bypassed the in-place rewrite). Gradients against central differences
under both policies, the rewrite seen in adgen.source, and the helper against NumPy where
the accumulator shares memory with an operand or is broadcast into. Skipped without numba."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grads

import adgen

numba = pytest.importorskip("numba")


def recurrent(W, U, h0, xs):
    h = h0
    s = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t])  # W's and U's adjoints: outer products, every step
        s = s + np.sum(h * h)
    return s


def row_vector(x, M, k):
    s = 0.0
    v = x
    for _ in range(k):
        v = np.sin(v @ M)  # vector @ matrix: M's adjoint is x[:, None] * g
        s = s + np.sum(v)
    return s


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_matrix_vector_loop_gradient(mutation):
    rng = np.random.default_rng(0)
    W, U = 0.4 * rng.standard_normal((5, 5)), 0.4 * rng.standard_normal((5, 3))
    h0, xs = rng.standard_normal(5), rng.standard_normal((6, 3))
    g = adgen.grad(recurrent, argnums=(0, 1, 2, 3), mutation=mutation, backend="numba")
    assert_grad_close(g(W, U, h0, xs), numerical_grads(recurrent, (W, U, h0, xs),
                                                       (0, 1, 2, 3)))
    src = adgen.source(recurrent, W, U, h0, xs, backend="numba")
    assert "add_outer(W_bar" in src and "add_outer(U_bar" in src


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_vector_matrix_loop_gradient(mutation):
    rng = np.random.default_rng(1)
    x, M = rng.standard_normal(4), 0.5 * rng.standard_normal((4, 4))
    g = adgen.grad(row_vector, argnums=(0, 1), mutation=mutation, backend="numba")
    assert_grad_close(g(x, M, 3), numerical_grads(row_vector, (x, M, 3), (0, 1)))
    assert "add_outer(M_bar" in adgen.source(row_vector, x, M, 3, backend="numba")


def test_add_outer_as_written_when_it_cannot_work_in_place():
    from adgen.numba_runtime import add_outer

    @numba.njit
    def run(acc, u, v):
        add_outer(acc, u, v)

    rng = np.random.default_rng(2)
    # an accumulator sharing memory with an operand: the statement's own semantics (the
    # right-hand side computed before the add)
    acc = rng.standard_normal((3, 3))
    expected = acc.copy()
    expected += expected[0][:, None] * expected[:, 1]
    run(acc, acc[0], acc[:, 1])
    np.testing.assert_allclose(acc, expected, rtol=1e-15)
    # a (1, m) product broadcast into a (3, m) accumulator, and a plain one
    acc = np.zeros((3, 4))
    u, v = np.array([2.0]), rng.standard_normal(4)
    run(acc, u, v)
    np.testing.assert_allclose(acc, np.tile(2.0 * v, (3, 1)), rtol=1e-15)
    acc = rng.standard_normal((3, 4))
    u = rng.standard_normal(3)
    expected = acc + np.outer(u, v)
    run(acc, u, v)
    np.testing.assert_allclose(acc, expected, rtol=1e-15)
