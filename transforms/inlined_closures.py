"""Inlined closures: a lambda or nested def that hands a buffer of the function to a helper
writing it, written out where it is called.

``op = lambda v: laplacian(buf, v); op(u)`` (an operator wrapped around a preallocated
array) is refused where it runs: the enclosing function's analyses do not see that the call
writes ``buf`` (nested_defs.refuse_closure_writes). Where the closure is bound once, at the
top level of the body, and only called, as a statement or the value of an assignment, each
call is its body with the arguments bound to names of their own first, in the order Python
evaluates them:

    op = lambda v: laplacian(buf, v)         (removed)
    op(u * 2.0)                        ->    op_v = u * 2.0
                                             laplacian(buf, op_v)
    r = op(u)                          ->    op_v_2 = u; r = laplacian(buf, op_v_2)

A nested def is inlined alike when its body is plain statements and at most one ``return``,
its last (its own names renamed apart from the enclosing function's). Arguments given by
keyword and constant defaults (``def apply_bc(u, right=0.0)``) are bound like the others. The closure reads the
enclosing function's names when it runs, as the inlined body does where the call was. Only
closures whose body calls a function of the user's that writes its arguments in place, or
writes one of its own parameters in place (``def apply_bc(u): u[0] = left``, ``lambda v:
np.multiply(v, c, out=v)``, through a name bound from one too: ``w = u[1:]; w *= 2``), are
inlined; the others keep their compilation as nested defs. (Compiled as a closure, a write
of its parameter was not seen by the enclosing function's analyses: the argument's adjoint
stayed where the caller did not read it, a silently wrong gradient.)

A nested def with ``nonlocal`` statements (an accumulator: ``total = 0.0; def add(v):
nonlocal total; total += v``) is inlined whatever its body writes, where its ``nonlocal``
names are the function's own variables (bound by it outside the def) and the def does not
call itself: written where it is called, the body rebinds those variables (not renamed apart)
as Python's call rebinds them through the closure's cells. (Compiled as a nested def, its
write of the cell was refused by validate, as it still is where the def cannot be inlined:
handed to another function, called inside an expression.)

Input: the parsed function, before any other pass. Output: the same tree with those closures
removed and their calls inlined.
"""

from __future__ import annotations

import copy
from typing import Any

import gast
from adgen.transforms.bindings import dotted_object
from adgen.transforms.walk import walk

__all__ = ["inline_closures"]


def _simple_params(args: gast.arguments) -> list[str] | None:
    if args.vararg or args.kwarg or args.kwonlyargs or args.kw_defaults or \
            getattr(args, "posonlyargs", None) or \
            not all(isinstance(d, gast.Constant) for d in args.defaults):
        return None  # (a constant default is the same value wherever the call is written)
    return [a.id for a in args.args if isinstance(a, gast.Name)]


def _constant_defaults(args: gast.arguments) -> dict[str, gast.expr]:
    names = [a.id for a in args.args if isinstance(a, gast.Name)]
    return dict(zip(names[len(names) - len(args.defaults):], args.defaults))


def _inlinable_def(d: gast.FunctionDef) -> bool:
    """A body of plain statements, at most one ``return`` (the last), no nested scope;
    ``nonlocal`` statements at its top level only."""
    if d.decorator_list or d.returns is not None:
        return False
    for k, st in enumerate(d.body):
        if isinstance(st, gast.Nonlocal):
            continue
        for n in walk(st):
            if isinstance(n, (gast.FunctionDef, gast.Lambda, gast.ClassDef, gast.Global,
                              gast.Nonlocal, gast.Yield, gast.YieldFrom, gast.Await,
                              gast.AsyncFunctionDef, gast.ListComp, gast.SetComp,
                              gast.DictComp, gast.GeneratorExp, gast.Try)):
                return False
            if isinstance(n, gast.Return) and (n is not st or k != len(d.body) - 1):
                return False
    return True


