"""An output a NumPy call takes by position given its keyword: ``np.sin(x, y)``,
``np.multiply(a, b, a)``, ``np.cumsum(a, 0, None, o)`` as the same call with ``out=`` (called
by ``lower_mutation``, which then lowers the call as a write of that array). Taken for an
input, the write was left out of the gradient (a silently wrong one).
"""

from __future__ import annotations

import inspect
import types
from typing import Any

import gast
import numpy as np


def out_by_keyword(call: gast.Call, resolved: object) -> None:
    """Gives an output a NumPy call takes by position its keyword (``np.sin(x, y)``,
    ``np.multiply(a, b, a)``, ``np.cumsum(a, 0, None, o)``: ``out=``), so that the call is
    lowered as a write of that array; taken for an input, the write was left out of the
    gradient (a silently wrong one). ``call`` is changed in place."""
    if any(isinstance(a, gast.Starred) for a in call.args) or \
            any(k.arg in ("out", None) for k in call.keywords):
        return
    if isinstance(resolved, np.ufunc):
        first: int | None = resolved.nin
    elif str(getattr(resolved, "__module__", "") or "").startswith("numpy"):
        first = _out_position(resolved)
    else:
        return
    if first is None:
        return
    outs = call.args[first:]
    if not outs:
        return
    call.args = call.args[:first]
    value = outs[0] if len(outs) == 1 else gast.Tuple(elts=outs, ctx=gast.Load())
    call.keywords.append(gast.keyword(arg="out", value=value))


# a NumPy function -> the position of its out= parameter when every parameter up to it may be
# given by position, else None: inspect.signature parses a builtin's text signature (about
# 0.2-1 ms for np.zeros), and a build asks it for each NumPy call (18 for Deriche)
_OUT_POSITIONS: dict[Any, int | None] = {}


def _out_position(fn: Any) -> int | None:
    """Where ``fn`` (a NumPy function, not a ufunc) takes ``out`` by position, or None."""
    try:
        return _OUT_POSITIONS[fn]
    except (KeyError, TypeError):  # (TypeError: unhashable)
        pass
    text = getattr(fn, "__text_signature__", None)
    if isinstance(text, str) and "out" not in text:
        found = None  # a builtin's whole signature, without a parameter named out
    else:
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            return None
        names = [p.name for p in params]
        if "out" not in names or any(p.kind is not p.POSITIONAL_OR_KEYWORD
                                     for p in params[:names.index("out") + 1]):
            found = None
        else:
            found = names.index("out")
    owner = getattr(fn, "__self__", None)
    if owner is None or isinstance(owner, types.ModuleType):  # not a bound method's object
        try:
            _OUT_POSITIONS[fn] = found
        except TypeError:
            pass
    return found
