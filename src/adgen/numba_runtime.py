"""What the numba backend's generated code imports: adgen's runtime helpers in nopython form.

The default backend's helpers (``adgen.runtime``) decide at run time what a value is (a
number, an array, a list, None) and act on it. In nopython mode the types are known when
numba compiles, so each helper here is a plain function whose nopython version is chosen per
argument type with ``numba.extending.overload``; a combination the default helper would
handle with Python objects (lists, None, broadcasting a cotangent up) has no overload, so
numba refuses it at compile time and the backend reports it as an adgen error, naming the
user's line (``adgen.backends``). Nothing here is ever a silent approximation of the
default helper: where an answer depends on run-time shapes, the helper checks them and
raises.

Importing this module imports numba: only the numba backend does. The ``@overload`` typing
functions and the implementations they return have no annotations: numba requires the two
signatures to match exactly, annotations included.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba import types
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.extending import overload
from numba.np.unsafe.ndarray import to_fixed_tuple

__all__ = ["add_item", "item", "add_out", "balanced_eq", "copy_adjoint", "det_vjp", "extreme_vjp", "grow",
           "add_matmul_vjp_a", "add_matmul_vjp_b", "add_newaxis", "add_outer", "cholesky_vjp", "diag_vjp", "entry_items", "inverse_axes", "loop_sequence", "matmul_vjp_a", "matmul_vjp_b",
           "matrix_transpose", "max_axis", "max_vjp", "mean_axis", "mean_vjp", "min_axis",
           "or_zeros", "or_zeros_of_tree", "remap_tree", "saved_copy", "solve_vjp_a", "solve_vjp_b", "stored_into",
           "store_cotangent", "strict_before_write", "strict_capture", "strict_scope",
           "sum_axis", "sum_keepdims", "sum_vjp", "unbroadcast", "with_shadows", "zero_if_none", "zeros_into", "zeros_like", "zeros_of_tree"]


def _is_number(t: Any) -> bool:
    return isinstance(t, (types.Float, types.Integer, types.Boolean))


def zeros_like(x: Any) -> Any:
    """A zero adjoint of ``x``: 0.0 for a number, a float64 array of its shape for an array."""
    raise NotImplementedError("only called from nopython code")


@overload(zeros_like, jit_options={"cache": True})
def _zeros_like(x):
    if isinstance(x, types.Array):
        return lambda x: np.zeros(x.shape)
    if _is_number(x):
        return lambda x: 0.0
    return None


def zeros_into(out: Any, like: Any) -> Any:
    """``zeros_like(like)`` made in ``out``, a float64 array the caller allocated for the
    gradient (``grad``'s one compiled call): zeroed and returned, so the pullback accumulates
    the gradient where the caller reads it and nothing is allocated or copied for it. Raises
    where the shapes differ (never a gradient of another shape)."""
    raise NotImplementedError("only called from nopython code")


@overload(zeros_into, jit_options={"cache": True})
def _zeros_into(out, like):
    if isinstance(out, types.Array) and isinstance(like, types.Array) and \
            out.ndim == like.ndim and isinstance(out.dtype, types.Float):
        def into(out, like):
            if out.shape != like.shape:
                raise ValueError("adgen internal error: a gradient buffer of another shape")
            # a store through a view, not fill(): numba's fill is a loop over an iterator
            # (85 against 45 ns for 20 x 30), and inlined in mse's gradient it cost 30 ns
            out[...] = 0.0
            return out
        return into
    return None


def store_cotangent(out: Any, ct: Any) -> Any:
    """``out`` (a float64 array the caller allocated for an argument's gradient) holding the
    cotangent ``ct`` the pullback returned for that argument: a copy of an array of its
    shape, zeros for None (no gradient reached it). Raises where the shapes differ: a
    cotangent broadcast up has no nopython form (``unbroadcast``), and a gradient of another
    shape is never handed on."""
    raise NotImplementedError("only called from nopython code")


@overload(store_cotangent, jit_options={"cache": True})
def _store_cotangent(out, ct):
    if not (isinstance(out, types.Array) and isinstance(out.dtype, types.Float)):
        return None
    if isinstance(ct, types.NoneType):
        def zero(out, ct):
            out.fill(0.0)
            return out
        return zero
    if _is_number(ct):  # the same partial for every element (as_gradient broadcasts it)
        def fill(out, ct):
            out.fill(ct)
            return out
        return fill
    inner = ct.type if isinstance(ct, types.Optional) else ct
    if isinstance(inner, types.Array) and inner.ndim == out.ndim and \
            isinstance(inner.dtype, (types.Float, types.Integer, types.Boolean)):
        def copy(out, ct):
            if ct is None:
                out.fill(0.0)
                return out
            if out.shape != ct.shape:
                raise ValueError("adgen internal error: a cotangent of another shape")
            flat = out.reshape(out.size)
            for k, v in enumerate(ct.flat):
                flat[k] = v
            return out
        return copy
    return None


def zeros_of_tree(shape: Any) -> Any:
    """The zero adjoint of a number (shape tree ``()``) or of an array of ``shape``, whose
    value the pullback did not keep (containers' trees are refused at compile time)."""
    raise NotImplementedError("only called from nopython code")


@overload(zeros_of_tree, jit_options={"cache": True})
def _zeros_of_tree(shape):
    if isinstance(shape, (types.UniTuple, types.Tuple)) and len(shape) == 0:
        return lambda shape: 0.0
    if isinstance(shape, types.UniTuple) and isinstance(shape.dtype, types.Integer):
        return lambda shape: np.zeros(shape)
    return None


def or_zeros_of_tree(g: Any, shape: Any) -> Any:
    """``g``, or the zero adjoint of a number or an array of shape tree ``shape`` where g is
    None."""
    raise NotImplementedError("only called from nopython code")


@overload(or_zeros_of_tree, jit_options={"cache": True})
def _or_zeros_of_tree(g, shape):
    if isinstance(g, types.NoneType):
        return lambda g, shape: zeros_of_tree(shape)
    if isinstance(g, types.Array) or _is_number(g):
        return lambda g, shape: g
    return None


def zero_if_none(g: Any) -> Any:
    """0.0 for a None (zero) adjoint, else ``g``."""
    raise NotImplementedError("only called from nopython code")


@overload(zero_if_none, jit_options={"cache": True})
def _zero_if_none(g):
    if isinstance(g, types.NoneType):
        return lambda g: 0.0
    if _is_number(g):
        return lambda g: g
    if isinstance(g, types.Optional) and _is_number(g.type):
        def either(g):
            return 0.0 if g is None else g
        return either
    return None


def add_out(shadow: Any, out_bar: Any) -> Any:
    """The adjoint buffer of a returned array after adding the cotangent given for it (the
    default backend's ``add_out``, with the buffer already found statically)."""
    raise NotImplementedError("only called from nopython code")


@overload(add_out, jit_options={"cache": True})
def _add_out(shadow, out_bar):
    if not isinstance(shadow, types.Array):
        return None
    if isinstance(out_bar, types.NoneType):
        return lambda shadow, out_bar: shadow
    if isinstance(out_bar, types.Array) or _is_number(out_bar):
        def add(shadow, out_bar):
            shadow += out_bar
            return shadow
        return add
    return None


def item(adjoint: Any, index: Any) -> Any:
    """``adjoint[index]`` where a None adjoint (zero) has zero items: the cotangent of one
    part of a returned tuple (``has_aux``'s seed ``(1.0, None)``), or an array's element."""
    raise NotImplementedError("only called from nopython code")


@overload(item, prefer_literal=True, jit_options={"cache": True})
def _item(adjoint, index):
    if isinstance(adjoint, (types.NoneType, types.Omitted)):
        return lambda adjoint, index: None
    if isinstance(adjoint, types.BaseTuple) and isinstance(index, types.IntegerLiteral):
        k = index.literal_value  # a heterogeneous tuple's item: its position when typed
        return lambda adjoint, index: adjoint[k]
    if isinstance(adjoint, types.Array) and isinstance(index, types.Integer):
        return lambda adjoint, index: adjoint[index]
    return None


def or_zeros(g: Any, like: Any) -> Any:
    """``g``, or the zero adjoint of ``like`` where ``g`` is None."""
    raise NotImplementedError("only called from nopython code")


@overload(or_zeros, jit_options={"cache": True})
def _or_zeros(g, like):
    if isinstance(g, types.NoneType):
        if isinstance(like, types.Array):
            return lambda g, like: np.zeros(like.shape)
        if _is_number(like) or isinstance(like, types.NoneType):
            return lambda g, like: 0.0
        return None
    if isinstance(g, types.Array) or _is_number(g):
        return lambda g, like: g
    return None


def loop_sequence(x: Any) -> Any:
    """What a ``for`` loop indexes: an array as it is (lists are not taken in nopython)."""
    raise NotImplementedError("only called from nopython code")


@overload(loop_sequence, jit_options={"cache": True})
def _loop_sequence(x):
    if isinstance(x, types.Array):
        return lambda x: x
    return None


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
    if _is_number(g) and rank == 0:
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


def stored_into(x: Any, g: Any) -> Any:
    """The cotangent of a value stored into ``x``: ``g``, or zero into an int or bool array
    (the store truncated the value)."""
    raise NotImplementedError("only called from nopython code")


@overload(stored_into, jit_options={"cache": True})
def _stored_into(x, g):
    if isinstance(x, types.Array) and isinstance(x.dtype, (types.Integer, types.Boolean)):
        if isinstance(g, types.Array):
            return lambda x, g: np.zeros(g.shape)
        return lambda x, g: 0.0
    if isinstance(x, types.Array):
        return lambda x, g: g
    return None


def balanced_eq(x: Any, z: Any, y: Any) -> Any:
    """1 where ``x == z != y``, 0.5 where ``x == z == y``, else 0 (for ``z = max(x, y)``)."""
    raise NotImplementedError("only called from nopython code")


@overload(balanced_eq, jit_options={"cache": True})
def _balanced_eq(x, z, y):
    if _is_number(x) and _is_number(z) and _is_number(y):
        def scalar(x, z, y):
            if x == z:
                return 0.5 if y == z else 1.0
            return 0.0
        return scalar
    return None


def extreme_vjp(g: Any, out: Any, x: Any, y: Any) -> Any:
    """The cotangent of ``x`` in ``out = max(x, y)`` (or min), for numbers: ``g`` times its
    share (``balanced_eq``). The one-iterable form (``y`` None) has no nopython version."""
    raise NotImplementedError("only called from nopython code")


@overload(extreme_vjp, jit_options={"cache": True})
def _extreme_vjp(g, out, x, y):
    if _is_number(g) and _is_number(out) and _is_number(x) and _is_number(y):
        def scalar(g, out, x, y):
            if x == out:
                return g * (0.5 if y == out else 1.0)
            return 0.0 * g
        return scalar
    return None


def add_item(adjoint: Any, index: Any, g: Any) -> None:
    """``adjoint[index] += g`` for an integer index or a tuple of them (an array index, where
    a repeated entry must add up as ``np.add.at``, is refused at compile time)."""
    raise NotImplementedError("only called from nopython code")


@overload(add_item, jit_options={"cache": True})
def _add_item(adjoint, index, g):
    if not isinstance(adjoint, types.Array):
        return None
    if isinstance(index, types.Integer) or (
            isinstance(index, (types.UniTuple, types.Tuple)) and
            all(isinstance(t, types.Integer) for t in index.types)):
        def add(adjoint, index, g):
            adjoint[index] += g
        return add
    return None


def sum_vjp(g: Any, shape: Any, axis: Any, keepdims: Any) -> Any:
    """The adjoint of a full ``np.sum(a)`` of an array: ``g`` in every element (a reduction
    over axes is refused at compile time)."""
    raise NotImplementedError("only called from nopython code")


def _full_reduction(g: Any, shape: Any, axis: Any) -> bool:
    return _is_number(g) and isinstance(axis, types.NoneType) and \
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
    if _is_number(g) and _is_number(out) and isinstance(a, types.Array) and a.ndim > 0 and \
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


def inverse_axes(axes: Any) -> Any:
    """The permutation that undoes ``np.transpose(x, axes)``: None for None (``x.T``; an
    explicit permutation is refused at compile time)."""
    raise NotImplementedError("only called from nopython code")


@overload(inverse_axes, jit_options={"cache": True})
def _inverse_axes(axes):
    if isinstance(axes, (types.NoneType, types.Omitted)):
        return lambda axes: None
    return None


def matmul_vjp_a(g: Any, b: Any, a_shape: Any) -> Any:
    """The adjoint of ``a`` in ``a @ b`` for vectors and matrices (no stacks, no
    broadcasting: those are refused at compile time)."""
    raise NotImplementedError("only called from nopython code")


def _matmul_ranks(g: Any, other: Any, shape: Any) -> tuple[int, int, int] | None:
    """(rank of g, of the other operand, of the operand whose adjoint is wanted), or None
    where the case is not one of the four vector/matrix products."""
    if not isinstance(other, types.Array) or not isinstance(shape, types.UniTuple):
        return None
    gr = g.ndim if isinstance(g, types.Array) else 0 if _is_number(g) else -1
    ranks = (gr, other.ndim, len(shape))
    return ranks if other.ndim <= 2 and len(shape) <= 2 and len(shape) > 0 and gr >= 0 \
        else None


@overload(matmul_vjp_a, jit_options={"cache": True})
def _matmul_vjp_a(g, b, a_shape):
    ranks = _matmul_ranks(g, b, a_shape)
    if ranks == (1, 1, 2):  # matrix @ vector: the outer product
        return lambda g, b, a_shape: np.outer(g, b)
    if ranks == (0, 1, 1):  # vector @ vector
        return lambda g, b, a_shape: g * b
    if ranks == (1, 2, 1):  # vector @ matrix
        return lambda g, b, a_shape: np.dot(np.ascontiguousarray(b), g)
    if ranks == (2, 2, 2):  # matrix @ matrix
        return lambda g, b, a_shape: np.dot(g, np.ascontiguousarray(b.T))
    return None


def matmul_vjp_b(g: Any, a: Any, b_shape: Any) -> Any:
    """The adjoint of ``b`` in ``a @ b`` for vectors and matrices."""
    raise NotImplementedError("only called from nopython code")


@overload(matmul_vjp_b, jit_options={"cache": True})
def _matmul_vjp_b(g, a, b_shape):
    ranks = _matmul_ranks(g, a, b_shape)
    if ranks == (1, 2, 1):  # matrix @ vector: the transposed product
        return lambda g, a, b_shape: np.dot(g, np.ascontiguousarray(a))
    if ranks == (0, 1, 1):  # vector @ vector
        return lambda g, a, b_shape: g * a
    if ranks == (1, 1, 2):  # vector @ matrix
        return lambda g, a, b_shape: np.outer(a, g)
    if ranks == (2, 2, 2):  # matrix @ matrix
        return lambda g, a, b_shape: np.dot(np.ascontiguousarray(a.T), g)
    return None


def matrix_transpose(x: Any) -> Any:
    """The transpose of a matrix (stacks of matrices are refused at compile time)."""
    raise NotImplementedError("only called from nopython code")


@overload(matrix_transpose, jit_options={"cache": True})
def _matrix_transpose(x):
    if isinstance(x, types.Array) and x.ndim == 2:
        return lambda x: x.T
    return None


def det_vjp(g: Any, out: Any, a: Any) -> Any:
    """The adjoint of ``np.linalg.det(a)`` of a matrix: ``g det(a) inv(a)^T`` (numba's inv
    raises for a singular ``a``, as NumPy's)."""
    raise NotImplementedError("only called from nopython code")


@overload(det_vjp, jit_options={"cache": True})
def _det_vjp(g, out, a):
    if _is_number(g) and _is_number(out) and isinstance(a, types.Array) and a.ndim == 2:
        return lambda g, out, a: (g * out) * np.linalg.inv(a).T
    return None


def solve_vjp_b(g: Any, a: Any, b_shape: Any) -> Any:
    """The adjoint of ``b`` in ``x = np.linalg.solve(a, b)`` for a matrix ``a`` and a vector
    or matrix ``b``: ``solve(a^T, g)``."""
    raise NotImplementedError("only called from nopython code")


@overload(solve_vjp_b, jit_options={"cache": True})
def _solve_vjp_b(g, a, b_shape):
    if isinstance(a, types.Array) and a.ndim == 2 and isinstance(g, types.Array) and \
            g.ndim in (1, 2) and isinstance(b_shape, types.UniTuple) and \
            len(b_shape) == g.ndim:
        return lambda g, a, b_shape: np.linalg.solve(np.ascontiguousarray(a.T), g)
    return None


def solve_vjp_a(g: Any, out: Any, a: Any, b_ndim: Any) -> Any:
    """The adjoint of ``a`` in ``x = np.linalg.solve(a, b)``: ``-solve(a^T, g) x^T`` (the
    rank of ``b`` is the rank of ``g``, known when numba compiles)."""
    raise NotImplementedError("only called from nopython code")


@overload(solve_vjp_a, jit_options={"cache": True})
def _solve_vjp_a(g, out, a, b_ndim):
    if not (isinstance(a, types.Array) and a.ndim == 2 and isinstance(g, types.Array) and
            isinstance(out, types.Array) and g.ndim == out.ndim):
        return None
    if g.ndim == 1:
        def vector(g, out, a, b_ndim):
            return -np.outer(np.linalg.solve(np.ascontiguousarray(a.T), g), out)
        return vector
    if g.ndim == 2:
        def matrix(g, out, a, b_ndim):
            gb = np.linalg.solve(np.ascontiguousarray(a.T), g)
            return -np.dot(gb, np.ascontiguousarray(out.T))
        return matrix
    return None


@numba.njit(cache=True)
def grow(column: Any, need: int) -> Any:
    """``column`` with room for at least ``need`` rows: the same array, or a copy of it into
    one at least twice as long (a tape grows geometrically, so n appends copy O(n) rows).
    Called before a counted loop with the rows it will append, and before each append of a
    loop whose count is not known (a while loop)."""
    if need <= column.shape[0]:
        return column
    size = max(need, 2 * column.shape[0] + 16)
    out = np.empty(size, column.dtype)
    out[:column.shape[0]] = column
    return out


# --------------------------------------------------------------------------------------------
# Reductions over one axis: numba's np.max / np.min take no axis, and none takes keepdims.
# numba_call_forms.reductions rewrites np.max(x, axis=k, keepdims=b) (np.min, np.sum, np.mean,
# and the methods)
# into max_axis(x, k, b) etc., with a constant axis and keepdims, which numba types as
# literals: the rank of the result is known when it compiles.


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
    if _is_number(g) and not keep:
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


def add_newaxis(adjoint: Any, g: Any) -> None:
    """``adjoint[index] += g`` for an index of only ``None`` and ``:`` (``X[:, None, :]``):
    the view is the array with length-1 axes inserted, so ``g`` adds back reshaped
    (numba_call_forms.newaxis_items rewrites ``add_item`` of such a constant index into this)."""
    raise NotImplementedError("only called from nopython code")


@overload(add_newaxis, jit_options={"cache": True})
def _add_newaxis(adjoint, g):
    if isinstance(adjoint, types.Array) and isinstance(g, types.Array) and \
            g.ndim >= adjoint.ndim:
        def add(adjoint, g):
            if g.size != adjoint.size:
                raise ValueError("adgen numba backend: a cotangent of another shape than "
                                 "its value")
            adjoint += np.ascontiguousarray(g).reshape(adjoint.shape)
        return add
    return None


def diag_vjp(g: Any, shape: Any, k: Any) -> Any:
    """The adjoint of ``np.diag(v, k)``: the k-th diagonal of ``g`` for a vector ``v``, or
    ``g`` written onto the k-th diagonal of a matrix ``v``."""
    raise NotImplementedError("only called from nopython code")


@overload(diag_vjp, jit_options={"cache": True})
def _diag_vjp(g, shape, k):
    if not (isinstance(g, types.Array) and isinstance(shape, types.UniTuple) and
            isinstance(k, types.Integer)):
        return None
    if len(shape) == 1 and g.ndim == 2:
        def of_vector(g, shape, k):
            rows = max(0, min(g.shape[0] + min(k, 0), g.shape[1] - max(k, 0)))
            out = np.empty(rows)
            for i in range(rows):
                out[i] = g[i - min(k, 0), i + max(k, 0)]
            return out
        return of_vector
    if len(shape) == 2 and g.ndim == 1:
        def of_matrix(g, shape, k):
            out = np.zeros(shape)
            for i in range(g.shape[0]):
                out[i - min(k, 0), i + max(k, 0)] = g[i]
            return out
        return of_matrix
    return None


def cholesky_vjp(g: Any, out: Any) -> Any:
    """The adjoint of ``L = np.linalg.cholesky(a)`` of a real matrix, for the lower triangle
    NumPy reads: ``tril(S + S^T) - diag(S)`` with ``S`` Murray's symmetric adjoint (the
    default helper's formula)."""
    raise NotImplementedError("only called from nopython code")


@overload(cholesky_vjp, jit_options={"cache": True})
def _cholesky_vjp(g, out):
    if not (isinstance(g, types.Array) and isinstance(out, types.Array) and g.ndim == 2 and
            out.ndim == 2 and isinstance(out.dtype, types.Float)):
        return None

    def impl(g, out):
        n = out.shape[-1]
        ell = np.ascontiguousarray(out)
        phi = np.tril(np.dot(np.ascontiguousarray(ell.T), np.ascontiguousarray(g)))
        phi = phi - 0.5 * np.eye(n) * phi
        ell_inv = np.linalg.inv(ell)
        s = np.dot(np.dot(np.ascontiguousarray(ell_inv.T), phi), ell_inv)
        sym = 0.5 * (s + s.T)
        return np.tril(2.0 * sym) - np.eye(n) * sym
    return impl


def entry_items(x: Any) -> Any:
    """A value as the function received it: a number or an array is itself (containers,
    whose structure the default helper copies, are refused at compile time)."""
    raise NotImplementedError("only called from nopython code")


@overload(entry_items, jit_options={"cache": True})
def _entry_items(x):
    if isinstance(x, types.Array) or _is_number(x):
        return lambda x: x
    return None


def with_shadows(x: Any, adjoint: Any) -> Any:
    """The adjoint of a call's result ``x`` as the call's pullback takes it: for a number or
    an array, ``adjoint`` itself (the default helper moves adjoints out of shadow memory for
    containers only; the static adjoint buffers of this backend hold no container)."""
    raise NotImplementedError("only called from nopython code")


@overload(with_shadows, jit_options={"cache": True})
def _with_shadows(x, adjoint):
    if isinstance(x, types.Array) or _is_number(x):
        return lambda x, adjoint: adjoint
    return None


@numba.njit(cache=True)
def _span(x: Any) -> tuple[int, int]:
    """The addresses ``x`` may touch: [lowest, highest + 1) over its strides."""
    lo = hi = x.ctypes.data
    for d in range(x.ndim):
        step = (x.shape[d] - 1) * x.strides[d]
        if step < 0:
            lo += step
        else:
            hi += step
    return lo, hi + x.itemsize


@numba.njit(cache=True)
def _apart(x: Any, y: Any) -> bool:
    """Whether ``x`` and ``y`` certainly share no memory (their address spans are apart)."""
    if x.size == 0 or y.size == 0:
        return True
    a, b = _span(x)
    c, d = _span(y)
    return b <= c or d <= a


def add_matmul_vjp_a(acc: Any, g: Any, b: Any, a_shape: Any) -> None:
    """``acc += matmul_vjp_a(g, b, a_shape)`` in place: for the outer product of two vectors
    (a matrix-vector product's matrix adjoint, every step of an RNN), without allocating it
    (numba_call_forms.matmul_accumulations rewrites the pullback's
    ``W_bar += matmul_vjp_a(...)`` into this)."""
    raise NotImplementedError("only called from nopython code")


def add_matmul_vjp_b(acc: Any, g: Any, a: Any, b_shape: Any) -> None:
    """``acc += matmul_vjp_b(g, a, b_shape)`` in place (an outer product added without
    allocating it, for a vector-matrix product's matrix adjoint)."""
    raise NotImplementedError("only called from nopython code")


def _outer_into(left_first: bool) -> Any:
    """The typing function of add_matmul_vjp_a (``acc += outer(g, other)``) or
    add_matmul_vjp_b (``acc += outer(other, g)``)."""

    def typer(acc, g, other, shape):
        if not isinstance(acc, types.Array):
            return None  # an adjoint of an operand of @ is an array; else numba refuses
        vjp = matmul_vjp_a if left_first else matmul_vjp_b
        if not (acc.ndim == 2 and isinstance(g, types.Array) and g.ndim == 1 and
                isinstance(other, types.Array) and other.ndim == 1):
            def general(acc, g, other, shape):
                acc += vjp(g, other, shape)
            return general

        def outer(acc, g, other, shape):
            u, v = (g, other) if left_first else (other, g)
            if acc.shape[0] != u.shape[0] or acc.shape[1] != v.shape[0] or \
                    not (_apart(acc, u) and _apart(acc, v)):
                acc += vjp(g, other, shape)  # a view of the buffer itself: as written
                return
            for i in range(u.shape[0]):
                ui = u[i]
                for j in range(v.shape[0]):
                    acc[i, j] += ui * v[j]
        return outer

    return typer


overload(add_matmul_vjp_a, jit_options={"cache": True})(_outer_into(True))
overload(add_matmul_vjp_b, jit_options={"cache": True})(_outer_into(False))


def add_outer(acc: Any, u: Any, v: Any) -> None:
    """``acc += u[:, None] * v`` in place: the matrix adjoint of a matrix-vector product as
    adgen.transforms.specialize writes it out (``W_bar += g[:, None] * x``), added without
    allocating the outer product (numba_call_forms.matmul_accumulations rewrites the statement into
    this). Any other types, shapes, or an ``acc`` sharing memory with ``u`` or ``v``: the
    statement as written."""
    raise NotImplementedError("only called from nopython code")


@overload(add_outer, jit_options={"cache": True})
def _add_outer(acc, u, v):
    if not isinstance(acc, types.Array):
        return None  # an adjoint += : numba refuses it as it would the statement
    if not (acc.ndim == 2 and isinstance(u, types.Array) and u.ndim == 1 and
            isinstance(v, types.Array) and v.ndim == 1):
        def general(acc, u, v):
            acc += u[:, None] * v
        return general

    def outer(acc, u, v):
        if acc.shape[0] != u.shape[0] or acc.shape[1] != v.shape[0] or \
                not (_apart(acc, u) and _apart(acc, v)):
            acc += u[:, None] * v  # broadcast into acc, or a view of acc itself: as written
            return
        for i in range(u.shape[0]):
            ui = u[i]
            for j in range(v.shape[0]):
                acc[i, j] += ui * v[j]
    return outer


# the nopython guards (mutation="strict" and "save", a callee's saved values re-pointed): a
# module of their own, re-exported here for the generated modules' one import
from adgen.numba_guards import (  # noqa: E402
    remap_tree,
    saved_copy,
    strict_before_write,
    strict_capture,
    strict_scope,
)

# A copy of an adjoint the pullback may then change in place is the copy a guarded site
# keeps of its value: an array's copy, a number itself (one nopython function, two names)
copy_adjoint = saved_copy
