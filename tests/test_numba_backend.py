"""The numba backend (adgen.backends, transforms/numba_emit.py and numba_module.py): gradients
of scalar-loop code compiled in nopython mode.

Every gradient is compared with central differences (tests/gradcheck.py, of the plain
function or of its ``numba.njit`` version where the NumPy primal is slow) and with the
default backend, under both mutation policies, with the arguments' final contents checked
against a plain call. What nopython mode cannot take must raise an adgen error naming the
user's line (``backend="numba"``) or fall back with a warning (``backend="auto"``).
Skipped when numba is not installed (the "numba" extra).
"""

from __future__ import annotations

import copy
import os
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from adgen.transforms.pipeline import clear_cache, compile_function
from gradcheck import assert_grad_close, numerical_grad

import adgen
from adgen.backends import NumbaFallbackWarning

# the kernels bench/experiments/numba_backend.py times (one copy)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import bench.experiments.numba_backend as bench_numba  # noqa: E402
from bench.experiments.numba_backend import (  # noqa: E402
    cholesky_loops,
    dominant,
    kalman_scalar,
    lu_loops,
    seidel_loops,
    soft_dtw,
    spd,
    trisolv_loops,
)

numba = pytest.importorskip("numba")

POLICIES = ["save", "strict"]


def mse(y, y_hat):
    n = len(y)
    s = 0.0
    for i in range(n):
        s += (y[i] - y_hat[i]) ** 2.0
    return s / n


def fill(x, w):
    h = np.empty(len(x))
    for i in range(len(x)):  # allocate-then-fill: a free site
        h[i] = np.tanh(x[i] * w)
    s = 0.0
    for i in range(len(x)):
        s += h[i] * h[i]
    return s


def recurrence(x, a):
    h = np.zeros(len(x) + 1)
    for t in range(len(x)):
        h[t + 1] = np.tanh(a * h[t] + x[t])
    s = 0.0
    for t in range(len(h)):
        s += h[t] ** 2
    return s


def stencil(u0, alpha):
    u = u0.copy()
    n = len(u)
    for step in range(20):
        for i in range(1, n - 1):  # in place, Gauss-Seidel order: reads updated neighbours
            u[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])
    s = 0.0
    for i in range(n):
        s += u[i] * u[i]
    return s


def scale_in_place(x, y):
    """Writes its argument in place (a free site: the values read are on the tape)."""
    s = 0.0
    for i in range(len(x)):
        s += x[i] * np.sin(y[i])
        y[i] = 2.0 * y[i]
    return s


def triangular(L, b):
    """Forward substitution with a loop bound that depends on the outer index."""
    n = len(b)
    x = np.zeros(n)
    for i in range(n):
        acc = b[i]
        for j in range(i):
            acc = acc - L[i, j] * x[j]
        x[i] = acc / L[i, i]
    s = 0.0
    for i in range(n):
        s += x[i] * x[i]
    return s


def while_loop(x, a):
    """A while loop: its record grows geometrically (the count is not known ahead)."""
    s = 0.0
    i = 0
    while i < len(x):
        s += np.sin(a * x[i]) * s
        s += x[i]
        i += 1
    return s


def branches(x, a):
    """Values bound in one arm only: None on the tape in the default backend's rows where the
    other arm ran."""
    s = 0.0
    for i in range(len(x)):
        if x[i] > 0.5:
            s += a * x[i] ** 2
        else:
            s -= np.sin(a * x[i])
    return s


def early_return(x, a):
    s = 0.0
    for i in range(len(x)):
        s += x[i] * a
        if i == 3:
            return s * s
    return s


def running_max(x, a):
    """A loop-carried max and min (balanced_eq, copy_adjoint in the pullback)."""
    m = -1e300
    s = 0.0
    for i in range(len(x)):
        m = max(m, x[i] * a)
        s += min(x[i], 0.5)
    return m + s


def no_loop(x):
    """Vectorised code on the numba backend (full sums of element-wise arithmetic)."""
    return np.sum(x * x) + np.sum(np.sin(x))


def _args(name, rng):
    if name == "mse":
        return rng.random(30), rng.random(30)
    if name == "fill":
        return rng.standard_normal(40), 0.7
    if name == "recurrence":
        return rng.standard_normal(25), 0.6
    if name == "stencil":
        return rng.random(16), 0.2
    if name == "scale_in_place":
        return rng.random(12), rng.random(12)
    if name in ("branches", "early_return", "running_max"):
        return rng.random(9), 0.7
    if name == "while_loop":
        return rng.random(40) * 0.1, 0.8
    if name == "triangular":
        L = np.tril(rng.random((6, 6))) + 3.0 * np.eye(6)
        return L, rng.random(6)
    raise KeyError(name)


WORKLOADS = {"mse": mse, "fill": fill, "recurrence": recurrence, "stencil": stencil,
             "scale_in_place": scale_in_place, "triangular": triangular,
             "while_loop": while_loop, "branches": branches, "early_return": early_return,
             "running_max": running_max}


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_gradient_matches_default_and_central_differences(name, policy):
    f = WORKLOADS[name]
    rng = np.random.default_rng(7)
    args = _args(name, rng)
    plain = copy.deepcopy(args)
    expected_value = f(*plain)
    mine = copy.deepcopy(args)
    value, g = adgen.value_and_grad(f, argnums=(0, 1), mutation=policy,
                                    backend="numba")(*mine)
    ref = copy.deepcopy(args)
    g_default = adgen.grad(f, argnums=(0, 1), mutation=policy)(*ref)
    assert value == pytest.approx(expected_value, rel=1e-12)
    for k in (0, 1):
        assert_grad_close(g[k], numerical_grad(f, args, k), rtol=1e-5, atol=1e-7)
        assert_grad_close(g[k], g_default[k], rtol=1e-10, atol=1e-12)
    # same effects as a plain call: the arguments' final contents
    for a, b in zip(mine, plain):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("policy", POLICIES)
