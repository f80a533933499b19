"""Arrays made in each iteration of a loop, on the numba backend, written the way people
write time steppers: a scratch array per step (np.empty in the loop, filled, then carried
by u = lap or read in the step), two time levels swapped (u, un = un, u), a wave equation's
three levels rotated through a new array per step, a power iteration (q = A @ q), a
log-sum-exp recursion making its next row (new = np.empty(K); delta = new), an
allocation in an inner loop, one in a while loop, one filled through out=, two made per
step and carried crossed (a = nb; b = na). Until session 18 all but the power iteration
(whose arrays nothing writes in place: their adjoints are plain values) were refused: each
array's adjoint was one static buffer made when the pullback starts. Now each array such a line makes has an adjoint of its own (the forward numbers
the arrays; numba_shadows.renewed_buffers). Gradients against central differences and the
default backend, both policies. Skipped without numba."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

numba = pytest.importorskip("numba")

POLICIES = ["save", "strict"]


def heat_with_scratch(u0, k, steps):
    n = u0.shape[0]
    u = u0.copy()
    un = np.zeros(n)
    for t in range(steps):
        lap = np.empty(n)
        lap[0] = 0.0
        lap[n - 1] = 0.0
        for i in range(1, n - 1):
            lap[i] = u[i - 1] - 2.0 * u[i] + u[i + 1]
        for i in range(n):
            un[i] = u[i] + k * lap[i] * (1.0 + 0.1 * u[i])
        u, un = un, u
    return np.sum(u ** 2)


def heat_new_level(u0, k, steps):
    n = u0.shape[0]
    u = u0.copy()
    for t in range(steps):
        tmp = np.empty(n)
        tmp[0] = u[0]
        tmp[n - 1] = u[n - 1]
        for i in range(1, n - 1):
            tmp[i] = u[i] + k * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u = tmp
    return np.sum(u ** 2)


def wave(u0, c, steps):
    n = u0.shape[0]
    uprev = u0.copy()
    u = u0.copy()
    for t in range(steps):
        unew = np.zeros(n)
        for i in range(1, n - 1):
            unew[i] = 2.0 * u[i] - uprev[i] + c * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        uprev = u
        u = unew
    s = 0.0
    for i in range(n):
        s += u[i] * u[i] + 0.5 * uprev[i]
    return s


def power_iteration(A, q0, steps):
    q = q0.copy()
    for t in range(steps):
        q = A @ q
        q = q / np.sqrt(np.sum(q * q))
    return q[0] + 2.0 * q[-1]


def log_sum_exp_recursion(logA, x0, T):
    K = x0.shape[0]
    delta = x0.copy()
    for t in range(T):
        new = np.empty(K)
        for j in range(K):
            m = delta[0] + logA[0, j]
            for i in range(1, K):
                v = delta[i] + logA[i, j]
                if v > m:
                    m = v
            s = 0.0
            for i in range(K):
                s += np.exp(delta[i] + logA[i, j] - m)
            new[j] = m + np.log(s)
        delta = new
    return np.sum(delta)


def inner_allocation(x, steps):
    n = x.shape[0]
    acc = 0.0
    for t in range(steps):
        for s in range(2):
            z = np.zeros(n)
            for i in range(n):
                z[i] = x[i] * (t + s + 1.0)
            if t % 2 == 0:
                z[0] = 0.0
            for i in range(n):
                acc += z[i] * z[(i + 1) % n]
    return acc


def while_allocation(x):
    n = x.shape[0]
    u = x.copy()
    k = 0
    while k < 5:
        v = np.empty(n)
        for i in range(n):
            v[i] = 0.5 * (u[i] + u[(i + 1) % n]) + 0.1 * x[i]
        u = v
        k += 1
    return np.sum(u * u * np.arange(1.0, n + 1.0))


def filled_through_out(x, steps):
    n = x.shape[0]
    acc = 0.0
    for t in range(steps):
        tmp = np.empty(n)
        np.exp(x * (t + 1) * 0.1, out=tmp)
        for i in range(n):
            acc += tmp[i] * x[i]
    return acc


def two_levels_crossed(x, steps):
    n = x.shape[0]
    a = x.copy()
    b = x * 2.0
    for t in range(steps):
        na = np.empty(n)
        nb = np.empty(n)
        for i in range(n):
            na[i] = 0.5 * a[i] + 0.1 * b[(i + 1) % n]
            nb[i] = b[i] * 0.9 + 0.2 * a[i] * a[i]
        a = nb
        b = na
    return np.sum(a * b)


_rng = np.random.default_rng(3)
CASES = [
    (heat_with_scratch, (np.sin(np.linspace(0.0, 3.0, 12)) + 1.0, 0.2, 5), (0, 1)),
    (heat_with_scratch, (np.sin(np.linspace(0.0, 3.0, 12)) + 1.0, 0.2, 0), (0, 1)),
    (heat_new_level, (np.sin(np.linspace(0.0, 3.0, 12)) + 1.0, 0.2, 6), (0, 1)),
    (wave, (np.sin(np.linspace(0.0, 3.0, 10)), 0.3, 6), (0, 1)),
    (power_iteration, (_rng.random((4, 4)) + np.eye(4), _rng.random(4) + 0.1, 5), (0, 1)),
    (log_sum_exp_recursion, (np.log(_rng.dirichlet(np.ones(4), 4)), _rng.random(4), 6),
     (0, 1)),
    (inner_allocation, (_rng.random(5), 3), (0,)),
    (while_allocation, (_rng.random(6),), (0,)),
    (filled_through_out, (_rng.random(5), 3), (0,)),
    (two_levels_crossed, (np.sin(np.linspace(0.0, 3.0, 8)) * 0.5 + 0.5, 5), (0,)),
]


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_arrays_made_in_a_loop(case, mutation):
    f, args, argnums = CASES[case]
    g = adgen.grad(f, argnums=argnums, backend="numba", mutation=mutation)
    got = g(*args)
    expected = tuple(numerical_grad(f, args, n) for n in argnums)
    assert_grad_close(got, expected)
    assert_grad_close(got, adgen.grad(f, argnums=argnums, mutation=mutation)(*args),
                      rtol=1e-10, atol=1e-12)
    assert_grad_close(g(*args), expected)  # the call decided once


def test_each_array_has_an_adjoint_of_its_own():
    """The code numba compiles numbers the arrays the line makes and takes each one's
    adjoint from the pullback's list (no static buffer sized from a saved array)."""
    args = CASES[2][1]
    text = adgen.source(heat_new_level, *args, backend="numba")
    assert "tmp_inst = tmp_count" in text
    assert "instance_shadow(tmp_shadows, tmp_inst, tmp)" in text


