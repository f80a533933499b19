"""Rules for the ``math`` module (Python floats in, Python floats out).

The templates use numpy's functions, not ``math``'s: generated code imports only numpy and
adgen.runtime, and ``np.cos(x)`` of a float is a numpy float, which is a float.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from adgen.rules.helpers import shape_tree, sum_list_vjp, unbroadcast, xlogy
from adgen.rules.registry import defvjp


@defvjp(math.sin, "x", reads="x")
def sin(g: Any, out: Any, x: Any) -> Any:
    return g * np.cos(x)


@defvjp(math.cos, "x", reads="x")
def cos(g: Any, out: Any, x: Any) -> Any:
    return -g * np.sin(x)


@defvjp(math.tan, "x", reads="out")
def tan(g: Any, out: Any, x: Any) -> Any:
    return g * (1.0 + (out * out))


@defvjp(math.asin, "x", reads="x")
def asin(g: Any, out: Any, x: Any) -> Any:
    return g / np.sqrt(1.0 - (x * x))


@defvjp(math.acos, "x", reads="x")
def acos(g: Any, out: Any, x: Any) -> Any:
    return -g / np.sqrt(1.0 - (x * x))


@defvjp(math.atan, "x", reads="x")
def atan(g: Any, out: Any, x: Any) -> Any:
    return g / (1.0 + (x * x))


@defvjp(math.atan2, "y, x", reads="y, x")
def atan2(g: Any, out: Any, y: Any, x: Any) -> Any:
    return g * x / ((x * x) + (y * y)), -g * y / ((x * x) + (y * y))


@defvjp(math.sinh, "x", reads="x")
def sinh(g: Any, out: Any, x: Any) -> Any:
    return g * np.cosh(x)


@defvjp(math.cosh, "x", reads="x")
def cosh(g: Any, out: Any, x: Any) -> Any:
    return g * np.sinh(x)


@defvjp(math.tanh, "x", reads="out")
def tanh(g: Any, out: Any, x: Any) -> Any:
    return g * (1.0 - (out * out))


@defvjp(math.asinh, "x", reads="x")
def asinh(g: Any, out: Any, x: Any) -> Any:
    return g / np.sqrt((x * x) + 1.0)


@defvjp(math.acosh, "x", reads="x")
def acosh(g: Any, out: Any, x: Any) -> Any:
    return g / np.sqrt((x * x) - 1.0)


@defvjp(math.atanh, "x", reads="x")
def atanh(g: Any, out: Any, x: Any) -> Any:
    return g / (1.0 - (x * x))


@defvjp(math.exp, "x", reads="out")
def exp(g: Any, out: Any, x: Any) -> Any:
    return g * out


@defvjp(math.expm1, "x", reads="out")
def expm1(g: Any, out: Any, x: Any) -> Any:
    return g * (out + 1.0)


@defvjp(math.log, "x, base=2.718281828459045", diff="x, base", reads="x, base, out")
def log(g: Any, out: Any, x: Any, base: Any) -> Any:
    # math.log(x, base) == log(x) / log(base); without a base, base is e and log(base) is 1.
    return g / (x * np.log(base)), -g * out / (base * np.log(base))


@defvjp(math.log2, "x", reads="x")
def log2(g: Any, out: Any, x: Any) -> Any:
    return g / (x * np.log(2.0))


@defvjp(math.log10, "x", reads="x")
def log10(g: Any, out: Any, x: Any) -> Any:
    return g / (x * np.log(10.0))


@defvjp(math.log1p, "x", reads="x")
def log1p(g: Any, out: Any, x: Any) -> Any:
    return g / (1.0 + x)


@defvjp(math.sqrt, "x", reads="out")
def sqrt(g: Any, out: Any, x: Any) -> Any:
    return g / (2.0 * out)


@defvjp(math.pow, "x, y", reads="x, y, out")
def pow_(g: Any, out: Any, x: Any, y: Any) -> Any:
    return g * y * x ** (y - (y != 0)), g * xlogy(out, x)  # y == 0: see operator.pow's


@defvjp(builtins.pow, "base, exp", reads="base, exp, out")
def pow_builtin(g: Any, out: Any, base: Any, exp: Any) -> Any:
    # pow(x, 2) as x ** 2 (pow(x, y, mod), integers only, is outside the rule's signature)
    return (unbroadcast(g * exp * base ** (exp - (exp != 0)), np.shape(base)),
            unbroadcast(g * xlogy(out, base), np.shape(exp)))


@defvjp(math.fabs, "x", reads="x")
def fabs(g: Any, out: Any, x: Any) -> Any:
    return g * np.sign(x)


@defvjp(math.hypot, "*coordinates", reads="coordinates, out")
def hypot(g: Any, out: Any, coordinates: Any) -> Any:
    return tuple(g * c / out for c in coordinates)


@defvjp(math.fmod, "x, y", reads="x, y")
def fmod(g: Any, out: Any, x: Any, y: Any) -> Any:
    return g, -g * np.trunc(x / y)


@defvjp(math.copysign, "x, y", reads="x, y")
def copysign(g: Any, out: Any, x: Any, y: Any) -> Any:
    # |x| with y's sign: the sign of y is piecewise constant.
    return g * np.sign(x) * np.copysign(1.0, y), 0.0 * g


@defvjp(math.erf, "x", reads="x")
def erf(g: Any, out: Any, x: Any) -> Any:
    return g * 2.0 / np.sqrt(np.pi) * np.exp(-(x * x))


@defvjp(math.erfc, "x", reads="x")
def erfc(g: Any, out: Any, x: Any) -> Any:
    return -g * 2.0 / np.sqrt(np.pi) * np.exp(-(x * x))


@defvjp(math.degrees, "x", linear=True)
def degrees(g: Any, out: Any, x: Any) -> Any:
    return g * (180.0 / np.pi)


@defvjp(math.radians, "x", linear=True)
def radians(g: Any, out: Any, x: Any) -> Any:
    return g * (np.pi / 180.0)


@defvjp(math.fsum, "seq", linear=True)
def fsum(g: Any, out: Any, seq: Any) -> Any:
    return sum_list_vjp(g, shape_tree(seq))


if hasattr(math, "exp2"):  # Python 3.11+

    @defvjp(math.exp2, "x", reads="out")
    def exp2(g: Any, out: Any, x: Any) -> Any:
        return g * out * np.log(2.0)


if hasattr(math, "cbrt"):  # Python 3.11+

    @defvjp(math.cbrt, "x", reads="out")
    def cbrt(g: Any, out: Any, x: Any) -> Any:
        return g / (3.0 * (out * out))


# Piecewise constant: floor, ceil and trunc return ints; the predicates return bools.
def _zero(func: Any) -> None:
    @defvjp(func, "x", linear=True)
    def zero(g: Any, out: Any, x: Any) -> Any:
        return np.zeros(np.shape(x))


for _f in (math.floor, math.ceil, math.trunc, math.isnan, math.isinf, math.isfinite):
    _zero(_f)