def test_soft_dtw_60x50(policy):
    rng = np.random.default_rng(3)
    C = rng.random((60, 50))
    gamma = 0.1
    g = adgen.grad(soft_dtw, mutation=policy, backend="numba")(C, gamma)
    # central differences of the njit-compiled primal (the NumPy one takes 8 ms a call)
    primal = numba.njit(soft_dtw)
    assert_grad_close(g, numerical_grad(primal, (C, gamma), 0), rtol=1e-5, atol=1e-7)
    g_default = adgen.grad(soft_dtw, mutation=policy)(C, gamma)
    assert_grad_close(g, g_default, rtol=1e-10, atol=1e-12)
    # a soft alignment: the gradient is a distribution over the cells (sums to about 1)
    assert g.shape == C.shape and np.all(g >= -1e-12)


def heat_small(u0, alpha):
    """The benchmark's in-place heat equation, as a user writes it: slices of u, a laplacian
    array recorded per step (a typed list of arrays on the numba backend)."""
    u = u0.copy()
    for _ in range(15):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        u[1:-1] += alpha * lap
    return np.sum(u * u)


@pytest.mark.parametrize("policy", POLICIES)
def test_per_iteration_array_tape_heat(policy):
    from bench.workloads import heat as bench_heat

    rng = np.random.default_rng(21)
    u0 = rng.random(12)
    g = adgen.grad(heat_small, argnums=(0, 1), mutation=policy, backend="numba")(u0, 0.2)
    for k in (0, 1):
        assert_grad_close(g[k], numerical_grad(heat_small, (u0, 0.2), k), rtol=1e-6)
    # the benchmark's kernel (200 points, 100 steps) against its hand-written adjoint
    u0, alpha = bench_heat.make_args(rng)
    g = adgen.grad(bench_heat.heat, argnums=(0, 1), mutation=policy, backend="numba")(
        u0, alpha)
    hand = bench_heat.heat_hand(u0, alpha)
    assert_grad_close(g[0], hand[0], rtol=1e-10, atol=1e-12)
    assert g[1] == pytest.approx(hand[1], rel=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbaFallbackWarning)  # no fallback under auto
        adgen.grad(bench_heat.heat, backend="auto")(u0, alpha)


def test_rnn_views_of_a_buffer_and_matrix_products():
    """The benchmark's RNN: rows of the state buffer are views (hs[t]) whose adjoint is the
    same row of the buffer's adjoint; y.max() and matrix-vector products in nopython form."""
    from bench.workloads import rnn as bench_rnn

    rng = np.random.default_rng(22)
    args = bench_rnn.make_args(rng)
    wrt = (0, 1, 2, 3, 4)
    g = adgen.grad(bench_rnn.rnn, argnums=wrt, backend="numba")(*args)
    hand = bench_rnn.rnn_hand(*args)  # Karpathy's adjoint, derived by hand
    for mine, ref in zip(g, hand):
        assert_grad_close(mine, ref, rtol=1e-9, atol=1e-12)
    # and h0, which the hand adjoint leaves out, by central differences
    g_h0 = adgen.grad(bench_rnn.rnn, argnums=7, backend="numba")(*args)
    assert_grad_close(g_h0, numerical_grad(bench_rnn.rnn, args, 7), rtol=1e-5, atol=1e-8)


def _kernel_args(name, rng):
    if name == "stencil":
        return (rng.random(12), 0.2), (0, 1)
    if name == "kalman_scalar":
        return (np.cumsum(rng.standard_normal(30)), 0.5, 1.0), (0, 1, 2)
    if name == "trisolv_loops":
        return (np.tril(rng.random((6, 6))) + 3.0 * np.eye(6), rng.random(6)), (0, 1)
    if name == "cholesky_loops":
        return (spd(5, rng),), (0,)
    if name == "lu_loops":
        return (dominant(5, rng),), (0,)
    return (rng.random((6, 6)),), (0,)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("kernel", [bench_numba.stencil, kalman_scalar, trisolv_loops, cholesky_loops,
                                    lu_loops, seidel_loops], ids=lambda k: k.__name__)
def test_benchmark_kernels(kernel, policy):
    """The scalar-loop kernels bench/experiments/numba_backend.py times (imported, not a
    second copy), at small sizes: central differences of the njit primal, and the default
    backend; the arguments are left as a plain call leaves them."""
    rng = np.random.default_rng(25)
    args, argnums = _kernel_args(kernel.__name__, rng)
    before = copy.deepcopy(args)
    g = adgen.grad(kernel, argnums=argnums, mutation=policy, backend="numba")(*args)
    g = g if isinstance(g, tuple) else (g,)
    primal = numba.njit(kernel)
    g_default = adgen.grad(kernel, argnums=argnums, mutation=policy)(*args)
    g_default = g_default if isinstance(g_default, tuple) else (g_default,)
    for k, mine, ref in zip(argnums, g, g_default):
        assert_grad_close(mine, numerical_grad(primal, args, k), rtol=1e-5, atol=1e-7)
        assert_grad_close(mine, ref, rtol=1e-10, atol=1e-12)
    for a, b in zip(args, before):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)


def test_kalman_filter_with_linalg():
    """The suite's Kalman filter (the issue's workload): inv, solve and det of the innovation
    covariance in every step, against the hand adjoint and central differences."""
    from bench.workloads import kalman

    w = next(w for w in kalman.workloads() if w.primal is kalman.kalman)
    args = w.make_args(np.random.default_rng(29))
    g = adgen.grad(kalman.kalman, argnums=w.argnums, backend="numba")(*args)
    hand = kalman.kalman_hand(*args)
    for mine, ref in zip(g, hand):
        assert_grad_close(mine, ref, rtol=1e-9, atol=1e-12)
    assert_grad_close(g[0], numerical_grad(kalman.kalman, args, 0), rtol=1e-5, atol=1e-7)