def _writes_a_parameter(stmts: list[gast.stmt], params: list[str]) -> bool:
    """Whether ``stmts`` write one of ``params`` in place, directly or through a name bound
    from an expression that reads one (a view: ``w = u[1:]``, ``for row in u``)."""
    from adgen.transforms.nested_defs import written_roots  # (functions with nested defs)

    body = gast.Module(body=stmts, type_ignores=[])
    derived = set(params)
    for _ in range(2):  # (a name bound from another bound later: a second round)
        for n in walk(body):
            if isinstance(n, (gast.Assign, gast.For)):
                source = n.value if isinstance(n, gast.Assign) else n.iter
                if any(isinstance(m, gast.Name) and m.id in derived for m in walk(source)):
                    for t in (n.targets if isinstance(n, gast.Assign) else [n.target]):
                        derived |= {m.id for m in walk(t) if isinstance(m, gast.Name)
                                    and isinstance(m.ctx, gast.Store)}  # (not x[i] = ...)
    return any(r in derived for n in walk(body) for r in written_roots(n))


class _Inliner:
    def __init__(self, parsed: Any, writes: Any) -> None:
        self.parsed = parsed
        self.writes = writes
        self.taken = {n.id for n in walk(parsed.tree) if isinstance(n, gast.Name)} | \
            set(parsed.namespace)
        self.defaults: dict[str, dict[str, gast.expr]] = {}  # closure -> constant defaults
        self._containers: set[str] | None = None

    def fresh(self, base: str) -> str:
        name, k = base, 1
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name

    def writes_through(self, stmts: list[gast.stmt]) -> bool:
        """Whether ``stmts`` call a function of the user's (by a global name) that writes an
        argument in place."""
        for n in walk(gast.Module(body=stmts, type_ignores=[])):
            if isinstance(n, gast.Call) and isinstance(n.func, (gast.Name, gast.Attribute)):
                obj = dotted_object(self.parsed, n.func)
                if callable(obj) and getattr(obj, "__code__", None) is not None and \
                        not str(getattr(obj, "__module__", "")).startswith(
                            ("numpy", "adgen.")) and self.writes(obj):
                    return True
        return False

    def run(self) -> None:
        body = self.parsed.tree.body
        stores: dict[str, int] = {}
        for n in walk(self.parsed.tree):
            if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
                stores[n.id] = stores.get(n.id, 0) + 1
            elif isinstance(n, gast.FunctionDef) and n is not self.parsed.tree:
                stores[n.name] = stores.get(n.name, 0) + 1
        k = 0
        while k < len(body):
            st = body[k]
            found = self.closure(st, stores)
            if found is None:
                k += 1
                continue
            name, params, stmts = found
            calls = self.calls_of(name, body, k + 1)
            shared = _nonlocals(stmts)
            if shared and not self.own_locals(shared, st, name):
                calls = None  # (a name of a scope around the function: refused by validate)
            if calls is None or not (shared or self.writes_through(stmts) or
                                     _writes_a_parameter(stmts, params)):
                k += 1
                continue
            # (the last first: a call written out as several statements moves the ones after)
            for owner, at in sorted(calls, key=lambda c: -c[1]):
                owner[at:at + 1] = self.inlined(owner[at], name, params, stmts)
            del body[k]
        self.parsed.forget_locals()

    def containers(self) -> set[str]:
        """The function's own names bound only to new lists and dicts (``total = [0.0]``,
        ``cache = {}``, ``list(...)``, comprehensions) by plain assignments, never a
        parameter, a loop target or an unpacked name."""
        if self._containers is None:
            tree = self.parsed.tree
            builtin = "list" not in self.parsed.namespace and "dict" not in self.parsed.namespace
            stores: dict[str, int] = {}
            made: dict[str, int] = {}
            for n in walk(tree):
                if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
                    stores[n.id] = stores.get(n.id, 0) + 1
                elif isinstance(n, gast.Assign) and len(n.targets) == 1 and \
                        isinstance(n.targets[0], gast.Name):
                    v = n.value
                    if isinstance(v, (gast.List, gast.Dict, gast.ListComp, gast.DictComp)) or (
                            builtin and isinstance(v, gast.Call) and
                            isinstance(v.func, gast.Name) and v.func.id in ("list", "dict")):
                        made[n.targets[0].id] = made.get(n.targets[0].id, 0) + 1
            params = {a.id for a in tree.args.args + tree.args.kwonlyargs
                      if isinstance(a, gast.Name)}
            self._containers = {k for k, c in made.items()
                                if k not in params and stores.get(k) == c}
        return self._containers

    def own_locals(self, names: set[str], d: gast.stmt, name: str) -> bool:
        """Whether each of ``names`` (a nested def's ``nonlocal`` names) is bound by the
        function itself outside ``d``, and ``d``'s body does not call ``d`` by its name: its
        body, written where it is called, then rebinds the function's own variables, as
        the call rebinds them through the closure's cells."""
        inside = {id(n) for n in walk(d)}
        bound = {n.id for n in walk(self.parsed.tree) if isinstance(n, gast.Name) and
                 isinstance(n.ctx, gast.Store) and id(n) not in inside}
        bound |= {a.id for a in self.parsed.tree.args.args + self.parsed.tree.args.kwonlyargs
                  if isinstance(a, gast.Name)}
        return names <= bound and not any(
            isinstance(n, gast.Name) and n.id == name for n in walk(d) if n is not d)

    def closure(self, st: gast.stmt, stores: dict[str, int]
                ) -> tuple[str, list[str], list[gast.stmt]] | None:
        """``op = lambda ...`` or ``def op(...)`` bound once: its name, parameters, body."""
        if isinstance(st, gast.Assign) and len(st.targets) == 1 and \
                isinstance(st.targets[0], gast.Name) and isinstance(st.value, gast.Lambda):
            name, params = st.targets[0].id, _simple_params(st.value.args)
            stmts = [gast.Return(value=st.value.body)]
            args = st.value.args
        elif isinstance(st, gast.FunctionDef) and _inlinable_def(st):
            name, params, stmts = st.name, _simple_params(st.args), st.body
            args = st.args
        else:
            return None
        if params is None or stores.get(name) != 1:
            return None
        self.defaults[name] = _constant_defaults(args)
        return name, params, stmts

    def calls_of(self, name: str, body: list[gast.stmt], start: int
                 ) -> list[tuple[list[gast.stmt], int]] | None:
        """Every read of ``name``: statements ``name(...)`` or ``x = name(...)`` in
        ``body[start:]`` and the statement lists nested in it (with their list and
        position); None when it is read any other way."""
        out: list[tuple[list[gast.stmt], int]] = []
        reads = [n for s in body[start:] for n in walk(s)
                 if isinstance(n, gast.Name) and n.id == name]

        def visit(stmts: list[gast.stmt], first: int = 0) -> None:
            for i, s in enumerate(stmts):
                if i < first:
                    continue
                call = s.value if isinstance(s, (gast.Expr, gast.Assign)) else None
                if isinstance(s, gast.Assign) and not (
                        len(s.targets) == 1 and isinstance(s.targets[0], gast.Name)):
                    call = None
                if isinstance(call, gast.Call) and isinstance(call.func, gast.Name) and \
                        call.func.id == name and all(k.arg for k in call.keywords) and \
                        not any(isinstance(a, gast.Starred) for a in call.args):
                    out.append((stmts, i))
                for field in ("body", "orelse", "finalbody"):
                    inner = getattr(s, field, None)
                    if isinstance(inner, list) and not isinstance(
                            s, (gast.FunctionDef, gast.ClassDef, gast.AsyncFunctionDef)):
                        visit(inner)
                for h in getattr(s, "handlers", []) or []:
                    visit(h.body)

        visit(body, start)
        if not out or len(out) != len(reads):
            return None
        return out

    def inlined(self, st: gast.stmt, name: str, params: list[str],
                stmts: list[gast.stmt]) -> list[gast.stmt]:
        call = st.value
        # the arguments by position, then by keyword (apply_bc(u, right=0.5)), then the
        # constant defaults, each bound in the order Python evaluates them
        given = list(zip(params, call.args)) + [(k.arg, k.value) for k in call.keywords]
        bound = dict(given)
        missing = [p for p in params if p not in bound]
        if len(call.args) > len(params) or len(bound) != len(given) or \
                set(bound) - set(params) or \
                any(p not in self.defaults.get(name, {}) for p in missing):
            return [st]  # Python raises its TypeError where the call runs
        given += [(p, copy.deepcopy(self.defaults[name][p])) for p in missing]
        shared = _nonlocals(stmts)  # the function's own variables: not renamed
        stmts = [s for s in stmts if not isinstance(s, gast.Nonlocal)]
        own = {n.id for s in stmts for n in walk(s)
               if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)} - shared
        # a list or dict of the function's own given by its name (def add(tot, v): tot[0]
        # = ...; add(total, v)): the body writes it through that name, not a second one
        # bound to it, which adgen refused as an alias ("changes tot (in add) in place, and
        # total reaches the same list"); only where neither name is bound in the body and
        # no argument rebinds one (a walrus)
        direct = {p: a.id for p, a in given if isinstance(a, gast.Name) and
                  a.id in self.containers() and p not in own and a.id not in own and
                  a.id not in shared} if not any(
            isinstance(n, gast.NamedExpr) for _, a in given for n in walk(a)) else {}
        renamed = {p: direct.get(p) or self.fresh(f"{name}_{p}") for p in params}
        renamed.update({n: self.fresh(f"{name}_{n}") for n in own if n not in renamed})
        # (a refusal names what the user wrote: y in relax, not relax_y)
        self.parsed.inlined_names.update((new, (old, name)) for old, new in renamed.items()
                                         if old not in direct)
        out: list[gast.stmt] = [
            gast.copy_location(gast.Assign([gast.Name(renamed[p], gast.Store(), None, None)],
                                           a, None), st)
            for p, a in given if p not in direct]
        for s in copy.deepcopy(stmts):
            for n in walk(s):
                if isinstance(n, gast.Name) and n.id in renamed:
                    n.id = renamed[n.id]
            for n in walk(s):  # the user's line: where the call is
                if hasattr(n, "lineno"):
                    n.lineno, n.col_offset = st.lineno, st.col_offset
                    n.end_lineno = getattr(st, "end_lineno", st.lineno)
            if isinstance(s, gast.Return):
                value = s.value if s.value is not None else gast.Constant(None, None)
                s = gast.Assign([st.targets[0]], value, None) if isinstance(st, gast.Assign) \
                    else gast.Expr(value=value)
                gast.copy_location(s, st)
            out.append(s)
        if isinstance(st, gast.Assign) and not (stmts and isinstance(stmts[-1], gast.Return)):
            out.append(gast.copy_location(
                gast.Assign([st.targets[0]], gast.Constant(None, None), None), st))
        return out


def _nonlocals(stmts: list[gast.stmt]) -> set[str]:
    """The names a nested def's ``nonlocal`` statements (at its top level) declare."""
    return {n for s in stmts if isinstance(s, gast.Nonlocal) for n in s.names}


def inline_closures(parsed: Any, writes: Any) -> None:
    """Inlines the closures described in the module docstring.

    Args:
        parsed: the parsed function (``parse.Parsed``).
        writes: a user function -> whether a call of it may write a parameter in place.
    """
    if any(isinstance(st, gast.FunctionDef) or (isinstance(st, gast.Assign) and
                                                isinstance(st.value, gast.Lambda))
           for st in parsed.tree.body):  # (else nothing to inline: no walk of the tree)
        _Inliner(parsed, writes).run()
