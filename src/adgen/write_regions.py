"""The region of an array an in-place write overwrites, as the guards see it
(``write_region``): a view for a basic index, the runs of rows an index array on the first axis
names, the whole array otherwise; and the array a write through ``y.flat`` changes
(``flat_target``). Generated code computes the region before the write and hands it to
``guards.before_write``; ``-o`` modules copy the source (transforms/standalone.py), so it uses
only numpy.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def flat_target(flat: np.flatiter) -> np.ndarray:
    """The array a write through ``y.flat`` changes, as the guards see it: ``y`` viewed flat
    in C order, or all of ``y`` when no flat view of it exists (y not C-contiguous)."""
    base = flat.base
    return base.reshape(-1) if base.flags.c_contiguous else base


def write_region(target: Any, index: Any) -> Any:
    """The view an indexed write ``target[index] = v`` overwrites: a view for a basic index; a
    tuple of views, one per run of consecutive rows, for an integer or boolean index array
    on the first axis (``x[idx] = v``, ``np.add.at(x, idx, v)``: the rows it names, all of
    each); the whole target otherwise."""
    if isinstance(target, np.flatiter):
        whole = flat_target(target)
        return write_region(whole, index) if whole.ndim == 1 else whole
    if isinstance(target, np.ndarray):
        try:
            # (index, ...) keeps an integer index a 0-d view instead of a scalar copy
            region = target[(*index, Ellipsis) if isinstance(index, tuple) else (index,
                                                                                 Ellipsis)]
        except (IndexError, TypeError, ValueError):
            return target
        if isinstance(region, np.ndarray) and np.may_share_memory(region, target):
            return region
        rows = _rows_written(target, index)
        if rows is not None:
            return rows
    return target


def _rows_written(target: np.ndarray, index: Any) -> tuple[np.ndarray, ...] | None:
    """The runs of rows of ``target`` a fancy index's first-axis part names, as views (None:
    not an index array on the first axis, or too many runs to check one by one)."""
    first = index[0] if isinstance(index, tuple) and index else index
    if target.ndim == 0 or not isinstance(first, (np.ndarray, list)):
        return None
    try:
        rows = np.asarray(first)
    except ValueError:
        return None
    if rows.ndim == 0:
        return None
    if rows.dtype == np.bool_:
        rows = np.nonzero(rows)[0]
    elif rows.dtype.kind not in "iu":
        return None
    n = target.shape[0]
    rows = np.unique(np.where(rows < 0, rows + n, rows).ravel())
    if rows.size and (rows[0] < 0 or rows[-1] >= n):
        return None  # the write itself raises IndexError
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    if len(breaks) >= 64:
        return None  # checked one run at a time up to 64 runs, else the whole array
    starts = np.concatenate(([0], breaks)) if rows.size else breaks
    stops = np.concatenate((breaks, [rows.size])) if rows.size else breaks
    return tuple(target[int(rows[a]):int(rows[b - 1]) + 1] for a, b in zip(starts, stops))
