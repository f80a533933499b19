"""Scalar-loop programs handed to the numba backend in session 22's hunt (H5), each a
failure found there: checked against central differences and the default backend, under
both policies. Skipped without numba.

- ``np.full(n, -k)`` with ``k`` differentiated: numba had no form of ``cast_vjp(g, None)``
  (no dtype given), and refused the line ("No implementation of function cast_vjp").
- ``b = np.searchsorted(edges, v) - 1`` then ``w[b]``: neither adgen's kinds nor the numba
  rewrite's types knew ``b`` is an int, so ``w[b]`` could be an array; numba refused the
  line ("Unknown attribute 'shape' of type float64"). Also ``np.argmax(x)`` as an index.
- Conjugate gradients calling a helper with the search direction ``p``, which the loop
  carries (``p = r + (rs_new / rs) * p``, ``rs_new = np.dot(r, r)``): the numba rewrite's
  types had no ``np.dot``, so ``p`` had no type and the call was refused ("cannot tell the
  argument types of this call of mv").
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

numba = pytest.importorskip("numba")

POLICIES = ["save", "strict"]


def _both(f, args, argnum, mutation):
    got = adgen.grad(f, argnums=argnum, backend="numba", mutation=mutation)(*args)
    assert_grad_close(got, numerical_grad(f, args, argnum))
    assert_grad_close(got, adgen.grad(f, argnums=argnum, mutation=mutation)(*args),
                      rtol=1e-12)


def banded_energy(u, k):
    n = u.shape[0]
    off = np.full(n, -k)         # a diagonal filled with a parameter
    diag = np.full(n, 1.0 + 2.0 * k)
    s = 0.0
    for i in range(1, n):
        s += u[i] * (diag[i] * u[i] + off[i] * u[i - 1])
    return s


@pytest.mark.parametrize("mutation", POLICIES)
def test_full_of_a_differentiated_value(mutation):
    u = np.sin(np.linspace(0.0, 2.0, 7))
    _both(banded_energy, (u, 0.3), 0, mutation)
    _both(banded_energy, (u, 0.3), 1, mutation)
    # by hand: d/dk sum_i u_i (2 u_i - u_{i-1})
    assert np.isclose(adgen.grad(banded_energy, argnums=1, backend="numba")(u, 0.3),
                      np.sum(u[1:] * (2.0 * u[1:] - u[:-1])))


def binned_energy(x, edges, w):
    s = 0.0
    for i in range(x.shape[0]):
        b = np.searchsorted(edges, x[i]) - 1  # the bin of x[i]
        s += w[b] * x[i] ** 2
    return s


def binned_energy_vectorised(x, edges, w):
    b = np.searchsorted(edges, x) - 1
    return np.sum(w[b] * x ** 2)


def peak_neighbourhood(x):
    k = np.argmax(x)
    s = 0.0
    for j in range(x.shape[0]):
        s += x[j] * np.exp(-0.5 * (j - k) ** 2) * x[k]
    return s


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_bin_from_searchsorted_indexes(mutation):
    x = np.array([0.1, 0.55, 0.7, 0.95, 0.33, 0.2])  # none at an edge
    edges = np.linspace(0.0, 1.0, 5)
    w = np.array([1.0, 2.0, 3.0, 4.0])
    for argnum in (0, 2):
        _both(binned_energy, (x, edges, w), argnum, mutation)
    # by hand: d/dw_b = sum of x_i ** 2 over the bin's x_i
    bins = np.searchsorted(edges, x) - 1
    want = np.array([np.sum(x[bins == b] ** 2) for b in range(4)])
    assert_grad_close(adgen.grad(binned_energy, argnums=2, backend="numba",
                                 mutation=mutation)(x, edges, w), want)
    # the default backend's code knows b is an int: w_bar[b] += ..., no add_item
    assert "w_bar[b] +=" in adgen.source(binned_energy, x, edges, w)
    assert_grad_close(adgen.grad(binned_energy_vectorised, argnums=2, mutation=mutation)(
        x, edges, w), want)


@pytest.mark.parametrize("mutation", POLICIES)
def test_argmax_as_an_index(mutation):
    x = np.array([0.3, 1.2, 0.8, 2.0, -0.1, 0.5])
    _both(peak_neighbourhood, (x,), 0, mutation)



def mv(A, v):
    return A @ v


def cg_energy(A, b, iters):
    x = np.zeros(b.shape[0])
    r = b.copy()
    p = r.copy()
    rs = np.dot(r, r)
    for k in range(iters):
        Ap = mv(A, p)
        alpha = rs / np.dot(p, Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        rs_new = np.dot(r, r)
        p = r + (rs_new / rs) * p
        rs = rs_new
    return np.sum(x * b)


@pytest.mark.parametrize("mutation", POLICIES)
def test_conjugate_gradients_through_a_helper(mutation):
    rng = np.random.default_rng(1)
    M = rng.random((4, 4))
    A = M @ M.T + 4.0 * np.eye(4)
    b = rng.random(4)
    _both(cg_energy, (A, b, 4), 1, mutation)
    # by hand: 4 steps of CG on a 4 x 4 system solve it: x = A^-1 b, b.x's gradient 2 A^-1 b
    assert_grad_close(adgen.grad(cg_energy, argnums=1, backend="numba", mutation=mutation)(
        A, b, 4), 2.0 * np.linalg.solve(A, b), rtol=1e-6)
