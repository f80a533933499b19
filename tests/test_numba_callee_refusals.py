"""A callee whose argument's adjoint goes through shadow memory is refused by the numba
backend at the call's line, and the message says what in the callee does it, with the
callee's line. A callee writing only arrays it made, and a callee calling another function in
turn, compile since session 22 (both were refused); a callee filling an argument since
session 24, unless the array it fills is one it is also given.
A guarded site in a callee is refused at its line under "strict". backend="auto" falls back with the
default backend's gradient, checked against central differences. Skipped without numba."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen
from adgen.backends import NumbaFallbackWarning

numba = pytest.importorskip("numba")


def own_buffer(x):
    y = x * 2.0
    a = y[0] ** 2
    y[0] = 1.0  # writes the array it made, over a value the gradient reads
    return a + np.sum(y * y)


def calls_own_buffer(x):
    return 3.0 * own_buffer(x)


def scale_into(out, x):
    for i in range(x.shape[0]):
        out[i] = 2.0 * x[i]  # writes its argument


def calls_scale_into(x):
    out = np.zeros(x.shape[0])
    scale_into(out, x)
    return np.sum(out * out * x)


def _line(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, s in enumerate(lines) if text in s)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_callee_filling_its_argument(mutation):
    """scale_into(out, x) fills out: refused at the call ('writes its argument out in
    place') until session 24, whose callee pullback takes the caller's buffer of out
    (transforms/numba_filled_arguments.py). sum(out * out * x) with out = 2x: 12 x ** 2."""
    x = np.linspace(0.1, 1.0, 5)
    g = adgen.grad(calls_scale_into, mutation=mutation, backend="numba")(x)
    assert_grad_close(g, numerical_grad(calls_scale_into, (x,), 0))
    assert_grad_close(g, 12.0 * x ** 2)


def calls_scale_into_itself(x):
    out = x * 1.0
    scale_into(out, out)  # fills the array it reads
    return np.sum(out * out)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_callee_filling_an_array_it_is_also_given_is_named_with_its_line(mutation):
    """The callee's pullback keeps the adjoint of out and of x apart (the default backend's
    shadow memory gives the two one): refused at the call, naming both."""
    x = np.linspace(0.1, 1.0, 5)
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(calls_scale_into_itself, mutation=mutation, backend="numba")(x)
    assert "each array scale_into fills in a buffer of its own, and out, which it fills, " \
        "is out, which it is also given" in str(err.value)
    assert f":{_line(calls_scale_into_itself, 'scale_into(out, out)')}:" in str(err.value)
    with pytest.warns(NumbaFallbackWarning):
        g = adgen.grad(calls_scale_into_itself, mutation=mutation, backend="auto")(x)
    assert_grad_close(g, numerical_grad(calls_scale_into_itself, (x,), 0))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_number_read_before_a_write_in_a_callee(mutation):
    """y[0] read, then overwritten, in the callee: refused at the read until session 23, the
    callee being compiled without its argument's kind (the read might be a view of y, a
    guarded site); compiled for the call's types, a is a number and the site is free.
    a + sum(y * y) with y = 2x, y[0] = 1: 3 * (8 x_0 + 8 x_i for i > 0)."""
    x = np.linspace(0.1, 1.0, 5)
    g = adgen.grad(calls_own_buffer, mutation=mutation, backend="numba")(x)
    assert_grad_close(g, numerical_grad(calls_own_buffer, (x,), 0))
    assert_grad_close(g, 3.0 * np.r_[8.0 * x[0], 8.0 * x[1:]])


def own_slice(x, k):
    y = x * 2.0
    a = np.sum(y[:2] ** 2)
    y[k] = 1.0  # a guarded site (overlapping nothing the gradient reads when k >= 2)
    return a + np.sum(y * y)


def calls_own_slice(x):
    return 3.0 * own_slice(x, x.shape[0] - 1)


def test_a_guarded_site_in_a_callee_is_refused_at_its_line():
    """An array read, then written, in the callee: under "strict" the site is checked in the
    differentiated function's forward only, so a callee's is refused at its line ("save"
    copies the slice when it is read, and compiles)."""
    x = np.linspace(0.1, 1.0, 5)
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(calls_own_slice, mutation="strict", backend="numba")(x)
    assert err.value.location.line == _line(own_slice, "a = np.sum(y[:2] ** 2)")
    with pytest.warns(NumbaFallbackWarning):
        g = adgen.grad(calls_own_slice, mutation="strict", backend="auto")(x)
    assert_grad_close(g, numerical_grad(calls_own_slice, (x,), 0))
    g = adgen.grad(calls_own_slice, mutation="save", backend="numba")(x)
    assert_grad_close(g, numerical_grad(calls_own_slice, (x,), 0))


def doubled(v):
    return 2.0 * v


def through_doubled(v):
    return doubled(v) * v  # a callee that calls another function in turn


def calls_through_doubled(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += through_doubled(x[i])
    return s


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_callee_calling_another_function(mutation):
    """A callee's own calls pass their adjoints through shadow memory on the default
    backend: refused by name until session 22; numba now adds the inner cotangent."""
    x = np.linspace(0.5, 1.5, 4)
    g = adgen.grad(calls_through_doubled, mutation=mutation, backend="numba")(x)
    assert_grad_close(g, numerical_grad(calls_through_doubled, (x,), 0))
    assert_grad_close(g, 4.0 * x)  # s = sum 2 x_i ** 2


def lotka_volterra(y, p, out):
    out[0] = p[0] * y[0] - p[1] * y[0] * y[1]  # fills its argument
    out[1] = -p[2] * y[1] + p[3] * y[0] * y[1]


def rk4_preallocated(y0, p, dt, steps):
    y = y0.copy()
    k1, k2, tmp = np.empty(2), np.empty(2), np.empty(2)
    for s in range(steps):
        lotka_volterra(y, p, k1)
        for i in range(2):
            tmp[i] = y[i] + dt * k1[i]
        lotka_volterra(tmp, p, k2)
        for i in range(2):
            y[i] = y[i] + 0.5 * dt * (k1[i] + k2[i])
    return y[0] + y[1]


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_helper_filling_its_argument_beside_guarded_writes(mutation):
    """Heun's method with the right-hand side written into preallocated stages: the
    refusal named 'tmp[i] = ...' and 'a value read at line(s) ... is not an array or a
    number' (the guarded writes beside the call were rewritten first), then the helper's
    in-place write and the call (session 23); it compiles since session 24, right
    against central differences and the default backend."""
    y0, p = np.array([1.0, 0.5]), np.array([1.1, 0.4, 0.4, 0.1])
    args = (y0, p, 0.05, 10)
    g = adgen.grad(rk4_preallocated, argnums=(0, 1, 2), mutation=mutation,
                   backend="numba")(*args)
    default = adgen.grad(rk4_preallocated, argnums=(0, 1, 2), mutation=mutation)(*args)
    for k in range(3):
        assert_grad_close(g[k], numerical_grad(rk4_preallocated, args, k))
        assert_grad_close(g[k], default[k])
