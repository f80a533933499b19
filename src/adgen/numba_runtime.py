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
from numba.extending import overload

__all__ = ["add_item", "add_out", "balanced_eq", "copy_adjoint", "det_vjp", "extreme_vjp", "grow",
           "inverse_axes", "loop_sequence", "matmul_vjp_a", "matmul_vjp_b", "matrix_transpose", "max_vjp", "mean_vjp", "or_zeros",
           "or_zeros_of_tree", "solve_vjp_a", "solve_vjp_b", "stored_into", "sum_vjp", "unbroadcast",
           "zero_if_none", "zeros_like", "zeros_of_tree"]


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


def copy_adjoint(adjoint: Any) -> Any:
    """A copy of an adjoint the pullback may then change in place: an array's copy, a number
    itself."""
    raise NotImplementedError("only called from nopython code")


@overload(copy_adjoint, jit_options={"cache": True})
def _copy_adjoint(adjoint):
    if isinstance(adjoint, types.Array):
        return lambda adjoint: adjoint.copy()
    if _is_number(adjoint):
        return lambda adjoint: adjoint
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
    """``g`` summed down to ``shape``: the cases nopython code meets (a number's cotangent, an
    array's cotangent of the array's own shape, an array summed to a number)."""
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
        if g.ndim == rank:
            def same(g, shape):
                if g.shape != shape:
                    raise ValueError("adgen numba backend: a cotangent broadcast over a "
                                     "dimension of size 1; use the default backend")
                return g
            return same
    return None  # broadcasting up or over leading axes: not in nopython (refused)


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
