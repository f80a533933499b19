"""jvp of loops over Python floats: the tangents of float arguments are Python floats (since
session 23; NumPy float64 numbers before, whose arithmetic costs about 3x), a math function's
tangent calls math's (``d * math.cos(y)``, not NumPy's ufunc on a number), and a call of a
plain function of floats and ints is decided once. What must not change: the values, and the
derivatives at singular points, where Python's float arithmetic raises (``d / x`` at 0.0)
and the jvp code computes the statement again as NumPy does (inf, nan), and a global the
function reads, rebound between calls. Expected values: central differences
(tests/gradcheck.py), the same loop written with dual numbers by hand, and hand formulas.
"""

import math

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

SCALE = 2.0


def recurrence(x, a):
    s = 0.0
    y = x
    for i in range(50):
        y = y * a + 0.1 * math.sin(y)
        s = s + y * y / (1.0 + i)
    return s


def by_hand(x, a, x_dot, a_dot):
    """recurrence with dual numbers."""
    s, s_dot = 0.0, 0.0
    y, y_dot = x, x_dot
    for i in range(50):
        y, y_dot = (y * a + 0.1 * math.sin(y),
                    y_dot * a + y * a_dot + 0.1 * math.cos(y) * y_dot)
        s, s_dot = s + y * y / (1.0 + i), s_dot + 2.0 * y * y_dot / (1.0 + i)
    return s, s_dot


def root_of(x):
    return helper_root(x) + x ** 0.5


def helper_root(x):
    return math.sqrt(x) * 2.0


def log_then_scale(x, n):
    return np.log(x) * n + SCALE * x


def hyperbolic(x):
    return math.sinh(x) * math.cosh(x) + math.erf(x) + x / (1.0 + x * x)


@pytest.mark.parametrize("tangents", [(1.0, 0.0), (0.5, -2.0), (1, None)])
def test_a_loop_of_floats_as_dual_numbers_by_hand(tangents):
    out, t = adgen.jvp(recurrence, (0.3, 0.9), tangents)
    want = by_hand(0.3, 0.9, tangents[0], tangents[1] or 0.0)
    assert out == want[0] and t == pytest.approx(want[1], rel=1e-12)
    g = [numerical_grad(recurrence, (0.3, 0.9), k) for k in (0, 1)]
    assert t == pytest.approx(g[0] * tangents[0] + g[1] * (tangents[1] or 0.0), rel=1e-6)
    assert type(t) is float  # a Python float's tangent (no np.float64 in the loop)


def test_math_functions_vs_central_differences():
    for x in (0.3, -1.7, 2.5):
        _, t = adgen.jvp(hyperbolic, (x,), (1.0,))
        assert t == pytest.approx(numerical_grad(hyperbolic, (x,), 0), rel=1e-7)


def test_singular_points_give_inf_as_numpy_and_jax():
    # d / (2 sqrt(x)) at 0: Python's float division raised ZeroDivisionError; inf as JAX
    with np.errstate(divide="ignore"):
        _, t = adgen.jvp(root_of, (0.0,), (1.0,))
        assert t == math.inf
        out, t = adgen.jvp(log_then_scale, (0.0, 3), (1.0, None))
    assert out == -math.inf and t == math.inf
    # away from it, the same code and the hand formula
    _, t = adgen.jvp(root_of, (4.0,), (1.0,))
    assert t == pytest.approx(2.0 / (2 * 2.0) + 0.5 / 2.0)
    _, t = adgen.jvp(log_then_scale, (0.5, 3), (1.0, None))
    assert t == pytest.approx(3 / 0.5 + SCALE)


def test_a_global_rebound_between_calls_is_read_again():
    global SCALE
    before = adgen.jvp(log_then_scale, (0.5, 3), (1.0, None))[1]
    try:
        SCALE = 5.0
        after = adgen.jvp(log_then_scale, (0.5, 3), (1.0, None))[1]
    finally:
        SCALE = 2.0
    assert before == pytest.approx(6.0 + 2.0) and after == pytest.approx(6.0 + 5.0)


def test_an_integer_given_a_tangent_is_still_refused():
    adgen.jvp(log_then_scale, (0.5, 3), (1.0, None))  # (decided once for these types)
    with pytest.raises(adgen.errors.NonDifferentiableError, match="int"):
        adgen.jvp(log_then_scale, (0.5, 3), (1.0, 1.0))


def power_of(x, b):
    return x ** b


def test_a_variable_exponent_below_one_at_zero():
    # d * b * x ** (b - 1) with b held by a variable: Python's 0.0 ** -0.5 raised
    # ZeroDivisionError in the jvp code until session 23; inf as JAX gives (NumPy's warning)
    with np.errstate(divide="ignore"):
        out, t = adgen.jvp(power_of, (0.0, 0.5), (1.0, None))
    assert out == 0.0 and t == math.inf
    _, t = adgen.jvp(power_of, (4.0, 0.5), (1.0, None))
    assert t == pytest.approx(0.25)  # by hand: 0.5 / sqrt(4)