def row_of_a_new_array(X, steps):
    n, m = X.shape
    acc = 0.0
    for t in range(steps):
        Z = np.zeros((n, m))
        for i in range(n):
            for j in range(m):
                Z[i, j] = X[i, j] * (t + 1.0)
        r = Z[1, :]
        for j in range(m):
            acc += r[j] * r[j]
    return acc


def row_of_a_new_array_as_hinted(X, steps):
    n, m = X.shape
    acc = 0.0
    Z = np.zeros((n, m))
    for t in range(steps):
        for i in range(n):
            for j in range(m):
                Z[i, j] = X[i, j] * (t + 1.0)
        r = Z[1, :]
        for j in range(m):
            acc += r[j] * r[j]
    return acc


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_view_of_one_is_refused_at_its_line(mutation):
    """A view of an array made in each iteration (r = Z[1, :]) whose gradient the pullback
    needs is refused at the line making the array (a view's adjoint is the same view of one
    static buffer), saying what to write; written so, the gradient is right."""
    import inspect

    args = (np.arange(6.0).reshape(2, 3) / 5.0, 3)
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(row_of_a_new_array, backend="numba", mutation=mutation)(*args)
    lines, start = inspect.getsourcelines(row_of_a_new_array)
    made = start + next(k for k, s in enumerate(lines) if "Z = np.zeros((n, m))" in s)
    assert err.value.location.line == made
    assert "cannot follow one through a view of Z" in str(err.value)
    assert err.value.hint.startswith("make Z once before the loop and write into it")
    got = adgen.grad(row_of_a_new_array_as_hinted, backend="numba", mutation=mutation)(*args)
    assert_grad_close(got, numerical_grad(row_of_a_new_array, args, 0))
