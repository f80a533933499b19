"""One inverse per matrix in a pullback that inverts it anyway (transforms/shared_inverse.py):
the adjoints of solves with the matrix (or its transpose) take it. Gradients against central
differences (and a hand-derived formula), in scripts, lambdas and methods; where nothing
inverts the matrix, the solves keep their factorisations; the numba backend and the
standalone module compute the same gradient."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad, numerical_grad

import adgen


def gp_nll(theta, X, y):
    """A Gaussian process's negative log likelihood through its Cholesky factor."""
    ell = np.exp(theta[0])
    sn2 = np.exp(2.0 * theta[1])
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=2)
    K = np.exp(-0.5 * d2 / ell ** 2) + sn2 * np.eye(X.shape[0])
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return 0.5 * (y @ alpha) + np.sum(np.log(np.diag(L)))


def logdet_quadratic(A, b):
    """slogdet and a solve of the same matrix: log |A| + b^T A^-1 b."""
    sign, logdet = np.linalg.slogdet(A)
    return logdet + b @ np.linalg.solve(A, b)


def det_and_transposed_solve(A, b):
    return np.linalg.det(A) * np.sum(np.linalg.solve(A.T, b) ** 2)


def solves_only(A, b):
    return np.sum(np.linalg.solve(A, b) ** 2) + np.sum(np.linalg.solve(A.T, b))


def _spd(rng, n):
    m = rng.standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


def _gp_args(rng):
    return (np.array([np.log(0.9), np.log(0.4)]), rng.uniform(-2, 2, (7, 2)),
            rng.standard_normal(7))


def test_a_gaussian_process_shares_one_inverse():
    args = _gp_args(np.random.default_rng(0))
    check_grad(gp_nll, args, 0, rtol=1e-6)
    src = adgen.source(gp_nll, *args)
    # the two solves (both operands each: y has a gradient too) and the factor
    assert src.count("shared_inverse(") == 1 and src.count("inverse=") == 5, src


def test_the_gradient_is_the_hand_derived_one():
    """dNLL/dK = (K^-1 - alpha alpha^T) / 2 (Rasmussen 5.9), contracted with dK/dtheta."""
    theta, X, y = _gp_args(np.random.default_rng(1))
    ell, sn2 = np.exp(theta[0]), np.exp(2.0 * theta[1])
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=2)
    se = np.exp(-0.5 * d2 / ell ** 2)
    K = se + sn2 * np.eye(len(y))
    alpha = np.linalg.solve(K, y)
    K_bar = 0.5 * (np.linalg.inv(K) - np.outer(alpha, alpha))
    want = np.array([np.sum(K_bar * se * d2) / ell ** 2, 2.0 * sn2 * np.trace(K_bar)])
    got = adgen.grad(gp_nll)(theta, X, y)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("f", [logdet_quadratic, det_and_transposed_solve])
def test_a_determinant_shares_its_inverse_with_a_solve(f):
    rng = np.random.default_rng(2)
    args = (_spd(rng, 5), rng.standard_normal(5))
    check_grad(f, args, (0, 1), rtol=1e-6)
    src = adgen.source(f, *args)
    assert src.count("shared_inverse(") == 1, src


def test_solves_alone_keep_their_factorisations():
    rng = np.random.default_rng(3)
    args = (_spd(rng, 4) + rng.standard_normal((4, 4)), rng.standard_normal(4))
    check_grad(solves_only, args, (0, 1), rtol=1e-6)
    assert "shared_inverse(" not in adgen.source(solves_only, *args)


def test_a_matrix_right_hand_side_a_lambda_and_a_method():
    rng = np.random.default_rng(4)
    A, B = _spd(rng, 4), rng.standard_normal((4, 3))
    f = lambda A, B: np.linalg.slogdet(A)[1] + np.sum(np.linalg.solve(A, B) ** 2)  # noqa: E731
    check_grad(f, (A, B), (0, 1), rtol=1e-6)

    class Model:
        def __init__(self, jitter):
            self.jitter = jitter

        def loss(self, A, b):
            L = np.linalg.cholesky(A + self.jitter * np.eye(A.shape[0]))
            z = np.linalg.solve(L, b)
            return z @ z + 2.0 * np.sum(np.log(np.diag(L)))

    m = Model(0.1)
    check_grad(m.loss, (A, rng.standard_normal(4)), (0, 1), rtol=1e-6)


def test_inside_a_loop_nothing_is_shared_and_the_gradient_is_right():
    def f(A, b):
        s = 0.0
        for k in range(2):
            L = np.linalg.cholesky(A + k * np.eye(3))
            s = s + np.sum(np.linalg.solve(L, b) ** 2) + np.sum(np.log(np.diag(L)))
        return s

    rng = np.random.default_rng(5)
    check_grad(f, (_spd(rng, 3), rng.standard_normal(3)), (0, 1), rtol=1e-6)


