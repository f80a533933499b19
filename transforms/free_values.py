"""Free values: the globals and closure values a pullback reads travel with its saved values.

Input: the forward and the pullback from the reverse pass (after cleanup), and the names of
the free values the generated code reads from its namespace that may change between calls
(floats and arrays: ``bindings`` refreshes them at each call). Output: the same pair, where the
forward's return hands those the pullback reads to it with its saved values:

    return (t5, (t1, x))            ->  return (t5, ((t1, x), (scale,)))
    def f_pullback(saved, ...):     ->  def f_pullback(saved, ...):
                                            saved, (scale,) = saved

so a pullback called after the next call rebound ``scale`` (a ``vjp`` kept for later, a
Jacobian built row by row) reads the value its forward ran with. A pullback that reads no such
value is left as it is.
"""

from __future__ import annotations

import gast
from adgen.transforms.walk import walk

from adgen.errors import CompilerError


def save_free_values(forward: gast.FunctionDef, pullback: gast.FunctionDef,
                     changing: set[str]) -> list[str]:
    """Rewrites ``forward`` and ``pullback`` in place; returns the names now saved."""
    stored: set[str] = set()
    loaded: set[str] = set()  # the changing names the pullback reads
    for n in walk(pullback):  # once for both
        if isinstance(n, gast.Name):
            if isinstance(n.ctx, (gast.Store, gast.Param)):
                stored.add(n.id)
            elif isinstance(n.ctx, gast.Load) and n.id in changing:
                loaded.add(n.id)
    names = sorted(loaded - stored)
    if not names:
        return []
    returns = [s for s in _own_statements(forward.body) if isinstance(s, gast.Return)]
    for ret in returns:
        v = ret.value
        if not (isinstance(v, gast.Tuple) and len(v.elts) == 2):
            raise CompilerError("internal error in pass 'free_values': a forward return is "
                                "not (out, saved)")
        v.elts[1] = gast.Tuple(elts=[v.elts[1], _tuple(names, gast.Load)], ctx=gast.Load())
    unpack = gast.Assign(
        targets=[gast.Tuple(elts=[gast.Name(id="saved", ctx=gast.Store(), annotation=None,
                                            type_comment=None),
                                  _tuple(names, gast.Store)], ctx=gast.Store())],
        value=gast.Name(id="saved", ctx=gast.Load(), annotation=None, type_comment=None),
        type_comment=None)
    gast.copy_location(unpack, pullback)
    pullback.body.insert(0, unpack)
    return names


def _tuple(names: list[str], ctx: type) -> gast.Tuple:
    return gast.Tuple(elts=[gast.Name(id=n, ctx=ctx(), annotation=None, type_comment=None)
                            for n in names], ctx=ctx())


def _own_statements(stmts: list[gast.stmt]) -> list[gast.stmt]:
    """The statements of a body and its blocks, not those of nested defs."""
    out: list[gast.stmt] = []
    for s in stmts:
        out.append(s)
        if isinstance(s, (gast.FunctionDef, gast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            out += _own_statements(getattr(s, field, []) or [])
        for h in getattr(s, "handlers", []) or []:
            out += _own_statements(h.body)
    return out
