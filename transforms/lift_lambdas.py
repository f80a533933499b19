"""Lift lambdas: every lambda in the function becomes a nested def, written where it was.

Input: a parsed FunctionDef. Output: the same function where ``name = lambda a: e`` is
``def name(a): return e`` and a lambda inside an expression is a def of a fresh name
(``lambda_<line>``) written just before the statement that holds it, the lambda replaced by
that name. A lambda and a def are the same kind of object to Python: both close over the
enclosing names (read when called, not when defined) and evaluate their defaults when
defined, so the function computes what it did; the nested defs are then handled as every
nested def is (``hoist_defs``: differentiated when called). Every node keeps the line of
the lambda it came from.

Refused: a lambda inside a comprehension that reads the comprehension's own variables (the
def, written before the statement, would not see them).
"""

from __future__ import annotations

from typing import Any

import gast
from adgen.transforms.walk import walk

from adgen.errors import Location, UnsupportedError

_COMPREHENSIONS = (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)


def lift_lambdas(fn: gast.FunctionDef, location: Any) -> None:
    """Rewrites ``fn`` in place; ``location(node)`` gives a node's Location for errors."""
    if not any(isinstance(n, gast.Lambda) for n in walk(fn)):
        return
    taken = {n.id for n in walk(fn) if isinstance(n, gast.Name)} | {
        n.name for n in walk(fn) if isinstance(n, gast.FunctionDef)}
    # names bound more than once (g = lambda t: t ** 2; ...; g = lambda t: t ** 3): each
    # lambda is a def of its own name, bound to g where the lambda was (two defs of one name
    # were compiled by forward mode as one: the second's jvp for both calls, silently)
    counts: dict[str, int] = {}
    for n in walk(fn):
        bound = n.id if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store) else \
            n.name if isinstance(n, gast.FunctionDef) and n is not fn else None
        if bound is not None:
            counts[bound] = counts.get(bound, 0) + 1
    fn.body = _block(fn.body, taken, location, frozenset(k for k, c in counts.items() if c > 1))


def _block(stmts: list[gast.stmt], taken: set[str], location: Any,
           rebound: frozenset[str] = frozenset()) -> list[gast.stmt]:
    out: list[gast.stmt] = []
    for s in stmts:
        for field in ("body", "orelse", "finalbody"):
            sub = getattr(s, field, None)
            if isinstance(sub, list) and sub and isinstance(sub[0], gast.stmt):
                setattr(s, field, _block(sub, taken, location, rebound))
        for h in getattr(s, "handlers", []) or []:
            h.body = _block(h.body, taken, location, rebound)
        if isinstance(s, gast.Assign) and isinstance(s.value, gast.Lambda) and \
                len(s.targets) == 1 and isinstance(s.targets[0], gast.Name) and \
                s.targets[0].id not in rebound:
            out.extend(_block([_def(s.targets[0].id, s.value)], taken, location, rebound))
            continue
        defs: list[gast.stmt] = []
        for parent, field, index, lam, comps in _outer_lambdas(s):
            _refuse_comprehension_reads(lam, comps, location)
            name = _fresh(f"lambda_{getattr(lam, 'lineno', 0)}", taken)
            defs.extend(_block([_def(name, lam)], taken, location, rebound))
            ref = gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None)
            gast.copy_location(ref, lam)
            if index is None:
                setattr(parent, field, ref)
            else:
                getattr(parent, field)[index] = ref
        out.extend(defs)
        out.append(s)
    return out


def _def(name: str, lam: gast.Lambda) -> gast.FunctionDef:
    ret = gast.Return(value=lam.body)
    gast.copy_location(ret, lam)
    fdef = gast.FunctionDef(name=name, args=lam.args, body=[ret], decorator_list=[],
                            returns=None, type_comment=None, type_params=[])
    gast.copy_location(fdef, lam)
    return fdef


def _fresh(base: str, taken: set[str]) -> str:
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def _outer_lambdas(s: gast.stmt) -> list[tuple[Any, str, int | None, gast.Lambda, list[Any]]]:
    """The lambdas of the statement's own expressions (not of the statements it holds, and
    not lambdas inside lambdas), each with where it stands and the comprehensions around
    it."""
    found: list[tuple[Any, str, int | None, gast.Lambda, list[Any]]] = []

    def visit(node: Any, comps: list[Any]) -> None:
        for field, value in gast.iter_fields(node):
            if isinstance(value, list):
                if value and isinstance(value[0], gast.stmt):
                    continue  # a body: its statements are lifted on their own
                for k, item in enumerate(value):
                    if isinstance(item, gast.Lambda):
                        found.append((node, field, k, item, comps))
                    elif isinstance(item, gast.AST):
                        visit(item, comps + [item] if isinstance(item, _COMPREHENSIONS)
                              else comps)
            elif isinstance(value, gast.Lambda):
                found.append((node, field, None, value, comps))
            elif isinstance(value, gast.AST):
                visit(value, comps + [value] if isinstance(value, _COMPREHENSIONS) else comps)

    visit(s, [])
    return found


def _refuse_comprehension_reads(lam: gast.Lambda, comps: list[Any], location: Any) -> None:
    targets = {n.id for c in comps for g in c.generators for n in walk(g.target)
               if isinstance(n, gast.Name)}
    a = lam.args
    own = {n.id for n in a.posonlyargs + a.args + a.kwonlyargs} | {
        x.id for x in (a.vararg, a.kwarg) if x is not None}
    read = {n.id for n in walk(lam.body) if isinstance(n, gast.Name)} - own
    read |= {n.id for d in a.defaults + [k for k in a.kw_defaults if k is not None]
             for n in walk(d) if isinstance(n, gast.Name)}
    shared = sorted(read & targets)
    if shared:
        where = location(lam)
        raise UnsupportedError(
            f"a lambda inside a comprehension that reads its variable {shared[0]}",
            where if isinstance(where, Location) else None,
            hint="write the comprehension as a for loop, or define the function with def "
                 f"and pass {shared[0]} to it")