def test_standalone_module_and_numba_agree():
    args = _gp_args(np.random.default_rng(6))
    want = adgen.grad(gp_nll)(*args)
    from adgen.transforms.standalone import standalone_module

    ns: dict = {}
    exec(compile(standalone_module(gp_nll), "<standalone>", "exec"), ns)
    out, saved = ns["gp_nll_forward"](*args)
    got = ns["gp_nll_pullback"](saved, 1.0)[0]
    np.testing.assert_allclose(got, numerical_grad(gp_nll, args, 0), rtol=1e-6)
    pytest.importorskip("numba")
    np.testing.assert_allclose(adgen.grad(gp_nll, backend="numba")(*args), want, rtol=1e-9)


def diagonals(v, M):
    D = np.diag(v)  # a vector's diagonal matrix
    d = np.diag(M, 1)  # a matrix's diagonal above the main one
    L = np.linalg.cholesky(M @ M.T + np.eye(M.shape[0]))
    return np.sum(D * M) + np.sum(d * d) + np.sum(np.diag(L) ** 3)


def test_cholesky_and_diag_results_have_kinds():
    """The facts the sharing needs (analyses.kinds), next to the look-alikes: np.diag of a
    vector is a matrix, of a matrix a vector; a Cholesky factor is a matrix."""
    from adgen.transforms import front
    from adgen.transforms.analyses.kinds import kinds

    parsed, tree, _namer, _headers = front.front(diagonals)
    known = kinds(tree, {"v": 1, "M": 2}, lambda node: front.resolve(parsed, node))
    assert known["D"] == 2 and known["d"] == 1 and known["L"] == 2
    rng = np.random.default_rng(7)
    check_grad(diagonals, (rng.standard_normal(4), rng.standard_normal((4, 4))), (0, 1),
               rtol=1e-6)


@pytest.mark.parametrize("n", [1, 31, 32, 33, 49, 64, 100, 130])
def test_lower_inverse_is_the_inverse_of_a_triangular_matrix(n):
    """The blocked inverse (rules.helpers_linalg.lower_inverse) at block edges and between:
    L X = I, X lower triangular; shared_inverse(L, lower=True) is the same matrix."""
    from adgen.runtime import lower_inverse, shared_inverse

    rng = np.random.default_rng(n)
    L = np.linalg.cholesky(_spd(rng, n))
    X = lower_inverse(L)
    np.testing.assert_allclose(L @ X, np.eye(n), atol=1e-12)
    assert not np.triu(X, 1).any()
    np.testing.assert_allclose(shared_inverse(L, lower=True), np.linalg.inv(L), atol=1e-12)


def _big_gp_args(rng, n=60):
    return (np.array([np.log(0.9), np.log(0.4)]), rng.uniform(-2, 2, (n, 2)),
            rng.standard_normal(n))


def test_a_large_factor_is_inverted_as_a_triangle_and_the_gradient_is_right():
    """60 points (the blocked inverse runs above 48): against the hand-derived gradient
    (Rasmussen 5.9) and central differences, as a script, a lambda and a method."""
    theta, X, y = args = _big_gp_args(np.random.default_rng(8))
    src = adgen.source(gp_nll, *args)
    assert src.count("shared_inverse(L, lower=True)") == 1, src
    ell, sn2 = np.exp(theta[0]), np.exp(2.0 * theta[1])
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=2)
    se = np.exp(-0.5 * d2 / ell ** 2)
    K = se + sn2 * np.eye(len(y))
    alpha = np.linalg.solve(K, y)
    K_bar = 0.5 * (np.linalg.inv(K) - np.outer(alpha, alpha))
    want = np.array([np.sum(K_bar * se * d2) / ell ** 2, 2.0 * sn2 * np.trace(K_bar)])
    np.testing.assert_allclose(adgen.grad(gp_nll)(*args), want, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(adgen.grad(gp_nll)(*args), numerical_grad(gp_nll, args, 0),
                               rtol=1e-5)
    lam = lambda A, b: np.sum(np.linalg.solve(np.linalg.cholesky(A).T,  # noqa: E731
                                              np.linalg.solve(np.linalg.cholesky(A), b)))
    rng = np.random.default_rng(9)
    check_grad(lam, (_spd(rng, 50), rng.standard_normal(50)), (0, 1), rtol=1e-5)

    class Model:
        def nll(self, theta, X, y):
            return gp_nll(theta, X, y)

    np.testing.assert_allclose(adgen.grad(Model().nll)(*args), want, rtol=1e-8, atol=1e-10)

