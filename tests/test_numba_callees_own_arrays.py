"""Callees that make arrays and write them in place (a tridiagonal solve in a helper:
``cp = np.empty(n); ... cp[i] = ...; return x``) compile on the numba backend since session
22: their adjoints are static buffers of the callee's own pullback. Until then the call was
refused ("writes cp, an array it made, in place"); the default backend handled them. Each
gradient is checked against central differences and the default backend, under both
mutation policies. Skipped without numba."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

numba = pytest.importorskip("numba")

POLICIES = ["save", "strict"]


def thomas(a, b, c, d):
    n = len(d)
    cp = np.empty(n)
    dp = np.empty(n)
    cp[0] = c[0] / b[0]
    dp[0] = d[0] / b[0]
    for i in range(1, n):
        m = b[i] - a[i] * cp[i - 1]
        cp[i] = c[i] / m
        dp[i] = (d[i] - a[i] * dp[i - 1]) / m
    x = np.empty(n)
    x[n - 1] = dp[n - 1]
    for i in range(n - 2, -1, -1):
        x[i] = dp[i] - cp[i] * x[i + 1]
    return x


def implicit_heat(u0, k, steps):
    """Backward Euler for u_t = k u_xx: a tridiagonal solve per step, in a helper."""
    n = len(u0)
    a = np.full(n, -k)
    b = np.full(n, 1.0 + 2.0 * k)
    c = np.full(n, -k)
    u = u0
    for t in range(steps):
        u = thomas(a, b, c, u)
    s = 0.0
    for i in range(n):
        s += u[i] * u[i] * (i + 1)
    return s


def solve_loss(a, b, c, d):
    x = thomas(a, b, c, d)
    return np.sum(x ** 3)


def cumulative(x, r):
    out = np.empty(len(x))
    out[0] = x[0]
    for i in range(1, len(x)):
        out[i] = r * out[i - 1] + x[i]
    return out


def smoothed(x, r):
    y = cumulative(x, r)  # a helper calling a helper that fills an array
    z = np.empty(len(y))
    for i in range(len(y)):
        z[i] = np.tanh(y[i])
    return z


def scans(x, r):
    s = 0.0
    for k in range(3):
        z = smoothed(x * (1.0 + 0.5 * k), r)
        s += np.sum(z * x)
    return s


def tail_of_squares(x):
    c = np.zeros(len(x))
    for i in range(len(x)):
        c[i] = x[i] * x[i]
    return c[1:]  # a view of the array it made


def tail_loss(x):
    y = tail_of_squares(x)
    return np.sum(y * np.sin(y))


def _check(f, args, argnums, mutation):
    got = adgen.grad(f, argnums=argnums, backend="numba", mutation=mutation)(*args)
    assert_grad_close(got, numerical_grad(f, args, argnums))
    assert_grad_close(got, adgen.grad(f, argnums=argnums, mutation=mutation)(*args),
                      rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mutation", POLICIES)
def test_tridiagonal_solve_in_a_helper(mutation):
    rng = np.random.default_rng(0)
    n = 7
    args = (rng.random(n), 4.0 + rng.random(n), rng.random(n), rng.random(n))
    for k in range(4):
        _check(solve_loss, args, k, mutation)


@pytest.mark.parametrize("mutation", POLICIES)
def test_implicit_heat_steps(mutation):
    u0 = np.sin(np.linspace(0.0, 3.0, 9)) + 1.0
    _check(implicit_heat, (u0, 0.3, 4), 0, mutation)
    _check(implicit_heat, (u0, 0.3, 4), 1, mutation)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_helper_calling_a_helper_that_fills_arrays(mutation):
    x = np.linspace(-0.5, 0.7, 6)
    _check(scans, (x, 0.6), 0, mutation)
    _check(scans, (x, 0.6), 1, mutation)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_view_of_an_array_the_helper_made(mutation):
    _check(tail_loss, (np.linspace(0.3, 1.2, 5),), 0, mutation)
