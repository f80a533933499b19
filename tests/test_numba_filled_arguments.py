"""Helpers that fill an argument, the way a right-hand side is written for numba
(``def rhs(y, p, out): out[0] = ...``, called as ``rhs(y, p, k1)`` in an RK4 loop), with
backend="numba": refused at the call until session 24 ("writes its argument out in place");
the helper's pullback now takes its caller's gradient buffer of the array it fills
(transforms/numba_filled_arguments.py). Each gradient is checked against central differences
and the default backend, under both policies (under "strict", a helper writing what it fills
through another helper is refused at its guarded write). Refused, at the call: a helper filling an
array it is also given (or may be); a row of a buffer picked by a counter compiles since
session 25 (tests/test_numba_filled_rows.py). Skipped without numba."""

from __future__ import annotations

import warnings

import numpy as np
import ode_functions
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen
from adgen.backends import NumbaFallbackWarning

numba = pytest.importorskip("numba")


def lotka(y, p, out):
    out[0] = p[0] * y[0] - p[1] * y[0] * y[1]
    out[1] = -p[2] * y[1] + p[3] * y[0] * y[1]


def rk4(y0, p, dt, steps):
    n = y0.shape[0]
    y = y0.copy()
    k1, k2, k3, k4 = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    tmp = np.empty(n)
    for s in range(steps):
        lotka(y, p, k1)
        for i in range(n):
            tmp[i] = y[i] + 0.5 * dt * k1[i]
        lotka(tmp, p, k2)
        for i in range(n):
            tmp[i] = y[i] + 0.5 * dt * k2[i]
        lotka(tmp, p, k3)
        for i in range(n):
            tmp[i] = y[i] + dt * k3[i]
        lotka(tmp, p, k4)
        for i in range(n):
            y[i] += dt / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i])
    return y[0] * y[1]


def accumulate(y, p, out):
    for i in range(y.shape[0]):
        out[i] += p[0] * y[i] * y[i]  # reads what it fills


def rescale(y, p, out):
    out[0] = out[0] * y[0] + p[1]
    out[1] = out[1] * out[0]


def accumulated(x, p):
    acc = np.zeros(x.shape[0])
    for _ in range(3):
        accumulate(x, p, acc)
    r = np.zeros(2)
    r[0] = x[0]
    r[1] = x[1]
    rescale(x, p, r)
    return np.sum(acc * acc) + r[0] * r[1]


def two_outputs(y, a, b):
    a[0] = y[0] * y[1]
    b[0] = a[0] * y[0]
    b[1] = np.sin(y[1])
    return a[0] + b[1]  # and returns a number


def fills_two(x):
    a, b = np.zeros(1), np.zeros(2)
    r = two_outputs(x, a, b)
    return r * b[0] + a[0]


def doubled_stage(y, p, out):
    lotka(y, p, out)  # a helper filling its argument through another
    out[0] = 2.0 * out[0]


def nested(x, p):
    k = np.empty(2)
    s = 0.0
    for _ in range(3):
        doubled_stage(x, p, k)
        s += k[0] * k[1]
    return s


def carried(x, p):
    k = np.empty(2)
    s = 0.0
    for _ in range(3):
        lotka(x, p, k)  # x is the argument, then a new array each step: never k
        s += np.sum(k * k)
        x = x + 0.1 * k
    return s


def whole(y, out):
    out[:] = 2.0 * y


def fills_whole(x):
    k = np.empty(x.shape[0])
    whole(x, k)
    return np.sum(k * x)


def fills_argument(x, p, k):
    lotka(x, p, k)  # k, an argument of the function, filled
    return k[0] * k[1] + x[0]


RHS = lotka


def through_a_global(x, p):
    k = np.empty(2)
    RHS(x, p, k)
    return k[0] * k[1]


def pendulum(y, p, out):
    out[0] = y[1]
    out[1] = -p[0] * np.sin(y[0]) - p[1] * y[1]


