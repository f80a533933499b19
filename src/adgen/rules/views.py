"""Rules for the NumPy functions that return views of their argument: ``fliplr``, ``flipud``,
``rot90``, ``atleast_3d``, ``matrix_transpose``, ``rollaxis``, and ``real`` / ``imag`` /
``angle`` (of real or complex arrays: the non-holomorphic adjoints are in
:mod:`adgen.rules.helpers_complex`), ``trim_zeros`` (a slice of its argument) and
``sliding_window_view`` (overlapping windows of its argument, read-only).

These are one line of NumPy over functions with rules, but they return views, and a view the
caller writes through must be known to the compiler as a view (``view=True``), so they are
rules, not reference implementations: each pullback is the inverse view of the cotangent.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adgen.rules.helpers import (
    angle_vjp,
    imag_vjp,
    ndarray_view,
    real_vjp,
    rollaxis_vjp,
    sliding_window_vjp,
    trim_zeros_vjp,
    unstack_vjp,
    view_cotangent,
)
from adgen.rules.registry import defjvp, defvjp


# x.view(), x.view(np.ndarray): the same elements in x's memory (a write through it writes x)
@defvjp(ndarray_view, "a, dtype=None, type=None", diff="a", reads="dtype, type", linear=True,
        view=True,
        name="numpy.ndarray.view")
def view(g: Any, out: Any, a: Any, dtype: Any, type: Any) -> Any:  # noqa: A002
    return view_cotangent(g, dtype, type)  # (refuses x.view(dtype), which the forward ran)


@defvjp(np.fliplr, "m", linear=True, view=True)
def fliplr(g: Any, out: Any, m: Any) -> Any:
    return np.fliplr(g)


@defvjp(np.flipud, "m", linear=True, view=True)
def flipud(g: Any, out: Any, m: Any) -> Any:
    return np.flipud(g)


@defvjp(np.rot90, "m, k=1, axes=(0, 1)", diff="m", reads="k, axes", linear=True, view=True)
def rot90(g: Any, out: Any, m: Any, k: Any, axes: Any) -> Any:
    return np.rot90(g, -k, axes)


@defvjp(np.atleast_3d, "ary", linear=True, view=True)
def atleast_3d(g: Any, out: Any, ary: Any) -> Any:
    return np.reshape(g, np.shape(ary))


@defvjp(np.matrix_transpose, "x", linear=True, view=True)
def matrix_transpose(g: Any, out: Any, x: Any) -> Any:
    return np.swapaxes(g, -1, -2)


@defvjp(np.linalg.matrix_transpose, "x", linear=True, view=True)
def linalg_matrix_transpose(g: Any, out: Any, x: Any) -> Any:
    return np.swapaxes(g, -1, -2)


@defvjp(np.rollaxis, "a, axis, start=0", diff="a", reads="axis, start", linear=True,
        view=True)
def rollaxis(g: Any, out: Any, a: Any, axis: Any, start: Any) -> Any:
    return rollaxis_vjp(g, np.ndim(a), axis, start)


# every window of a length along some axes, read-only (NumPy refuses a write through it;
# writeable=True, whose windows overlap in memory, is not taken: refused, naming this rule);
# an element in several windows gets each window's cotangent
@defvjp(np.lib.stride_tricks.sliding_window_view, "x, window_shape, axis=None", diff="x",
        reads="window_shape, axis", linear=True, view=True,
        name="numpy.lib.stride_tricks.sliding_window_view")
def sliding_window_view(g: Any, out: Any, x: Any, window_shape: Any, axis: Any) -> Any:
    return sliding_window_vjp(g, np.shape(x), window_shape, axis)


@defjvp(np.lib.stride_tricks.sliding_window_view)
def _sliding_window_view_jvp(d: Any, out: Any, x: Any, window_shape: Any, axis: Any) -> Any:
    return np.lib.stride_tricks.sliding_window_view(d, window_shape, axis)


# real and imag read their argument only for its dtype and shape (a real part's cotangent is
# Re(g), an imaginary part's -1j Re(g) for a complex argument and 0 for a real one): an
# in-place write, which changes neither, is free after them.
@defvjp(np.real, "val", view=True)
def real(g: Any, out: Any, val: Any) -> Any:
    return real_vjp(g, np.iscomplexobj(val))


@defvjp(np.imag, "val", view=True)
def imag(g: Any, out: Any, val: Any) -> Any:
    return imag_vjp(g, np.iscomplexobj(val), np.shape(val))


@defvjp(np.angle, "z, deg=False", diff="z", reads="z, deg")
def angle(g: Any, out: Any, z: Any, deg: Any) -> Any:
    return angle_vjp(g, z, deg)  # 0 for a real z: the angle is 0 or pi


@defvjp(np.trim_zeros, "filt, trim='fb', axis=None", diff="filt", reads="filt, trim, axis",
        view=True)
def trim_zeros(g: Any, out: Any, filt: Any, trim: Any, axis: Any) -> Any:
    # the pullback finds where the slice starts from filt's zeros (not from the values of out)
    return trim_zeros_vjp(g, filt, trim, axis)


@defvjp(np.unstack, "x, *, axis=0", diff="x", reads="axis", linear=True, view=True)
def unstack(g: Any, out: Any, x: Any, axis: Any) -> Any:
    return unstack_vjp(g, np.shape(x), axis)
