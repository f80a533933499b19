"""A loop's recorded arrays in two-dimensional columns (``array_columns.array_rows``,
``Plan.counted``'s ``arrays``): a float64 array of one shape in every iteration, bound at the
top level of a counted loop's body (a range, with a constant step or none, no break), is kept
in one ``(iterations, length)`` array allocated at the first row, instead of a tuple and a
small array per row (ADI's divisors and copies of ``p``'s columns).

Gradients against central differences under both policies; look-alikes that must keep the
list of tuples: a shape that changes between iterations, a trip count decided in the loop (a
while loop, a break), a float32 slot, an array written in place after it is recorded; as users
write them (a method, a lambda), and the numba backend on ADI.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, numerical_grad

import adgen

POLICIES = ["save", "strict"]


def divisors(x):
    """A divisor vector per step of an ascending and of a descending loop (ADI's sweeps)."""
    n = x.shape[0]
    y = x.copy()
    for j in range(1, n - 1):
        d = 0.5 * y[j - 1, 1:n - 1] ** 2 + 2.0
        y[j, 1:n - 1] = y[j, 1:n - 1] / d
    for j in range(n - 2, 0, -1):
        e = np.exp(0.1 * y[1:n - 1, j + 1])
        y[1:n - 1, j] = y[1:n - 1, j] * e
    return np.sum(y ** 2)


def in_time_loop(x):
    """The same sweeps inside a time loop: a column per run of the inner loop."""
    n = x.shape[0]
    y = x.copy()
    for _ in range(3):
        for j in range(n - 2, 0, -1):
            e = np.exp(0.1 * y[1:n - 1, j + 1])
            y[1:n - 1, j] = y[1:n - 1, j] * e
    return np.sum(y ** 2)


def growing(x):
    """Look-alike: the recorded array grows with the counter (a shape per iteration)."""
    n = x.shape[0]
    s = 0.0
    for j in range(1, n):
        t = np.sin(x[:j])
        s = s + np.sum(t * t)
    return s


def stops_early(x):
    """Look-alike: the trip count is decided in the loop (a break on the data)."""
    n = x.shape[0]
    y = x.copy()
    for j in range(1, n - 1):
        d = 0.5 * y[j - 1, 1:n - 1] ** 2 + 2.0
        y[j, 1:n - 1] = y[j, 1:n - 1] / d
        if np.sum(y[j]) > 1e3:
            break
    return np.sum(y ** 2)


def while_loop(x):
    """Look-alike: a while loop (no range: the trip count is unknown at entry)."""
    n = x.shape[0]
    y = x.copy()
    j = 1
    while j < n - 1:
        d = 0.5 * y[j - 1, 1:n - 1] ** 2 + 2.0
        y[j, 1:n - 1] = y[j, 1:n - 1] / d
        j += 1
    return np.sum(y ** 2)


def written_after(x):
    """Look-alike: the recorded array is changed in place after the read it serves."""
    n = x.shape[0]
    s = 0.0
    for j in range(n):
        t = np.sin(x[j])
        s = s + np.sum(t * t)
        t *= 2.0
        s = s + np.sum(t)
    return s


def kept_elsewhere(xs):
    """Look-alike: the recorded arrays are views of an argument, or also kept in a list:
    a column would copy what is kept anyway."""
    out = []
    s = 0.0
    for t in range(xs.shape[0]):
        r = xs[t]
        h = np.tanh(r * 2.0)
        out.append(h)
        s = s + np.sum(h * r)
    return s + np.sum(out[0])


def lone_array(u0):
    """Look-alike: a row of one array (the heat equation's ``lap``) stays that array in a
    list: a column would save its object for a copy per row."""
    u = u0.copy()
    for _ in range(3):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        u[1:-1] += 0.1 * np.tanh(lap)
    return np.sum(u * u)


def counted_lone_array(x):
    """Look-alike: a row of one array and the counter (docs/cli.md's example), in a loop at
    the top level: the counter is walked again, so the row is one array and stays in a list."""
    h = np.empty_like(x)
    for i in range(x.shape[0]):
        h[i] = np.tanh(2.0 * x[i])
    return np.sum(h ** 2)


class Sweeper:
    def __init__(self, k):
        self.k = k

    def loss(self, x):
        n = x.shape[0]
        y = x.copy()
        for j in range(n - 2, 0, -1):
            e = np.exp(0.1 * y[1:n - 1, j + 1])
            y[1:n - 1, j] = y[1:n - 1, j] * e + 1.0
        return np.sum(y ** 2)


def _grid(dtype=np.float64):
    return np.random.default_rng(3).standard_normal((6, 6)).astype(dtype)


def _forward(fn, *args):
    return adgen.source(fn, *args).split("_pullback(")[0]


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", [divisors, in_time_loop, growing, stops_early, while_loop,
                                written_after, kept_elsewhere, lone_array,
                                counted_lone_array],
                         ids=lambda f: f.__name__)
