"""A Gaussian process's negative log marginal likelihood written with scipy.linalg, as the
textbooks (Rasmussen & Williams, Algorithm 2.1) and scikit-learn write it:

    L = scipy.linalg.cholesky(K, lower=True)
    alpha = scipy.linalg.solve_triangular(L, y, lower=True)
    nll = 0.5 * alpha @ alpha + np.sum(np.log(np.diag(L)))

Problem a new user ran into: refused at the line ('scipy.linalg.solve_triangular ... has no
derivative rule, and adgen could not differentiate its Python source: wrapper(*args,
**kwargs), the wrapper a decorator put around solve_triangular, reads args itself'), and so
were cho_factor / cho_solve. Now solve_triangular, cholesky, cho_factor, cho_solve and solve
have references written with np.linalg (adgen/rules/scipy_linalg.py), which read the triangle
scipy reads.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from gradcheck import numerical_grad

import adgen

POLICIES = ["save", "strict"]
X = np.linspace(0.0, 1.0, 7)
Y = np.sin(3.0 * X)


def kernel(log_ell, log_sf):
    d = X[:, None] - X[None, :]
    K = np.exp(2 * log_sf) * np.exp(-0.5 * (d / np.exp(log_ell)) ** 2)
    K[np.diag_indices_from(K)] += 1e-2             # a noise term written in place
    return K


def nll_triangular(log_ell, log_sf):
    L = scipy.linalg.cholesky(kernel(log_ell, log_sf), lower=True)
    alpha = scipy.linalg.solve_triangular(L, Y, lower=True)
    return 0.5 * alpha @ alpha + np.sum(np.log(np.diag(L)))


def nll_cho(log_ell, log_sf):
    c, low = scipy.linalg.cho_factor(kernel(log_ell, log_sf))
    a = scipy.linalg.cho_solve((c, low), Y)
    return 0.5 * Y @ a + np.sum(np.log(np.diag(c)))


def nll_solve(log_ell, log_sf):
    K = kernel(log_ell, log_sf)
    return 0.5 * Y @ scipy.linalg.solve(K, Y, assume_a="pos") + 0.5 * np.linalg.slogdet(K)[1]


def reference(log_ell, log_sf):
    K = kernel(log_ell, log_sf)
    return 0.5 * Y @ np.linalg.solve(K, Y) + 0.5 * np.linalg.slogdet(K)[1]


@pytest.mark.parametrize("f", [nll_triangular, nll_cho, nll_solve])
@pytest.mark.parametrize("mutation", POLICIES)
def test_gp_negative_log_likelihood(f, mutation):
    args = (np.log(0.3), np.log(1.2))
    np.testing.assert_allclose(f(*args), reference(*args), rtol=1e-10)
    g = adgen.grad(f, argnums=(0, 1), mutation=mutation)(*args)
    for k in (0, 1):
        np.testing.assert_allclose(g[k], numerical_grad(reference, args, k), rtol=1e-6)


def test_a_triangular_solve_reads_one_triangle():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 4)) + 8 * np.eye(4)     # a full matrix: only its upper half
    b = rng.standard_normal(4)

    def f(a, b):
        return np.sum(scipy.linalg.solve_triangular(a, b) ** 2)

    ga, gb = adgen.grad(f, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga, numerical_grad(f, (a, b), 0), rtol=1e-6, atol=1e-9)
    assert np.all(np.tril(ga, -1) == 0.0)
    np.testing.assert_allclose(gb, numerical_grad(f, (a, b), 1), rtol=1e-6)


def test_hessian_through_the_cholesky_solve():
    def f(w):
        K = np.outer(w, w) + 2.0 * np.eye(3)
        c = scipy.linalg.cho_factor(K, lower=True)
        return Y[:3] @ scipy.linalg.cho_solve(c, Y[:3])

    w = np.array([0.3, -0.2, 0.5])
    h = adgen.hessian(f)(w)
    num = np.array([numerical_grad(lambda v: adgen.grad(f)(v)[i], (w,), 0) for i in range(3)])
    np.testing.assert_allclose(h, num, rtol=1e-5, atol=1e-7)
