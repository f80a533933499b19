"""Rule helpers for second order: the adjoints of the runtime helpers that generated pullbacks
call (``sum_vjp``, ``unbroadcast``, ``add``, ``or_zeros``), so that reverse mode can
differentiate adgen's own pullbacks (reverse over reverse, :mod:`adgen.second_order`).

Those helpers are linear in the cotangent they take, so each adjoint here is the transpose of
a linear map: broadcasting back what was summed, summing what was broadcast. Where a helper
handles a structure these adjoints do not (the adjoints of Python lists and dicts), they
raise ``RuleError`` through :func:`unsupported` instead of returning something wrong.

Part of :mod:`adgen.rules.helpers` (see its docstring for the conventions every helper keeps).
"""

import numpy as np

from adgen.rules.helpers_core import (
    is_tuple_tree,
    reduced_axes,
    stored_into,
    tree_items,
    unsupported,
)

__all__ = [
    "array_vjp_transpose",
    "broadcast_back",
    "filled_items",
    "kept_copy",
    "listed_transpose",
    "mean_vjp_transpose",
    "passed_if_present",
    "plain_shape",
    "restacked",
    "shaped_as",
    "stored_value",
    "sum_vjp_transpose",
]


def plain_shape(shape: object) -> bool:
    """Whether ``shape`` is an array's shape (a tuple of ints), not a container's tree."""
    return type(shape) is tuple and all(type(n) is int for n in shape)


def shaped_as(x: object, shape: tuple) -> object:
    """``x`` as a numpy number for the shape ``()``, else as an array of ``shape``."""
    if shape == ():
        value = np.sum(x) if np.ndim(x) else x
        return value if isinstance(value, np.generic) else np.asarray(value)[()]
    return np.reshape(x, shape)


def sum_vjp_transpose(g: object, cot_shape: tuple, axis: object, keepdims: bool) -> object:
    """Adjoint of ``sum_vjp(cot, shape, axis, keepdims)`` with respect to ``cot``: ``g`` (of
    the summed array's shape) summed over the axes ``sum_vjp`` broadcast ``cot`` along."""
    if g is None:
        return None
    if not plain_shape(cot_shape):
        unsupported("second derivatives through the adjoint of a sum of a list (reverse over "
                    "reverse); use adgen.hessian, which takes forward over reverse")
    return shaped_as(np.sum(g, axis=axis, keepdims=keepdims), cot_shape)


def mean_vjp_transpose(g: object, cot_shape: tuple, shape: tuple, axis: object,
                       keepdims: bool) -> object:
    """Adjoint of ``mean_vjp(cot, shape, axis, keepdims)`` with respect to ``cot``: that of
    the sum's adjoint, over the number of values averaged."""
    out = sum_vjp_transpose(g, cot_shape, axis, keepdims)
    if out is None:
        return None
    count = 1
    for i in reduced_axes(axis, len(shape)):
        count *= shape[i]
    return out / count


def broadcast_back(g: object, cot_shape: object, shape: object) -> object:
    """Adjoint of ``unbroadcast(cot, shape)`` (or of ``add``'s operand of shape ``cot_shape``)
    with respect to ``cot``: ``g`` (of ``shape``) broadcast back up where unbroadcast summed
    axes away, summed down where it broadcast a smaller cotangent up."""
    if g is None or cot_shape is None:
        return None
    if not (plain_shape(cot_shape) and plain_shape(shape)):
        unsupported("second derivatives through the adjoints of lists, tuples or dicts "
                    "(reverse over reverse); use adgen.hessian, which takes forward over "
                    "reverse")
    g_shape = np.shape(g)
    if g_shape == cot_shape:
        return shaped_as(g, cot_shape)
    common = np.broadcast_shapes(g_shape, cot_shape)
    if common == cot_shape:  # unbroadcast summed axes away: spread g over them again
        return shaped_as(np.broadcast_to(g, cot_shape).copy(), cot_shape)
    if common == g_shape:  # unbroadcast broadcast a smaller cotangent up: sum it down
        lead = len(g_shape) - len(cot_shape)
        out = np.sum(g, axis=tuple(range(lead))) if lead > 0 else np.asarray(g)
        ones = tuple(i for i, n in enumerate(cot_shape) if n == 1 and out.shape[i] != 1)
        if ones:
            out = np.sum(out, axis=ones, keepdims=True)
        return shaped_as(out, cot_shape)
    unsupported(f"second derivatives through an unbroadcast from shape {cot_shape} to "
                f"{shape}, which both sums and broadcasts (reverse over reverse); use "
                "adgen.hessian, which takes forward over reverse")


