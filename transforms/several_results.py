"""Calls that return a tuple of independent results, written as the calls adgen's rules take.

Input: a statement of a function in A-normal form, ``r = f(a, b, ...)``, and the object its
callee resolves to. Output, where the callee is one of these and its arguments are positional
(no ``*args``, no keyword), the statements computing the same tuple:

- ``np.atleast_1d(a, b, ...)`` (``atleast_2d``, ``atleast_3d``) of two arrays or more ->
  ``(np.atleast_2d(a), np.atleast_2d(b), ...)``: NumPy returns that tuple (the rules take one
  array; the call of several was refused, 'takes 1 positional arguments');
- builtin ``divmod(x, y)`` -> ``(x // y, x % y)``, Python's definition for numbers and
  NumPy's for arrays (``ndarray.__divmod__`` is ``np.divmod``);
- ``np.divmod(x, y)`` -> ``(np.floor_divide(x, y), np.remainder(x, y))``.

``r`` is then a tuple of arrays or numbers built from its items, which every later pass knows;
each item has its own rule (a floor's derivative is zero, a remainder's ``1`` and
``-floor(x / y)``).
"""

from __future__ import annotations

from typing import Any

import gast
import numpy as np
from adgen.transforms.desugar import assign, name
from adgen.transforms.names import Namer
from adgen.transforms.walk import clone

_EACH = (np.atleast_1d, np.atleast_2d, np.atleast_3d)


def _is(callee: Any, options: tuple[Any, ...]) -> bool:
    return any(callee is o for o in options)


def lower_several(s: gast.Assign, callee: Any, namer: Namer) -> list[gast.stmt] | None:
    """The statements replacing ``s`` (None: ``s`` is not such a call)."""
    call = s.value
    if not isinstance(call, gast.Call) or call.keywords or \
            any(isinstance(a, gast.Starred) for a in call.args):
        return None
    parts: list[gast.expr]
    if _is(callee, _EACH) and len(call.args) >= 2:
        parts = [gast.Call(func=clone(call.func), args=[clone(a)], keywords=[])
                 for a in call.args]
    elif callee is divmod and len(call.args) == 2:
        x, y = call.args
        parts = [gast.BinOp(left=clone(x), op=op(), right=clone(y))
                 for op in (gast.FloorDiv, gast.Mod)]
    elif callee is np.divmod and len(call.args) == 2:
        x, y = call.args
        parts = [gast.Call(func=gast.Attribute(value=name("np"), attr=f, ctx=gast.Load()),
                           args=[clone(x), clone(y)], keywords=[])
                 for f in ("floor_divide", "remainder")]
    else:
        return None
    out: list[gast.stmt] = []
    items: list[gast.expr] = []
    for p in parts:
        t = namer.fresh("t")
        out.append(assign(name(t, gast.Store), p, s))
        items.append(name(t))
    out.append(assign(clone(s.targets[0]), gast.Tuple(elts=items, ctx=gast.Load()), s))
    return out
