"""Rules for numpy ufuncs.

Binary ufuncs broadcast, so each cotangent is summed back to its operand's shape with
:func:`~adgen.rules.helpers.unbroadcast`; unary ones keep their input's shape. Where a rule
can read the output instead of recomputing from the input (``exp``, ``tanh``, ``sqrt``) it
does: the output is what the forward pass already has.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adgen.rules.helpers import (
    abs_vjp,
    balanced_eq,
    exponent_log,
    matmul_vjp_a,
    matmul_vjp_b,
    unbroadcast,
)
from adgen.rules.registry import defvjp

# --------------------------------------------------------------------------------------------
# Arithmetic


@defvjp(np.add, "x1, x2", linear=True)
def add(g: Any, out: Any, x1: Any, x2: Any) -> Any:
    return unbroadcast(g, np.shape(x1)), unbroadcast(g, np.shape(x2))


@defvjp(np.subtract, "x1, x2", linear=True)
def subtract(g: Any, out: Any, x1: Any, x2: Any) -> Any:
    return unbroadcast(g, np.shape(x1)), unbroadcast(-g, np.shape(x2))


@defvjp(np.multiply, "x1, x2", reads="x1, x2")
def multiply(g: Any, out: Any, x1: Any, x2: Any) -> Any:
    return unbroadcast(g * x2, np.shape(x1)), unbroadcast(g * x1, np.shape(x2))


@defvjp(np.divide, "x1, x2", reads="x2, out")  # np.true_divide is np.divide
def divide(g: Any, out: Any, x1: Any, x2: Any) -> Any:
    return unbroadcast(g / x2, np.shape(x1)), unbroadcast(-g * out / x2, np.shape(x2))


@defvjp(np.power, "x1, x2", reads="x1, x2, out")
def power(g: Any, out: Any, x1: Any, x2: Any) -> Any:
    return (unbroadcast(g * x2 * x1 ** (x2 - (x2 != 0)), np.shape(x1)),  # see operator.pow's
            # (zeros for an int x2: forward mode reads this template as np.power's jvp, and
            # an int returned by a helper, n = count(x), has the zero tangent 0.0, whose term
            # 0.0 * log of a negative base was nan; exponent_log, as operator.pow's jvp)
            unbroadcast(g * exponent_log(out, x1, x2), np.shape(x2)))


@defvjp(np.matmul, "x1, x2", reads="x1, x2")
def matmul(g: Any, out: Any, x1: Any, x2: Any) -> Any:
    return matmul_vjp_a(g, x2, np.shape(x1)), matmul_vjp_b(g, x1, np.shape(x2))


@defvjp(np.remainder, "x1, x2", reads="x1, x2")  # np.mod is np.remainder
def remainder(g: Any, out: Any, x1: Any, x2: Any) -> Any:
    return unbroadcast(g, np.shape(x1)), unbroadcast(-g * np.floor_divide(x1, x2), np.shape(x2))


@defvjp(np.fmod, "x1, x2", reads="x1, x2")
def fmod(g: Any, out: Any, x1: Any, x2: Any) -> Any:
    # fmod(a, b) == a - trunc(a / b) * b.
    return unbroadcast(g, np.shape(x1)), unbroadcast(-g * np.trunc(x1 / x2), np.shape(x2))


@defvjp(np.negative, "x", linear=True)
def negative(g: Any, out: Any, x: Any) -> Any:
    return -g


@defvjp(np.positive, "x", linear=True)
def positive(g: Any, out: Any, x: Any) -> Any:
    return g


@defvjp(np.square, "x", reads="x")
def square(g: Any, out: Any, x: Any) -> Any:
    return 2.0 * x * g


@defvjp(np.sqrt, "x", reads="out")
def sqrt(g: Any, out: Any, x: Any) -> Any:
    return g / (2.0 * out)


@defvjp(np.cbrt, "x", reads="out")
def cbrt(g: Any, out: Any, x: Any) -> Any:
    return g / (3.0 * (out * out))


@defvjp(np.reciprocal, "x", reads="out")
def reciprocal(g: Any, out: Any, x: Any) -> Any:
    return -g * (out * out)


@defvjp(np.absolute, "x", reads="x")  # np.abs is np.absolute
def absolute(g: Any, out: Any, x: Any) -> Any:
    # The subgradient 0 at x == 0; Re(g) conj(z) / |z| for a complex z (helpers_complex).
    return abs_vjp(g, x)


@defvjp(np.fabs, "x", reads="x")
def fabs(g: Any, out: Any, x: Any) -> Any:
    return g * np.sign(x)


# --------------------------------------------------------------------------------------------
# Exponentials and logarithms


@defvjp(np.exp, "x", reads="out")
def exp(g: Any, out: Any, x: Any) -> Any:
    return g * out


@defvjp(np.exp2, "x", reads="out")
def exp2(g: Any, out: Any, x: Any) -> Any:
    return g * out * np.log(2.0)


@defvjp(np.expm1, "x", reads="out")
def expm1(g: Any, out: Any, x: Any) -> Any:
    return g * (out + 1.0)


@defvjp(np.log, "x", reads="x")
def log(g: Any, out: Any, x: Any) -> Any:
    return g / x


@defvjp(np.log2, "x", reads="x")
def log2(g: Any, out: Any, x: Any) -> Any:
    return g / (x * np.log(2.0))


@defvjp(np.log10, "x", reads="x")
def log10(g: Any, out: Any, x: Any) -> Any:
    return g / (x * np.log(10.0))


@defvjp(np.log1p, "x", reads="x")
def log1p(g: Any, out: Any, x: Any) -> Any:
    return g / (1.0 + x)


@defvjp(np.logaddexp, "x1, x2", reads="x1, x2, out")
def logaddexp(g: Any, out: Any, x1: Any, x2: Any) -> Any:
    return (unbroadcast(g * np.exp(x1 - out), np.shape(x1)),
            unbroadcast(g * np.exp(x2 - out), np.shape(x2)))


@defvjp(np.logaddexp2, "x1, x2", reads="x1, x2, out")
def logaddexp2(g: Any, out: Any, x1: Any, x2: Any) -> Any:
    return (unbroadcast(g * np.exp2(x1 - out), np.shape(x1)),
            unbroadcast(g * np.exp2(x2 - out), np.shape(x2)))


# --------------------------------------------------------------------------------------------
# Trigonometric and hyperbolic


@defvjp(np.sin, "x", reads="x")
def sin(g: Any, out: Any, x: Any) -> Any:
    return g * np.cos(x)


@defvjp(np.cos, "x", reads="x")
def cos(g: Any, out: Any, x: Any) -> Any:
    return -g * np.sin(x)


@defvjp(np.tan, "x", reads="out")
def tan(g: Any, out: Any, x: Any) -> Any:
    return g * (1.0 + (out * out))


@defvjp(np.arcsin, "x", reads="x")
def arcsin(g: Any, out: Any, x: Any) -> Any:
    return g / np.sqrt(1.0 - (x * x))


@defvjp(np.arccos, "x", reads="x")
def arccos(g: Any, out: Any, x: Any) -> Any:
    return -g / np.sqrt(1.0 - (x * x))


@defvjp(np.arctan, "x", reads="x")
def arctan(g: Any, out: Any, x: Any) -> Any:
    return g / (1.0 + (x * x))


@defvjp(np.arctan2, "x1, x2", reads="x1, x2")
def arctan2(g: Any, out: Any, x1: Any, x2: Any) -> Any:
    return (unbroadcast(g * x2 / ((x1 * x1) + (x2 * x2)), np.shape(x1)),
            unbroadcast(-g * x1 / ((x1 * x1) + (x2 * x2)), np.shape(x2)))


@defvjp(np.hypot, "x1, x2", reads="x1, x2, out")
def hypot(g: Any, out: Any, x1: Any, x2: Any) -> Any:
    return unbroadcast(g * x1 / out, np.shape(x1)), unbroadcast(g * x2 / out, np.shape(x2))


@defvjp(np.sinh, "x", reads="x")
def sinh(g: Any, out: Any, x: Any) -> Any:
    return g * np.cosh(x)


@defvjp(np.cosh, "x", reads="x")
def cosh(g: Any, out: Any, x: Any) -> Any:
    return g * np.sinh(x)


@defvjp(np.tanh, "x", reads="out")
def tanh(g: Any, out: Any, x: Any) -> Any:
    return g * (1.0 - (out * out))


@defvjp(np.arcsinh, "x", reads="x")
def arcsinh(g: Any, out: Any, x: Any) -> Any:
    return g / np.sqrt((x * x) + 1.0)


@defvjp(np.arccosh, "x", reads="x")
def arccosh(g: Any, out: Any, x: Any) -> Any:
    return g / np.sqrt((x * x) - 1.0)


@defvjp(np.arctanh, "x", reads="x")
def arctanh(g: Any, out: Any, x: Any) -> Any:
    return g / (1.0 - (x * x))


@defvjp(np.deg2rad, "x", linear=True)  # np.radians computes the same, but is its own ufunc
def deg2rad(g: Any, out: Any, x: Any) -> Any:
    return g * (np.pi / 180.0)


@defvjp(np.radians, "x", linear=True)
def radians(g: Any, out: Any, x: Any) -> Any:
    return g * (np.pi / 180.0)


@defvjp(np.rad2deg, "x", linear=True)
def rad2deg(g: Any, out: Any, x: Any) -> Any:
    return g * (180.0 / np.pi)


@defvjp(np.degrees, "x", linear=True)
def degrees(g: Any, out: Any, x: Any) -> Any:
    return g * (180.0 / np.pi)


# --------------------------------------------------------------------------------------------
# Extrema: a tie splits the cotangent evenly (helpers.balanced_eq); fmax/fmin skip NaNs.


@defvjp(np.maximum, "x1, x2", reads="x1, x2, out")
def maximum(g: Any, out: Any, x1: Any, x2: Any) -> Any:
    return (unbroadcast(g * balanced_eq(x1, out, x2), np.shape(x1)),
            unbroadcast(g * balanced_eq(x2, out, x1), np.shape(x2)))


@defvjp(np.minimum, "x1, x2", reads="x1, x2, out")
def minimum(g: Any, out: Any, x1: Any, x2: Any) -> Any:
    return (unbroadcast(g * balanced_eq(x1, out, x2), np.shape(x1)),
            unbroadcast(g * balanced_eq(x2, out, x1), np.shape(x2)))


@defvjp(np.fmax, "x1, x2", reads="x1, x2, out")
def fmax(g: Any, out: Any, x1: Any, x2: Any) -> Any:
    return (unbroadcast(g * balanced_eq(x1, out, x2), np.shape(x1)),
            unbroadcast(g * balanced_eq(x2, out, x1), np.shape(x2)))


@defvjp(np.fmin, "x1, x2", reads="x1, x2, out")
def fmin(g: Any, out: Any, x1: Any, x2: Any) -> Any:
    return (unbroadcast(g * balanced_eq(x1, out, x2), np.shape(x1)),
            unbroadcast(g * balanced_eq(x2, out, x1), np.shape(x2)))


# --------------------------------------------------------------------------------------------
# Piecewise constant: zero gradient.


def _zero_unary(ufunc: np.ufunc) -> None:
    @defvjp(ufunc, "x", linear=True)
    def zero(g: Any, out: Any, x: Any) -> Any:
        return np.zeros(np.shape(x))


def _zero_binary(ufunc: np.ufunc) -> None:
    @defvjp(ufunc, "x1, x2", linear=True)
    def zero(g: Any, out: Any, x1: Any, x2: Any) -> Any:
        return np.zeros(np.shape(x1)), np.zeros(np.shape(x2))


for _u in (np.sign, np.floor, np.ceil, np.rint, np.trunc, np.isnan, np.isinf, np.isfinite,
           np.signbit, np.logical_not):
    _zero_unary(_u)

for _u in (np.floor_divide, np.greater, np.greater_equal, np.less, np.less_equal, np.equal,
           np.not_equal, np.logical_and, np.logical_or, np.logical_xor):
    _zero_binary(_u)


# heaviside(x1, x2) is x2 where x1 == 0 (0 or 1 elsewhere): flat in x1, and x2's gradient is
# g there (a zero gradient of x2 was silently wrong for an x1 with zeros: a step's value at 0)
@defvjp(np.heaviside, "x1, x2", reads="x1")
def heaviside(g: Any, out: Any, x1: Any, x2: Any) -> Any:
    return np.zeros(np.shape(x1)), unbroadcast(np.where(np.equal(x1, 0), g, 0.0), np.shape(x2))


@defvjp(np.round, "a, decimals=0", diff="a", linear=True)
def round_(g: Any, out: Any, a: Any, decimals: Any) -> Any:
    return np.zeros(np.shape(a))


@defvjp(np.around, "a, decimals=0", diff="a", linear=True)
def around(g: Any, out: Any, a: Any, decimals: Any) -> Any:
    return np.zeros(np.shape(a))
