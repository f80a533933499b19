"""The numba backend on vectorised code with reductions over one axis (np.max / np.min /
np.sum / np.mean with axis= and keepdims=, and the methods), cotangents summed back over
broadcast axes, and ufuncs writing into out=: the softmax of a classifier, an MLP and
attention (the benchmark suite's mlp, attention and softmax-xent).

Each gradient is checked against central differences and the default backend, under both
mutation policies, with the arguments' final contents checked against a plain call.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

numba = pytest.importorskip("numba")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.workloads import attention, gp, mlp, softmax_xent  # noqa: E402

POLICIES = ["save", "strict"]


def softmax_loss(W, b, X, Y):
    z = X @ W + b  # b of shape (classes,): its cotangent sums over the batch axis
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


def softmax_in_place(W, b, X, Y):
    z = X @ W
    z += b
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=1, keepdims=True)
    return -np.sum(Y * np.log(z)) / X.shape[0]


def reductions_mix(A, c):
    # c of shape (1, 4) broadcast against (2, 3, 4): summed over a leading axis and a 1
    B = A * c
    lo = np.min(B, axis=-1)  # (2, 3)
    mid = B.mean(axis=0)  # (3, 4)
    tot = np.sum(B, 1)  # (2, 4), the axis given positionally
    top = np.max(lo[0], axis=0)  # a vector reduced to a number
    return np.sum(lo ** 2) + np.sum(mid * mid) + np.sum(np.tanh(tot)) + top + \
        np.sum(np.amax(B, axis=2, keepdims=True))


def kernel_nll(log_ell, X, y):
    """A Gaussian-process likelihood as users write it: pairwise distances through new
    axes, a Cholesky factor and its diagonal."""
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=2)
    K = np.exp(-0.5 * d2 / np.exp(2.0 * log_ell)) + 0.5 * np.eye(X.shape[0])
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return 0.5 * (y @ alpha) + np.sum(np.log(np.diag(L)))


def diagonals(v, M):
    # v of length 4, M 5 x 5: diag(v, 1) is 5 x 5, diag(M, -1) has 4 entries
    return np.sum(np.diag(v, 1) * M) + np.sum(np.diag(M, -1) ** 2) + \
        np.sum(np.diag(M, -1) * v) + np.sum(np.diag(M))


CASES = {
    "kernel_nll": (kernel_nll, lambda rng: (
        0.2, rng.standard_normal((6, 2)), rng.standard_normal(6)), (0, 1, 2)),
    "diagonals": (diagonals, lambda rng: (
        rng.standard_normal(4), rng.standard_normal((5, 5))), (0, 1)),
    "softmax_loss": (softmax_loss, lambda rng: (
        0.3 * rng.standard_normal((5, 4)), 0.1 * rng.standard_normal(4),
        rng.standard_normal((6, 5)), np.eye(4)[rng.integers(0, 4, 6)]), (0, 1, 2)),
    "softmax_in_place": (softmax_in_place, lambda rng: (
        0.3 * rng.standard_normal((5, 4)), 0.1 * rng.standard_normal(4),
        rng.standard_normal((6, 5)), np.eye(4)[rng.integers(0, 4, 6)]), (0, 1, 2)),
    "reductions_mix": (reductions_mix, lambda rng: (
        rng.standard_normal((2, 3, 4)), rng.standard_normal((1, 4))), (0, 1)),
}


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_axis_reductions_against_central_differences(name, policy):
    f, make, argnums = CASES[name]
    args = make(np.random.default_rng(4))
    plain = copy.deepcopy(args)
    expected_value = f(*plain)
    if policy == "strict" and name == "softmax_in_place":
        # a guarded site (z -= ... overwrites z, which the max's adjoint reads): the default
        # backend's run-time check raises MutationError, and the numba backend's nopython
        # check raises the same (text and both lines)
        errors = []
        for backend in ("default", "numba"):
            with pytest.raises(adgen.MutationError, match="z -= z.max") as err:
                adgen.grad(f, argnums=argnums, mutation=policy, backend=backend)(
                    *copy.deepcopy(args))
            errors.append(err.value)
        assert str(errors[1]) == str(errors[0])
        assert "test_numba_reductions.py:40:" in str(errors[1])
        assert errors[1].captured_at.line == errors[0].captured_at.line
        return
    ref = adgen.grad(f, argnums=argnums, mutation=policy)(*copy.deepcopy(args))
    mine = copy.deepcopy(args)
    value, g = adgen.value_and_grad(f, argnums=argnums, mutation=policy,
                                    backend="numba")(*mine)
    assert value == pytest.approx(expected_value, rel=1e-12)
    for k, n in enumerate(argnums):
        assert_grad_close(g[k], numerical_grad(f, args, n), rtol=1e-5, atol=1e-7)
        assert_grad_close(g[k], ref[k], rtol=1e-10, atol=1e-12)
    for a, b in zip(mine, plain):
        np.testing.assert_array_equal(a, b)  # the same effects as a plain call


def test_a_lambda_calling_a_helper_with_reductions():
    rng = np.random.default_rng(5)
    W, b, X, Y = CASES["softmax_loss"][1](rng)
    g = adgen.grad(lambda W, b, X, Y: 2.0 * softmax_loss(W, b, X, Y), argnums=(0, 1),
                   backend="numba")(W, b, X, Y)
    for k in (0, 1):
        assert_grad_close(g[k], 2.0 * numerical_grad(softmax_loss, (W, b, X, Y), k),
                          rtol=1e-5, atol=1e-7)


def test_tied_maxima_share_the_cotangent_as_the_default_backend():
    X = np.array([[1.0, 3.0, 3.0], [2.0, 0.5, -1.0], [4.0, 4.0, 4.0]])

    def f(X, w):
        return np.sum(np.max(X, axis=1) * w) + np.sum(X.min(axis=0, keepdims=True) ** 2)

    w = np.array([1.0, 2.0, 3.0])
    got = adgen.grad(f, backend="numba")(X, w)
    want = adgen.grad(f)(X, w)
    np.testing.assert_allclose(got, want, rtol=1e-15)
    assert got[0, 1] == got[0, 2] == 0.5  # the tie shares the row's cotangent
    np.testing.assert_array_equal(got[2], [1.0, 1.0, 1.0])  # w[2] = 3 shared three ways
    assert got[1, 1] == 2.0 * 0.5  # the minimum of column 1: d(m^2)/dm


@pytest.mark.parametrize("workload", [mlp, attention, softmax_xent, gp],
                         ids=["mlp", "attention", "softmax-xent", "gp-nll"])
def test_suite_workloads_compile_and_match(workload):
    w = workload.workloads()[0]
    args = w.make_args(np.random.default_rng(0))
    got = adgen.grad(w.primal, argnums=w.argnums, backend="numba")(*args)
    hand = w.hand(*args)
    for a, b in zip(got, hand):
        assert_grad_close(a, b, rtol=1e-9, atol=1e-12)


def by_axis(x, ax):
    return np.sum(np.max(x, axis=ax))


def test_an_axis_that_is_not_a_constant_is_refused_at_its_line():
    with pytest.raises(adgen.UnsupportedError, match=r"test_numba_reductions\.py:\d+") as err:
        adgen.grad(by_axis, backend="numba")(np.ones((2, 3)), 1)
    assert "np.max(x, axis=ax)" in str(err.value)


def test_a_float_output_gets_the_fused_gradient_function():
    """A function returning a full reduction (np.mean of a row sum) is typed as returning a
    float, so grad runs the module's gradient function (one compiled call)."""
    args = CASES["softmax_loss"][1](np.random.default_rng(6))
    text = adgen.source(softmax_loss, *args, backend="numba")
    assert "def softmax_loss_gradient(W, b, X, Y, W_grad, b_grad, X_grad, Y_grad):" in text
    assert "max_axis(z, 1, True)" in text and "sum_axis(" in text


