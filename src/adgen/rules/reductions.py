"""Rules for reductions: sum, mean, prod, max/min, var/std, cumulative sums, sort.

``axis`` may be None, an int or a tuple; ``keepdims`` and ``ddof`` are keyword-only here, so
a call that passes numpy's ``dtype``/``out`` positionally fails to bind instead of binding the
wrong parameter. Extrema split the cotangent evenly between ties (see adgen.rules.helpers).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adgen.rules.helpers import (
    cumsum_vjp,
    max_vjp,
    mean_vjp,
    prod_vjp,
    sort_vjp,
    sum_keepdims,
    sum_vjp,
    var_vjp,
)
from adgen.rules.registry import defjvp, defvjp


@defvjp(np.sum, "a, axis=None, *, keepdims=False", diff="a", reads="axis, keepdims",
        linear=True)
def sum_(g: Any, out: Any, a: Any, axis: Any, keepdims: Any) -> Any:
    return sum_vjp(g, np.shape(a), axis, keepdims)


@defvjp(np.mean, "a, axis=None, *, keepdims=False", diff="a", reads="axis, keepdims",
        linear=True)
def mean(g: Any, out: Any, a: Any, axis: Any, keepdims: Any) -> Any:
    return mean_vjp(g, np.shape(a), axis, keepdims)


@defvjp(np.prod, "a, axis=None, *, keepdims=False", diff="a", reads="a, axis, keepdims")
def prod(g: Any, out: Any, a: Any, axis: Any, keepdims: Any) -> Any:
    return prod_vjp(g, a, axis, keepdims)


def _extremum(func: Any) -> None:
    """Registers np.max/np.min/np.amax/np.amin: the cotangent goes to the (tied) extrema."""

    @defvjp(func, "a, axis=None, *, keepdims=False", diff="a",
            reads="a, out, axis, keepdims")
    def extremum(g: Any, out: Any, a: Any, axis: Any, keepdims: Any) -> Any:
        return max_vjp(g, out, a, axis, keepdims)


for _f in (np.max, np.min, np.amax, np.amin):
    _extremum(_f)


@defvjp(np.var, "a, axis=None, *, ddof=0, keepdims=False", diff="a",
        reads="a, axis, ddof, keepdims")
def var(g: Any, out: Any, a: Any, axis: Any, ddof: Any, keepdims: Any) -> Any:
    return var_vjp(g, a, axis, ddof, keepdims)


@defvjp(np.std, "a, axis=None, *, ddof=0, keepdims=False", diff="a",
        reads="a, out, axis, ddof, keepdims")
def std(g: Any, out: Any, a: Any, axis: Any, ddof: Any, keepdims: Any) -> Any:
    # std = sqrt(var), so d std = d var / (2 std).
    return var_vjp(g / (2.0 * out), a, axis, ddof, keepdims)


@defvjp(np.cumsum, "a, axis=None", diff="a", reads="axis", linear=True)
def cumsum(g: Any, out: Any, a: Any, axis: Any) -> Any:
    return cumsum_vjp(g, np.shape(a), axis)


@defvjp(np.sort, "a, axis=-1", diff="a", reads="a, axis")
def sort(g: Any, out: Any, a: Any, axis: Any) -> Any:
    return sort_vjp(g, a, axis)


def _zero_index(func: Any) -> None:
    """Registers argmax/argmin/argsort: integer outputs, zero gradient."""

    @defvjp(func, "a, axis=None", diff="a", linear=True)
    def zero(g: Any, out: Any, a: Any, axis: Any) -> Any:
        return np.zeros(np.shape(a))


for _f in (np.argmax, np.argmin):
    _zero_index(_f)


@defvjp(np.argsort, "a, axis=-1", diff="a", linear=True)
def argsort(g: Any, out: Any, a: Any, axis: Any) -> Any:
    return np.zeros(np.shape(a))


# Predicates and sizes: boolean or integer results, zero gradient. Registered so that code
# like ``if np.all(x > 0)`` or ``n = np.size(x)`` on a differentiated x needs nothing more.


def _zero_axis(func: Any) -> None:
    @defvjp(func, "a, axis=None", diff="a", linear=True)
    def zero(g: Any, out: Any, a: Any, axis: Any) -> Any:
        return np.zeros(np.shape(a))


for _f in (np.all, np.any, np.count_nonzero, np.size):
    _zero_axis(_f)


def _zero_unary(func: Any) -> None:
    @defvjp(func, "a", linear=True)
    def zero(g: Any, out: Any, a: Any) -> Any:
        return np.zeros(np.shape(a))


for _f in (np.shape, np.ndim):
    _zero_unary(_f)


def _zero_close(func: Any) -> None:
    @defvjp(func, "a, b, rtol=1e-05, atol=1e-08, equal_nan=False", diff="a, b", linear=True)
    def zero(g: Any, out: Any, a: Any, b: Any, rtol: Any, atol: Any, equal_nan: Any) -> Any:
        return np.zeros(np.shape(a)), np.zeros(np.shape(b))


for _f in (np.isclose, np.allclose):
    _zero_close(_f)


@defvjp(np.array_equal, "a1, a2, equal_nan=False", diff="a1, a2", linear=True)
def array_equal(g: Any, out: Any, a1: Any, a2: Any, equal_nan: Any) -> Any:
    return np.zeros(np.shape(a1)), np.zeros(np.shape(a2))


# --------------------------------------------------------------------------------------------
# The normalised exponential


def softmax(x: Any, axis: Any) -> Any:
    """``exp(x) / sum(exp(x), axis, keepdims=True)``: stands in the registry for the three
    statements ``e = np.exp(x); t = np.sum(e, axis=k, keepdims=True); p = e / t`` where the
    reverse pass proves nothing else reads ``e`` or ``t`` (analyses.shift_invariance); their
    adjoint is then this rule's, applied at the division, which reads only ``p`` (a person's
    softmax gradient: no ``e``, no row sums kept, two passes fewer)."""
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)


@defvjp(softmax, "x, axis", diff="x", reads="out, axis", name="adgen.softmax")
def softmax_(g: Any, out: Any, x: Any, axis: Any) -> Any:
    return out * (g - sum_keepdims(g * out, axis))


@defjvp(softmax)
def softmax_jvp(d: Any, out: Any, x: Any, axis: Any) -> Any:
    return out * (d - sum_keepdims(d * out, axis))


def log_softmax(x: Any, p: Any, axis: Any) -> Any:
    """``x - log(sum(exp(x), axis, keepdims=True))``, given ``p``, the softmax of ``x``: stands
    in the registry for ``q = np.log(p)`` where ``p`` closes a softmax (see :func:`softmax`)
    and nothing else reads ``p`` (analyses.shift_invariance.logs_of_softmaxes); the rule
    reads ``p`` and needs no adjoint of it."""
    return x - np.log(np.sum(np.exp(x), axis=axis, keepdims=True))


@defvjp(log_softmax, "x, p, axis", diff="x", reads="p, axis", name="adgen.log_softmax")
def log_softmax_(g: Any, out: Any, x: Any, p: Any, axis: Any) -> Any:
    return g - p * sum_keepdims(g, axis)


@defjvp(log_softmax)
def log_softmax_jvp(d: Any, out: Any, x: Any, p: Any, axis: Any) -> Any:
    return d - sum_keepdims(p * d, axis)