def transposed(A, x):
    y = A.T @ x
    s = 0.0
    for i in range(y.shape[0]):
        s += np.tanh(y[i]) * y[i]
    return s


def test_transpose_and_matrix_vector_products():
    rng = np.random.default_rng(28)
    A, x = rng.standard_normal((4, 3)), rng.standard_normal(4)
    g = adgen.grad(transposed, argnums=(0, 1), backend="numba")(A, x)
    assert_grad_close(g[0], numerical_grad(transposed, (A, x), 0))
    assert_grad_close(g[1], numerical_grad(transposed, (A, x), 1))


def test_vectorised_code_without_a_loop():
    x = np.random.default_rng(11).standard_normal(7)
    for policy in POLICIES:
        g = adgen.grad(no_loop, mutation=policy, backend="numba")(x)
        assert_grad_close(g, numerical_grad(no_loop, (x,), 0))
        assert_grad_close(g, 2.0 * x + np.cos(x), rtol=1e-12)


def test_njit_dispatcher_and_repeat_calls():
    jitted = numba.njit(mse)
    rng = np.random.default_rng(0)
    y, yh = rng.random(10), rng.random(10)
    gf = adgen.grad(jitted, argnums=(0, 1), backend="numba")
    for _ in range(3):  # compiled once, same answer every call
        g = gf(y, yh)
        assert_grad_close(g[0], 2.0 * (y - yh) / 10)
        assert_grad_close(g[1], -2.0 * (y - yh) / 10)
    # another shape, same types: the same compiled code
    y2, yh2 = rng.random(7), rng.random(7)
    assert_grad_close(gf(y2, yh2)[0], 2.0 * (y2 - yh2) / 7)


def test_vjp_pullback_is_reusable():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(9)
    out, pb = adgen.vjp(fill, x, 0.4, backend="numba")
    assert out == pytest.approx(fill(x, 0.4))
    first = pb(1.0)
    second = pb(1.0)
    np.testing.assert_array_equal(first[0], second[0])
    assert first[1] == second[1]
    assert_grad_close(pb(2.5)[0], 2.5 * numerical_grad(fill, (x, 0.4), 0))


def vector_out(x, a):
    y = np.empty(len(x))
    for i in range(len(x)):
        y[i] = np.sin(a * x[i]) * x[i]
    return y


def masked(x, m):
    s = 0.0
    for i in range(len(x)):
        if m[i]:
            s += x[i] * x[i]
    return s


def test_vjp_of_an_array_output():
    rng = np.random.default_rng(13)
    x, u = rng.random(6), rng.standard_normal(6)
    out, pb = adgen.vjp(vector_out, x, 0.8, backend="numba")
    np.testing.assert_allclose(out, vector_out(x, 0.8), rtol=1e-15)
    got = pb(u)
    _, pb_default = adgen.vjp(vector_out, x, 0.8)
    want = pb_default(u)
    assert_grad_close(got[0], want[0], rtol=1e-12)
    assert got[1] == pytest.approx(want[1], rel=1e-12)
    assert_grad_close(got[0], numerical_grad(lambda x: vector_out(x, 0.8) @ u, (x,), 0))


def test_bool_and_int_array_arguments():
    rng = np.random.default_rng(14)
    x = rng.random(8)
    g = adgen.grad(masked, backend="numba")(x, x > 0.5)
    assert_grad_close(g, 2.0 * x * (x > 0.5))
    g = adgen.grad(masked, backend="numba")(x, (x > 0.5).astype(np.int64))
    assert_grad_close(g, 2.0 * x * (x > 0.5))


def test_source_is_nopython_code():
    rng = np.random.default_rng(2)
    text = adgen.source(soft_dtw, rng.random((4, 3)), 0.5, backend="numba")
    assert "def soft_dtw_forward(C, gamma):" in text
    assert "def soft_dtw_pullback(saved, out_bar):" in text
    assert "sh." not in text and ".append(" not in text and "reversed(" not in text
    assert "# line " in text  # the user's lines over the adjoint blocks
    ns: dict = {}
    exec(compile(text, "<numba source>", "exec"), ns)  # noqa: S102 - runs as a module
    forward = numba.njit(ns["soft_dtw_forward"])
    pullback = numba.njit(ns["soft_dtw_pullback"])
    C = rng.random((4, 3))
    out, saved = forward(C, 0.5)
    assert out == pytest.approx(soft_dtw(C, 0.5))
    assert_grad_close(pullback(saved, 1.0)[0], numerical_grad(soft_dtw, (C, 0.5), 0))


def test_source_auto_shows_the_default_code_where_numba_is_refused():
    with pytest.warns(NumbaFallbackWarning, match="global OFFSETS"):
        text = adgen.source(reads_global_list, np.ones(3), backend="auto")
    assert "from adgen.runtime import *" in text and "def reads_global_list_pullback" in text


def test_float_and_array_globals_are_arguments_read_at_each_call():
    """A float or array global is passed to the nopython forward at each call (numba would
    freeze it): a changed value is seen without recompiling."""
    global SCALE, WEIGHTS
    x = np.random.default_rng(27).random(3)
    g = adgen.grad(reads_globals, backend="numba")
    assert "def reads_globals_forward(x, SCALE, WEIGHTS):" in adgen.source(
        reads_globals, x, backend="numba")
    assert_grad_close(g(x), 2.0 * np.array([1.0, 2.0, 3.0]) * 2.0 * x)
    old = (SCALE, WEIGHTS)
    SCALE, WEIGHTS = 0.5, np.array([1.0, -1.0, 0.0])
    try:
        assert_grad_close(g(x), 0.5 * np.array([1.0, -1.0, 0.0]) * 2.0 * x)
        assert_grad_close(g(x), numerical_grad(reads_globals, (x,), 0))
    finally:
        SCALE, WEIGHTS = old