def test_gradients(fn, mutation):
    check_grad(fn, (_grid(),), mutation=mutation)


def test_arrays_of_one_shape_go_to_columns():
    forward = _forward(divisors, _grid())
    # the descending loop, with its step: ``e`` and the copy of ``y[1:n - 1, j]`` (the
    # ascending loop keeps a guarded capture, which stays in its row); ``j + 1`` is
    # computed again from the counter
    assert "tape_columns(range(t12, 0, -1), 'float64[1]', 'float64[1]')" in forward, forward
    assert "copy_when_read" not in forward, forward  # the copy is its row
    assert "e_col = np.empty((len(range(t12, 0, -1)),) + e.shape)" in forward, forward
    # in a time loop too (one column per run of the inner loop)
    assert "'float64[1]'" in _forward(in_time_loop, _grid())


@pytest.mark.parametrize("fn", [growing, stops_early, while_loop, written_after,
                                kept_elsewhere, lone_array, counted_lone_array],
                         ids=lambda f: f.__name__)
def test_look_alikes_keep_their_rows(fn):
    forward = _forward(fn, _grid())
    assert "float64[" not in forward, forward


def test_a_float32_slot_keeps_its_rows():
    x = _grid(np.float32)
    forward = _forward(divisors, x)
    assert "float64[" not in forward, forward
    g = adgen.grad(divisors)(x)
    assert g.dtype == np.float32
    assert_grad_close(g, numerical_grad(divisors, (x.astype(np.float64),), 0),
                      rtol=1e-3, atol=1e-4)


def test_a_method_and_a_lambda():
    s = Sweeper(0.5)
    x = _grid()
    assert "'float64[1]'" in _forward(s.loss, x)
    check_grad(s.loss, (x,))
    f = lambda x: divisors(2.0 * x)  # noqa: E731 - a lambda, as users write one
    check_grad(f, (x,))


def test_zero_iterations():
    x = np.random.default_rng(4).standard_normal((2, 2))  # range(1, 1): no row
    check_grad(divisors, (x,))


def test_adi_on_the_numba_backend():
    """ADI's column sweep keeps two-dimensional columns (its row sweep's values are read
    again from ``p``: invariant_finals, with the back substitution's stepped range walked
    again); the numba backend compiles the same form and gives the default backend's
    gradient."""
    pytest.importorskip("numba")
    from bench.workloads import polybench_stencils

    u0 = np.random.default_rng(5).standard_normal((8, 8))
    forward = _forward(polybench_stencils.adi, u0)
    assert forward.count("float64[1]") == 2, forward
    g = adgen.grad(polybench_stencils.adi)(u0)
    assert_grad_close(g, numerical_grad(polybench_stencils.adi, (u0,), 0))
    g_numba = adgen.grad(polybench_stencils.adi, backend="numba")(u0)
    assert_grad_close(g_numba, g, rtol=1e-12, atol=1e-14)
