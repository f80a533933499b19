"""``np.r_[...]`` and ``np.c_[...]``: NumPy's concatenation by index, as calls adgen follows.

Input: one statement in A-normal form, ``t3 = t1[z, 0.2, 1:3, t2]``, where ``t1`` holds
``np.r_`` or ``np.c_`` (an ``AxisConcatenator``: indexing it concatenates the items).
Output: each item made into the piece NumPy makes of it, then one ``np.concatenate``:

    t4 = concatenator_piece('r_', z)
    t5 = concatenator_piece('r_', 0.2)
    t6 = concatenator_piece('r_', slice(1, 3, None))
    t7 = concatenator_piece('r_', t2)
    t3 = np.concatenate([t4, t5, t6, t7], axis=0)

Why: an index carries no gradient, so ``np.r_[z, 0.2]`` was read as an index into a constant
object: its gradient was zero, silently, until session 23. ``runtime.concatenator_piece`` is
``np.r_[item]`` (a slice becomes its ``arange``, a number a 1-element array, ``np.c_`` makes a
vector a column); its rule reshapes the piece's cotangent back to the item's shape. A first
item that is a directive string (``np.r_['0,2', a, b]``, ``np.r_['r', ...]``) is refused at
the line.

Lean (issue 15): ``t1 = np.r_`` goes where nothing else reads ``t1``
(:func:`drop_unread_concatenators`); analyses.kinds knows a piece's rank, so a loop keeps
the pieces' shapes, not the pieces and their list; and in the forward the piece of an
ndarray of rank >= 1 (``r_``) or >= 2 (``c_``) is the array itself (:func:`pieces_as_items`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast
import numpy as np
from adgen.transforms.desugar import assign, name
from adgen.transforms.walk import walk

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
    # the pieces as a display in the call, as ``np.concatenate((a, b))`` is written: the
    # pullback then keeps their shapes, not the list (shape_saves)
    out.append(assign(s.targets[0], gast.Call(
        func=gast.Attribute(value=name("np"), attr="concatenate", ctx=gast.Load()),
        args=[gast.List(elts=pieces, ctx=gast.Load())],
        keywords=[gast.keyword(arg="axis", value=gast.Constant(int(concatenator.axis), None))]),
        s))
    return out


def drop_unread_concatenators(fn: gast.FunctionDef, names: set[str]) -> None:
    """Removes ``t = np.r_`` (``names``: the names bound to a concatenator) where nothing in
    ``fn`` (nested functions included) mentions ``t`` but that binding: the lowering above
    read it for the concatenator, and reading a module's attribute has no effect. (Left,
    it was a dead line of the forward, run at every iteration of a loop.)"""
    mentioned: dict[str, int] = {}
    for node in walk(fn):
        if isinstance(node, gast.Name) and node.id in names:
            mentioned[node.id] = mentioned.get(node.id, 0) + 1
    dead = {n for n in names if mentioned.get(n, 0) == 1}
    if dead:
        _drop(fn.body, dead)


def _drop(stmts: list[gast.stmt], dead: set[str]) -> None:
    kept = [s for s in stmts if not (
        isinstance(s, gast.Assign) and len(s.targets) == 1 and
        isinstance(s.targets[0], gast.Name) and s.targets[0].id in dead)]
    if stmts and not kept:  # (a block needs a statement)
        kept = [gast.copy_location(gast.Pass(), stmts[0])]
    stmts[:] = kept
    for s in stmts:
        if isinstance(s, (gast.FunctionDef, gast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            sub = getattr(s, field, None)
            if isinstance(sub, list):
                _drop(sub, dead)
        for h in getattr(s, "handlers", None) or []:
            _drop(h.body, dead)


def pieces_as_items(fn: gast.FunctionDef, kinds: dict[str, Any]) -> None:
    """In a forward (reverse_forward, with analyses.kinds of its names): each
    ``concatenator_piece('r_', x)`` of an ndarray ``x`` of rank >= 1, or ``('c_', x)`` of
    rank >= 2, is ``x``: that is the piece NumPy makes of it (``np.r_[x]`` copies, through
    NumPy's Python code, what ``np.concatenate`` copies again). The piece is a temporary of
    this lowering that only the concatenation and shapes read, so sharing the item's memory
    changes nothing the function computes."""
    for node in walk(fn):
        if isinstance(node, gast.Assign) and _keeps_item(node.value, kinds):
            node.value = node.value.args[1]


def _keeps_item(v: gast.expr, kinds: dict[str, Any]) -> bool:
    if not (isinstance(v, gast.Call) and isinstance(v.func, gast.Name) and
            v.func.id == "concatenator_piece" and len(v.args) == 2 and not v.keywords and
            isinstance(v.args[0], gast.Constant) and isinstance(v.args[1], gast.Name)):
        return False
    k = kinds.get(v.args[1].id)
    least = {"r_": 1, "c_": 2}.get(v.args[0].value)
    return type(k) is int and least is not None and k >= least
