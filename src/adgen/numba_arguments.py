"""numba_arguments: the numba types the numba backend compiles a function for.

Its nopython code is rewritten and compiled per argument types (:class:`ArgType`: a float,
int or bool number, or a float64 / float32 / int64 / bool array of a rank): :func:`arg_types` of the
arguments of a call, :func:`sig_types` of a kind signature (``analyses.kinds.signature``)
where it tells them, and :func:`data_type` of a global read as data (passed as an argument).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adgen.errors import UnsupportedError

__all__ = ["arg_type", "arg_types", "data_type", "sig_types"]


def arg_type(a: Any, k: int, fn: Any) -> Any:
    """The ArgType of argument ``k`` of a call of ``fn``; refused for any other type."""
    from adgen.transforms.analyses.numba_types import ArgType

    t = type(a)
    if t is float or t is np.float64:
        return ArgType("f8")
    if t is bool or t is np.bool_:
        return ArgType("b1")
    if t is int or t is np.int64:
        return ArgType("i8")
    if t is np.ndarray and a.dtype.char in "dflq?" and a.dtype.isnative:
        return ArgType("array", {"d": "f8", "f": "f4", "l": "i8", "q": "i8",
                                 "?": "b1"}[a.dtype.char], a.ndim)
    what = f"an array of dtype {a.dtype}" if isinstance(a, np.ndarray) else \
        f"a {type(a).__name__}"
    name = _parameter_name(fn, k)
    raise UnsupportedError(
        f"the numba backend takes float64, float32, int64 and bool arrays and float, int and "
        f"bool numbers; argument {k}{f' ({name})' if name else ''} of "
        f"{getattr(fn, '__qualname__', fn)} is {what}",
        hint=f"convert it ({name or 'x'} = np.asarray({name or 'x'}, dtype=np.float64) before "
             "the call), or use backend='default' / 'auto'")


def _parameter_name(fn: Any, k: int) -> str | None:
    """The name of ``fn``'s positional parameter ``k`` (of a numba dispatcher's Python
    function), or None."""
    code = getattr(getattr(fn, "py_func", fn), "__code__", None)
    if code is None or k >= code.co_argcount:
        return None
    return code.co_varnames[k]


def arg_types(args: tuple[Any, ...], fn: Any) -> tuple[Any, ...]:
    """The ArgTypes of a call's arguments (:func:`arg_type` of each)."""
    return tuple(arg_type(a, k, fn) for k, a in enumerate(args))


def sig_types(sig: tuple[Any, ...] | None, fn: Any) -> tuple[Any, ...] | None:
    """Argument types standing for a kind signature (a number as a float), for the check
    made when the gradient is compiled; None where the signature does not tell (a bool, a
    bool array): then the check is made at the first call, before the function runs."""
    from adgen.transforms.analyses.numba_types import ArgType

    if sig is None:
        raise UnsupportedError(
            f"the numba backend compiles {getattr(fn, '__qualname__', fn)} per argument "
            "types and needs them", hint="call the gradient with arguments (grad does)")
    out = []
    for s in sig:
        if s in ("number", "float"):  # any number, a float64 one (kinds.FLOAT_ARG)
            out.append(ArgType("f8"))
        elif type(s) is int:
            out.append(ArgType("array", "f8", s))
        elif isinstance(s, tuple) and s[0] == "array" and np.dtype(s[2]) == np.int64:
            out.append(ArgType("array", "i8", s[1]))
        else:
            return None
    return tuple(out)


def data_type(g: Any) -> Any:
    """The ArgType of a global read as data (a ``kind`` guard: a float, or a float64 / int64 /
    bool array), or None."""
    from adgen.transforms.analyses.numba_types import ArgType

    if g.mode != "kind":
        return None
    kind = g.expected
    if kind[0] in (float, np.float64):
        return ArgType("f8")
    if kind[0] is np.ndarray and len(kind) == 3 and kind[2] in (np.float64, np.int64, np.bool_):
        return ArgType("array", {np.dtype(np.float64): "f8", np.dtype(np.int64): "i8",
                                 np.dtype(np.bool_): "b1"}[np.dtype(kind[2])], kind[1])
    return None
