"""``np.r_[...]`` and ``np.c_[...]``: NumPy's concatenation by index, as calls adgen follows.

Input: one statement in A-normal form, ``t3 = t1[z, 0.2, 1:3, t2]``, where ``t1`` holds
``np.r_`` or ``np.c_`` (an ``AxisConcatenator``: indexing it concatenates the items).
Output: each item made into the piece NumPy makes of it, then one ``np.concatenate``:

    t4 = concatenator_piece('r_', z)
    t5 = concatenator_piece('r_', 0.2)
    t6 = concatenator_piece('r_', slice(1, 3, None))
    t7 = concatenator_piece('r_', t2)
    t8 = [t4, t5, t6, t7]
    t3 = np.concatenate(t8, axis=0)

Why: an index carries no gradient, so ``np.r_[z, 0.2]`` was read as an index into a constant
object: its gradient was zero, silently, until session 23. ``runtime.concatenator_piece`` is
``np.r_[item]`` (a slice becomes its ``arange``, a number a 1-element array, ``np.c_`` makes a
vector a column); its rule reshapes the piece's cotangent back to the item's shape. A first
item that is a directive string (``np.r_['0,2', a, b]``, ``np.r_['r', ...]``) is refused at
the line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast
import numpy as np
from adgen.transforms.desugar import assign, name

from adgen.errors import UnsupportedError

_CONCATENATOR = type(np.r_).__mro__[1]  # numpy's AxisConcatenator (r_, c_)


def is_concatenator(obj: Any) -> bool:
    """``np.r_`` or ``np.c_`` (not ``np.ma.mr_``, whose pieces are masked arrays)."""
    return isinstance(obj, _CONCATENATOR) and type(obj).__module__.startswith("numpy.lib")


def lower_concatenation(s: gast.Assign, concatenator: Any, fresh: Callable[[str], str],
                        locate: Callable[[gast.AST], Any]) -> list[gast.stmt]:
    """The statements of the module docstring for ``s`` (``t = c[items]``, ``c`` holding
    ``concatenator``); ``locate`` gives a node's location for the refusal."""
    key = s.value.slice
    items = list(key.elts) if isinstance(key, gast.Tuple) else [key]
    if items and isinstance(items[0], gast.Constant) and isinstance(items[0].value, str):
        raise UnsupportedError(
            f"np.r_ / np.c_ with a directive string ({items[0].value!r}) is not "
            "differentiated", locate(s),
            hint="write the concatenation it stands for: np.concatenate, np.stack, "
                 "np.column_stack or np.atleast_2d")
    kind = "c_" if type(concatenator).__name__ == "CClass" else "r_"
    out: list[gast.stmt] = []
    pieces: list[gast.expr] = []
    for item in items:
        if isinstance(item, gast.Slice):
            item = gast.Call(func=name("slice"), args=[
                e if e is not None else gast.Constant(None, None)
                for e in (item.lower, item.upper, item.step)], keywords=[])
        t = fresh("t")
        out.append(assign(name(t, gast.Store), gast.Call(
            func=name("concatenator_piece"), args=[gast.Constant(kind, None), item],
            keywords=[]), s))
        pieces.append(name(t))
    joined = fresh("t")
    out.append(assign(name(joined, gast.Store), gast.List(elts=pieces, ctx=gast.Load()), s))
    out.append(assign(s.targets[0], gast.Call(
        func=gast.Attribute(value=name("np"), attr="concatenate", ctx=gast.Load()),
        args=[name(joined)],
        keywords=[gast.keyword(arg="axis", value=gast.Constant(int(concatenator.axis), None))]),
        s))
    return out
