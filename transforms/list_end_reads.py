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

Why: the pullback of a part that is only read starts its adjoint at the list's final length
(the part is the holder's list, grown since), so ``add_item(n_bar, -1, g)`` put a read's
adjoint at the final last item, not at the one read (refused when it runs:
``adjoints._refuse_misplaced_items``, "a list read by a position counted from its end, then
changed"). A position from the start is the same item at every length. A plain local list
needs none of this (its appends' pullbacks shorten its adjoint again), nor a slice.
"""

from __future__ import annotations

import gast
from adgen.transforms.desugar import assign, name
from adgen.transforms.names import Namer
from adgen.transforms.walk import walk

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


def lower_end_reads(fn: gast.FunctionDef, namer: Namer) -> None:
    """Rewrites the reads of the module docstring in ``fn`` (in place)."""
    bound: dict[str, list[gast.expr]] = {}
    for s in walk(fn):
        if isinstance(s, (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.For)):
            targets = s.targets if isinstance(s, gast.Assign) else [s.target]
            for t in targets:
                for n in walk(t):
                    if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                        bound.setdefault(n.id, []).append(
                            s.value if isinstance(s, gast.Assign) else None)
    parts = {n: _part(vs[0]) for n, vs in bound.items()
             if len(vs) == 1 and vs[0] is not None and _part(vs[0]) is not None}
    grown = {parts[c.func.value.id] for c in walk(fn)
             if isinstance(c, gast.Call) and isinstance(c.func, gast.Attribute) and
             c.func.attr in _GROWING and isinstance(c.func.value, gast.Name) and
             c.func.value.id in parts}
    if not grown:
        return
    fn.body = _block(fn.body, parts, grown, namer)


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