def test_source_needs_example_arguments():
    with pytest.raises(adgen.AdgenError, match="example"):
        adgen.source(mse, backend="numba")


# --------------------------------------------------------------------------------------------
# Callees: plain Python helpers and numba.njit functions, compiled into the same module


@numba.njit
def softplus(v, beta):
    return np.log(1.0 + np.exp(beta * v)) / beta


def square(v):
    return v * v


def row_energy(r, a):
    """A callee with its own loop (its own tape), called with an array."""
    s = 0.0
    for j in range(len(r)):
        s += np.sin(a * r[j]) * r[j]
    return s


def scaled(v, k):
    """Called with an int k at one site and a float at another: two signatures."""
    return square(v) * k


def uses_callees(X, a):
    s = 0.0
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            s += softplus(X[i, j], a) + scaled(X[i, j], 3) + scaled(a, 0.5)
        s += row_energy(X[i] * a, 0.7)
    return s + square(a)


class Model:
    """Helpers as a user's class would hold them: static methods called by name."""

    @staticmethod
    def loss(X, a):
        s = 0.0
        for i in range(X.shape[0]):
            s += square(X[i, 0] - a) + softplus(X[i, 1], 2.0)
        return s


@pytest.mark.parametrize("policy", POLICIES)
def test_callees_are_differentiated_and_compiled(policy):
    rng = np.random.default_rng(23)
    X, a = rng.standard_normal((4, 3)), 0.8
    g = adgen.grad(uses_callees, argnums=(0, 1), mutation=policy, backend="numba")(X, a)
    for k in (0, 1):
        assert_grad_close(g[k], numerical_grad(uses_callees, (X, a), k), rtol=1e-6)
    g_default = adgen.grad(uses_callees, argnums=(0, 1), mutation=policy)(X, a)
    assert_grad_close(g[0], g_default[0], rtol=1e-12, atol=1e-14)
    text = adgen.source(uses_callees, X, a, backend="numba")
    # each callee is compiled in the module, once per argument signature
    assert "@njit(cache=_CACHE, error_model='numpy')\ndef softplus_forward(v, beta):" in text
    assert "def scaled_forward(v, k):" in text and "def scaled_forward_2(v, k):" in text
    assert "def row_energy_pullback(saved, out_bar):" in text
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbaFallbackWarning)
        g = adgen.grad(Model.loss, argnums=(0, 1), backend="auto")(X, a)
    assert_grad_close(g[0], numerical_grad(Model.loss, (X, a), 0))
    assert_grad_close(g[1], numerical_grad(Model.loss, (X, a), 1))


@numba.njit
def scaled_softplus(v):
    return 2.0 * softplus(v, 1.5)  # an njit function calling another


@numba.njit
def count_up(n):
    s = 0
    for i in numba.prange(n):  # numba's own names: only numba runs this
        s += i
    return s


def njit_chain(x):
    s = 0.0
    k = count_up(4)  # inactive: the njit function runs, not differentiated
    for i in range(len(x)):
        s += scaled_softplus(x[i]) * k
    return s


def njit_pair(x):
    s = 0.0
    for i in range(len(x)):
        s += scaled_softplus(x[i]) * x[i]
    return s


def test_njit_calling_njit_and_an_opaque_njit_helper():
    """An njit function calling another is differentiated through both; one that uses
    numba's own constructs (prange) stays numba's: the default backend runs it where no
    gradient goes through it, the numba backend refuses it by name (auto falls back)."""
    x = np.random.default_rng(30).standard_normal(5)
    for backend in ("default", "numba"):
        g = adgen.grad(njit_pair, backend=backend)(x)
        assert_grad_close(g, numerical_grad(njit_pair, (x,), 0))
    g = adgen.grad(njit_chain)(x)
    assert_grad_close(g, numerical_grad(njit_chain, (x,), 0))
    with pytest.raises(adgen.UnsupportedError, match="calls count_up, a numba.njit") as err:
        adgen.grad(njit_chain, backend="numba")(x)
    assert f":{_line_of(njit_chain, 'k = count_up(4)')}:" in str(err.value)
    with pytest.warns(NumbaFallbackWarning, match="count_up"):
        g = adgen.grad(njit_chain, backend="auto")(x)
    assert_grad_close(g, numerical_grad(njit_chain, (x,), 0))


def test_njit_callee_on_the_default_backend_and_as_the_function():
    """A numba.njit callee is differentiated through its py_func on every backend; an
    inactive call of it still runs the compiled function."""
    rng = np.random.default_rng(24)
    x = rng.standard_normal(5)

    def f(x):
        s = softplus(1.0, 2.0)  # inactive: the njit function runs
        for i in range(len(x)):
            s += softplus(x[i], 1.5) * x[i]
        return s

    g = adgen.grad(f)(x)
    assert_grad_close(g, numerical_grad(f, (x,), 0))
    # a rule registered for the dispatcher itself wins over its source
    jitted = numba.njit(lambda v: 2.0 * v)

    def uses_ruled(x):
        return jitted(x[0]) * x[1]

    @adgen.rrule(jitted)
    def _(v):
        return jitted(v), lambda g: (g * 3.0,)  # deliberately not 2: the rule is used

    assert_grad_close(adgen.grad(uses_ruled)(np.array([1.0, 2.0])), np.array([6.0, 2.0]))


