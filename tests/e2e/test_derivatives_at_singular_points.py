"""Derivatives at the points where they are infinite, of functions given Python floats: JAX's
answers (inf or -inf with NumPy's RuntimeWarning), not a ZeroDivisionError raised by the
derivative's own arithmetic. And tangents keep the float32 dtype of float32 primals (as
JAX's do).

Before: ``adgen.grad(np.log)(0.0)`` raised ZeroDivisionError in the pullback (``out_bar / x``
of two Python floats), ``grad`` of ``x ** 0.5`` at 0.0 raised "0.0 cannot be raised to a
negative power", and so did their jvps; jvp of float32 arrays returned float64 tangents.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import adgen
from tests.gradcheck import numerical_grad


def log_of(x):
    return np.log(x)


def square_root(x):
    return x ** 0.5


def power_half(x):
    return np.power(x, 0.5)


def log_one_plus(x):
    return np.log1p(x)


def inverse_tanh(x):
    return np.arctanh(x)


def math_root(x):
    return math.sqrt(x)


def scaled_log(x, w):
    return w * np.log(x) + x * x


# (function, singular point, the derivative there: d log x = 1/x, d x^0.5 = 0.5 x^-0.5,
# d log1p x = 1/(1+x), d arctanh x = 1/(1-x^2), d sqrt x = 1/(2 sqrt x))
SINGULAR = [(log_of, 0.0, math.inf), (square_root, 0.0, math.inf), (power_half, 0.0, math.inf),
            (log_one_plus, -1.0, math.inf), (inverse_tanh, 1.0, math.inf),
            (math_root, 0.0, math.inf), (np.log, 0.0, math.inf)]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("fn, x, want", SINGULAR, ids=lambda v: getattr(v, "__name__", None))
def test_grad_at_a_singular_point_is_infinite_with_numpys_warning(fn, x, want, mutation):
    with pytest.warns(RuntimeWarning):
        g = adgen.grad(fn, mutation=mutation)(x)
    assert g == want
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        value, g = adgen.value_and_grad(fn, mutation=mutation)(x)
    assert g == want and value == fn(x)


@pytest.mark.parametrize("fn, x, want", SINGULAR, ids=lambda v: getattr(v, "__name__", None))
def test_jvp_and_vjp_at_a_singular_point_are_infinite(fn, x, want):
    with pytest.warns(RuntimeWarning):
        out, t = adgen.jvp(fn, (x,), (1.0,))
    assert t == want and out == fn(x)
    with pytest.warns(RuntimeWarning):
        out, pullback = adgen.vjp(fn, x)
        ct = pullback(1.0)
    assert (ct[0] if isinstance(ct, tuple) else ct) == want


@pytest.mark.parametrize("fn, x, want", SINGULAR, ids=lambda v: getattr(v, "__name__", None))
def test_near_the_singular_point_the_gradient_is_the_derivative(fn, x, want):
    near = x + 0.3 if x < 1.0 else x - 0.3
    assert adgen.grad(fn)(near) == pytest.approx(numerical_grad(fn, (near,), 0), rel=1e-6)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_weighted_log_at_zero(mutation):
    # d/dx (w log x + x^2) = w / x + 2x: -inf for w = -2 at 0; d/dw = log 0 = -inf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        gx, gw = adgen.grad(scaled_log, argnums=(0, 1), mutation=mutation)(0.0, -2.0)
    assert gx == -math.inf and gw == -math.inf
    gx, gw = adgen.grad(scaled_log, argnums=(0, 1), mutation=mutation)(0.5, -2.0)
    assert gx == pytest.approx(numerical_grad(scaled_log, (0.5, -2.0), 0), rel=1e-6)
    assert gw == pytest.approx(numerical_grad(scaled_log, (0.5, -2.0), 1), rel=1e-6)


def reciprocal_of(x):
    return 1 / x


def test_the_users_own_division_by_zero_raises_as_python_does():
    # the function runs as Python runs it: 1 / 0.0 raises (JAX's arrays would give inf);
    # a NumPy number follows NumPy's rules, and its derivative -1/x^2 is -inf
    with pytest.raises(ZeroDivisionError):
        adgen.grad(reciprocal_of)(0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert adgen.grad(reciprocal_of)(np.float64(0.0)) == -math.inf


def sine_times(x):
    return np.sin(x) * x


def summed(x):
    return np.sum(np.sin(x) * x)


def test_tangents_keep_the_float32_dtype():
    x = np.array([0.5, 1.0, -2.0], dtype=np.float32)
    t = np.array([1.0, 0.5, 2.0], dtype=np.float32)
    want = (np.cos(x.astype(np.float64)) * x + np.sin(x.astype(np.float64))) * t
    for fn in (sine_times, np.sin):
        out, dot = adgen.jvp(fn, (x,), (t,))
        assert out.dtype == np.float32 and dot.dtype == np.float32, fn
        expected = want if fn is sine_times else np.cos(x.astype(np.float64)) * t
        np.testing.assert_allclose(dot, expected, rtol=1e-5)
    out, dot = adgen.jvp(sine_times, (np.float32(0.5),), (np.float32(1.0),))
    assert type(dot) is np.float32 and dot == pytest.approx(np.cos(0.5) * 0.5 + np.sin(0.5),
                                                            rel=1e-6)
    assert adgen.jacfwd(sine_times)(x).dtype == np.float32
    assert adgen.grad(summed)(x).dtype == np.float32
    assert adgen.hessian(summed)(x).dtype == np.float32


def root_times(x, y):
    return np.sqrt(x) * y


def test_repeated_calls_take_the_fast_path_and_stay_infinite():
    # the second call of a gradient function runs the call decided once per signature
    # (fast_gradient): the same retry there; d/dx sqrt(x) y = y / (2 sqrt x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        g = adgen.grad(log_of)
        assert [g(v) for v in (1.0, 0.0, 0.0, 2.0, 0.0)] == [1.0, math.inf, math.inf, 0.5,
                                                               math.inf]
        g2 = adgen.value_and_grad(root_times, argnums=(0, 1))
        for _ in range(3):
            value, (gx, gy) = g2(0.0, 2.0)
            assert value == 0.0 and gx == math.inf and gy == 0.0
        assert g2(4.0, 2.0)[1] == (0.5, 2.0)
