"""Backends: what runs the generated forward and pullback.

- ``"default"``: the Python functions the pipeline compiles (NumPy, adgen.runtime).
- ``"numba"``: the same code rewritten into numba's nopython subset
  (``adgen.transforms.numba_emit``) and compiled with ``numba.njit(cache=True)``. What that
  subset cannot take raises an adgen error naming the user's line, when the gradient is
  compiled (before the user's code runs).
- ``"auto"``: numba where it can; where it cannot, the default backend, with a
  :class:`NumbaFallbackWarning` that says why (the same message the numba backend raises).

The numba backend compiles once per argument types (numbers: float, int or bool; arrays:
dtype and rank), as numba does. Its gradients live in static buffers, one per array, which
is right only when the arrays passed in do not share memory: every call checks that
(``np.may_share_memory`` of each pair), and raises (``"numba"``) or runs the default backend
(``"auto"``) when they may.

Caching (:mod:`adgen.numba_cache`): each nopython module is written to a cache directory and
imported from there, so numba keeps its machine code; a later process generating the same code
loads the compiled functions, and the rewrite's result, instead of compiling again.

``grad`` runs one compiled call (the module's gradient function: the forward, then the
pullback seeded with 1.0) through ``Compiled.gradient``; ``vjp`` runs the forward and the
pullback.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

from adgen.errors import AdgenError, UnsupportedError
from adgen.numba_arguments import arg_types
from adgen.numba_function import NumbaFallbackWarning, NumbaFunction

BACKENDS = ("default", "numba", "auto")


def check_backend(backend: str) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}")


def compile_for(fn: Any, mutation: str, wrt: tuple[int, ...] | None,
                sig: tuple[Any, ...] | None, backend: str) -> Any:
    """The compiled function of ``fn`` for ``backend`` (a ``pipeline.Compiled``).

    Raises:
        AdgenError: what the default pipeline refuses, and under ``"numba"`` what nopython
            mode cannot take, naming the user's file and line.
    """
    from adgen.transforms.pipeline import compile_function

    check_backend(backend)
    base = compile_function(fn, mutation=mutation, wrt=wrt, sig=sig)
    if backend == "default":
        return base
    with _LOCK:
        hit = _NUMBA.get((id(base), backend))
        if hit is not None and hit[0] is base:
            return hit[1]
    try:
        compiled = NumbaFunction(fn, base, sig, backend).compiled()
    except AdgenError as err:
        if backend == "numba":
            raise
        _fall_back(err)
        compiled = base
    with _LOCK:
        _NUMBA[(id(base), backend)] = (base, compiled)
        while len(_NUMBA) > _NUMBA_SIZE:  # as compile_cache.COMPILED: the oldest go first
            _NUMBA.pop(next(iter(_NUMBA)))
    return compiled


def numba_source(fn: Any, mutation: str, args: tuple[Any, ...], backend: str = "numba") -> str:
    """The nopython module the numba backend compiles for arguments like ``args`` (under
    ``"auto"``, the default backend's code where numba is refused, with the warning)."""
    from adgen.transforms.analyses.kinds import signature

    if not args:
        raise UnsupportedError(
            "the numba backend compiles per argument types: show its code with example "
            "arguments", hint="adgen.source(f, x, y, backend='numba')")
    base = compile_function_default(fn, mutation, signature(args))
    try:
        nf = NumbaFunction(fn, base, signature(args), "numba")
        return nf.code_for(arg_types(args, fn)).source
    except AdgenError as err:
        if backend == "numba":
            raise
        _fall_back(err)
        return "import numpy as np\nfrom adgen.runtime import *\n\n\n" + base.source


def compile_function_default(fn: Any, mutation: str, sig: Any) -> Any:
    from adgen.transforms.pipeline import compile_function

    return compile_function(fn, mutation=mutation, sig=sig)


_LOCK = threading.RLock()
# numba-backend functions per default compilation (held with it, so its id stays its own)
_NUMBA: dict[tuple[int, str], tuple[Any, Any]] = {}
_NUMBA_SIZE = 256


def _fall_back(err: AdgenError) -> None:
    warnings.warn(f"backend='auto' runs the default backend here: {err}",
                  NumbaFallbackWarning, stacklevel=4)