# --------------------------------------------------------------------------------------------
# What the backend refuses, and what "auto" does instead


def needs_guard(x, k):
    y = x * x  # the gradient of x * x reads x ...
    s = 0.0
    for i in range(len(x)):
        s += np.sin(y[i]) * k
        x[i] = x[i] * 3.0  # ... which this write may overwrite: a guarded site
    return s


def overwrites_needed(x):
    y = x * x
    x.fill(0.0)
    return np.sum(y) + np.sum(x)


SCALE = 2.0


def reads_global(x):
    s = 0.0
    for i in range(len(x)):
        s += SCALE * x[i]
    return s


STEPS = 3
WEIGHTS = np.array([1.0, 2.0, 3.0])
OFFSETS = [0.0, 1.0, 2.0]


def reads_globals(x):
    s = 0.0
    for i in range(len(x)):
        s += SCALE * WEIGHTS[i] * x[i] * x[i]
    return s


def reads_global_list(x):
    s = 0.0
    for i in range(len(x)):
        s += OFFSETS[i] * x[i]
    return s


def reads_global_int(x):
    s = 0.0
    for i in range(STEPS):  # numba would freeze STEPS into the machine code
        s += x[i] * x[i]
    return s


def with_default(x, a=2.0):
    s = 0.0
    for i in range(len(x)):
        s += a * x[i] * x[i]
    return s


def helper(v):
    return v * v


def calls_helper(x):
    s = 0.0
    for i in range(len(x)):
        s += helper(x[i])
    return s


def arr_helper(y, i):
    y[i] = y[i] * 2.0  # writes its argument: its adjoint goes through shadow memory
    return y[i] + 1.0


def calls_arr_helper(x):
    s = 0.0
    for i in range(len(x)):
        s += arr_helper(x, i)
    return s


def power_sum(x, n):
    if n == 0:
        return x[0]
    return x[n] * power_sum(x, n - 1)


def calls_recursive(x):
    return power_sum(x, len(x) - 1)


def reads_two(x, y):
    s = 0.0
    for i in range(len(x)):
        x[i] = 2.0 * x[i]
        s += x[i] * y[i]
    return s


def uses_einsum(x):
    return np.einsum("i,i->", x, x)


def _line_of(fn, text):
    import inspect

    lines, start = inspect.getsourcelines(fn)
    for k, line in enumerate(lines):
        if text in line:
            return start + k
    raise AssertionError(text)


def test_guarded_site_save_copies_and_strict_raises_the_default_backends_error():
    """Under "save" a guarded site compiles (the captured value is copied when captured);
    under "strict" the nopython guard raises the MutationError the default backend raises,
    naming both lines, when the write happens (after the writes before it, as a plain run)."""
    x = np.random.default_rng(4).random(6)
    line = _line_of(needs_guard, "x[i] = x[i] * 3.0")
    mine = x.copy()
    g = adgen.grad(needs_guard, backend="numba", mutation="save")(mine, 2)
    assert_grad_close(g, numerical_grad(needs_guard, (x, 2), 0))
    np.testing.assert_array_equal(mine, x * 3.0)  # the write happened, as in a plain call
    assert "saved_x_1 = x.copy()" in adgen.source(needs_guard, x, 2, backend="numba")
    errors = {}
    for backend in ("default", "numba"):
        with pytest.raises(adgen.MutationError) as err:
            adgen.grad(needs_guard, backend=backend, mutation="strict")(x.copy(), 2)
        errors[backend] = err.value
    assert str(errors["numba"]) == str(errors["default"])
    assert f"test_numba_backend.py:{line}:" in str(errors["numba"])
    assert f"gradient of line {line - 4} reads" in str(errors["numba"])
    assert errors["numba"].captured_at.line == line - 4
    text = adgen.source(needs_guard, x, 2, backend="numba", mutation="strict")
    assert "strict_before_write(live_captures, x, i, t6, 0)" in text
    assert "copy()" not in text  # the check, not a copy: the values read stay the live ones


def test_guarded_site_of_a_slice_under_save():
    """The suite's trisolv (x[i] -= L[i, :i] @ x[:i]): x[:i] is captured per row, then x[i]
    is written; the copies keep the rows the pullback reads."""
    from bench.workloads import polybench_linalg

    rng = np.random.default_rng(26)
    L, b = np.tril(rng.random((7, 7))) + 3.0 * np.eye(7), rng.random(7)
    g = adgen.grad(polybench_linalg.trisolv, argnums=(0, 1), backend="numba")(L, b)
    hand = polybench_linalg.trisolv_hand(L, b)
    assert_grad_close(g[0], hand[0], rtol=1e-10, atol=1e-12)
    assert_grad_close(g[1], hand[1], rtol=1e-10, atol=1e-12)
    assert_grad_close(g[1], numerical_grad(polybench_linalg.trisolv, (L, b), 1))


def test_strict_names_both_lines_as_the_default_backend():
    x = np.random.default_rng(5).random(4)
    with pytest.raises(adgen.MutationError) as err:
        adgen.grad(overwrites_needed, mutation="strict", backend="numba")(x.copy())
    text = str(err.value)
    assert str(_line_of(overwrites_needed, "x.fill(0.0)")) in text
    assert str(_line_of(overwrites_needed, "y = x * x")) in text


