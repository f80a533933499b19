"""Rule helpers: transposing, joining, selecting, indexing, creation, method primals.

Part of :mod:`adgen.rules.helpers` (see its docstring for the conventions every helper keeps).
"""

import numpy as np

from adgen.rules.helpers_core import (
    as_container,
    is_tuple_tree,
    tree_items,
    tree_numeric_shape,
    tree_zeros,
    unsupported,
    zeros_for,
)

__all__ = [
    "ndarray_compress",
    "ndarray_tolist",
    "tolist_vjp",
    "arange_start_vjp",
    "arange_step_vjp",
    "array_vjp",
    "clip_above",
    "clip_below",
    "clip_inside",
    "column_stack_vjp",
    "concatenate_vjp",
    "getitem_vjp",
    "hstack_vjp",
    "inverse_axes",
    "is_basic_index",
    "item_vjp",
    "linspace_weights",
    "ndarray_astype",
    "ndarray_conj",
    "ndarray_flatten",
    "ndarray_item",
    "ndarray_view",
    "refuse_reinterpreting_view",
    "view_cotangent",
    "split_like",
    "stack_vjp",
    "take_along_axis_vjp",
    "take_vjp",
    "vstack_vjp",
]


def inverse_axes(axes: object) -> object:
    """The permutation that undoes ``np.transpose(x, axes)`` (None undoes None)."""
    if axes is None:
        return None
    axes = [int(a) % len(axes) for a in axes]
    return tuple(int(i) for i in np.argsort(axes))


# --------------------------------------------------------------------------------------------
# Joining: the cotangent of a list (tuple) of arrays is a list (tuple) of cotangents.


def array_vjp(g: object, tree: object) -> object:
    """Adjoint of ``np.array(obj)``: ``g`` split back into obj's nesting of lists and tuples.

    An array or a number gets ``g`` itself; a list ``[a, b]`` gets ``[g[0], g[1]]``, so the
    cotangent of a list is a list, of a tuple a tuple, at every level.
    """
    if isinstance(tree, list) or is_tuple_tree(tree):
        return as_container([array_vjp(g[i], t) for i, t in enumerate(tree_items(tree))], tree)
    return g


def stack_vjp(g: object, tree: object, axis: int) -> object:
    """Adjoint of ``np.stack(arrays, axis)``: the slices of ``g`` along ``axis``."""
    return array_vjp(np.moveaxis(np.asarray(g), axis, 0), tree)


def split_like(g: object, trees: list, axis: int, pieces: list, container: object) -> object:
    """Splits ``g`` along ``axis`` into the sizes of ``pieces`` (shapes as numpy joined them),
    each reshaped back to its entry (``trees``) and gathered like ``container``."""
    bounds = np.cumsum([p[axis] for p in pieces])[:-1]
    parts = np.split(np.asarray(g), bounds, axis=axis)
    items = [array_vjp(np.reshape(part, tree_numeric_shape(t)), t)
             for part, t in zip(parts, trees)]
    return as_container(items, container)


def concatenate_vjp(g: object, tree: object, axis: object) -> object:
    """Adjoint of ``np.concatenate(arrays, axis)``: ``g`` split back into the arrays."""
    trees = tree_items(tree)
    if type(axis) is int and type(g) is np.ndarray and all(
            type(t) is tuple and len(t) == g.ndim and all(type(d) is int for d in t)
            for t in trees):
        # arrays of g's rank (what a loop's tape records): basic slices of g, as np.split
        # would give them, without its bookkeeping
        ax = axis % g.ndim
        lead = (slice(None),) * ax
        parts = []
        start = 0
        for t in trees:
            parts.append(g[(*lead, slice(start, start + t[ax]))])
            start += t[ax]
        return tuple(parts) if is_tuple_tree(tree) else parts
    shapes = [tree_numeric_shape(t) for t in trees]
    if axis is None:
        pieces = [(int(np.prod(s)),) for s in shapes]
        return split_like(np.ravel(g), trees, 0, pieces, tree)
    return split_like(g, trees, axis % np.ndim(g), shapes, tree)


def hstack_vjp(g: object, tree: object) -> object:
    """Adjoint of ``np.hstack``: split along axis 1, or axis 0 for 1-D (and 0-d) inputs."""
    trees = tree_items(tree)
    pieces = [s if len(s) else (1,) for s in (tree_numeric_shape(t) for t in trees)]
    axis = 0 if len(pieces[0]) == 1 else 1
    return split_like(g, trees, axis, pieces, tree)


def column_stack_vjp(g: object, tree: object) -> object:
    """Adjoint of ``np.column_stack``: 1-D inputs were columns, the rest joined on axis 1."""
    trees = tree_items(tree)
    shapes = [tree_numeric_shape(t) for t in trees]
    pieces = [s + (1,) if len(s) == 1 else (1, 1) if len(s) == 0 else s for s in shapes]
    return split_like(g, trees, 1, pieces, tree)


