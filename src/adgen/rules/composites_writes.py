"""Reference implementations (see :mod:`adgen.rules.composites`) of NumPy functions that write
their first argument in place: ``np.place`` and ``np.put_along_axis``.

Each is the indexed assignment NumPy makes, written in Python: adgen compiles a call of one
as the call of a function of the user's that writes its argument (a mutation site of the
caller, with its guards under both mutation policies), so the values written get their
gradients and the overwritten entries none:

    np.place(arr, mask, vals)              ->  arr[m] = np.resize(vals, count of m)
    np.put_along_axis(arr, ind, v, axis)   ->  arr[index along axis] = v

The index is computed by a helper without a derivative (:func:`place_mask`,
:func:`along_axis_index`) that raises NumPy's own error where NumPy raises one (a mask of
another size, ``vals`` empty, ``indices`` of another number of dimensions), so the
assignment never writes what NumPy would refuse.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adgen.rules.registry import defnondiff, defreference


@defnondiff
def place_mask(arr: Any, mask: Any, vals: Any) -> Any:
    """The boolean mask ``np.place(arr, mask, vals)`` writes through, shaped like ``arr``
    (NumPy reads ``mask`` flat, any shape of ``arr``'s size); NumPy's errors where it raises."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"argument 1 must be numpy.ndarray, not {type(arr).__name__}")
    m = np.asarray(mask)
    if m.size != arr.size:
        raise ValueError("place: mask and data must be the same size")
    m = np.reshape(m != 0, np.shape(arr))
    if np.size(vals) == 0 and np.any(m):
        raise ValueError("Cannot insert from an empty array!")
    return m


@defnondiff
def count_of(m: Any) -> Any:
    """How many entries of the boolean array ``m`` are true (a Python int)."""
    return int(np.count_nonzero(m))


@defreference(np.place)
def place(arr: Any, mask: Any, vals: Any) -> Any:
    m = place_mask(arr, mask, vals)
    arr[m] = np.resize(vals, count_of(m))


@defnondiff
def along_axis_index(arr: Any, indices: Any, axis: Any) -> Any:
    """The index ``np.put_along_axis(arr, indices, values, axis)`` assigns through: NumPy's
    own (``_make_along_axis_idx``), a tuple of integer arrays; for ``axis=None``, that of
    ``arr``'s flat positions. NumPy's errors where it raises."""
    indices = np.asarray(indices)
    if not np.issubdtype(indices.dtype, np.integer):
        raise IndexError("`indices` must be an integer array")
    if axis is None:
        if indices.ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        # arr.flat[indices]: a negative index counts from the end
        return np.unravel_index(np.where(indices < 0, indices + np.size(arr), indices),
                                np.shape(arr))
    nd = np.ndim(arr)
    if indices.ndim != nd:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    axis = _normalized(axis, nd)
    grid = list(np.indices(np.shape(arr), sparse=True))
    grid[axis] = indices
    return tuple(grid)


def _normalized(axis: int, nd: int) -> int:
    if not -nd <= axis < nd:
        raise np.exceptions.AxisError(axis, nd)
    return axis % nd


@defreference(np.put_along_axis)
def put_along_axis(arr: Any, indices: Any, values: Any, axis: Any) -> Any:
    arr[along_axis_index(arr, indices, axis)] = values