_X, _P = np.array([1.0, 0.5]), np.array([1.1, 0.4, 0.4, 0.1])
CASES = {
    "rk4 of Lotka-Volterra": (rk4, (_X, _P, 0.05, 8), (0, 1, 2)),
    "reads what it fills": (accumulated, (_X, _P), (0, 1)),
    "two outputs and a result": (fills_two, (_X,), 0),
    "through another helper": (nested, (_X, _P), (0, 1)),
    "a name carried over the loop": (carried, (_X, _P), (0, 1)),
    "a whole-array write": (fills_whole, (np.array([0.3, -0.7, 1.1]),), 0),
    "an argument filled": (fills_argument, (_X, _P, np.zeros(2)), (0, 1, 2)),
}


def _copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_helper_filling_its_argument(name, mutation):
    f, args, argnums = CASES[name]
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    try:
        default = adgen.grad(f, argnums=argnums, mutation=mutation)(*_copies(args))
    except adgen.MutationError:
        default = None
    if default is None or (mutation == "strict" and f is nested):
        # strict refuses: so does the numba backend, as the default does; and a guarded write
        # in a helper (doubled_stage's out[0] = 2.0 * out[0]) is refused at its line
        assert mutation == "strict"
        with pytest.raises((adgen.MutationError, adgen.UnsupportedError)):
            adgen.grad(f, argnums=argnums, mutation=mutation, backend="numba")(*_copies(args))
        return
    given = _copies(args)
    g = adgen.grad(f, argnums=argnums, mutation=mutation, backend="numba")(*given)
    plain = _copies(args)
    f(*plain)
    for a, b in zip(given, plain):  # the arguments are left as a plain call leaves them
        np.testing.assert_array_equal(a, b)
    g = g if isinstance(argnums, tuple) else (g,)
    default = default if isinstance(argnums, tuple) else (default,)
    for gk, dk, k in zip(g, default, nums):
        assert_grad_close(gk, numerical_grad(f, args, k))
        assert_grad_close(gk, dk)


def test_the_ode_fit_with_stages_in_rows_of_one_buffer():
    """tests/ode_functions.py (another module): rhs(p, y, k[0]) fills a row of the stages'
    buffer and returns it, the state is updated in place and stored per step."""
    p = ode_functions.P_TRUE * 1.1
    args = (p, ode_functions.Y0, ode_functions.OBSERVED, ode_functions.DT)
    g = adgen.grad(ode_functions.misfit, backend="numba")(*args)
    assert_grad_close(g, numerical_grad(ode_functions.misfit, args, 0))
    assert_grad_close(g, adgen.grad(ode_functions.misfit)(*args))


def test_a_global_helper_rebound_between_calls():
    global RHS
    grad = adgen.grad(through_a_global, argnums=(0, 1), backend="numba")
    try:
        for rhs, p in ((lotka, _P), (pendulum, np.array([2.0, 0.3]))):
            RHS = rhs
            g = grad(_X, p)
            for k in (0, 1):
                assert_grad_close(g[k], numerical_grad(through_a_global, (_X, p), k))
    finally:
        RHS = lotka


def fills_what_it_reads(x, p):
    y = x * 1.0
    lotka(y, p, y)
    return y[0] + 2.0 * y[1]


@pytest.mark.parametrize("f, text, said", [
    (fills_what_it_reads, "lotka(y, p, y)", "y, which it fills, is y, which it is also given"),
])
def test_refused_at_the_call(f, text, said):
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(f, argnums=(0, 1), backend="numba")(_X, _P)
    assert said in str(err.value)
    assert err.value.location.file == __file__
    assert text in err.value.location.source_line
    with pytest.warns(NumbaFallbackWarning):
        g = adgen.grad(f, argnums=(0, 1), backend="auto")(_X, _P)
    for k in (0, 1):
        assert_grad_close(g[k], numerical_grad(f, (_X, _P), k))


def test_arguments_sharing_memory_where_one_is_filled():
    """fills_argument(x, p, x): the numba code keeps x's and k's gradients apart, so the call
    is refused when it runs ("auto" gives the default backend's gradient)."""
    x = _X.copy()
    with pytest.raises(adgen.UnsupportedError, match="share memory"):
        adgen.grad(fills_argument, argnums=(0, 1), backend="numba")(x, _P, x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaFallbackWarning)
        x = _X.copy()
        g = adgen.grad(fills_argument, argnums=(0, 1), backend="auto")(x, _P, x)
    x = _X.copy()
    assert_grad_close(g[0], adgen.grad(fills_argument, argnums=(0, 1))(x, _P, x)[0])