def vstack_vjp(g: object, tree: object) -> object:
    """Adjoint of ``np.vstack``: split along axis 0 of the inputs made at least 2-D."""
    trees = tree_items(tree)
    shapes = [tree_numeric_shape(t) for t in trees]
    pieces = [(1, 1) if len(s) == 0 else (1,) + s if len(s) == 1 else s for s in shapes]
    return split_like(g, trees, 0, pieces, tree)


# --------------------------------------------------------------------------------------------
# Selecting


def clip_inside(a: object, a_min: object, a_max: object) -> object:
    """Where ``np.clip(a, a_min, a_max)`` passes ``a`` through (bounds included)."""
    lo = True if a_min is None else np.greater_equal(a, a_min)
    hi = True if a_max is None else np.less_equal(a, a_max)
    return np.logical_and(lo, hi)


def clip_below(a: object, a_min: object, a_max: object) -> object:
    """Where ``np.clip`` returns ``a_min`` (below it, and ``a_min`` is not above ``a_max``)."""
    if a_min is None:
        return np.zeros(np.shape(a), dtype=bool)
    ok = True if a_max is None else np.less_equal(a_min, a_max)
    return np.logical_and(np.less(a, a_min), ok)


def clip_above(a: object, a_min: object, a_max: object) -> object:
    """Where ``np.clip`` returns ``a_max``: ``max(a, a_min) > a_max``."""
    if a_max is None:
        return np.zeros(np.shape(a), dtype=bool)
    floor = a if a_min is None else np.maximum(a, a_min)
    return np.greater(floor, a_max)


# --------------------------------------------------------------------------------------------
# Indexing


def is_basic_index(index: object) -> bool:
    """True when ``index`` selects each element at most once (no integer arrays or lists)."""
    parts = index if isinstance(index, tuple) else (index,)
    for p in parts:
        if isinstance(p, (list, np.ndarray)) and np.asarray(p).dtype != np.bool_:
            return False
    return True


def getitem_vjp(g: object, tree: object, index: object) -> object:
    """Adjoint of ``x[index]``, where ``tree`` is ``shape_tree(x)``: zeros, plus ``g`` there.

    Arrays take any numpy index; an integer-array index that repeats a position adds all its
    cotangents there (``np.add.at``). Lists and tuples take an int or a slice, dicts a key;
    the other entries get zeros of their own structure, never None.
    """
    array = isinstance(tree, tuple) and not is_tuple_tree(tree)
    zeros = zeros_for(tree, g) if array else tree_zeros(tree)
    if isinstance(zeros, np.ndarray):
        if is_basic_index(index):
            zeros[index] = g
        else:
            np.add.at(zeros, index, g)
        return zeros
    if isinstance(zeros, dict):
        zeros[index] = g
        return zeros
    if isinstance(zeros, (list, tuple)):
        res = list(zeros)
        if isinstance(index, slice):
            for pos, gi in zip(range(*index.indices(len(res))), g):
                res[pos] = gi
        else:
            res[index] = g
        return tuple(res) if isinstance(zeros, tuple) else res
    unsupported(f"getitem: cannot differentiate indexing into a value of structure {tree!r}")


def take_vjp(g: object, shape: tuple, indices: object, axis: object) -> np.ndarray:
    """Adjoint of ``np.take(a, indices, axis)``: ``g`` added back at the taken positions."""
    shape = tuple(shape)
    if axis is None:
        flat = zeros_for(int(np.prod(shape)), g)
        np.add.at(flat, indices, g)
        return np.reshape(flat, shape)
    res = zeros_for(shape, g)
    np.add.at(res, (slice(None),) * (axis % len(shape)) + (indices,), g)
    return res


def take_along_axis_vjp(g: object, shape: tuple, indices: object, axis: object) -> np.ndarray:
    """Adjoint of ``np.take_along_axis(arr, indices, axis)``: a repeated index accumulates."""
    shape = tuple(shape)
    indices = np.asarray(indices)
    if axis is None:
        flat = zeros_for(int(np.prod(shape)), g)
        np.add.at(flat, indices, g)
        return np.reshape(flat, shape)
    axis = axis % len(shape)
    # The fancy index numpy builds: an arange broadcast along every other axis.
    index = []
    for dim in range(len(shape)):
        if dim == axis:
            index.append(indices)
        else:
            view = [1] * len(shape)
            view[dim] = shape[dim]
            index.append(np.arange(shape[dim]).reshape(view))
    res = zeros_for(shape, g)
    np.add.at(res, tuple(index), g)
    return res


def ndarray_item(a: object, *args: object) -> object:
    """``a.item(*args)``: the primal the ``.item()`` method maps to."""
    return a.item(*args)


def ndarray_tolist(a: object) -> object:
    """``a.tolist()``: the primal the ``.tolist()`` method maps to (nested lists of Python
    numbers, a number for a 0-d array)."""
    return a.tolist()


