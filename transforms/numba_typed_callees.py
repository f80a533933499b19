"""numba_typed_callees: a callee of the numba backend compiled for the types a call passes it.

The default pipeline compiles a function a differentiated function calls alone, knowing
nothing of its parameters: ``s = A[j, j]; s -= L[j, k] * L[j, k]`` in a hand-written Cholesky
helper may update a view of ``A`` in place, which its pullback asks when it runs
(``scatter_if_copy``, a helper with no nopython form), and an ``out[i] += A[i, j] * v[j]``
mat-vec helper likewise; the same loop in the differentiated function, compiled for its
arguments' kinds, knows ``A[j, j]`` is a number. :func:`typed_callee` compiles the callee
again for the kinds its call's numba types give (``numba_module.Callee.for_types``, per
argument types), where its caller's code, made against the callee compiled alone, fits the
new compilation (:func:`fits`); elsewhere the callee compiled alone stays.

Input: the callee's ``Compiled`` (its ``function`` and policy) and the ArgTypes of a call.
Output: a ``numba_module.Callee`` (with its own callees), or None. This module's source is
part of the numba cache's key (numba_cache.code_key hashes transforms/numba_*.py), so a
module cached with other callee compilations is not read again.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from adgen.transforms.analyses.kinds import FLOAT_ARG, NUMBER
from adgen.transforms.callee_saved import saved_layout

from adgen.errors import AdgenError

__all__ = ["fits", "typed_callee"]


def typed_callee(plain: Any, arg_types: tuple[Any, ...]) -> Any:
    """The function of ``plain`` (a callee's ``Compiled``, compiled alone) compiled by the
    default pipeline for the kinds of a call's arguments (numba ArgTypes: a float64 array of
    rank r is the kind r, a float a float64 number, an int a number), as a numba_module
    Callee with its own callees; None where the types tell no kind, that compilation is
    refused, or its caller's code would not fit it (:func:`fits`): then the callee compiled
    alone is used, and refused where nopython mode cannot take it.

    Compiled alone, a helper knows nothing of its parameters: ``s = A[j, j]; s -= L[j, k]
    * L[j, k]`` may update a view of ``A`` in place, which its pullback asks at run time
    (``scatter_if_copy``, with no nopython form); with ``A`` known to be a float64 matrix,
    ``s`` is a number, as in the differentiated function."""
    from adgen.transforms.numba_module import Callee
    from adgen.transforms.pipeline import compile_function

    from adgen.numba_callees import callee_trees

    function = plain.function
    code = getattr(function, "__code__", None)
    if code is None or code.co_flags & 0x0C or code.co_kwonlyargcount or \
            code.co_argcount != len(arg_types):
        return None  # *args, **kwargs, keyword-only parameters, defaults left out
    sig: list[Any] = []
    for t in arg_types:
        if t.kind == "f8":
            sig.append(FLOAT_ARG)
        elif t.kind == "i8":
            sig.append(NUMBER)
        elif t.kind == "array" and t.dtype == "f8":
            sig.append(t.ndim)
        elif t.kind == "array" and t.dtype in ("f4", "i8"):
            sig.append(("array", t.ndim, np.dtype(t.dtype).str))
        else:
            sig.append(None)  # a bool, a bool array: no kind (kinds.of_value)
    if all(k is None for k in sig):
        return None
    try:
        compiled = compile_function(function, mutation=plain.mutation, sig=tuple(sig))
        if compiled.trees is None or not fits(compiled, plain):
            return None
        forward, pullback, file = compiled.trees
        out = Callee(forward, pullback, file, retype=functools.partial(typed_callee, compiled))
        out.callees.update(callee_trees(compiled, {}))
    except AdgenError:
        return None
    return out


def fits(typed: Any, plain: Any) -> bool:
    """Whether the caller's code, made against ``plain`` (the callee compiled alone), fits
    ``typed`` (compiled for the call's kinds): the caller keeps the callee's saved values
    whole, or in the same layout (callee_saved), and ``typed``'s pullback reads no parameter
    and no result ``plain``'s does not (the caller's copies before its own later writes were
    decided on those). What the function itself does (the parameters it writes, what its
    result shares) is the same whichever compilation runs; ``plain``'s facts of it, which the
    caller was compiled with, may be coarser (cholesky(A) "may write A" where ``s -= ...``
    may update a view of ``A``), never wrong."""
    layout = saved_layout(plain)
    if layout is not None and saved_layout(typed) != layout:
        return False

    def within(a: Any, b: Any) -> bool:  # True: every parameter
        if b is True:
            return True
        return a is not True and set(a or ()) <= set(b or ())

    return within(typed.reads_params, plain.reads_params) and \
        within(typed.reads_uncaptured, plain.reads_uncaptured) and \
        (plain.reads_result or not typed.reads_result)
