"""Forward mode's in-place writes into an array of an object the function builds from a call
that may hold global arrays (``s = System(A0, B0); s.x[:] = x0``).

The effects analysis gives the result of such a call the buffer ``effects.FREE`` (the object
may hold ``A0``), so ``s.x[:] = x0`` counts as a write of a global array, which forward mode
refuses (its jvp code has no tangent for a global array: ``free_writes.refuse_in_forward_mode``).
The tangent code follows the write as any write into an object's array (``s_dot.x[:] = ...``)
as long as the written array is not one a global or closure value holds, which only the call
can tell: :func:`checked_writes` lets through the writes whose target is reached (through
single bindings) from a name bound to a call's result, each preceded by a run-time check
(``runtime.unheld_write``: the array written shares no memory with an array the function's
free names hold, three levels down, ``held_arrays.refuse_held_write``) that refuses it at the
user's line. A write into a global name itself (``WORK[:] = p``), through an attribute or item
of a free name (``b = cfg.buf; b *= 2``) or by a call (``np.copyto(G, v)``) stays refused
statically.

Input: the function's tree, its effects with free names and the free writes
(``free_writes.free_write_sites``); output: the writes still refused, and the check statement
to put before each write let through (``tangent.tangent_code``'s ``checks``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast
from adgen.transforms.analyses.effects import Effects
from adgen.transforms.desugar import name
from adgen.transforms.tangent_ast import at
from adgen.transforms.walk import walk

__all__ = ["checked_writes"]


def checked_writes(tree: gast.FunctionDef, eff: Effects, sites: list[Any],
                   kept: Callable[[gast.Call], bool]) -> tuple[list[Any], dict[int, list[gast.stmt]]]:
    """``(refused, checks)``: the free writes of ``sites`` forward mode still refuses, and,
    by ``id`` of its statement, the check to run before each one it follows. ``kept(call)``:
    whether a call's result may be memory that outlives it (callee_facts.returns_free_memory:
    an lru_cache'd helper's result, a global a helper returns, a default): a write into it
    stays refused (the run-time check cannot see a cache)."""
    bindings: dict[str, list[gast.expr]] = {}
    for st in walk(tree):
        if isinstance(st, gast.Assign):
            for t in st.targets:
                if isinstance(t, gast.Name):
                    bindings.setdefault(t.id, []).append(st.value)
        elif isinstance(st, (gast.For, gast.AnnAssign)):  # (x += v: the same array)
            for t in walk(st.target):
                if isinstance(t, gast.Name):
                    bindings.setdefault(t.id, []).append(st)  # (not a single binding)
    params = {a.id for a in tree.args.args}
    free = sorted(n for n in eff.free if n not in params and n not in bindings)
    attrs = sorted({a.attr for a in walk(tree) if isinstance(a, gast.Attribute)})
    refused: list[Any] = []
    checks: dict[int, list[gast.stmt]] = {}
    for w in sites:
        target = _written_array(w.stmt)
        if target is None or not _built_by_a_call(target, bindings, eff.free, params, kept):
            refused.append(w)
            continue
        check = gast.Expr(value=gast.Call(func=name("unheld_write"), args=[
            target,
            gast.Tuple(elts=[gast.Constant(value=n, kind=None) for n in free],
                       ctx=gast.Load()),
            gast.Tuple(elts=[name(n) for n in free], ctx=gast.Load()),
            gast.Tuple(elts=[gast.Constant(value=a, kind=None) for a in attrs],
                       ctx=gast.Load())], keywords=[]))
        checks[id(w.stmt)] = [at(check, w.stmt)]
    return refused, checks


def _written_array(s: gast.stmt) -> gast.Name | None:
    """The name of the array ``s`` writes in place: ``t[...] = v`` or ``t op= v``."""
    if isinstance(s, gast.Assign) and len(s.targets) == 1 and \
            isinstance(s.targets[0], gast.Subscript) and \
            isinstance(s.targets[0].value, gast.Name):
        return name(s.targets[0].value.id)
    if isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name):
        return name(s.target.id)
    return None


def _built_by_a_call(target: gast.Name, bindings: dict[str, list[gast.expr]],
                     free: set[str], params: set[str], kept: Callable[[gast.Call], bool]
                     ) -> bool:
    """Whether ``target`` is bound once, through attributes and items of names each bound
    once, to what a call returns that is not kept memory (``t = s.x`` of ``s = System(A0,
    B0)``), not to a free name, a parameter, or a part of one."""
    n, seen = target.id, set()
    while n not in seen:
        seen.add(n)
        if n in free or n in params or len(bindings.get(n, ())) != 1:
            return False
        v = bindings[n][0]
        if isinstance(v, gast.Call):
            return not kept(v)
        while isinstance(v, (gast.Attribute, gast.Subscript)):
            v = v.value
        if not isinstance(v, gast.Name):
            return False
        n = v.id
    return False