@pytest.mark.parametrize("fn, args, pattern, text", [
    (reads_global_list, (np.ones(3),), "global OFFSETS", "s += OFFSETS[i] * x[i]"),
    (calls_recursive, (np.ones(3),), "recursion",
     (power_sum, "return x[n] * power_sum(x, n - 1)")),
    (uses_einsum, (np.ones(3),), "nopython", "np.einsum"),
])
def test_refusals_name_the_construct(fn, args, pattern, text):
    with pytest.raises(adgen.UnsupportedError, match=pattern) as err:
        adgen.grad(fn, backend="numba")(*args)
    if text is not None:
        where, text = text if isinstance(text, tuple) else (fn, text)
        assert f":{_line_of(where, text)}:" in str(err.value)
    with pytest.warns(NumbaFallbackWarning):
        g = adgen.grad(fn, backend="auto")(*copy.deepcopy(args))
    assert_grad_close(g, numerical_grad(fn, args, 0))


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_helper_writing_its_argument_compiles(mutation):
    # refused ('writes its argument y in place') until session 24's filled arguments (66ac191)
    x = np.random.default_rng(14).random(4)
    g = adgen.grad(calls_arr_helper, mutation=mutation, backend="numba")(x.copy())
    assert_grad_close(g, 2.0 * np.ones(4))
    assert_grad_close(g, numerical_grad(calls_arr_helper, (x,), 0))


def test_parameters_left_to_their_defaults_are_passed_positionally():
    # euler(y0) with n=20, h=0.05 (numbers): compiled for every positional parameter, the
    # defaults passed as Python binds them; a keyword argument stays refused
    x = np.random.default_rng(13).random(4)
    g = adgen.grad(with_default, backend="numba")
    assert_grad_close(g(x), numerical_grad(with_default, (x,), 0))
    assert_grad_close(g(x), 4.0 * x)
    assert_grad_close(g(x, 3.0), 6.0 * x)  # given: its own compilation
    assert_grad_close(g(x), 4.0 * x)
    value, grads = adgen.value_and_grad(with_default, argnums=0, backend="numba")(x)
    assert value == pytest.approx(2.0 * np.sum(x * x)) and np.allclose(grads, 4.0 * x)
    with pytest.raises(adgen.ArgnumsError):
        adgen.grad(with_default, argnums=1, backend="numba")(x)  # a only by its default
    with pytest.raises(adgen.UnsupportedError, match="defaults"):
        adgen.grad(with_default, backend="numba")(x, a=3.0)


def test_global_int_is_folded_and_recompiled_when_it_changes():
    global STEPS
    x = np.random.default_rng(12).random(6)
    g = adgen.grad(reads_global_int, backend="numba")
    assert "STEPS = 3" in adgen.source(reads_global_int, x, backend="numba")
    assert_grad_close(g(x), np.r_[2.0 * x[:3], np.zeros(3)])
    STEPS = 5
    try:
        assert_grad_close(g(x), np.r_[2.0 * x[:5], np.zeros(1)])
    finally:
        STEPS = 3
    assert_grad_close(g(x), np.r_[2.0 * x[:3], np.zeros(3)])


def test_arguments_sharing_memory_are_refused_or_fall_back():
    x = np.random.default_rng(6).random(5)
    a = x.copy()
    with pytest.raises(adgen.UnsupportedError, match="share memory"):
        adgen.grad(reads_two, argnums=(0, 1), backend="numba")(a, a[1:])
    shared = x.copy()
    with pytest.warns(NumbaFallbackWarning, match="share memory"):
        g = adgen.grad(reads_two, argnums=(0, 1), backend="auto")(shared, shared)
    again = x.copy()
    expected = adgen.grad(reads_two, argnums=(0, 1))(again, again)
    assert_grad_close(g[0], expected[0])
    # and distinct arrays run on numba, right
    a, b = x.copy(), x.copy() + 1.0
    g = adgen.grad(reads_two, argnums=(0, 1), backend="numba")(a.copy(), b)
    assert_grad_close(g[0], numerical_grad(reads_two, (a, b), 0))


def test_unsupported_argument_types():
    with pytest.raises(adgen.UnsupportedError, match="float16"):
        adgen.grad(mse, backend="numba")(np.ones(3, np.float16), np.ones(3, np.float16))
    with pytest.raises(ValueError, match="backend"):
        adgen.grad(mse, backend="cuda")(np.ones(3), np.ones(3))


def test_auto_uses_numba_without_warning_where_it_can():
    rng = np.random.default_rng(8)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbaFallbackWarning)
        g = adgen.grad(recurrence, backend="auto")(rng.standard_normal(5), 0.3)
    assert g.shape == (5,)


def triangular_sin(L, b):
    """An inner loop that records a computed number per iteration (a list tape: the loop is
    nested; the element reads themselves are read again by the pullback)."""
    n = len(b)
    x = np.zeros(n)
    for i in range(n):
        acc = b[i]
        for j in range(i):
            # (sin's argument is taped: L[i, j] * x[j] alone would be computed again)
            acc = acc - np.sin(L[i, j] * x[j] * acc)
        x[i] = acc / L[i, i]
    return np.sum(x * x)


def test_column_types_are_checked_against_numba(tmp_path, monkeypatch):
    """A recorded value whose column kind disagrees with numba's inference is refused (numba
    would cast it into the column silently)."""
    from adgen import numba_arguments, numba_function

    monkeypatch.setenv("ADGEN_NUMBA_CACHE", str(tmp_path))  # compiled, not loaded

    x = np.random.default_rng(9).random(4)
    nf = numba_function.NumbaFunction(triangular_sin, compile_function(
        triangular_sin, sig=(2, 1)), (2, 1), "numba")
    key = numba_arguments.arg_types((np.eye(4), x), triangular_sin)
    code = nf.code_for(key)
    assert code.columns  # the inner loop keeps a list tape
    name = next(n for n, k in code.columns.items() if k == "f8")
    code.columns[name] = "i8"
    with pytest.raises(adgen.UnsupportedError, match=f"recorded {name}"):
        nf._build(key, (np.eye(4) * 2.0, x))


