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

from adgen.rules.registry import defnondiff, defreference, defreference_helper


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


# --------------------------------------------------------------------------------------------
# np.vectorize(f)(x, ...): the loop NumPy runs, over the broadcast arguments' items


@defnondiff
def vectorized_shape(*args: Any) -> Any:
    """The shape ``np.vectorize`` broadcasts its arguments to (NumPy's error where they do
    not broadcast; NumPy's refusal of no item to call the function on)."""
    shape = np.broadcast_shapes(*(np.shape(a) for a in args))
    if int(np.prod(shape, dtype=np.intp)) == 0:
        raise ValueError("cannot call `vectorize` on size 0 inputs unless `otypes` is set")
    return shape


@defnondiff
def vectorized_dtype(first: Any, otype: Any) -> Any:
    """The result's dtype: ``otypes``' one type, else that of the function's result on the
    first items, as NumPy's (a function returning an int there gives an int array)."""
    if otype is not None:
        return np.dtype(otype)
    if isinstance(first, tuple):
        from adgen.errors import UnsupportedError

        raise UnsupportedError("np.vectorize of a function returning a tuple (more than one "
                               "output) is not supported",
                               hint="vectorize one function per output")
    return np.asarray(first).dtype


@defreference_helper
def vectorized1(pyfunc: Any, otype: Any, a: Any) -> Any:
    shape = vectorized_shape(a)
    fa = np.ravel(np.broadcast_to(a, shape))
    if otype is None:
        dtype = vectorized_dtype(pyfunc(fa[0]), otype)  # NumPy's call to find the type
    else:
        dtype = vectorized_dtype(None, otype)
    out = np.zeros(np.shape(fa), dtype=dtype)
    for k in range(np.size(fa)):
        out[k] = pyfunc(fa[k])
    return np.reshape(out, shape)


@defreference_helper
def vectorized2(pyfunc: Any, otype: Any, a: Any, b: Any) -> Any:
    shape = vectorized_shape(a, b)
    fa = np.ravel(np.broadcast_to(a, shape))
    fb = np.ravel(np.broadcast_to(b, shape))
    if otype is None:
        dtype = vectorized_dtype(pyfunc(fa[0], fb[0]), otype)
    else:
        dtype = vectorized_dtype(None, otype)
    out = np.zeros(np.shape(fa), dtype=dtype)
    for k in range(np.size(fa)):
        out[k] = pyfunc(fa[k], fb[k])
    return np.reshape(out, shape)


@defreference_helper
def vectorized3(pyfunc: Any, otype: Any, a: Any, b: Any, c: Any) -> Any:
    shape = vectorized_shape(a, b, c)
    fa = np.ravel(np.broadcast_to(a, shape))
    fb = np.ravel(np.broadcast_to(b, shape))
    fc = np.ravel(np.broadcast_to(c, shape))
    if otype is None:
        dtype = vectorized_dtype(pyfunc(fa[0], fb[0], fc[0]), otype)
    else:
        dtype = vectorized_dtype(None, otype)
    out = np.zeros(np.shape(fa), dtype=dtype)
    for k in range(np.size(fa)):
        out[k] = pyfunc(fa[k], fb[k], fc[k])
    return np.reshape(out, shape)


VECTORIZED = {1: vectorized1, 2: vectorized2, 3: vectorized3}


def vectorized_call(vec: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
                    ) -> tuple[Any, tuple[Any, ...]]:
    """The loop that calling ``vec`` (an ``np.vectorize`` object) stands for, and its
    arguments: ``(vectorizedN, (pyfunc, otype, *args))``.

    Raises:
        UnsupportedError: for what the loop does not do (keywords, ``excluded=``,
            ``signature=``, more than one output type, more than three arguments).
    """
    from adgen.errors import UnsupportedError

    hint = ("write the loop in Python: out = np.zeros(x.shape); for i in np.ndindex(x.shape): "
            "out[i] = f(x[i])")
    if vec.signature is not None or vec.excluded:
        raise UnsupportedError("np.vectorize with signature= or excluded= is not supported",
                               hint=hint)
    otypes = vec.otypes
    if otypes is not None and len(otypes) != 1:
        raise UnsupportedError("np.vectorize with more than one output type (otypes=) is "
                               "not supported", hint=hint)
    if kwargs:
        raise UnsupportedError("calling an np.vectorize object with keyword arguments is not "
                               "supported", hint="pass the arguments by position")
    if len(args) not in VECTORIZED:
        raise UnsupportedError(f"calling an np.vectorize object with {len(args)} arguments "
                               "is not supported (one to three are)", hint=hint)
    return VECTORIZED[len(args)], (vec.pyfunc, None if otypes is None else otypes[0], *args)
