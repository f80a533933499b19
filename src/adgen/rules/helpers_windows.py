"""Adjoints of sums over windows of an axis: ``np.add.reduceat`` (segments given by their
starts) and ``numpy.lib.stride_tricks.sliding_window_view`` (every window of a length).

Both send each element of the cotangent back to every element of the argument it was made
from, so an element in several windows collects from each (overlapping windows, a segment
``reduceat`` takes twice). Helpers here use only ``np``, builtins and other helpers
(generated standalone modules copy them).
"""

from __future__ import annotations

import numpy as np

__all__ = ["reduceat_vjp", "sliding_window_vjp"]


def reduceat_vjp(g: np.ndarray, shape: tuple[int, ...], indices: object,
                 axis: int) -> np.ndarray:
    """Adjoint of ``np.add.reduceat(a, indices, axis)`` (``a`` of ``shape``): item ``i`` of the
    result is the sum of ``a[indices[i]:indices[i + 1]]`` along ``axis`` (to the end for the
    last), or ``a[indices[i]]`` alone where ``indices[i] >= indices[i + 1]``; each element
    of that segment gets ``g``'s item ``i``."""
    ax = axis % len(shape)
    res = np.zeros(shape, dtype=np.result_type(g, np.float64))
    into = np.moveaxis(res, ax, 0)  # a view: writes go to res
    items = np.moveaxis(np.asarray(g), ax, 0)
    starts = [int(k) for k in np.ravel(indices)]
    for i, start in enumerate(starts):
        if i + 1 < len(starts):
            stop = starts[i + 1] if start < starts[i + 1] else start + 1
        else:
            stop = shape[ax]
        into[start:stop] += items[i]
    return res


def sliding_window_vjp(g: np.ndarray, shape: tuple[int, ...], window_shape: object,
                       axis: object) -> np.ndarray:
    """Adjoint of ``sliding_window_view(x, window_shape, axis)`` (``x`` of ``shape``): the
    window at offset ``k`` (the trailing indices of ``g``) covers ``x`` shifted by ``k``
    along the windowed axes, and adds its cotangent there."""
    ndim = len(shape)
    window = (int(window_shape),) if np.ndim(window_shape) == 0 else \
        tuple(int(w) for w in window_shape)  # type: ignore[union-attr]
    if axis is None:
        axes = tuple(range(ndim))
    elif np.ndim(axis) == 0:
        axes = (int(axis) % ndim,)  # type: ignore[call-overload]
    else:
        axes = tuple(int(a) % ndim for a in axis)  # type: ignore[union-attr]
    g = np.asarray(g)
    positions = g.shape[:ndim]  # the windows' starts along each axis
    res = np.zeros(shape, dtype=np.result_type(g, np.float64))
    for offset in np.ndindex(*window):
        shift = [0] * ndim
        for a, k in zip(axes, offset):
            shift[a] += k
        region = tuple(slice(s, s + n) for s, n in zip(shift, positions))
        res[region] += g[(Ellipsis, *offset)]
    return res
