"""Helpers a numba-backend gradient calls are compiled for the types of the call's
arguments (transforms/numba_typed_callees.py), as the differentiated function is for its
own. Compiled alone, a helper does not know that ``A[j, j]`` of its argument is a number:
a hand-written Cholesky helper (``s = A[j, j]; s -= L[j, k] * L[j, k]``) and a mat-vec helper
(``out[i] += A[i, j] * v[j]``) were refused at that line ("no nopython form of adgen's
scatter_if_copy") where the same loops in the differentiated function compiled. Each
gradient is checked against central differences, under both policies. An array made by
``np.empty_like`` / ``np.zeros_like`` has a type in the rewrite's analysis since session 23
(a helper given one was refused). Skipped without numba."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

numba = pytest.importorskip("numba")


def matvec(A, v):
    n = A.shape[0]
    out = np.zeros(n)
    for i in range(n):
        for j in range(v.shape[0]):
            out[i] += A[i, j] * v[j]
    return out


def power_loss(A, x):
    y = matvec(A, x)
    z = matvec(A, y)
    s = 0.0
    for i in range(z.shape[0]):
        s += z[i] * z[i]
    return s


def cholesky(A):
    n = A.shape[0]
    L = np.zeros((n, n))
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        L[j, j] = np.sqrt(s)
        for i in range(j + 1, n):
            t = A[i, j]
            for k in range(j):
                t -= L[i, k] * L[j, k]
            L[i, j] = t / L[j, j]
    return L


def log_det(A):
    L = cholesky(A)
    s = 0.0
    for i in range(L.shape[0]):
        s += 2.0 * np.log(L[i, i])
    return s


def gp_energy(A, y):
    """A Gaussian negative log-likelihood through the helpers: L^-1 y by a forward
    substitution written as a loop, log det A from L's diagonal, and a mat-vec."""
    L = cholesky(A)
    n = y.shape[0]
    z = np.zeros(n)
    for i in range(n):
        t = y[i]
        for k in range(i):
            t -= L[i, k] * z[k]
        z[i] = t / L[i, i]
    s = 0.0
    for i in range(n):
        s += z[i] * z[i] + 2.0 * np.log(L[i, i])
    w = matvec(A, z)
    for i in range(n):
        s += 0.1 * w[i]
    return s


def _spd(n, seed):
    B = np.random.default_rng(seed).standard_normal((n, n))
    return B @ B.T + n * np.eye(n)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_mat_vec_helper_adding_into_its_own_array(mutation):
    rng = np.random.default_rng(0)
    A, x = rng.standard_normal((4, 4)), rng.standard_normal(4)
    gA, gx = adgen.grad(power_loss, argnums=(0, 1), backend="numba",
                        mutation=mutation)(A, x)
    assert_grad_close(gA, numerical_grad(power_loss, (A, x), 0))
    assert_grad_close(gx, numerical_grad(power_loss, (A, x), 1))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_cholesky_helper_updating_numbers_read_from_its_argument(mutation):
    A = _spd(5, 1)
    g = adgen.grad(log_det, backend="numba", mutation=mutation)(A)
    # d log det A / dA = inv(A) on the lower triangle the helper reads, doubled off the
    # diagonal (the helper reads A[i, j] for i >= j only)
    expected = np.tril(np.linalg.inv(A)) * (2.0 - np.eye(5))
    assert np.allclose(g, expected, rtol=1e-9, atol=1e-12)
    assert_grad_close(g, numerical_grad(log_det, (A,), 0))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_two_helpers_beside_loops_of_the_caller(mutation):
    A, y = _spd(4, 2), np.random.default_rng(3).standard_normal(4)
    gA, gy = adgen.grad(gp_energy, argnums=(0, 1), backend="numba", mutation=mutation)(A, y)
    assert_grad_close(gA, numerical_grad(gp_energy, (A, y), 0))
    assert_grad_close(gy, numerical_grad(gp_energy, (A, y), 1))


def test_the_helper_is_shown_compiled_for_its_arguments():
    text = adgen.source(log_det, _spd(3, 4), backend="numba")
    assert "scatter_if_copy" not in text
    assert "def cholesky_forward(A):" in text


def sum_squares(v):
    s = 0.0
    for i in range(v.shape[0]):
        s += v[i] * v[i]
    return s


def differences_energy(x, k):
    d = np.empty_like(x)
    for i in range(x.shape[0] - 1):
        d[i] = x[i + 1] - x[i]
    d[x.shape[0] - 1] = 0.0
    z = np.zeros_like(d)
    for i in range(x.shape[0]):
        z[i] = np.sin(k * d[i])
    return sum_squares(d) + sum_squares(z)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_arrays_made_like_another_handed_to_a_helper(mutation):
    """np.empty_like / np.zeros_like had no type in the rewrite's analysis, so a helper
    given one was refused ('cannot tell the argument types of this call of sum_squares')."""
    x, k = np.linspace(0.0, 2.0, 7) ** 2, 0.7
    gx, gk = adgen.grad(differences_energy, argnums=(0, 1), backend="numba",
                        mutation=mutation)(x, k)
    assert_grad_close(gx, numerical_grad(differences_energy, (x, k), 0))
    assert_grad_close(gk, numerical_grad(differences_energy, (x, k), 1))


def log_det_twice(A):
    return 2.0 * log_det(A)  # a helper calling a helper calling the Cholesky helper


def log_det_plus_one(A):
    return log_det_twice(A) + 1.0


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_helpers_calling_helpers_calling_the_cholesky_helper(mutation):
    """Four functions deep: refused until session 24 at the call of log_det ("takes a view
    of an argument or returns one": the caller's unwatched capture of A after cholesky(A),
    which numba_guarded_sites.unwatched_captures now takes for A itself). d log det A / dA
    on the lower triangle, times 2."""
    A = _spd(5, 1)
    g = adgen.grad(log_det_plus_one, mutation=mutation, backend="numba")(A)
    assert_grad_close(g, numerical_grad(log_det_plus_one, (A,), 0))
    assert_grad_close(g, adgen.grad(log_det_plus_one, mutation=mutation)(A))
