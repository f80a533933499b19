"""The numba backend at singular points: NumPy's inf / nan, as the default backend gives them.

Session 20 found that ``backend="numba"`` raised ZeroDivisionError where a float is divided by
zero (the gradient of ``1.0 / x`` or ``np.log(x)`` at 0, a helper's ``1.0 / v``): numba's
default error model is Python's. The default backend computes with NumPy's floats and gives
inf / nan (with NumPy's RuntimeWarning), and so does JAX. The module is now compiled with
``error_model="numpy"``; an *integer* divided by zero still raises Python's
ZeroDivisionError (``i % m``, ``i // b``, ``i / m``: that model would give 0 or inf, which
would steer loops and indices silently), and an int ``**`` a negative int raises where numba
would give 0 (Python gives a float). Expected values: hand formulas at the singular points,
central differences elsewhere. Skipped without numba.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

numba = pytest.importorskip("numba")


def reciprocal_sum(x):
    s = 0.0
    for i in range(len(x)):
        s += 1.0 / x[i]
    return s


def log_sum(x):
    s = 0.0
    for i in range(len(x)):
        s += np.log(x[i])
    return s


def root_sum(x):
    s = 0.0
    for i in range(len(x)):
        s += x[i] ** 0.5
    return s


def recip(v):
    return 1.0 / v


def helper_sum(x):
    s = 0.0
    for i in range(len(x)):
        s += recip(x[i])
    return s


def invert_in_place(x):
    u = x.copy()
    for i in range(len(u)):
        u[i] = 1.0 / u[i]
    s = 0.0
    for i in range(len(u)):
        s += u[i] * u[i]
    return s


def quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args)


X0 = np.array([0.0, 1.0, 2.0, 4.0])
XR = np.array([0.5, 1.0, 2.0, 4.0])


@pytest.mark.parametrize("f, value, slope", [
    (reciprocal_sum, np.inf, lambda x: -1.0 / x ** 2),
    (log_sum, -np.inf, lambda x: 1.0 / x),
    (root_sum, 1.0 + 2.0 ** 0.5 + 2.0, lambda x: 0.5 / np.sqrt(x)),
    (helper_sum, np.inf, lambda x: -1.0 / x ** 2),
])
def test_a_float_divided_by_zero_gives_numpys_inf(f, value, slope):
    v, g = quiet(adgen.value_and_grad(f, backend="numba"), X0)
    expected = quiet(slope, X0)
    assert v == value
    assert g[0] == expected[0] and np.isinf(g[0])
    np.testing.assert_allclose(g[1:], expected[1:], rtol=1e-12)
    dv, dg = quiet(adgen.value_and_grad(f), X0)
    assert dv == v and np.array_equal(dg, g)
    # a regular point: central differences
    assert_grad_close(adgen.grad(f, backend="numba")(XR), numerical_grad(f, (XR,), 0))


@pytest.mark.parametrize("policy", ["save", "strict"])
def test_in_place_reciprocal_at_zero(policy):
    g = quiet(adgen.grad(invert_in_place, backend="numba", mutation=policy), X0)
    expected = quiet(lambda x: -2.0 / x ** 3, X0)
    assert g[0] == -np.inf
    np.testing.assert_allclose(g[1:], expected[1:], rtol=1e-12)
    assert_grad_close(adgen.grad(invert_in_place, backend="numba", mutation=policy)(XR),
                      numerical_grad(invert_in_place, (XR,), 0))


def wrap_sum(x, m):
    s = 0.0
    for i in range(len(x)):
        k = (i + 1) % m
        s += x[i] * x[k]
    return s


def blocks(x, b):
    s = 0.0
    for i in range(len(x)):
        s += x[i] * (i // b)
    return s


def shares(x, m):
    s = 0.0
    for i in range(len(x)):
        s += x[i] * (i / m)
    return s


def halvings(x, k):
    s = 0.0
    for i in range(len(x)):
        s += x[i] * 2 ** k
    return s


@pytest.mark.parametrize("f", [wrap_sum, blocks, shares])
def test_an_int_divided_by_zero_raises_as_python(f):
    x = np.linspace(0.5, 2.0, 5)
    assert_grad_close(adgen.grad(f, backend="numba")(x, 3), numerical_grad(f, (x, 3), 0))
    with pytest.raises(ZeroDivisionError):
        f(x, 0)
    with pytest.raises(ZeroDivisionError):
        adgen.grad(f, backend="numba")(x, 0)


def test_an_int_to_a_negative_int_power_raises():
    x = np.linspace(0.5, 2.0, 5)
    assert_grad_close(adgen.grad(halvings, backend="numba")(x, 3),
                      numerical_grad(halvings, (x, 3), 0))
    # Python gives 2 ** -1 = 0.5, numba's int power 0: refused, not a wrong gradient
    with pytest.raises(ValueError, match="negative"):
        adgen.grad(halvings, backend="numba")(x, -1)
