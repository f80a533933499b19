"""Rules for reshaping, transposing, joining, broadcasting, selecting and copying.

All are linear. The ones whose output may view their first input say ``view=True``; the
aliasing analysis relies on it (a write through ``x.T`` writes ``x``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adgen.rules.helpers import (
    array_vjp,
    cast_vjp,
    clip_above,
    clip_below,
    clip_inside,
    column_stack_vjp,
    concatenate_vjp,
    cotangent_as,
    hstack_vjp,
    inverse_axes,
    ndarray_astype,
    ndarray_flatten,
    ndarray_tolist,
    shape_tree,
    stack_vjp,
    tolist_vjp,
    unbroadcast,
    vstack_vjp,
)
from adgen.rules.registry import defvjp

# --------------------------------------------------------------------------------------------
# Same elements, new shape


@defvjp(np.reshape, "a, shape, order='C'", diff="a", reads="order", linear=True,
        view=True)
def reshape(g: Any, out: Any, a: Any, shape: Any, order: Any) -> Any:
    return np.reshape(g, np.shape(a), order=order)


@defvjp(np.ravel, "a, order='C'", diff="a", reads="order", linear=True, view=True)
def ravel(g: Any, out: Any, a: Any, order: Any) -> Any:
    return np.reshape(g, np.shape(a), order=order)


@defvjp(ndarray_flatten, "a, order='C'", diff="a", reads="order", linear=True,
        name="numpy.ndarray.flatten")
def flatten(g: Any, out: Any, a: Any, order: Any) -> Any:
    return np.reshape(g, np.shape(a), order=order)


@defvjp(ndarray_tolist, "a", diff="a", linear=True, name="numpy.ndarray.tolist")
def tolist(g: Any, out: Any, a: Any) -> Any:
    # nested lists of Python numbers: their adjoints (None where nothing read one) in place
    return tolist_vjp(g, np.shape(a))


@defvjp(np.transpose, "a, axes=None", diff="a", reads="axes", linear=True, view=True)
def transpose(g: Any, out: Any, a: Any, axes: Any) -> Any:
    return np.transpose(g, inverse_axes(axes))


@defvjp(np.swapaxes, "a, axis1, axis2", diff="a", reads="axis1, axis2", linear=True,
        view=True)
def swapaxes(g: Any, out: Any, a: Any, axis1: Any, axis2: Any) -> Any:
    return np.swapaxes(g, axis1, axis2)


@defvjp(np.moveaxis, "a, source, destination", diff="a",
        reads="source, destination", linear=True, view=True)
def moveaxis(g: Any, out: Any, a: Any, source: Any, destination: Any) -> Any:
    return np.moveaxis(g, destination, source)


@defvjp(np.expand_dims, "a, axis", diff="a", linear=True, view=True)
def expand_dims(g: Any, out: Any, a: Any, axis: Any) -> Any:
    return np.reshape(g, np.shape(a))


@defvjp(np.squeeze, "a, axis=None", diff="a", linear=True, view=True)
def squeeze(g: Any, out: Any, a: Any, axis: Any) -> Any:
    return np.reshape(g, np.shape(a))


@defvjp(np.atleast_1d, "a", linear=True, view=True)
def atleast_1d(g: Any, out: Any, a: Any) -> Any:
    return np.reshape(g, np.shape(a))


@defvjp(np.atleast_2d, "a", linear=True, view=True)
def atleast_2d(g: Any, out: Any, a: Any) -> Any:
    return np.reshape(g, np.shape(a))


@defvjp(np.broadcast_to, "array, shape", diff="array", linear=True, view=True)
def broadcast_to(g: Any, out: Any, array: Any, shape: Any) -> Any:
    return unbroadcast(g, np.shape(array))


@defvjp(np.flip, "m, axis=None", diff="m", reads="axis", linear=True, view=True)
def flip(g: Any, out: Any, m: Any, axis: Any) -> Any:
    return np.flip(g, axis)


@defvjp(np.roll, "a, shift, axis=None", diff="a", reads="shift, axis", linear=True)
def roll(g: Any, out: Any, a: Any, shift: Any, axis: Any) -> Any:
    return np.roll(g, np.negative(shift), axis)


# --------------------------------------------------------------------------------------------
# Copies and conversions


@defvjp(np.copy, "a, order='K', subok=False", diff="a", linear=True)
def copy(g: Any, out: Any, a: Any, order: Any, subok: Any) -> Any:
    return g  # the same values in the order asked for (C, F, A, K): the same gradient


# copy=False (NumPy 2: never a copy, an error where one is needed) and copy=None (a copy only
# where needed) may give the argument itself: a view then (Rule.may_view); copy=True, the
# default, a new array
@defvjp(np.array, "object, dtype=None, *, copy=True", diff="object", reads="dtype",
        linear=True, view=True)
def array(g: Any, out: Any, object: Any, dtype: Any, copy: Any) -> Any:
    # An array gets g; a list of entries gets the list of their cotangents (nested alike).
    # An integer or bool dtype truncates: no gradient (cast_vjp).
    return array_vjp(cast_vjp(g, dtype), shape_tree(object))


@defvjp(np.asarray, "a, dtype=None, *, copy=None", diff="a", reads="dtype", linear=True,
        view=True)
def asarray(g: Any, out: Any, a: Any, dtype: Any, copy: Any) -> Any:
    return array_vjp(cast_vjp(g, dtype), shape_tree(a))


# The array itself where it already has the layout asked for, else a copy (as np.asarray)
@defvjp(np.ascontiguousarray, "a, dtype=None", diff="a", reads="dtype", linear=True, view=True)
def ascontiguousarray(g: Any, out: Any, a: Any, dtype: Any) -> Any:
    # a number comes out with shape (1,)
    return array_vjp(np.reshape(cast_vjp(g, dtype), np.shape(a)), shape_tree(a))


@defvjp(np.asfortranarray, "a, dtype=None", diff="a", reads="dtype", linear=True, view=True)
def asfortranarray(g: Any, out: Any, a: Any, dtype: Any) -> Any:
    # a number comes out with shape (1,)
    return array_vjp(np.reshape(cast_vjp(g, dtype), np.shape(a)), shape_tree(a))


@defvjp(np.asanyarray, "a, dtype=None", diff="a", reads="dtype", linear=True, view=True)
def asanyarray(g: Any, out: Any, a: Any, dtype: Any) -> Any:
    return array_vjp(cast_vjp(g, dtype), shape_tree(a))


@defvjp(np.require, "a, dtype=None, requirements=None", diff="a", reads="dtype", linear=True,
        view=True)
def require(g: Any, out: Any, a: Any, dtype: Any, requirements: Any) -> Any:
    return array_vjp(cast_vjp(g, dtype), shape_tree(a))


# x.astype(t, copy=False) is x itself where x has the dtype t already (a view then)
@defvjp(ndarray_astype, "a, dtype, *, copy=True", diff="a", reads="dtype", linear=True,
        view=True, name="numpy.ndarray.astype")
def astype(g: Any, out: Any, a: Any, dtype: Any, copy: Any) -> Any:
    # Back to the input's dtype (a float32 input gets a float32 cotangent, a real input the
    # real part of a complex one); an integer or bool dtype truncates: no gradient.
    return cotangent_as(cast_vjp(g, dtype), a.dtype)


# --------------------------------------------------------------------------------------------
# Joining: the cotangent of a list (tuple) of arrays is a list (tuple) of cotangents.


@defvjp(np.stack, "arrays, axis=0", diff="arrays", reads="axis", linear=True)
def stack(g: Any, out: Any, arrays: Any, axis: Any) -> Any:
    return stack_vjp(g, shape_tree(arrays), axis)


@defvjp(np.concatenate, "arrays, axis=0", diff="arrays", reads="axis", linear=True)
def concatenate(g: Any, out: Any, arrays: Any, axis: Any) -> Any:
    return concatenate_vjp(g, shape_tree(arrays), axis)


@defvjp(np.hstack, "tup", linear=True)
def hstack(g: Any, out: Any, tup: Any) -> Any:
    return hstack_vjp(g, shape_tree(tup))


@defvjp(np.column_stack, "tup", linear=True)
def column_stack(g: Any, out: Any, tup: Any) -> Any:
    return column_stack_vjp(g, shape_tree(tup))


@defvjp(np.vstack, "tup", linear=True)
def vstack(g: Any, out: Any, tup: Any) -> Any:
    return vstack_vjp(g, shape_tree(tup))


# --------------------------------------------------------------------------------------------
# Selecting


@defvjp(np.where, "condition, x, y", diff="x, y", reads="condition", linear=True)
def where(g: Any, out: Any, condition: Any, x: Any, y: Any) -> Any:
    return (unbroadcast(np.where(condition, g, 0.0), np.shape(x)),
            unbroadcast(np.where(condition, 0.0, g), np.shape(y)))


@defvjp(np.clip, "a, a_min=None, a_max=None", diff="a, a_min, a_max", reads="a, a_min, a_max")
def clip(g: Any, out: Any, a: Any, a_min: Any, a_max: Any) -> Any:
    # In range (bounds included) the cotangent goes to a, else to the bound that was taken.
    return (unbroadcast(np.where(clip_inside(a, a_min, a_max), g, 0.0), np.shape(a)),
            unbroadcast(np.where(clip_below(a, a_min, a_max), g, 0.0), np.shape(a_min)),
            unbroadcast(np.where(clip_above(a, a_min, a_max), g, 0.0), np.shape(a_max)))
