"""Shared inverses in a loop's pullback, and the forward's own inverse (transforms/
shared_inverse.py): a Kalman filter's step inverts ``S`` (``np.linalg.inv(S)`` for the gain)
and takes ``det(S)`` and ``solve(S, v)``; the reversed step gives the adjoints of the det and
the solve that inverse instead of an inverse and two factorisations of its own. Gradients
against central differences under both policies; the near misses (the forward inverts
another matrix, ``S`` changed in place after it was inverted) keep their own factorisations,
and the numba backend agrees."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

# the filter bench/workloads/kalman.py times: the benchmark measures what is tested here
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.workloads.kalman import kalman  # noqa: E402


def inverse_of_another(A, ys, H, Q, R):
    s = 0.0
    for t in range(ys.shape[0]):
        S = H @ A @ H.T + R
        W = np.linalg.inv(S + R)  # not S's inverse
        v = ys[t] - W @ ys[t]
        s = s + v @ np.linalg.solve(S, v) + np.log(np.linalg.det(S))
    return s


def changed_after_inverting(A, ys, H, Q, R):
    s = 0.0
    for t in range(ys.shape[0]):
        S = H @ A @ H.T + R
        Si = np.linalg.inv(S)
        a = np.sum(Si * Si)
        S *= 1.5  # the det and the solve see S changed
        s = s + a + ys[t] @ np.linalg.solve(S, ys[t]) + np.log(np.linalg.det(S))
    return s


def _args(rng):
    n, k, steps = 3, 2, 4
    A = 0.5 * rng.standard_normal((n, n))
    ys = rng.standard_normal((steps, k))
    H = rng.standard_normal((k, n))
    Q = 0.1 * np.eye(n)
    R = np.eye(k)
    return A, ys, H, Q, R


def _check(fn, args, mutation, backend="default"):
    plain = copy.deepcopy(args)
    fn(*plain)
    mine = copy.deepcopy(args)
    g = adgen.grad(fn, argnums=(0, 1), mutation=mutation, backend=backend)(*mine)
    for k, gk in zip((0, 1), g):
        assert_grad_close(gk, numerical_grad(fn, copy.deepcopy(args), k))
    for a, b in zip(mine, plain):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_kalman_step_takes_the_forwards_inverse(mutation):
    args = _args(np.random.default_rng(0))
    _check(kalman, args, mutation)
    pullback = adgen.source(kalman, *args, mutation=mutation).split("def kalman_pullback")[1]
    assert "det_vjp(" in pullback and "shared_inverse(" not in pullback
    inverse = [line for line in pullback.splitlines() if "solve_vjp" in line or "det_vjp(" in line]
    assert len(inverse) == 3 and all("inverse=t" in line for line in inverse), pullback


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_another_matrixs_inverse_is_not_taken(mutation):
    args = _args(np.random.default_rng(1))
    _check(inverse_of_another, args, mutation)
    pullback = adgen.source(inverse_of_another, *args).split("_pullback")[-1]
    # the loop's own shared inverse of S, not W
    assert "shared_inverse(S)" in pullback, pullback


def test_a_matrix_changed_after_it_was_inverted():
    args = _args(np.random.default_rng(2))
    _check(changed_after_inverting, args, "save")
    pullback = adgen.source(changed_after_inverting, *args).split("_pullback")[-1]
    assert "inverse=Si" not in pullback, pullback


def test_a_lambda_and_a_method():
    args = _args(np.random.default_rng(3))

    class Filter:
        def __init__(self, H, Q, R):
            self.H, self.Q, self.R = H, Q, R

        def loglik(self, A, ys):
            return kalman(A, ys, self.H, self.Q, self.R)

    f = Filter(*args[2:])
    g = adgen.grad(f.loglik, argnums=(0, 1))(args[0].copy(), args[1].copy())
    assert_grad_close(g[0], numerical_grad(f.loglik, (args[0].copy(), args[1].copy()), 0))
    H, Q, R = args[2:]
    lam = lambda A, ys: kalman(A, ys, H, Q, R)  # noqa: E731
    g = adgen.grad(lam)(args[0].copy(), args[1].copy())
    assert_grad_close(g, numerical_grad(lam, (args[0].copy(), args[1].copy()), 0))


def test_numba_backend():
    pytest.importorskip("numba")
    _check(kalman, _args(np.random.default_rng(4)), "save", backend="numba")
