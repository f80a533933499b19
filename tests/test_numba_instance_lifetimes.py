"""The adjoints of arrays made in a loop on the numba backend are dropped once the pullback
has gone back over the iteration that made them (transforms/numba_instance_lifetimes.py).
Until session 19 each stayed until the pullback returned: a time stepper making a 1 MB
array per step for 200 steps peaked at 402 MB above the arguments, 204 MB now (the arrays
the forward keeps, and one adjoint at a time).

Gradients of arrays read again after the iteration that made them (a state taken on some
steps only, one made in an inner loop and carried across the outer one, a while loop, one
made before the loop and read in every step) against central differences and the default
backend, both policies, and a vjp's pullback called twice (it makes its adjoints anew each
time). Skipped without numba."""

from __future__ import annotations

import os

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

numba = pytest.importorskip("numba")

POLICIES = ["save", "strict"]


def sometimes_taken(u0, k, steps):
    # a new array every step, the state only on even steps: the one made at step t is
    # read at steps t + 1 and t + 2
    n = u0.shape[0]
    u = u0.copy()
    for t in range(steps):
        v = np.empty(n)
        for i in range(n):
            v[i] = u[i] + k * np.sin(u[i])
        if t % 2 == 0:
            u = v
    return np.sum(u * u)


def made_inside_carried_outside(u0, k, outer, inner):
    n = u0.shape[0]
    u = u0.copy()
    for s in range(outer):
        for t in range(inner):
            v = np.empty(n)
            for i in range(n):
                v[i] = u[i] * (1.0 - k * u[i])
            u = v
        for i in range(n):
            u[i] = u[i] + 0.05 * u0[i]
    return np.sum(u ** 3)


def while_made(u0, k, steps):
    n = u0.shape[0]
    u = u0.copy()
    t = 0
    while t < steps:
        v = np.zeros(n)
        for i in range(n):
            v[i] = u[i] + k * np.cos(u[i])
        u = v
        t += 1
    return np.sum(u * u)


def made_before_and_in(u0, k, steps):
    n = u0.shape[0]
    keep = np.empty(n)
    for i in range(n):
        keep[i] = u0[i] * 2.0
    u = keep
    for t in range(steps):
        v = np.empty(n)
        for i in range(n):
            v[i] = u[i] * k + keep[i] * 0.1
        u = v
    return np.sum(u * u) + np.sum(keep)


def scratch_per_step(u0, k, steps):
    n = u0.shape[0]
    u = u0.copy()
    for t in range(steps):
        lap = np.empty(n)
        lap[0] = 0.0
        lap[n - 1] = 0.0
        for i in range(1, n - 1):
            lap[i] = u[i - 1] - 2.0 * u[i] + u[i + 1]
        for i in range(n):
            u[i] = u[i] + k * lap[i]
    return np.sum(u * u)


CASES = [
    (sometimes_taken, (np.linspace(0.1, 1.0, 6), 0.3, 5)),
    (made_inside_carried_outside, (np.linspace(0.1, 1.0, 6), 0.3, 3, 3)),
    (while_made, (np.linspace(0.1, 1.0, 6), 0.3, 4)),
    (made_before_and_in, (np.linspace(0.1, 1.0, 6), 0.7, 4)),
    (scratch_per_step, (np.sin(np.linspace(0.0, 3.0, 9)) + 1.0, 0.2, 6)),
]


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f, args", CASES, ids=[c[0].__name__ for c in CASES])
def test_arrays_read_after_the_iteration_that_made_them(f, args, mutation):
    got = adgen.grad(f, argnums=(0, 1), backend="numba", mutation=mutation)(*args)
    assert_grad_close(got[0], numerical_grad(f, args, 0))
    assert_grad_close(got[1], numerical_grad(f, args, 1))
    want = adgen.grad(f, argnums=(0, 1), mutation=mutation)(*args)
    assert_grad_close(got, want, rtol=1e-12)
    assert "release_shadows(" in adgen.source(f, *args, backend="numba")
    _, pullback = adgen.vjp(f, *args, backend="numba", mutation=mutation)
    for _ in range(2):
        assert_grad_close(pullback(1.0)[0], want[0], rtol=1e-12)


def _peak_kib() -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM"))


@pytest.mark.skipif(not os.access("/proc/self/clear_refs", os.W_OK),
                    reason="needs Linux's peak-RSS reset")
def test_the_adjoints_of_a_loop_of_large_arrays_are_not_all_kept():
    g = adgen.grad(scratch_per_step, backend="numba")
    g(np.ones(64), 0.1, 3)  # compiled (numba's compiler's memory is not measured)
    n, steps = 131072, 60  # a 1 MB array a step: the forward keeps 60 MB of them
    u0 = np.sin(np.linspace(0.0, 3.0, n)) + 1.0
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # the peak is now the current RSS
    start = _peak_kib()
    g(u0, 0.1, steps)
    grown = (_peak_kib() - start) / 1024
    # every adjoint kept: 60 MB more than the arrays (126 MB measured); one at a time: 66
    assert grown < 95, f"the gradient's peak grew by {grown:.0f} MB"