def passed_if_present(g: object, cot_shape: object) -> object:
    """Adjoint of ``or_zeros(cot, like)`` with respect to ``cot``: ``g`` where ``cot`` was
    an adjoint (its zeros in its place carry nothing back), None where it was None."""
    if cot_shape is None or g is None:
        return None
    if not plain_shape(cot_shape):
        unsupported("second derivatives through the adjoints of lists, tuples or dicts "
                    "(reverse over reverse); use adgen.hessian, which takes forward over "
                    "reverse")
    return shaped_as(g, cot_shape)


def kept_copy(x: object) -> object:
    """What a validity guard keeps of ``x`` for a pullback (``capture``: the value at capture,
    copied only if a later write overwrites it), kept by copying at once: the form reverse
    over reverse differentiates (its adjoint is the copy's)."""
    if isinstance(x, np.ndarray):
        return x.copy()
    if x is None or isinstance(x, (bool, int, float, complex, np.number, np.bool_, str,
                                   slice)):
        return x
    if type(x) is tuple and not any(isinstance(v, (list, dict, tuple)) for v in x):
        return tuple(v.copy() if isinstance(v, np.ndarray) else v for v in x)  # an index
    if type(x) is list and not any(isinstance(v, (np.ndarray, list, dict, tuple)) for v in x):
        return list(x)  # a list of numbers (an index)
    unsupported(f"second derivatives through a captured {type(x).__qualname__} (reverse over "
                "reverse keeps arrays and numbers); use adgen.hessian, which takes forward "
                "over reverse")


def stored_value(g: object, x: object) -> object:
    """``stored_into(x, g)`` with the cotangent first (reverse over reverse rewrites calls
    to it, so that its rule can say that the result may be ``g`` itself: a view)."""
    return stored_into(x, g)


def filled_items(g: object, shapes: list) -> list:
    """The items of a list adjoint ``g`` as arrays of ``shapes`` (None, a zero, as zeros)."""
    if not isinstance(g, (list, tuple)) or len(g) != len(shapes) or \
            not all(plain_shape(s) for s in shapes):
        unsupported("second derivatives through the adjoint of a list of lists, dicts or "
                    "objects (reverse over reverse); use adgen.hessian, which takes forward "
                    "over reverse")
    return [np.zeros(s) if v is None else np.broadcast_to(np.asarray(v), s)
            for v, s in zip(g, shapes)]


def restacked(g: object, cot_shape: tuple, tree: object, axis: int) -> object:
    """Adjoint of ``stack_vjp(cot, tree, axis)`` (the slices of ``cot`` along ``axis``, as a
    list) with respect to ``cot``: the list adjoint ``g`` stacked back along ``axis``."""
    if not isinstance(tree, list):
        unsupported("second derivatives through np.stack of a tuple (reverse over reverse); "
                    "use adgen.hessian, which takes forward over reverse")
    items = filled_items(g, tree)
    return shaped_as(np.stack(items, axis=axis), cot_shape)


def listed_transpose(g: object, tree: object) -> object:
    """Adjoint of ``list_adjoint(cot)`` (an array's rows as a list; a list or tuple as a
    list) with respect to ``cot``: the rows stacked back for an array, else ``g``."""
    if plain_shape(tree):  # cot was an array (or a number): its rows
        if tree == ():
            return g
        return np.stack(filled_items(g, [tree[1:]] * tree[0])) if tree[0] else \
            np.zeros(tree)
    return g


def array_vjp_transpose(g: object, cot_shape: tuple, tree: object) -> object:
    """Adjoint of ``array_vjp(cot, tree)`` (``cot`` split back into the nesting of lists and
    tuples ``tree`` describes; an array's or a number's ``cot`` itself) with respect to
    ``cot``: the items of ``g`` (None: zero) gathered back into an array of ``cot``'s shape,
    at every level; ``g`` itself where ``tree`` is an array's or a number's."""
    if not (isinstance(tree, list) or is_tuple_tree(tree)):
        return g
    items = tree_items(tree)
    if not isinstance(g, (list, tuple)) or len(g) != len(items):
        unsupported("second derivatives through the adjoint of a list read as an array, "
                    "whose cotangent is not a list of its items (reverse over reverse); use "
                    "adgen.hessian, which takes forward over reverse")
    row = tuple(cot_shape[1:])
    rows = [np.zeros(row) if v is None else
            np.broadcast_to(np.asarray(array_vjp_transpose(v, row, t)), row)
            for v, t in zip(g, items)]
    return shaped_as(np.stack(rows) if rows else np.zeros(cot_shape), cot_shape)
