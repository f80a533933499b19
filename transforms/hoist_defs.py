"""Hoist defs: set nested function definitions aside so the passes do not rewrite them.

Input: a validated FunctionDef. Output: the same function where every nested ``def g`` at
statement level is replaced by the marker ``__adgen_def__(k)``, and the list of the defs set
aside (index k). The reverse pass puts each def back, verbatim, into the forward function:
the nested function is differentiated when it is called (adgen.dispatch), with the enclosing
function's values it reads as extra arguments, so their gradients reach the enclosing
function through shadow memory.
"""

from __future__ import annotations

import gast
from adgen.transforms.walk import walk

MARKER = "__adgen_def__"


def hoist_defs(fn: gast.FunctionDef) -> tuple[list[gast.FunctionDef], set[str]]:
    """Replaces nested defs by markers.

    Returns:
        The defs set aside, and the enclosing function's names they read (their free
        variables): those must keep their adjoints in shadow memory.
    """
    defs: list[gast.FunctionDef] = []
    # (a nested def's name too: def outer(t): return inner(t) ** 2 reads inner, and through
    # it what inner reads; outer was taken for reading nothing of the function, and a's
    # derivative through inner(t) = t * a was silently lost, in both modes)
    bound = {a.id for a in fn.args.args} | {
        n.id for n in walk(fn) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)} | {
        d.name for d in walk(fn) if isinstance(d, gast.FunctionDef) and d is not fn}

    def visit(stmts: list[gast.stmt]) -> list[gast.stmt]:
        out: list[gast.stmt] = []
        for s in stmts:
            if isinstance(s, gast.FunctionDef):
                defs.append(s)
                call = gast.Call(func=gast.Name(id=MARKER, ctx=gast.Load(), annotation=None,
                                                type_comment=None),
                                 args=[gast.Constant(len(defs) - 1, None)], keywords=[])
                marker = gast.Expr(value=call)
                gast.copy_location(marker, s)
                out.append(marker)
                continue
            for field in ("body", "orelse"):
                sub = getattr(s, field, None)
                if isinstance(sub, list):
                    setattr(s, field, visit(sub))
            if isinstance(s, gast.Try):
                for h in s.handlers:
                    h.body = visit(h.body)
            out.append(s)
        return out

    fn.body = visit(fn.body)
    free: set[str] = set()
    for d in defs:
        inner = {a.id for a in d.args.args} | {
            n.id for n in walk(d) if isinstance(n, gast.Name) and
            isinstance(n.ctx, gast.Store)}
        free |= {n.id for n in walk(d) if isinstance(n, gast.Name) and
                 isinstance(n.ctx, gast.Load)} & bound - inner
    return defs, free


def is_marker(s: gast.stmt) -> bool:
    """True for the statement that stands where a nested def was."""
    return isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) and \
        isinstance(s.value.func, gast.Name) and s.value.func.id == MARKER


def free_names(d: gast.FunctionDef, enclosing: set[str]) -> set[str]:
    """The names of the enclosing function (``enclosing``: those nested defs read) that the
    nested def ``d`` reads."""
    inner = {a.id for a in d.args.args} | {
        n.id for n in walk(d) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
    loads = {n.id for n in walk(d) if isinstance(n, gast.Name) and
             isinstance(n.ctx, gast.Load)}
    return (loads - inner) & enclosing