def test_cache_directory_holds_the_module(tmp_path, monkeypatch):
    monkeypatch.setenv("ADGEN_NUMBA_CACHE", str(tmp_path))
    clear_cache()
    from adgen import backends

    backends._NUMBA.clear()
    y = np.random.default_rng(10).random(4)
    adgen.grad(mse, backend="numba")(y, y + 1.0)
    files = [f for f in os.listdir(tmp_path) if f.endswith(".py")]
    assert len(files) == 1 and re.match(r"adgen_numba_mse_[0-9a-f]{20}\.py", files[0])
    assert os.path.isdir(tmp_path / "__pycache__")  # numba's cache, next to the module


_FRESH_PROCESS = """
import sys
import numpy as np
import adgen
sys.path.insert(0, sys.argv[1])
from test_numba_backend import fill
x = np.linspace(-1.0, 1.0, 7)
out, pb = adgen.vjp(fill, x, 0.4, backend="numba")   # forward and pullback from the cache
v, g = adgen.value_and_grad(fill, argnums=(0, 1), backend="numba")(x, 0.4)
print(repr(out), repr(v), *pb(1.0)[0], pb(1.0)[1], *g[0], g[1])
"""


def weights_on_joined(w, a, b):
    """np.concatenate of a list display: numba's takes a tuple."""
    c = np.concatenate([a, b, a])
    s = 0.0
    for i in range(len(w)):
        s += np.sin(w[i] * c[i])
    return s


def test_a_joined_list_is_a_tuple_for_numba():
    rng = np.random.default_rng(10)
    w, a, b = rng.random(7), rng.random(2), rng.random(3)
    g = adgen.grad(weights_on_joined, backend="numba")(w, a, b)
    assert_grad_close(g, numerical_grad(weights_on_joined, (w, a, b), 0))
    # (refused before: the numba backend takes no Python lists; the adjoint of a and b, whose
    # concatenate_vjp has no nopython form yet, is not asked for)


def test_heat_functional_compiles():
    """The suite's heat-functional (u = np.concatenate([...]) each step), refused before:
    the list is a tuple for numba, and the adjoint's parts are slices of the cotangent."""
    from bench.workloads import heat

    args = heat.make_args(np.random.default_rng(0))
    g = adgen.grad(heat.heat_functional, backend="numba")(*copy.deepcopy(args))
    hand = heat.heat_functional_hand(*copy.deepcopy(args))
    assert_grad_close(g, hand[0] if isinstance(hand, tuple) else hand, rtol=1e-12)


def energy_and_state(x, w):
    """A loss and what a training loop logs beside it (has_aux)."""
    h = np.empty(len(x))
    s = 0.0
    for i in range(len(x)):
        h[i] = np.tanh(w * x[i])
        s += h[i] * h[i]
    return s, h


def energy_and_count(x):
    s = 0.0
    for i in range(len(x)):
        s += np.exp(-x[i])
    return s, len(x)


@pytest.mark.parametrize("mutation", POLICIES)
def test_has_aux(mutation):
    """has_aux on numba: the gradient of the first output, the second returned as computed
    (an array, an int), as on the default backend."""
    x = np.random.default_rng(8).random(6)

    def loss(x, w):
        return energy_and_state(x, w)[0]

    (gx, gw), h = adgen.grad(energy_and_state, argnums=(0, 1), has_aux=True,
                             backend="numba", mutation=mutation)(x.copy(), 0.7)
    assert_grad_close(gx, numerical_grad(loss, (x, 0.7), 0))
    assert_grad_close(gw, numerical_grad(loss, (x, 0.7), 1))
    np.testing.assert_allclose(h, np.tanh(0.7 * x), rtol=1e-15)
    (value, aux), g = adgen.value_and_grad(energy_and_count, has_aux=True, backend="numba",
                                           mutation=mutation)(x.copy())
    assert aux == 6 and value == pytest.approx(np.sum(np.exp(-x)), rel=1e-14)
    assert_grad_close(g, -np.exp(-x), rtol=1e-12)
    # a tuple output's vjp: the pullback is compiled for its cotangent when it is called
    out, pullback = adgen.vjp(energy_and_state, x.copy(), 0.7, backend="numba")
    ct = np.random.default_rng(9).random(6)
    got = pullback((2.0, ct))
    expected = adgen.vjp(energy_and_state, x.copy(), 0.7)[1]((2.0, ct))
    assert_grad_close(got[0], expected[0], rtol=1e-12)
    assert_grad_close(got[1], expected[1], rtol=1e-12)


def scaled_rows(a, r, whole):
    c = a[:, 1] * a[:, 1]
    if whole:
        for j in range(a.shape[1]):
            a[r, j] = 0.5 * a[r, j]
    else:
        a[r, 0] = 0.5 * a[r, 0]
    return np.sum(c) + np.sum(a)


@pytest.mark.parametrize("whole", [False, True])
def test_a_bool_argument(whole):
    """A bool flag (the default pipeline tracks it, its signature saying no more than "not
    a float"): no gradient, and no refusal naming it as an unknown buffer (it was). With
    whole=False the loop's bound, bound in the arm that did not run, is None in the saved
    values vjp hands back: the pullback is compiled for the forward's (optional) type of it,
    not for None (numba refused that: it cannot subtract 1 from None)."""
    a = np.random.default_rng(13).random((4, 3))
    g = adgen.grad(scaled_rows, backend="numba")(a.copy(), 2, whole)
    assert_grad_close(g, numerical_grad(scaled_rows, (a.copy(), 2, whole), 0))
    cts = adgen.vjp(scaled_rows, a.copy(), 2, whole, backend="numba")[1](1.0)
    assert cts[1] is None and cts[2] is None


