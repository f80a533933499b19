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

Here: adjoint values (zeros of a value or a shape, a None adjoint, a cotangent stored into
the caller's buffer), items and stores, tapes (``grow``). Re-exported from their modules:
reductions over an axis and their pullbacks, ``unbroadcast`` (:mod:`adgen.numba_reductions`);
matrix products and linear algebra (:mod:`adgen.numba_linalg`); the guards of guarded sites
(:mod:`adgen.numba_guards`).

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

# the helpers of their own modules, re-exported here for the generated modules' one import
# (numba_guards: the nopython guards of mutation="strict" and "save", a callee's saved values
# re-pointed)
from adgen import (
    numba_arithmetic,
    numba_guards,
    numba_linalg,
    numba_reductions,
    numba_typing,
)
from adgen.numba_arithmetic import py_floordiv, py_mod, py_pow, py_truediv
from adgen.numba_guards import (
    remap_tree,
    saved_copy,
    strict_before_write,
    strict_capture,
    strict_scope,
)
from adgen.numba_linalg import (
    add_matmul_vjp_a,
    add_matmul_vjp_b,
    add_outer,
    cholesky_vjp,
    det_vjp,
    diag_vjp,
    inverse_axes,
    matmul_vjp_a,
    matmul_vjp_b,
    matrix_transpose,
    solve_vjp_a,
    solve_vjp_b,
)
from adgen.numba_reductions import (
    max_axis,
    max_vjp,
    mean_axis,
    mean_vjp,
    min_axis,
    sum_axis,
    sum_keepdims,
    sum_vjp,
    unbroadcast,
)
from adgen.numba_typing import is_number

#: The modules of the nopython runtime besides this one (numba_cache hashes their code)
MODULES = (numba_typing, numba_reductions, numba_linalg, numba_guards, numba_arithmetic)

__all__ = ["abs_vjp", "add_item", "item", "add_out", "balanced_eq", "cast_vjp", "copy_adjoint", "cotangent_as",
           "det_vjp", "extreme_vjp", "grow", "instance_shadow", "release_shadows",
           "add_matmul_vjp_a", "add_matmul_vjp_b", "add_newaxis", "add_outer", "cholesky_vjp", "diag_vjp", "entry_items", "inverse_axes", "loop_sequence", "unpacked_len", "index_with_derivative",
           "slots_changed", "slots_changed_by", "matmul_vjp_a", "matmul_vjp_b",
           "matrix_transpose", "max_axis", "max_vjp", "mean_axis", "mean_vjp", "min_axis",
           "or_zeros", "or_zeros_of_tree", "present", "py_floordiv", "py_mod", "py_pow", "py_truediv", "remap_tree", "saved_copy", "solve_vjp_a", "solve_vjp_b", "stored_into",
           "store_cotangent", "strict_before_write", "strict_capture", "strict_scope",
           "sum_axis", "sum_keepdims", "sum_vjp", "unbroadcast", "with_shadows", "zero_if_none", "zeros_into", "zeros_like", "zeros_of_tree"]


def present(v: Any) -> Any:
    """The value of a helper's result that numba types as optional (``retval1 = None``
    merged over an early return: ``Optional(int64)``), as a number: numba indexes an array
    with an int, not with an optional one. A None there (the helper ran off its end)
    raises numba's TypeError; a value of another type is returned as it is."""
    raise NotImplementedError("only called from nopython code")


@overload(present, jit_options={"cache": True})
def _present(v):
    if isinstance(v, types.Optional):
        if isinstance(v.type, types.Integer):
            return lambda v: v + 0
        if isinstance(v.type, types.Float):
            return lambda v: v * 1.0
        return None
    return lambda v: v


def zeros_like(x: Any) -> Any:
    """A zero adjoint of ``x``: 0.0 for a number, a float64 array of its shape for an array,
    and a float64 array of one entry per item for a tuple of numbers (``a, b = p[0], p[1]``
    packs them: ``add_item`` and ``item`` take the entries, as the default runtime's list)."""
    raise NotImplementedError("only called from nopython code")


@overload(zeros_like, jit_options={"cache": True})
def _zeros_like(x):
    if isinstance(x, types.Array):
        return lambda x: np.zeros(x.shape)
    if is_number(x):
        return lambda x: 0.0
    if isinstance(x, types.BaseTuple) and len(x) and all(is_number(t) for t in x.types):
        n = len(x)
        return lambda x: np.zeros(n)
    if isinstance(x, types.NoneType):
        # the result of a callee run for what it fills (rhs(y, p, k1)): no adjoint
        return lambda x: None
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
    if is_number(ct):  # the same partial for every element (as_gradient broadcasts it)
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


def cast_vjp(g: Any, dtype: Any) -> Any:
    """The cotangent through a conversion to ``dtype`` (``V.astype(np.float64)``), as
    ``adgen.runtime``'s: ``g``, or zero for an integer or bool dtype (truncation). ``dtype``
    is a NumPy scalar type (``np.float64``), an array's ``dtype``, or None (none given:
    ``np.full(n, v)``)."""
    raise NotImplementedError("only called from nopython code")


def _dtype_of(dtype):
    # the element type of np.float64 (a number class) or of x.dtype; None for another value
    return dtype.instance_type if isinstance(dtype, types.NumberClass) else \
        dtype.dtype if isinstance(dtype, types.DType) else None


@overload(cast_vjp, jit_options={"cache": True})
def _cast_vjp(g, dtype):
    if isinstance(dtype, (types.NoneType, types.Omitted)) or dtype is None:
        # no dtype given (np.full(n, v) of a float v): g, as adgen.runtime's
        return (lambda g, dtype: g) if isinstance(g, types.Array) or is_number(g) else None
    target = _dtype_of(dtype)
    if target is None:
        return None
    if isinstance(target, (types.Integer, types.Boolean)):
        if isinstance(g, types.Array):
            return lambda g, dtype: np.zeros(g.shape)
        return (lambda g, dtype: 0.0) if is_number(g) else None
    return (lambda g, dtype: g) if isinstance(g, types.Array) or is_number(g) else None


def abs_vjp(g: Any, x: Any) -> Any:
    """The cotangent through ``abs(x)`` (``np.abs``, builtin ``abs``) of a real ``x``, as
    ``adgen.runtime``'s: ``g * sign(x)``, 0 at 0. A complex ``x`` (whose adjoint is another
    formula) has no nopython form: numba refuses the call at the user's line."""
    raise NotImplementedError("only called from nopython code")


def _real(t: Any) -> bool:
    # a real number or an array of real numbers (not complex)
    kind = t.dtype if isinstance(t, types.Array) else t
    return isinstance(kind, (types.Float, types.Integer, types.Boolean))


@overload(abs_vjp, jit_options={"cache": True})
def _abs_vjp(g, x):
    if _real(g) and _real(x):
        return lambda g, x: g * np.sign(x)
    return None


def cotangent_as(ct: Any, dtype: Any) -> Any:
    """The cotangent ``ct`` of a value of ``dtype`` (``adgen.runtime``'s casts it to that
    dtype): here as it is, a float64 adjoint like every adjoint of the numba backend's (a
    float32 argument's gradient is cast to float32 when the call returns)."""
    raise NotImplementedError("only called from nopython code")


@overload(cotangent_as, jit_options={"cache": True})
def _cotangent_as(ct, dtype):
    if _dtype_of(dtype) is None:
        return None
    real = isinstance(ct, types.Array) and isinstance(ct.dtype, (types.Float, types.Integer))
    return (lambda ct, dtype: ct) if real or is_number(ct) else None


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
    if isinstance(g, types.Array) or is_number(g):
        return lambda g, shape: g
    return None


def zero_if_none(g: Any) -> Any:
    """0.0 for a None (zero) adjoint, else ``g``."""
    raise NotImplementedError("only called from nopython code")


@overload(zero_if_none, jit_options={"cache": True})
def _zero_if_none(g):
    if isinstance(g, types.NoneType):
        return lambda g: 0.0
    if is_number(g):
        return lambda g: g
    if isinstance(g, types.Optional) and is_number(g.type):
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
    if isinstance(out_bar, types.Array) or is_number(out_bar):
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
        if is_number(like) or isinstance(like, types.NoneType):
            return lambda g, like: 0.0
        return None
    if isinstance(g, types.Array) or is_number(g):
        return lambda g, like: g
    return None


def index_with_derivative(base: Any) -> None:
    """Runs before a read by an index that carries a derivative: nopython code indexes
    arrays and tuples only, whose index's derivative means nothing (runtime's refuses
    other objects)."""
    raise NotImplementedError("only called from nopython code")


@overload(index_with_derivative, jit_options={"cache": True})
def _index_with_derivative(base):
    if isinstance(base, (types.Array, types.BaseTuple)):
        return lambda base: None
    return None


def slots_changed() -> None:
    """Notes that a slot of a list, dict or object may have changed (runtime's: records of
    containers' slots, which nopython code neither makes nor reads): nothing here."""
    raise NotImplementedError("only called from nopython code")


@overload(slots_changed, jit_options={"cache": True})
def _slots_changed():
    return lambda: None


def slots_changed_by(value: Any) -> None:
    """:func:`slots_changed` after a write into ``value``: nothing here."""
    raise NotImplementedError("only called from nopython code")


@overload(slots_changed_by, jit_options={"cache": True})
def _slots_changed_by(value):
    return lambda value: None


def unpacked_len(x: Any) -> int:
    """The length of what ``a, b = x`` unpacks: a tuple or an array (nopython takes no other)."""
    raise NotImplementedError("only called from nopython code")


@overload(unpacked_len, jit_options={"cache": True})
def _unpacked_len(x):
    if isinstance(x, (types.Array, types.BaseTuple)):
        return lambda x: len(x)
    return None


def loop_sequence(x: Any) -> Any:
    """What a ``for`` loop indexes: an array as it is (lists are not taken in nopython)."""
    raise NotImplementedError("only called from nopython code")


@overload(loop_sequence, jit_options={"cache": True})
def _loop_sequence(x):
    if isinstance(x, types.Array):
        return lambda x: x
    return None


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
    if is_number(x) and is_number(z) and is_number(y):
        def scalar(x, z, y):
            if x == z:
                return 0.5 if y == z else 1.0
            return 0.0
        return scalar
    if all(is_number(a) or isinstance(a, types.Array) for a in (x, z, y)):
        def arrays(x, z, y):
            # np.where(x == z, np.where(y == z, 0.5, 1.0), 0.0), broadcast as NumPy does
            # (np.maximum(x, 0.0) of an array; a NaN equals nothing)
            return (x == z) * (1.0 - 0.5 * (y == z))
        return arrays
    return None


def extreme_vjp(g: Any, out: Any, x: Any, y: Any) -> Any:
    """The cotangent of ``x`` in ``out = max(x, y)`` (or min), for numbers: ``g`` times its
    share (``balanced_eq``). The one-iterable form (``y`` None) has no nopython version."""
    raise NotImplementedError("only called from nopython code")


@overload(extreme_vjp, jit_options={"cache": True})
def _extreme_vjp(g, out, x, y):
    if is_number(g) and is_number(out) and is_number(x) and is_number(y):
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


@numba.njit(cache=True)
def instance_shadow(shadows: Any, k: int, x: Any) -> Any:
    """The adjoint of the ``k``-th array one line made (an allocation in a loop, one array
    per iteration): ``shadows[k]``, a zero array of ``x``'s shape made at its first use
    (the pullback starts with a placeholder of no items per array: the arrays' shapes are
    known when they are used)."""
    s = shadows[k]
    if s.shape != x.shape:
        s = np.zeros(x.shape)
        shadows[k] = s
    return s


@numba.njit(cache=True)
def release_shadows(shadows: Any, free: int, start: int, empty: Any) -> int:
    """Drops the adjoints of the arrays numbered ``start`` to ``free - 1`` (``empty`` in
    their place: an array of no items, as the pullback's list starts with), made from the
    start of the iteration the pullback has just gone back over: nothing the pullback does
    next reads them (transforms/numba_instance_lifetimes). Returns the lowest number
    dropped (``free`` where ``start`` is not below it)."""
    while free > start:
        free -= 1
        shadows[free] = empty
    return free


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
    # a loop, not out[:len] = column: numba compiles a slice store's shape-mismatch message
    # (str and repr of ints, string concatenation), 12-14 s of a fresh cache's first gradient
    for k in range(column.shape[0]):
        out[k] = column[k]
    return out


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


def entry_items(x: Any) -> Any:
    """A value as the function received it: a number or an array is itself (containers,
    whose structure the default helper copies, are refused at compile time)."""
    raise NotImplementedError("only called from nopython code")


def _numbers(x: Any) -> bool:
    # a tuple of numbers (a helper's results, return a * b, a + b): nothing in it changes
    return isinstance(x, types.BaseTuple) and all(is_number(t) for t in x.types)


@overload(entry_items, jit_options={"cache": True})
def _entry_items(x):
    if isinstance(x, types.Array) or is_number(x) or _numbers(x):
        return lambda x: x
    return None


def with_shadows(x: Any, adjoint: Any) -> Any:
    """The adjoint of a call's result ``x`` as the call's pullback takes it: for a number or
    an array, ``adjoint`` itself (the default helper moves adjoints out of shadow memory for
    containers only; the static adjoint buffers of this backend hold no container)."""
    raise NotImplementedError("only called from nopython code")


@overload(with_shadows, jit_options={"cache": True})
def _with_shadows(x, adjoint):
    if isinstance(x, types.Array) or is_number(x) or _numbers(x):
        return lambda x, adjoint: adjoint
    return None


# A copy of an adjoint the pullback may then change in place is the copy a guarded site
# keeps of its value: an array's copy, a number itself (one nopython function, two names)
copy_adjoint = saved_copy
