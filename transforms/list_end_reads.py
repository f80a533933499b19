"""Reads from the end of a list held by a container, which the function grows later.

Input: a function in A-normal form (``lower_mutation`` calls this after its own rewrites).
Output: each ``t = n[c]``, where ``c`` is a negative int written in the code and ``n`` is a
name bound once to a part of a container (``n = hist["h"]``, ``n = self.acts``) whose
expression the function also appends to or extends (``m = hist["h"]; m.append(v)``), reads
the same item counted from the start where ``n`` is a list:

    t = n[-1]   ->   f = isinstance(n, list)
                     if f:
                         k1 = len(n) + -1
                     else:
                         k1 = -1
                     t = n[k1]

A part's ``extend``, which lower_mutation writes as ``if isinstance(m, list):`` a loop of
``m.append(item)`` ``else: m.extend(items)``, reads the part again right before each append
and before the extend (the same object, when nothing between the first read and the ``if``
can change the holder), so each is a write through the name just read.

And where the value appended reads the holder again (``hist["h"].append(f(hist["h"][-1]))``:
the receiver ``m = hist["h"]`` is read first, then the argument), the receiver's read moves
to just before the append when nothing between can change the holder (only arithmetic,
NumPy and builtin calls, and the rewrite above): the part is then written through the name
it was just read into, which analyses.parameter_parts follows.

Why: the pullback of a part that is only read starts its adjoint at the list's final length
(the part is the holder's list, grown since), so ``add_item(n_bar, -1, g)`` put a read's
adjoint at the final last item, not at the one read (refused when it runs:
``adjoints._refuse_misplaced_items``, "a list read by a position counted from its end, then
changed"). A position from the start is the same item at every length. A plain local list
needs none of this (its appends' pullbacks shorten its adjoint again), nor a slice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast
from adgen.transforms.desugar import assign, name
from adgen.transforms.names import Namer
from adgen.transforms.walk import clone, walk

_GROWING = ("append", "extend", "insert")


def _negative_int(e: gast.expr) -> int | None:
    """The value of ``-3`` (or a negative constant), else None."""
    if isinstance(e, gast.Constant) and type(e.value) is int and e.value < 0:
        return e.value
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub) and \
            isinstance(e.operand, gast.Constant) and type(e.operand.value) is int and \
            e.operand.value > 0:
        return -e.operand.value
    return None


def _part(e: gast.expr) -> str | None:
    """A key for ``H[k]`` / ``H.a`` (a part of the container ``H``, a constant key)."""
    if isinstance(e, gast.Subscript) and isinstance(e.value, gast.Name) and \
            isinstance(e.slice, gast.Constant):
        return f"{e.value.id}[{e.slice.value!r}]"
    if isinstance(e, gast.Attribute) and isinstance(e.value, gast.Name):
        return f"{e.value.id}.{e.attr}"
    return None


def lower_end_reads(fn: gast.FunctionDef, namer: Namer,
                    resolve: Callable[[gast.expr], Any]) -> None:
    """Rewrites the reads of the module docstring in ``fn`` (in place); ``resolve`` gives
    the object a called name is bound to (None: local or unknown)."""
    bound: dict[str, list[gast.expr | None]] = {}
    growing: list[gast.Call] = []
    for s in walk(fn):  # one walk: the bindings and the calls that grow a list
        if isinstance(s, gast.Call):
            if isinstance(s.func, gast.Attribute) and s.func.attr in _GROWING and \
                    isinstance(s.func.value, gast.Name):
                growing.append(s)
            continue
        if not isinstance(s, (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.For)):
            continue
        value = s.value if isinstance(s, gast.Assign) else None
        for t in s.targets if isinstance(s, gast.Assign) else [s.target]:
            if isinstance(t, gast.Name):
                bound.setdefault(t.id, []).append(value)
                continue
            for n in walk(t):
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                    bound.setdefault(n.id, []).append(None)
    if not growing:
        return
    parts: dict[str, str | None] = {}
    for n, vs in bound.items():
        key = _part(vs[0]) if len(vs) == 1 and vs[0] is not None else None
        if key is not None:
            parts[n] = key
    grown = {parts[c.func.value.id] for c in growing if c.func.value.id in parts}
    if not grown:
        return
    fn.body = _block(fn.body, parts, grown, namer)
    _receivers_last(fn.body, parts, resolve)
    exprs = {n: vs[0] for n, vs in bound.items() if n in parts}
    _extends_read_again(fn.body, exprs, resolve, namer)


def _block(stmts: list[gast.stmt], parts: dict[str, str | None], grown: set[str],
           namer: Namer) -> list[gast.stmt]:
    out: list[gast.stmt] = []
    for s in stmts:
        for field in ("body", "orelse", "finalbody"):
            sub = getattr(s, field, None)
            if isinstance(sub, list):
                setattr(s, field, _block(sub, parts, grown, namer))
        for h in getattr(s, "handlers", []) or []:
            h.body = _block(h.body, parts, grown, namer)
        v = s.value if isinstance(s, gast.Assign) else None
        if isinstance(v, gast.Subscript) and isinstance(v.value, gast.Name) and \
                parts.get(v.value.id) in grown and _negative_int(v.slice) is not None:
            c = _negative_int(v.slice)
            n = v.value.id
            flag, size, k = namer.fresh("t"), namer.fresh("t"), namer.fresh("k")
            out.append(assign(name(flag, gast.Store), gast.Call(
                func=name("isinstance"), args=[name(n), name("list")], keywords=[]), s))
            out.append(gast.copy_location(gast.If(test=name(flag), body=[
                assign(name(size, gast.Store), gast.Call(func=name("len"), args=[name(n)],
                                                         keywords=[]), s),
                assign(name(k, gast.Store), gast.BinOp(left=name(size), op=gast.Add(),
                                                       right=gast.Constant(c, None)), s),
            ], orelse=[assign(name(k, gast.Store), gast.Constant(c, None), s)]), s))
            v.slice = name(k)
        out.append(s)
    return out


def _receivers_last(stmts: list[gast.stmt], parts: dict[str, str | None],
                    resolve: Callable[[gast.expr], Any]) -> None:
    """Moves ``m = H[k]`` to just before ``m.append(v)`` in each block where the statements
    between read ``H[k]`` again and cannot change the holder (module docstring)."""
    for s in stmts:
        for field in ("body", "orelse", "finalbody"):
            sub = getattr(s, field, None)
            if isinstance(sub, list) and not isinstance(s, (gast.FunctionDef, gast.Lambda)):
                _receivers_last(sub, parts, resolve)
    k = 0
    while k < len(stmts):
        s = stmts[k]
        call = s.value if isinstance(s, gast.Expr) else None
        if isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) and \
                call.func.attr in _GROWING and isinstance(call.func.value, gast.Name) and \
                parts.get(call.func.value.id) is not None:
            m = call.func.value.id
            at = next((j for j in range(k - 1, -1, -1) if isinstance(stmts[j], gast.Assign)
                       and isinstance(stmts[j].targets[0], gast.Name) and
                       stmts[j].targets[0].id == m), None)
            between = stmts[at + 1:k] if at is not None else []
            if between and all(_harmless(b, m, resolve) for b in between) and \
                    any(_part(v) == parts[m] for b in between for v in walk(b)
                        if isinstance(v, gast.expr)):
                stmts.insert(k - 1, stmts.pop(at))
                continue
        k += 1


_PURE_BUILTINS = frozenset({len, isinstance, abs, float, int, min, max, sum, round, range,
                            tuple, list})


def _harmless(s: gast.stmt, receiver: str, resolve: Callable[[gast.expr], Any]) -> bool:
    """Whether ``s`` cannot change a container or rebind ``receiver``: assignments of names
    to arithmetic, reads and calls of NumPy functions or pure builtins, and ifs of them."""
    if isinstance(s, gast.If):
        return all(_harmless(b, receiver, resolve) for b in s.body + s.orelse)
    if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)) or \
            s.targets[0].id == receiver:
        return False
    for c in walk(s.value):
        if isinstance(c, gast.Call):
            obj = resolve(c.func)
            if obj is None or (not any(obj is b for b in _PURE_BUILTINS) and not str(
                    getattr(obj, "__module__", "") or "").startswith("numpy")):
                return False  # a method, a user function: it may change the holder
        elif isinstance(c, (gast.NamedExpr, gast.Yield, gast.Await)):
            return False
    return True


def _extends_read_again(stmts: list[gast.stmt], exprs: dict[str, gast.expr],
                        resolve: Callable[[gast.expr], Any], namer: Namer) -> None:
    """Reads the part again before the appends and the extend of lower_mutation's ``extend``
    of a part (module docstring)."""
    for s in stmts:
        for field in ("body", "orelse", "finalbody"):
            sub = getattr(s, field, None)
            if isinstance(sub, list) and not isinstance(s, gast.FunctionDef):
                _extends_read_again(sub, exprs, resolve, namer)
    for k, s in enumerate(stmts):
        m = _extend_of(s)
        if m is None or m not in exprs:
            continue
        at = next((j for j in range(k - 1, -1, -1) if isinstance(stmts[j], gast.Assign) and
                   isinstance(stmts[j].targets[0], gast.Name) and
                   stmts[j].targets[0].id == m), None)
        if at is None or not all(_harmless(b, m, resolve) for b in stmts[at + 1:k]):
            continue
        for block in [s.orelse] + [w.body for w in s.body if isinstance(w, gast.For)]:
            for j, w in enumerate(block):
                call = w.value if isinstance(w, gast.Expr) else None
                if isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) and \
                        isinstance(call.func.value, gast.Name) and call.func.value.id == m:
                    again = namer.fresh("t")
                    block.insert(j, assign(name(again, gast.Store), clone(exprs[m]), w))
                    call.func.value = name(again)
                    break


def _extend_of(s: gast.stmt) -> str | None:
    """``m`` for lower_mutation's ``if isinstance(m, list): <appends> else: m.extend(v)``."""
    if not (isinstance(s, gast.If) and isinstance(s.test, gast.Call) and
            isinstance(s.test.func, gast.Name) and s.test.func.id == "isinstance" and
            len(s.test.args) == 2 and isinstance(s.test.args[0], gast.Name) and
            isinstance(s.test.args[1], gast.Name) and s.test.args[1].id == "list" and
            len(s.orelse) == 1 and isinstance(s.orelse[0], gast.Expr)):
        return None
    call = s.orelse[0].value
    m = s.test.args[0].id
    if isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) and \
            call.func.attr == "extend" and isinstance(call.func.value, gast.Name) and \
            call.func.value.id == m:
        return m
    return None