def test_gradients_carry_numpys_own_float64_dtype():
    """numba boxes arrays with a dtype object of its own (equal to float64, not NumPy's);
    the backend hands its cotangents on as views with NumPy's float64 dtype, so adgen.grad's
    checks by identity (as_gradient) take their fast path instead of converting each."""
    from adgen.transforms.analyses.kinds import signature

    from adgen.backends import compile_for

    rng = np.random.default_rng(12)
    y, y_hat = rng.random(8), rng.random(8)
    compiled = compile_for(mse, "save", (0, 1), signature((y, y_hat)), "numba")
    out, cts = compiled.gradient(y, y_hat)
    _, saved = compiled.forward(y, y_hat)
    for g in (cts, compiled.pullback(saved, 1.0)):
        assert all(gk.dtype is np.dtype(np.float64) for gk in g)
        assert_grad_close(g[0], 2.0 * (y - y_hat) / 8, rtol=1e-12)


def test_arguments_sharing_memory_run_where_no_adjoint_is_shared():
    """mse writes no argument and takes no view of one: each argument's adjoint is its own
    array on both backends, so arguments sharing memory (the same array, overlapping views)
    run on numba without a check, and give the partial derivatives the default backend
    gives (central differences of copies)."""
    x = np.random.default_rng(7).random(9)
    for a, b in ((x, x), (x[1:], x[:-1])):
        g = adgen.grad(mse, argnums=(0, 1), backend="numba")(a, b)
        expected = adgen.grad(mse, argnums=(0, 1))(a, b)
        for k in range(2):
            assert_grad_close(g[k], expected[k], rtol=1e-12)
            assert_grad_close(g[k], numerical_grad(mse, (a.copy(), b.copy()), k))


def test_grad_is_one_compiled_call_and_vjp_shares_its_module(tmp_path, monkeypatch):
    """grad runs the module's gradient function (forward, then the pullback seeded with
    1.0, in one nopython call); vjp runs the forward and the pullback of the same module,
    compiled with it, in this process and from numba's cache in a fresh one."""
    import subprocess

    from adgen.transforms import pipeline

    from adgen import backends

    monkeypatch.setenv("ADGEN_NUMBA_CACHE", str(tmp_path))
    pipeline.clear_cache()
    backends._NUMBA.clear()
    rng = np.random.default_rng(21)
    x = rng.standard_normal(7)
    assert "def fill_gradient(x, w, x_grad):" in adgen.source(fill, x, 0.4, backend="numba")
    g = adgen.grad(fill, argnums=(0, 1), backend="numba")(x, 0.4)
    compiled = next(c for base, c in backends._NUMBA.values() if base.name == "fill")
    assert compiled.gradient is not None and compiled.gradient(x, 0.4) is not None
    expected = (numerical_grad(fill, (x, 0.4), 0), numerical_grad(fill, (x, 0.4), 1))
    assert_grad_close(g[0], expected[0])
    assert g[1] == pytest.approx(expected[1], rel=1e-6)
    out, pb = adgen.vjp(fill, x, 0.4, backend="numba")
    assert_grad_close(pb(1.0)[0], g[0], rtol=1e-14)
    assert_grad_close(pb(-2.0)[0], -2.0 * expected[0])
    v, gv = adgen.value_and_grad(fill, backend="numba")(x, 0.4)
    assert v == pytest.approx(fill(x, 0.4), rel=1e-14)
    assert_grad_close(gv, g[0], rtol=1e-14)
    # a fresh process loads the module's functions from numba's cache, vjp first
    x = np.linspace(-1.0, 1.0, 7)
    r = subprocess.run([sys.executable, "-c", _FRESH_PROCESS, str(Path(__file__).parent)],
                       capture_output=True, text=True, env=dict(os.environ), check=True)
    values = [float(s) for s in r.stdout.split()]
    n = len(x)
    assert values[0] == pytest.approx(fill(x, 0.4)) and values[1] == values[0]
    want = numerical_grad(fill, (x, 0.4), 0)
    np.testing.assert_allclose(values[2:2 + n], want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(values[3 + n:3 + 2 * n], want, rtol=1e-6, atol=1e-9)
    assert values[2 + n] == pytest.approx(numerical_grad(fill, (x, 0.4), 1), rel=1e-6)
    assert values[-1] == pytest.approx(values[2 + n], rel=1e-14)


def test_the_rewrite_is_kept_in_the_cache_directory(tmp_path, monkeypatch):
    """A later process skips the nopython rewrite of code it has rewritten before: the
    result is kept next to the module, keyed by the trees (with their lines), the argument
    types and the rewrite's own code; another key runs the rewrite."""
    from adgen.transforms import numba_module, pipeline

    from adgen import numba_arguments, numba_function

    monkeypatch.setenv("ADGEN_NUMBA_CACHE", str(tmp_path))
    base = pipeline.compile_function(fill, sig=(1, "number"))
    key = numba_arguments.arg_types((np.ones(3), 0.5), fill)
    first = numba_function.NumbaFunction(fill, base, (1, "number"), "numba").code_for(key)
    kept = [f for f in os.listdir(tmp_path) if f.startswith("adgen_numba_code_")]
    assert len(kept) == 1

    def rewrite(*args, **kwargs):
        raise RuntimeError("the rewrite ran")

    monkeypatch.setattr(numba_module, "to_nopython", rewrite)
    again = numba_function.NumbaFunction(fill, base, (1, "number"), "numba").code_for(key)
    assert again == first and again is not first
    other = numba_arguments.arg_types((np.ones(3, dtype=np.int64), 0.5), fill)
    with pytest.raises(adgen.CompilerError, match="the rewrite ran"):
        numba_function.NumbaFunction(fill, base, (1, "number"), "numba").code_for(other)
