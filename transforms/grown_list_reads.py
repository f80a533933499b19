"""Whole reads of a local list that the function grows in place afterwards.

Input: a function in A-normal form (``lower_mutation`` calls this after its own rewrites).
Output: each statement that hands a local list ``L`` whole to a call or an operator
(``a = np.array(L)``, ``s = sum(L)``, ``t = L + [v]``), where an ``L.append`` or
``L.extend`` may run after it (later in the function, or in a loop around both), reads a
copy of ``L`` made right before it instead:

    t3 = np.array(hist)    ->   t9 = list_snapshot(hist)
                                t3 = np.array(t9)

Why: a local list grows in place (``hist.append(v)``: its adjoint shrinks again in the
appends' pullbacks), so the pullback of a read made before an append saw the longer final
list: the rule's ``shape_tree(hist)`` split the cotangent into more items than the read had
(``np.array(hist)`` and ``np.stack(hist)`` raised a plain IndexError from adgen's code,
``sum(hist)`` and ``np.mean(hist, axis=0)`` were refused as "a list read by a position
counted from its end"; session 23). The copy never changes: its rule (``runtime.list_snapshot``)
hands the read's cotangent, one item per item the list held then, to the list's adjoint,
which has that length at that point of the pullback.

Reads that need none of this: an item (``L[i]``: its adjoint goes to a position from the
start), ``len(L)``, a method of ``L``, a ``for`` loop over ``L``, and reads after the last
growth outside any loop. Left as they are, since a copy would change what the program
computes: an alias ``y = L`` and a store (``d = {"h": L}``, ``o.h = L``), which grow with
``L``; a call of a function of the user's, which may keep ``L``; ``zip``, ``enumerate`` and
``iter``, which walk ``L`` later.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast
import numpy as np
from adgen.transforms.desugar import assign, located_at, name
from adgen.transforms.names import Namer
from adgen.transforms.walk import walk

_GROWING = ("append", "extend")
# calls that read a list's length or identity only: no cotangent flows through them
_SHAPE_ONLY = frozenset({"len", "isinstance", "type", "id", "bool"})
# builtins whose result walks the list when it is used, not when it is made
_LIVE = frozenset({"iter", "enumerate", "zip", "reversed", "map", "filter", "memoryview",
                   "vars", "setattr", "getattr"})


def snapshot_grown_reads(fn: gast.FunctionDef, namer: Namer,
                         resolve: Callable[[gast.expr], Any]) -> None:
    """Rewrites the reads of the module docstring in ``fn`` (in place); ``resolve`` gives
    the object a called name is bound to (None: local or unknown)."""
    lists = _local_lists(fn)
    if not lists:
        return
    order: dict[int, int] = {}  # id(statement) -> its place in the text
    growths: dict[str, list[int]] = {}  # list name -> places of its growths
    loops: dict[int, list[int]] = {}  # id(statement) -> the places of the loops around it
    _number(fn.body, [], order, loops, growths, lists)
    if not growths:
        return
    fn.body = _rewrite(fn.body, order, loops, growths, namer, resolve)


def _local_lists(fn: gast.FunctionDef) -> set[str]:
    """Names bound only to list displays, ``list(...)``, slices of such names and their
    concatenations (``hist.pop(0)`` as lower_mutation writes it: ``t1 = hist[:0]; t2 =
    hist[1:]; hist = t1 + t2``, a new list), or such a name (never a parameter): the
    greatest such set, so that names bound around a loop (``hist = hist2`` at its end)
    count."""
    params = {a.id for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs
              if isinstance(a, gast.Name)}
    defs: dict[str, list[gast.expr]] = {}
    other: set[str] = set(params)
    for s in walk(fn):
        if isinstance(s, (gast.FunctionDef, gast.Lambda)) and s is not fn:
            continue
        if isinstance(s, gast.Assign):
            # (a, b = [], []: t1 = []; a = t1 in A-normal form)
            for t in s.targets:
                for n in walk(t):
                    if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                        if t is n:
                            defs.setdefault(n.id, []).append(s.value)
                        else:
                            other.add(n.id)
        elif isinstance(s, (gast.AugAssign, gast.AnnAssign, gast.For)):
            for n in walk(s.target):
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                    other.add(n.id)
    lists = set(defs) - other
    shrunk = True
    while shrunk:
        shrunk = False
        for n in list(lists):
            if not all(_list_valued(v, lists) for v in defs[n]):
                lists.discard(n)
                shrunk = True
    return lists


def _list_valued(v: gast.expr, lists: set[str]) -> bool:
    """Whether ``v`` makes a list (or is one of ``lists``), given that ``lists`` are."""
    if isinstance(v, (gast.List, gast.ListComp)):
        return True
    if isinstance(v, gast.Call):
        return isinstance(v.func, gast.Name) and v.func.id == "list"
    if isinstance(v, gast.Name):
        return v.id in lists
    if isinstance(v, gast.Subscript):
        return isinstance(v.slice, gast.Slice) and isinstance(v.value, gast.Name) and \
            v.value.id in lists
    if isinstance(v, gast.BinOp):
        return isinstance(v.op, gast.Add) and _list_valued(v.left, lists) and \
            _list_valued(v.right, lists)
    return False


def _growth_of(s: gast.stmt, lists: set[str]) -> str | None:
    call = s.value if isinstance(s, gast.Expr) else None
    if isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) and \
            call.func.attr in _GROWING and isinstance(call.func.value, gast.Name) and \
            call.func.value.id in lists:
        return call.func.value.id
    return None


def _number(stmts: list[gast.stmt], around: list[int], order: dict[int, int],
            loops: dict[int, list[int]], growths: dict[str, list[int]],
            lists: set[str]) -> None:
    for s in stmts:
        at = order[id(s)] = len(order)
        loops[id(s)] = around
        grown = _growth_of(s, lists)
        if grown is not None:
            growths.setdefault(grown, []).append(at)
            for loop in around:  # a growth in a loop may run before any statement of it
                growths[grown].append(loop)
        if isinstance(s, (gast.FunctionDef, gast.ClassDef)):
            continue
        inner = around + [at] if isinstance(s, (gast.For, gast.While)) else around
        for field in ("body", "orelse", "finalbody"):
            sub = getattr(s, field, None)
            if isinstance(sub, list):
                _number(sub, inner, order, loops, growths, lists)
        for h in getattr(s, "handlers", []) or []:
            _number(h.body, inner, order, loops, growths, lists)


def _grows_after(n: str, s: gast.stmt, order: dict[int, int], loops: dict[int, list[int]],
                 growths: dict[str, list[int]]) -> bool:
    """Whether a growth of ``n`` may run after ``s``: later in the text, or in a loop
    around ``s`` (its next iteration)."""
    at = order[id(s)]
    return any(g > at or g in loops[id(s)] for g in growths.get(n, ()))


def _whole_reads(s: gast.stmt, growths: dict[str, list[int]],
                 resolve: Callable[[gast.expr], Any]) -> list[gast.Name]:
    """The loads of a grown list's name in ``s`` that hand the list whole to a NumPy,
    SciPy or builtin function or to an operator, which read it there and keep no reference
    to it (a store of it, ``d = {"h": hist}``, an alias, or a function of the user's, which
    may keep it, read the list as it is when they run: they are left as they are)."""
    if not isinstance(s, (gast.Assign, gast.Expr, gast.AugAssign, gast.Return)) or \
            s.value is None:
        return []
    found: list[gast.Name] = []
    for node in walk(s.value):
        if isinstance(node, gast.BinOp):
            found += [o for o in (node.left, node.right) if _grown(o, growths)]
        elif isinstance(node, gast.Call) and _reads_and_lets_go(resolve(node.func)):
            found += [a.value if isinstance(a, gast.Starred) else a for a in node.args
                      if _grown(a.value if isinstance(a, gast.Starred) else a, growths)]
            found += [k.value for k in node.keywords if _grown(k.value, growths)]
    return found


def _grown(e: gast.expr, growths: dict[str, list[int]]) -> bool:
    return isinstance(e, gast.Name) and isinstance(e.ctx, gast.Load) and e.id in growths


def _reads_and_lets_go(fun: Any) -> bool:
    """A NumPy, SciPy or builtin function whose result is not the list or a live view of it
    (``iter``, ``enumerate``, ``zip``, ``reversed`` walk the list later)."""
    if fun is None or getattr(fun, "__name__", "") in _LIVE or \
            getattr(fun, "__name__", "") in _SHAPE_ONLY:
        return False
    if isinstance(fun, np.ufunc):
        return True
    module = str(getattr(fun, "__module__", None) or "")
    return module.split(".")[0] in ("numpy", "scipy", "builtins", "math")


def _rewrite(stmts: list[gast.stmt], order: dict[int, int], loops: dict[int, list[int]],
             growths: dict[str, list[int]], namer: Namer,
             resolve: Callable[[gast.expr], Any]) -> list[gast.stmt]:
    out: list[gast.stmt] = []
    for s in stmts:
        if not isinstance(s, (gast.FunctionDef, gast.ClassDef)):
            for field in ("body", "orelse", "finalbody"):
                sub = getattr(s, field, None)
                if isinstance(sub, list):
                    setattr(s, field, _rewrite(sub, order, loops, growths, namer, resolve))
            for h in getattr(s, "handlers", []) or []:
                h.body = _rewrite(h.body, order, loops, growths, namer, resolve)
        copies: dict[str, str] = {}
        for node in _whole_reads(s, growths, resolve):
            if not _grows_after(node.id, s, order, loops, growths):
                continue
            if node.id not in copies:
                copies[node.id] = namer.fresh("t")
                out.append(assign(name(copies[node.id], gast.Store), located_at(gast.Call(
                    func=name("list_snapshot"), args=[name(node.id)], keywords=[]), s), s))
            node.id = copies[node.id]
        out.append(s)
    return out