def test_outer_products_accumulate_in_place_and_as_written_when_memory_overlaps():
    """add_matmul_vjp_a / _b (what W_bar += matmul_vjp_a(g, x, ...) becomes) add g x^T
    into the buffer without allocating it, and fall back to the expression as written where
    the buffer may share memory with an operand (then g is read before any write)."""
    from adgen.numba_runtime import add_matmul_vjp_a, add_matmul_vjp_b

    @numba.njit
    def run(acc, g, x, shape, which):
        if which == 0:
            add_matmul_vjp_a(acc, g, x, shape)
        else:
            add_matmul_vjp_b(acc, g, x, shape)

    rng = np.random.default_rng(9)
    acc, g, x = rng.standard_normal((3, 4)), rng.standard_normal(3), rng.standard_normal(4)
    want = acc + np.outer(g, x)
    run(acc, g, x, (3, 4), 0)
    np.testing.assert_allclose(acc, want, rtol=1e-15)
    want = acc + np.outer(x[:3], g[:3].copy() @ np.eye(3, 4))
    run(acc, g[:3] @ np.eye(3, 4), x[:3], (3, 4), 1)  # b's adjoint: outer(a, g)
    np.testing.assert_allclose(acc, want, rtol=1e-15)
    # g is a row of the buffer itself: NumPy's acc += np.outer(g, x) reads g first
    sq = rng.standard_normal((4, 4))
    want = sq + np.outer(sq[1], x)
    run(sq, sq[1], x, (4, 4), 0)
    np.testing.assert_allclose(sq, want, rtol=1e-15)
