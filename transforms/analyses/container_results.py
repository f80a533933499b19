"""Container results: which NumPy calls may return a tuple or list of arrays.

Input: the object a call's function resolves to (and the call, read only). Output: whether the
call may return a tuple or a list (``np.linalg.svd(M)``, ``np.split(x, 2)``, a ufunc with
two outputs such as ``np.modf``), so that a name bound to it must not be taken for a number
or an array.

What it is for: the reverse pass adds two adjoints of a number or an array with ``+``, and
of anything else with ``runtime.add``. ``r = np.linalg.qr(M)`` read twice (``r.Q``, ``r.R``)
gives ``r`` two adjoint contributions, both tuples: ``+`` concatenated them, and the rule read
the first contribution alone (a silent wrong gradient). The answer may be conservative: a
call said to return a container that returns an array only loses the ``+`` shortcut.
"""

from __future__ import annotations

from typing import Any

import gast
import numpy as np

# NumPy functions that return a tuple or list of arrays (for some of them only with some
# arguments: np.gradient of a vector, np.atleast_1d of one array, np.unique without return_*
# return an array; the answer is "may").
_CONTAINER_FUNCTIONS: frozenset[Any] = frozenset(
    f for f in (
        np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit, getattr(np, "unstack", None),
        np.meshgrid, np.broadcast_arrays, np.gradient, np.atleast_1d, np.atleast_2d,
        np.atleast_3d, np.histogram, np.histogram2d, np.histogramdd, np.unique,
        getattr(np, "unique_all", None), getattr(np, "unique_counts", None),
        getattr(np, "unique_inverse", None), np.nonzero, np.where, np.ix_, np.polyfit,
        np.linalg.svd, np.linalg.eig, np.linalg.eigh, np.linalg.slogdet, np.linalg.qr,
        np.linalg.lstsq, np.divmod, np.modf, np.frexp,
    ) if f is not None)


def may_return_container(obj: Any, call: gast.Call | None = None) -> bool:
    """Whether calling ``obj`` (a resolved function) may return a tuple or a list.

    Args:
        obj: the object a call's function resolves to.
        call: the call, if known: ``np.where(c, a, b)``, ``np.atleast_1d(a)`` and
            ``np.unique(a)`` without ``return_*=`` return an array (common in loops, where
            the adjoints of numbers and arrays add with ``+``).

    Returns:
        True for a ufunc with more than one output and for the NumPy functions above.
    """
    if isinstance(obj, np.ufunc):
        return obj.nout > 1
    try:
        if obj not in _CONTAINER_FUNCTIONS:
            return False
    except TypeError:  # an unhashable callable
        return False
    if call is None or any(isinstance(a, gast.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords):
        return True
    if obj is np.where:
        return len(call.args) + len(call.keywords) == 1
    if any(obj is f for f in (np.atleast_1d, np.atleast_2d, np.atleast_3d)):
        return len(call.args) != 1
    if obj is np.unique:
        return any(k.arg.startswith("return_") for k in call.keywords)
    return True



def may_return_object(obj: Any) -> bool:
    """Whether calling NumPy's ``obj`` may return an object that is neither a number, an array
    nor a container of them: a class other than an array or scalar type (``np.nditer``,
    ``np.errstate``, ``np.vectorize``, ``np.random.Generator``) or
    ``np.random.default_rng``. A name bound to one is not a number: its adjoints add with
    ``runtime.add`` (``rng = np.random.default_rng(seed)`` whose draws take an active size
    got ``rng_bar += ...`` on None: a TypeError from adgen's code)."""
    if isinstance(obj, type):
        return not issubclass(obj, (np.generic, np.ndarray))
    return getattr(obj, "__name__", None) == "default_rng" and \
        str(getattr(obj, "__module__", "")).startswith("numpy.random")


# NumPy functions whose tuple result is a named tuple: their fields in order (read once, by
# calling each on a 1 x 1 identity: the classes are NumPy's, not public names)
_NAMED: dict[Any, tuple[str, ...]] = {}


# (np.linalg.lstsq and eig return plain tuples, or have no jvp)
NAMED_RESULTS = (np.linalg.svd, np.linalg.eigh, np.linalg.qr, np.linalg.slogdet)


def returns_named(obj: Any) -> bool:
    """Whether NumPy's ``obj`` returns a named tuple (whose tangent forward mode makes a named
    tuple of the same class, ``runtime.named_like``)."""
    return any(obj is f for f in NAMED_RESULTS)


def result_field(obj: Any, attr: str) -> int | None:
    """The index of field ``attr`` of the named tuple NumPy's ``obj`` returns
    (``np.linalg.svd(M).S`` is item 1), or None when ``obj`` returns no named tuple with
    that field.

    Args:
        obj: the object a call's function resolves to.
        attr: the attribute read of the call's result.

    Returns:
        The field's index in the tuple, or None.
    """
    if not returns_named(obj):
        return None
    if obj not in _NAMED:
        _NAMED[obj] = tuple(getattr(type(obj(np.eye(1))), "_fields", ()))
    fields = _NAMED[obj]
    return fields.index(attr) if attr in fields else None
