"""NumPy, ``math`` and builtin functions passed to adgen directly (``adgen.hessian(np.prod)``,
``adgen.jacfwd(np.sin)``): differentiated as the Python function the user meant,
``def prod(a): return np.prod(a)``.

Reverse mode runs such a function through its rule (``pipeline._from_rule``) or compiles its
reference implementation (:func:`library_target`, ``adgen.grad(np.interp)``); the forward-mode
compiler and the derivatives built on it read a
function's source, which a C function does not have. :func:`library_wrapper` writes that
source: one parameter per required positional parameter of the function (its ``nin`` for a
ufunc), the call passing them on, registered in ``linecache`` under ``<adgen wrapper of
numpy.prod>`` so that the compiler reads it as any user's function. A function whose
required parameters cannot be told is refused with what to write instead (a lambda).
"""

from __future__ import annotations

import inspect
import linecache
import types
from typing import Any

import numpy as np

from adgen.errors import UnsupportedError
from adgen.rules import registry

__all__ = ["library_target", "library_wrapper"]

_WRAPPERS: dict[int, tuple[Any, Any]] = {}


def _is_library(fn: Any) -> bool:
    """A callable without Python source that adgen differentiates by a rule or a reference:
    a NumPy function or ufunc, a ``math`` function, a builtin."""
    if isinstance(fn, types.FunctionType) or not callable(fn) or isinstance(fn, type):
        return False
    return registry.lookup(fn) is not None or registry.reference_of(fn) is not None


def library_target(fn: Any) -> Any:
    """The function reverse mode compiles for ``fn`` given to adgen directly: a NumPy
    function's reference implementation (``np.interp``), else ``fn``.

    Raises:
        UnsupportedError: for an ndarray method (``np.ndarray.sum``), which has no array to
            be called on: the lambda to pass instead.
    """
    if isinstance(fn, (types.MethodDescriptorType, types.WrapperDescriptorType)):
        owner = getattr(getattr(fn, "__objclass__", None), "__name__", "?")
        name = getattr(fn, "__name__", "method")
        raise UnsupportedError(
            f"{owner}.{name} is a method, passed to adgen without the object it is called on",
            hint=f"pass the function you mean: lambda x: x.{name}()")
    if isinstance(fn, types.FunctionType) or registry.lookup(fn) is not None:
        return fn
    return registry.reference_of(fn) or fn


def library_wrapper(fn: Any) -> Any:
    """``fn`` itself, or, for a library function without source, a Python function of its
    required positional parameters that calls it (cached per function).

    Raises:
        UnsupportedError: when the required parameters cannot be read from ``fn``.
    """
    if not _is_library(fn):
        return fn
    hit = _WRAPPERS.get(id(fn))
    if hit is not None and hit[0] is fn:
        return hit[1]
    name = str(getattr(fn, "__name__", "f"))
    full = f"{getattr(fn, '__module__', None) or 'numpy'}.{name}"
    params = _required(fn)
    if params is None or not name.isidentifier():
        raise UnsupportedError(
            f"adgen cannot tell the parameters of {full}, passed to it directly",
            hint=f"pass the function you mean: lambda x: {name}(x)")
    text = (f"def {name}({', '.join(params)}):\n"
            f"    return __adgen_library_fn__({', '.join(params)})\n")
    file = f"<adgen wrapper of {full}>"
    linecache.cache[file] = (len(text), None, text.splitlines(True), file)
    scope: dict[str, Any] = {"__adgen_library_fn__": fn, "np": np, "__name__": "adgen_wrappers"}
    exec(compile(text, file, "exec"), scope)  # noqa: S102 - the text above, nothing of the user's
    wrapper = scope[name]
    wrapper.__qualname__ = name
    _WRAPPERS[id(fn)] = (fn, wrapper)
    return wrapper


def _required(fn: Any) -> list[str] | None:
    """The names of ``fn``'s required positional parameters, or None."""
    if isinstance(fn, np.ufunc):
        return ["x", "y", "z"][:fn.nin] if fn.nin <= 3 else None
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    out = [p.name for p in sig.parameters.values()
           if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    if not out or any(not n.isidentifier() or n.startswith("__") for n in out):
        return None
    return out