def tolist_vjp(g: object, shape: tuple) -> np.ndarray:
    """Adjoint of ``a.tolist()``: the nested lists of item adjoints ``g`` (None for zero, at
    any depth) as an array of ``a``'s shape."""
    shape = tuple(shape)

    def leaves(v: object) -> list:
        return [x for item in v for x in leaves(item)] if isinstance(v, (list, tuple)) \
            else [v]

    flat = leaves(g)
    complex_items = any(isinstance(x, (complex, np.complexfloating)) for x in flat)
    res = np.zeros(shape, np.complex128 if complex_items else np.float64)
    if not shape:
        return res + (0.0 if g is None else g)
    for index in np.ndindex(*shape):
        v = g
        for k in index:
            if v is None:
                break
            v = v[k]
        if v is not None:
            res[index] = v
    return res


def item_vjp(g: object, shape: tuple, args: tuple) -> np.ndarray:
    """Adjoint of ``a.item(*args)``: ``g`` at the chosen element (flat or multi-index)."""
    shape = tuple(shape)
    res = zeros_for(shape, g)
    if len(args) == 0:
        res[...] = g
    elif len(args) == 1:
        res[np.unravel_index(args[0], shape)] = g
    else:
        res[tuple(args)] = g
    return res


def ndarray_flatten(a: object, order: str = "C") -> np.ndarray:
    """``a.flatten(order)``: always a copy (unlike ``np.ravel``)."""
    return a.flatten(order)


def ndarray_conj(a: object) -> object:
    """``a.conj()`` / ``a.conjugate()``: ``a`` itself for a real array (NumPy returns the
    receiver, unlike ``np.conjugate``), a new array of conjugates for a complex one."""
    return a.conjugate()


def ndarray_compress(a: object, condition: object, axis: object = None) -> np.ndarray:
    """``a.compress(condition, axis)``: ``np.compress`` with the array first, as the method
    takes it."""
    return np.compress(condition, a, axis)


def ndarray_astype(a: object, dtype: object, *, copy: bool = True) -> object:
    """``a.astype(dtype, copy=copy)``: the primal the ``.astype()`` method maps to (with
    ``copy=False``, ``a`` itself where it has the dtype already)."""
    return a.astype(dtype, copy=copy)


def ndarray_view(a: object, dtype: object = None, type: object = None) -> object:  # noqa: A002
    """``a.view()``, ``a.view(np.ndarray)``, ``a.view(type=np.ndarray)``: a new array object
    sharing ``a``'s memory (the primal the ``.view()`` method maps to; another dtype or class
    is refused by :func:`refuse_reinterpreting_view`)."""
    refuse_reinterpreting_view(dtype, type)
    if dtype is None and type is None:
        return a.view()  # type: ignore[attr-defined]
    return a.view(np.ndarray)  # type: ignore[attr-defined]


def view_cotangent(g: object, dtype: object, type: object) -> object:  # noqa: A002
    """The cotangent of ``x`` for ``x.view(...)``: ``g``, the view's (x.view(dtype), which
    reverse mode's forward ran as written, refused: :func:`refuse_reinterpreting_view`)."""
    refuse_reinterpreting_view(dtype, type)
    return g


def refuse_reinterpreting_view(dtype: object, type: object) -> None:  # noqa: A002
    """Refuses ``x.view(dtype)`` and a view as another class than np.ndarray (what
    ``ndarray_view`` and its pullback are given): the bytes reinterpreted have no gradient.

    Raises:
        UnsupportedError: for any ``dtype`` or ``type`` but None and np.ndarray
            (NotImplementedError in a module without adgen).
    """
    if (dtype is None or dtype is np.ndarray) and (type is None or type is np.ndarray) and \
            (dtype is None or type is None):
        return
    spelled = getattr(dtype if type is None else type, "__name__", dtype)
    message = (f"this call of numpy.ndarray.view is not differentiated: x.view({spelled}) "
               "reinterprets the bytes (or makes an array of another class), which has no "
               "gradient; x.view() and x.view(np.ndarray) are differentiated: convert the "
               "values with x.astype(dtype), or take x itself")
    try:
        from adgen.errors import UnsupportedError
    except ImportError:  # a standalone module run where adgen is not installed
        raise NotImplementedError(message) from None
    import sys

    # the user's line (looked up, not imported: see helpers_core.unsupported)
    locate = getattr(sys.modules.get("adgen.runtime"), "locate", None)
    err = UnsupportedError(message)
    raise locate(err) if locate is not None else err


# --------------------------------------------------------------------------------------------
# Creation


def linspace_weights(num: int, endpoint: bool) -> np.ndarray:
    """``t`` with ``np.linspace(start, stop, num, endpoint) == start + (stop - start) * t``."""
    div = num - 1 if endpoint else num
    if div <= 0:
        return np.zeros(num)
    return np.arange(num) / div


def arange_start_vjp(g: object, stop: object) -> object:
    """Adjoint of ``start`` in ``np.arange(start, stop, step)``: ``sum(g)``; zero when
    ``stop`` is None (a single argument is NumPy's stop: it moves only the count)."""
    return np.float64(0.0) if stop is None else np.sum(g)


def arange_step_vjp(g: object, step: object) -> object:
    """Adjoint of ``step`` in ``np.arange(start, stop, step)``: ``sum(i * g[i])``."""
    if step is None:
        return np.float64(0.0)
    return np.sum(np.asarray(g) * np.arange(np.size(g)))
