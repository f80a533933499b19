"""Reference implementations (see :mod:`adgen.rules.composites`) of NumPy functions that call
a function of the user's: ``np.piecewise`` and ``np.apply_along_axis``.

Each is NumPy's own loop written in Python, so adgen compiles the user's functions it calls
(lambdas, module-level functions, closures) as it compiles any call of them, and each gets
exactly the values NumPy hands it:

    np.piecewise(x, condlist, funclist)  ->  y = zeros_like(x); y[cond] = func(x[cond])
    np.apply_along_axis(func1d, axis, arr) -> func1d of each 1-D slice, stacked as NumPy's

(a constant in ``funclist`` is written as it is; the "otherwise" condition is added when
``funclist`` has one more entry than ``condlist``). The conditions are computed by a helper
without a derivative (:func:`piecewise_conditions`) that raises NumPy's own error where NumPy
raises one. Extra ``*args`` / ``**kw`` for the functions are not taken: such a call is
refused at the user's line (write the arguments into a lambda).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adgen.rules.registry import defnondiff, defreference


@defnondiff
def piecewise_conditions(x: Any, condlist: Any, n_funcs: int) -> list[Any]:
    """The boolean masks ``np.piecewise`` applies its functions through, one per function
    (NumPy's: a single condition promoted to a list, the "otherwise" one added)."""
    x = np.asanyarray(x)
    if np.isscalar(condlist) or (
            not isinstance(condlist[0], (list, np.ndarray)) and x.ndim != 0):
        condlist = [condlist]
    conds = np.asarray(condlist, dtype=bool)
    n = len(conds)
    if n == n_funcs - 1:
        conds = np.concatenate([conds, ~np.any(conds, axis=0, keepdims=True)], axis=0)
    elif n != n_funcs:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are "
                         "expected")
    return [conds[k] for k in range(n_funcs)]


@defnondiff
def calls_back(func: Any) -> bool:
    """Whether ``np.piecewise`` calls this entry of ``funclist`` (else writes it as a value).
    A lambda or a nested def is called as any function is: the values it closes over get
    their derivatives where it runs (refused before session 28: the list's pullback read the
    lifted lambda, which the forward had not saved: a raw NameError)."""
    return callable(func)


@defnondiff
def selects_any(cond: Any) -> bool:
    return bool(np.any(cond))


@defreference(np.piecewise)
def piecewise(x: Any, condlist: Any, funclist: Any) -> Any:
    x = np.asanyarray(x)
    conds = piecewise_conditions(x, condlist, len(funclist))
    y = np.zeros_like(x)
    for k in range(len(conds)):
        cond = conds[k]
        func = funclist[k]
        if not calls_back(func):
            y[cond] = func
        elif selects_any(cond):
            y[cond] = func(x[cond])
    return y


@defnondiff
def slices_along(shape: Any, axis: Any) -> Any:
    """``(axis, outer shape, number of slices)`` of ``np.apply_along_axis`` over an array of
    ``shape``: NumPy's errors for an axis out of range or no slice to call the function on."""
    nd = len(shape)
    if not -nd <= int(axis) < nd:
        raise np.exceptions.AxisError(int(axis), nd)
    ax = int(axis) % nd
    outer = tuple(n for d, n in enumerate(shape) if d != ax)
    count = int(np.prod(outer, dtype=np.intp))
    if count == 0:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    return ax, outer, count


@defnondiff
def result_axes(n_outer: int, n_res: int, ax: int) -> Any:
    """Where NumPy puts the result's axes: from after the outer ones to ``axis``."""
    return list(range(n_outer, n_outer + n_res)), list(range(ax, ax + n_res))


@defreference(np.apply_along_axis)
def apply_along_axis(func1d: Any, axis: Any, arr: Any) -> Any:
    arr = np.asanyarray(arr)
    ax, outer, count = slices_along(np.shape(arr), axis)
    rows = np.reshape(np.moveaxis(arr, ax, -1), (count, np.shape(arr)[ax]))
    res = []
    for k in range(count):
        res.append(np.asarray(func1d(rows[k])))
    out = np.reshape(np.stack(res), outer + np.shape(res[0]))
    src, dst = result_axes(len(outer), np.ndim(res[0]), ax)
    return np.moveaxis(out, src, dst)
