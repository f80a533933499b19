"""The fallback rule for ``x[index]`` (``operator.getitem``).

Arrays take any numpy index: basic (ints, slices, None, Ellipsis), integer arrays (a repeated
position accumulates every cotangent sent to it, as ``np.add.at`` does) and boolean masks.
Lists and tuples take an int or a slice, dicts a key. The cotangent has the container's
structure, zeros everywhere the index did not touch (never None). The pullback reads only
the structure of ``x`` (``shape_tree``), so overwriting ``x`` later needs no save.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from adgen.rules.helpers import (
    getitem_vjp,
    item_vjp,
    ndarray_compress,
    ndarray_item,
    shape_tree,
    take_along_axis_vjp,
    take_vjp,
)
from adgen.rules.registry import defvjp


@defvjp(operator.getitem, "a, index", diff="a", reads="index", linear=True, view=True)
def getitem(g: Any, out: Any, a: Any, index: Any) -> Any:
    return getitem_vjp(g, shape_tree(a), index)


@defvjp(ndarray_item, "a, *args", diff="a", reads="args", linear=True, name="numpy.ndarray.item")
def item(g: Any, out: Any, a: Any, args: Any) -> Any:
    # x.item() of a size-1 array, x.item(flat_index) or x.item(i, j): one element as a float.
    return item_vjp(g, np.shape(a), args)


@defvjp(np.take, "a, indices, axis=None", diff="a", reads="indices, axis", linear=True)
def take(g: Any, out: Any, a: Any, indices: Any, axis: Any) -> Any:
    return take_vjp(g, np.shape(a), indices, axis)


# a.compress(condition, axis): np.compress with the array first (the method's order)
@defvjp(ndarray_compress, "a, condition, axis=None", diff="a", reads="condition, axis",
        linear=True, name="numpy.ndarray.compress")
def compress_method(g: Any, out: Any, a: Any, condition: Any, axis: Any) -> Any:
    return take_vjp(g, np.shape(a), np.flatnonzero(condition), axis)


@defvjp(np.take_along_axis, "arr, indices, axis=-1", diff="arr", reads="indices, axis",
        linear=True)
def take_along_axis(g: Any, out: Any, arr: Any, indices: Any, axis: Any) -> Any:
    return take_along_axis_vjp(g, np.shape(arr), indices, axis)
