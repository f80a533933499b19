"""Lift lambdas: every lambda in the function becomes a nested def, written where it was.

Input: a parsed FunctionDef. Output: the same function where ``name = lambda a: e`` is
``def name(a): return e`` and a lambda inside an expression is a def of a fresh name
(``lambda_<line>``) written just before the statement that holds it, the lambda replaced by
that name. A lambda and a def are the same kind of object to Python: both close over the
enclosing names (read when called, not when defined) and evaluate their defaults when
defined, so the function computes what it did; the nested defs are then handled as every
nested def is (``hoist_defs``: differentiated when called). Every node keeps the line of
the lambda it came from.

A list comprehension whose lambdas read its variables through their defaults alone
(``[lambda t, k=k: k * t for k in ks]``, the idiom that binds each step's value) is written out
as a loop before the statement first (its variables renamed apart), so each lambda is a def
in that loop, its defaults evaluated at each step as Python does.

Refused: a lambda inside a comprehension whose body reads the comprehension's own variables
(the def, written before the statement, would not see them).
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
        if isinstance(s, _SIMPLE):
            out.extend(_block(_hoist_comprehensions(s, taken), taken, location, rebound))
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


_SIMPLE = (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.Expr, gast.Return)


def _hoist_comprehensions(s: gast.stmt, taken: set[str]) -> list[gast.stmt]:
    """``fs = [lambda t, k=k: k * t for k in ks]``: each list comprehension of the statement
    whose lambdas read its variables through their defaults alone, written out as a loop
    before it, its variables renamed apart (a comprehension's are its own) and the list
    replaced by the name it is built in:

        lambdas_<line> = []
        for k_2 in ks:
            lambdas_<line>.append(lambda t, k=k_2: k * t)
        fs = lambdas_<line>

    (each lambda is then a def in the loop, its default taken from that step, as Python
    evaluates it there). A dict comprehension is built as a dict item by item, and a
    generator expression that ``list(...)`` or ``tuple(...)`` consumes at once as a list.
    Returns the statements to run before ``s``."""
    out: list[gast.stmt] = []
    for parent, field, index, comp in _list_comprehensions(s):
        targets = {n.id for g in comp.generators for n in walk(g.target)
                   if isinstance(n, gast.Name)}
        parts = [comp.key, comp.value] if isinstance(comp, gast.DictComp) else [comp.elt]
        lambdas = [n for e in parts for n in walk(e) if isinstance(n, gast.Lambda)]
        if not lambdas or any(_body_reads(lam) & targets for lam in lambdas):
            continue  # (a lambda whose body reads them: refused, _refuse_comprehension_reads)
        line = getattr(comp, "lineno", 0)
        renamed = {t: _fresh(t, taken) for t in sorted(targets)}
        built = _fresh(f"lambdas_{line}", taken)

        def named(n: str, ctx: Any) -> gast.Name:
            ref = gast.Name(id=n, ctx=ctx, annotation=None, type_comment=None)
            gast.copy_location(ref, comp)
            return ref

        if isinstance(comp, gast.DictComp):
            append: gast.stmt = gast.Assign(
                targets=[gast.Subscript(value=named(built, gast.Load()),
                                        slice=_renamed(comp.key, renamed), ctx=gast.Store())],
                value=_renamed(comp.value, renamed), type_comment=None)
        else:
            append = gast.Expr(value=gast.Call(
                func=gast.Attribute(value=named(built, gast.Load()), attr="append",
                                    ctx=gast.Load()),
                args=[_renamed(comp.elt, renamed)], keywords=[]))
        body: list[gast.stmt] = [append]
        for k in range(len(comp.generators) - 1, -1, -1):
            g = comp.generators[k]
            for cond in reversed(g.ifs):
                body = [gast.If(test=_renamed(cond, renamed), body=body, orelse=[])]
            body = [gast.For(target=_renamed(g.target, renamed),
                             iter=g.iter if k == 0 else _renamed(g.iter, renamed),
                             body=body, orelse=[], type_comment=None)]
        empty = gast.Dict(keys=[], values=[]) if isinstance(comp, gast.DictComp) else \
            gast.List(elts=[], ctx=gast.Load())
        start = gast.Assign(targets=[named(built, gast.Store())], value=empty,
                            type_comment=None)
        for st in [start] + body:
            for n in walk(st):
                if isinstance(n, (gast.stmt, gast.expr)) and not hasattr(n, "lineno"):
                    gast.copy_location(n, comp)
        out += [start] + body
        if index is None:
            setattr(parent, field, named(built, gast.Load()))
        else:
            getattr(parent, field)[index] = named(built, gast.Load())
    return out


def _list_comprehensions(s: gast.stmt) -> list[tuple[Any, str, int | None, Any]]:
    """The outermost list and dict comprehensions of the statement's own expressions (not
    inside a lambda), and generator expressions ``list(...)`` / ``tuple(...)`` consume at
    once, each with where it stands."""
    found: list[tuple[Any, str, int | None, Any]] = []

    def visit(node: Any) -> None:
        for field, value in gast.iter_fields(node):
            items = list(enumerate(value)) if isinstance(value, list) else [(None, value)]
            for k, item in items:
                consumed = isinstance(item, gast.GeneratorExp) and \
                    isinstance(node, gast.Call) and field == "args" and \
                    len(node.args) == 1 and not node.keywords and \
                    isinstance(node.func, gast.Name) and node.func.id in ("list", "tuple")
                if isinstance(item, (gast.ListComp, gast.DictComp)) or consumed:
                    found.append((node, field, k, item))
                elif isinstance(item, gast.AST) and not isinstance(
                        item, (gast.Lambda, gast.stmt) + _COMPREHENSIONS):
                    visit(item)

    visit(s)
    return found


def _body_reads(lam: gast.Lambda) -> set[str]:
    """The names a lambda's body reads that are not its own parameters."""
    a = lam.args
    own = {n.id for n in a.posonlyargs + a.args + a.kwonlyargs} | {
        x.id for x in (a.vararg, a.kwarg) if x is not None}
    return {n.id for n in walk(lam.body) if isinstance(n, gast.Name)} - own


def _renamed(node: Any, renamed: dict[str, str]) -> Any:
    """A copy of ``node`` with the names ``renamed`` says renamed, but inside lambdas' bodies
    and parameters (their own names)."""
    import copy

    node = copy.deepcopy(node)

    def visit(n: Any) -> None:
        if isinstance(n, gast.Name) and n.id in renamed:
            n.id = renamed[n.id]
        if isinstance(n, gast.Lambda):
            for d in n.args.defaults + [k for k in n.args.kw_defaults if k is not None]:
                visit(d)
            return
        for child in gast.iter_child_nodes(n):
            visit(child)

    visit(node)
    return node


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
    read = _body_reads(lam)
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
