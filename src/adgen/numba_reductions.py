"""The nopython reductions of the numba backend's runtime: NumPy's reductions over one axis,
which numba's do not take, and the pullbacks of reductions (``sum_vjp``, ``mean_vjp``,
``max_vjp``, ``unbroadcast``: a cotangent summed down to its value's shape).

numba's ``np.max`` / ``np.min`` take no axis, and none takes ``keepdims``.
``numba_call_forms.reductions`` rewrites ``np.max(x, axis=k, keepdims=b)`` (``np.min``,
``np.sum``, ``np.mean``, and the methods) into ``max_axis(x, k, b)`` etc., with a constant
axis and keepdims, which numba types as literals: the rank of the result is known when it
compiles.

Re-exported by :mod:`adgen.numba_runtime`, which the generated modules import (see its
docstring for what every helper here promises). Importing this module imports numba; the
``@overload`` typing functions carry no annotations (numba requires the two signatures to
match exactly).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba import types
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.extending import overload
from numba.np.unsafe.ndarray import to_fixed_tuple

from adgen.numba_typing import is_number

__all__ = ["max_axis", "max_vjp", "mean_axis", "mean_vjp", "min_axis", "sum_axis",
           "sum_keepdims", "sum_vjp", "unbroadcast"]


def unbroadcast(g: Any, shape: Any) -> Any:
    """``g`` summed down to ``shape``: a number's cotangent, an array summed to a number, and
    an array's cotangent summed over the axes its value was broadcast along (leading axes,
    and axes of length 1); broadcasting a cotangent up is refused at compile time."""
    raise NotImplementedError("only called from nopython code")


@overload(unbroadcast, jit_options={"cache": True})
def _unbroadcast(g, shape):
    if not isinstance(shape, (types.UniTuple, types.Tuple)):
        return None
    rank = len(shape)
    if is_number(g) and rank == 0:
        return lambda g, shape: g
    if isinstance(g, types.Array):
        if rank == 0:
            return lambda g, shape: g.sum()
        if g.ndim >= rank and isinstance(g.dtype, types.Float):
            down = numba.njit(_unbroadcast_down(g, rank))
            if g.ndim > rank:
                return lambda g, shape: down(g, shape)

            def same(g, shape):
                if g.shape == shape:  # the common case: no copy
                    return g
                return down(g, shape)
            return same
    return None  # broadcasting up: not in nopython (refused)


def sum_vjp(g: Any, shape: Any, axis: Any, keepdims: Any) -> Any:
    """The adjoint of a full ``np.sum(a)`` of an array: ``g`` in every element (a reduction
    over axes is refused at compile time)."""
    raise NotImplementedError("only called from nopython code")


def _full_reduction(g: Any, shape: Any, axis: Any) -> bool:
    return is_number(g) and isinstance(axis, types.NoneType) and \
        isinstance(shape, (types.UniTuple, types.Tuple)) and len(shape) > 0


@overload(sum_vjp, jit_options={"cache": True})
def _sum_vjp(g, shape, axis, keepdims):
    if isinstance(axis, types.IntegerLiteral):
        return _axis_sum_vjp(g, shape, axis, keepdims, mean=False)
    if _full_reduction(g, shape, axis):
        def full(g, shape, axis, keepdims):
            if keepdims:
                raise ValueError("adgen numba backend: np.sum(..., keepdims=True)")
            return np.full(shape, float(g))
        return full
    return None


def mean_vjp(g: Any, shape: Any, axis: Any, keepdims: Any) -> Any:
    """The adjoint of a full ``np.mean(a)`` of a non-empty array: ``g / a.size`` in every
    element."""
    raise NotImplementedError("only called from nopython code")


@overload(mean_vjp, jit_options={"cache": True})
def _mean_vjp(g, shape, axis, keepdims):
    if isinstance(axis, types.IntegerLiteral):
        return _axis_sum_vjp(g, shape, axis, keepdims, mean=True)
    if _full_reduction(g, shape, axis):
        def full(g, shape, axis, keepdims):
            count = 1
            for n in shape:
                count *= n
            if keepdims or count == 0:
                raise ValueError("adgen numba backend: np.mean(..., keepdims=True) or of an "
                                 "empty array")
            return np.full(shape, g / count)
        return full
    return None


def max_vjp(g: Any, out: Any, a: Any, axis: Any, keepdims: Any) -> Any:
    """The adjoint of a full ``np.max(a)`` / ``np.min(a)`` of a non-empty array: ``g`` at the
    extremum, split evenly between tied extrema (the default helper's rule); a reduction over
    axes is refused at compile time."""
    raise NotImplementedError("only called from nopython code")


@overload(max_vjp, jit_options={"cache": True})
def _max_vjp(g, out, a, axis, keepdims):
    if isinstance(axis, types.IntegerLiteral):
        return _axis_max_vjp(g, out, a, axis, keepdims)
    if is_number(g) and is_number(out) and isinstance(a, types.Array) and a.ndim > 0 and \
            isinstance(axis, types.NoneType):
        def full(g, out, a, axis, keepdims):
            if keepdims:
                raise ValueError("adgen numba backend: np.max(..., keepdims=True)")
            hits = a == out
            count = np.count_nonzero(hits)
            if count == 1:  # one extremum, the common case: g at its place
                flat = np.zeros(a.size)
                flat[np.argmax(hits)] = g
                return flat.reshape(a.shape)
            return hits * (g / count)
        return full
    return None


def _axis_of(x: Any, axis: Any, keepdims: Any) -> tuple[int, bool] | None:
    """(the axis in range(x.ndim), keepdims) of a reduction of a float array ``x`` whose
    axis and keepdims numba typed as literals, or None (numba then retries with literals,
    and refuses what matches nothing)."""
    if not (isinstance(x, types.Array) and x.ndim >= 1 and isinstance(x.dtype, types.Float)
            and isinstance(axis, types.IntegerLiteral) and
            isinstance(keepdims, types.BooleanLiteral)):
        return None
    k = axis.literal_value
    if not -x.ndim <= k < x.ndim:
        return None
    return k % x.ndim, keepdims.literal_value


@numba.njit(cache=True)
def _block(c: Any, k: int) -> Any:
    """A C-ordered array as (before, along, after) around its axis ``k``."""
    shape = c.shape
    before = 1
    for d in range(k):
        before *= shape[d]
    after = 1
    for d in range(k + 1, len(shape)):
        after *= shape[d]
    return c.reshape((before, shape[k], after))


@numba.njit(cache=True)
def _reduce_max(b: Any, sign: float) -> Any:
    """The maximum (sign 1) or minimum (sign -1) along the middle axis of ``b``; NaN wins,
    as in NumPy."""
    before, along, after = b.shape
    if along == 0:
        raise ValueError("zero-size array to reduction operation maximum which has no "
                         "identity")
    out = np.empty((before, after))
    for i in range(before):
        for j in range(after):
            acc = b[i, 0, j]
            for m in range(1, along):
                v = b[i, m, j]
                if np.isnan(v) or (sign * v > sign * acc):
                    if not np.isnan(acc):
                        acc = v
            out[i, j] = acc
    return out


@numba.njit(cache=True)
def _reduce_sum(b: Any, scale: float) -> Any:
    """The sum along the middle axis of ``b``, times ``scale``."""
    before, along, after = b.shape
    out = np.zeros((before, after))
    for i in range(before):
        for m in range(along):
            for j in range(after):
                out[i, j] += b[i, m, j]
    if scale != 1.0:
        out *= scale
    return out


@numba.njit(cache=True)
def _reduce(x: Any, k: int, kind: int) -> Any:
    """``x`` reduced along its axis ``k`` (0: max, 1: min, 2: sum, 3: mean), as a
    (before, after) array."""
    b = _block(np.ascontiguousarray(x), k)
    if kind <= 1:
        return _reduce_max(b, 1.0 if kind == 0 else -1.0)
    along = b.shape[1]
    # a mean over an empty axis is NaN (0 / 0), as NumPy's (without its warning)
    return _reduce_sum(b, 1.0 if kind == 2 else np.nan if along == 0 else 1.0 / along)


def _reducer(kind: int) -> Any:
    """The typing function of ``max_axis`` (0), ``min_axis`` (1), ``sum_axis`` (2),
    ``mean_axis`` (3): ``(x, axis, keepdims)``."""

    def typer(x, axis, keepdims):
        found = _axis_of(x, axis, keepdims)
        if found is None:
            return None
        k, keep = found
        n1 = x.ndim - 1
        if keep:
            def kept(x, axis, keepdims):
                return _reduce(x, k, kind).reshape(tuple_setitem(x.shape, k, 1))
            return kept
        if n1 == 0:
            return lambda x, axis, keepdims: _reduce(x, k, kind)[0, 0]  # a number, as NumPy's

        def dropped(x, axis, keepdims):
            dims = np.empty(n1, np.int64)
            j = 0
            for d in range(n1 + 1):
                if d != k:
                    dims[j] = x.shape[d]
                    j += 1
            return _reduce(x, k, kind).reshape(to_fixed_tuple(dims, n1))
        return dropped

    return typer


def max_axis(x: Any, axis: Any, keepdims: Any) -> Any:
    """``np.max(x, axis=axis, keepdims=keepdims)`` of a float array (NaN propagates)."""
    raise NotImplementedError("only called from nopython code")


def min_axis(x: Any, axis: Any, keepdims: Any) -> Any:
    """``np.min(x, axis=axis, keepdims=keepdims)`` of a float array."""
    raise NotImplementedError("only called from nopython code")


def sum_axis(x: Any, axis: Any, keepdims: Any) -> Any:
    """``np.sum(x, axis=axis, keepdims=keepdims)`` of a float array."""
    raise NotImplementedError("only called from nopython code")


def mean_axis(x: Any, axis: Any, keepdims: Any) -> Any:
    """``np.mean(x, axis=axis, keepdims=keepdims)`` of a float array."""
    raise NotImplementedError("only called from nopython code")


for _k, _f in enumerate((max_axis, min_axis, sum_axis, mean_axis)):
    overload(_f, jit_options={"cache": True})(_reducer(_k))


def sum_keepdims(a: Any, axis: Any) -> Any:
    """``np.sum(a, axis=axis, keepdims=True)`` of a float array for a constant ``axis`` (the
    default pipeline's softmax adjoint, ``out * (g - sum_keepdims(g * out, 1))``)."""
    raise NotImplementedError("only called from nopython code")


@overload(sum_keepdims, jit_options={"cache": True})
def _sum_keepdims(a, axis):
    if isinstance(a, types.Array) and isinstance(a.dtype, types.Float):
        return lambda a, axis: sum_axis(a, axis, True)
    return None


def _literal_axis(ndim: int, axis: Any, keepdims: Any) -> tuple[int, bool] | None:
    if not (isinstance(axis, types.IntegerLiteral) and
            isinstance(keepdims, types.BooleanLiteral) and ndim >= 1 and
            -ndim <= axis.literal_value < ndim):
        return None
    return axis.literal_value % ndim, keepdims.literal_value


def _kept(g: Any, k: int, keep: bool) -> Any:
    """A function ``(g, shape)``: a reduction's cotangent ``g`` with the reduced axis ``k`` of
    an array of ``shape`` back, of length 1 (so it broadcasts against the array); None where
    ``g`` cannot be that cotangent."""
    if is_number(g) and not keep:
        return lambda g, shape: np.full((1,), float(g))  # of a vector, reduced to a number
    if isinstance(g, types.Array):
        return lambda g, shape: np.ascontiguousarray(g).reshape(tuple_setitem(shape, k, 1))
    return None


def _axis_sum_vjp(g: Any, shape: Any, axis: Any, keepdims: Any, mean: bool) -> Any:
    """sum_vjp / mean_vjp over one literal axis: ``g`` broadcast back along it."""
    if not isinstance(shape, types.UniTuple):
        return None
    found = _literal_axis(len(shape), axis, keepdims)
    if found is None:
        return None
    k, keep = found
    kept = _kept(g, k, keep)
    if kept is None or (isinstance(g, types.Array) and g.ndim != len(shape) - (not keep)):
        return None
    kept = numba.njit(kept)

    def impl(g, shape, axis, keepdims):
        out = np.zeros(shape) + kept(g, shape)
        return out / shape[k] if mean else out
    return impl


def _axis_max_vjp(g: Any, out: Any, a: Any, axis: Any, keepdims: Any) -> Any:
    """max_vjp over one literal axis: ``g`` at each slice's extremum, split evenly between
    tied extrema (the default helper's rule)."""
    if not isinstance(a, types.Array):
        return None
    found = _literal_axis(a.ndim, axis, keepdims)
    if found is None:
        return None
    k, keep = found
    kept_g, kept_out = _kept(g, k, keep), _kept(out, k, keep)
    if kept_g is None or kept_out is None:
        return None
    kept_g, kept_out = numba.njit(kept_g), numba.njit(kept_out)

    def impl(g, out, a, axis, keepdims):
        hits = (a == kept_out(out, a.shape)) * 1.0
        count = _reduce(hits, k, 2).reshape(tuple_setitem(a.shape, k, 1))
        return kept_g(g, a.shape) * hits / count
    return impl


def _unbroadcast_down(g: Any, rank: int) -> Any:
    """unbroadcast of a float array cotangent of rank >= ``rank`` > 0 to ``shape``: summed
    over its leading axes, then over each axis where ``shape`` has 1 and ``g`` more."""
    lead = g.ndim - rank

    def leading(g, shape):
        c = np.ascontiguousarray(g)
        rest = np.empty(rank, np.int64)
        size = 1
        for d in range(rank):
            rest[d] = c.shape[lead + d]
            size *= rest[d]
        return _reduce_sum(c.reshape((1, -1, size)), 1.0).reshape(to_fixed_tuple(rest, rank))

    summed = numba.njit(leading) if lead else numba.njit(
        lambda g, shape: np.ascontiguousarray(g))

    def down(g, shape):
        r = summed(g, shape)
        for d in range(rank):
            if shape[d] == 1 and r.shape[d] != 1:
                r = _reduce(r, d, 2).reshape(tuple_setitem(r.shape, d, 1))
        if r.shape != shape:
            raise ValueError("adgen numba backend: a cotangent of another shape than its "
                             "value")
        return r
    return down
