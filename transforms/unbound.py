"""Unbound locals: a read Python would find unbound raises ``UnboundLocalError`` here too.

Python raises ``UnboundLocalError`` when a function reads a local variable no assignment
has bound yet on the path that ran (``for j in range(n): ...`` then ``x[j]`` with ``n == 0``;
``if c: y = ...`` then ``np.sum(y)``). The passes after this one give every name a value on
every path (SSA merges and loop headers copy names, tapes record them), so without this
pass such a read would see a placeholder and compute on it: a number where Python raises,
or, for ``x[j]`` with ``j`` None, a write of the whole of ``x``.

Two halves, one concept (definite assignment, as Python's compiler and PEP 526 define it):

- :func:`maybe_unbound` runs on the function as the user wrote it (before
  ``lower_control``, where ``return``, ``break`` and ``continue`` still end their paths) and
  returns the locals some read of which may find them unbound. For almost every function
  this set is empty and the code is not changed at all.
- :func:`check_unbound` is the pass ``unbound`` (after ``lower_mutation``, input in A-normal
  form, output too). For each name of that set it binds the name to the runtime's
  ``Unbound`` sentinel at entry, and before each statement that may read it unbound (by the
  same walk over the lowered code, which is more conservative: a check it adds that the
  user's code did not need never fires, since the sentinel is there only while no
  assignment has run) it adds ``if name is Unbound: raise UnboundLocalError(...)`` with
  Python's message and the user's file and line. A check is a statement of its own, at
  the read's statement and in its block, so it runs exactly when the read does (after
  ``desugar``, ``and``/``or``, conditional expressions and comprehensions are statements).

``del y`` of a local unbinds it as in Python: the walk drops ``y`` there (and checks the
del's own read of it); ``check_unbound`` writes the statement as ``y = Unbound`` where some
read may follow, and drops it where none can (``del tmp`` after its last use).

Guarantees: a read that Python finds unbound raises ``UnboundLocalError`` before the
statement that holds it runs; a read that cannot be unbound gets no check.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import gast
from adgen.transforms.desugar import assign, located_at, name
from adgen.transforms.hoist_defs import MARKER
from adgen.transforms.names import Namer
from adgen.transforms.walk import children, walk

# the runtime's sentinel: a local variable's value before its first assignment
SENTINEL = "Unbound"


def unbound_message(user_name: str) -> str:
    """Python's message for a read of the unbound local ``user_name``."""
    if sys.version_info >= (3, 11):
        return f"cannot access local variable {user_name!r} where it is not associated " \
               "with a value"
    return f"local variable {user_name!r} referenced before assignment"  # pragma: no cover


def maybe_unbound(fn: gast.FunctionDef) -> set[str]:
    """The locals of ``fn`` (as written: before ``lower_control``) that some read may find
    unbound."""
    walker = _Walk(_locals(fn), nested=[])
    walker.block(fn.body, _params(fn))
    return {n for ns in walker.reads_at.values() for n in ns}


def check_unbound(fn: gast.FunctionDef, namer: Namer, names: set[str],
                  nested: list[str], where: Callable[[gast.AST], str],
                  spelled: dict[str, str] | None = None) -> None:
    """Adds the checks for ``names`` (from :func:`maybe_unbound`) to ``fn`` (in place).

    Args:
        fn: the function after ``lower_mutation``.
        names: the locals some read of which may find them unbound.
        nested: the names of the nested defs whose markers (``hoist_defs``) the body holds,
            by marker number: a marker binds its def's name.
        where: the user's file and line of a statement, for the message.
        spelled: the user's spelling of names ``rename_reserved`` changed.
    """
    walker = _Walk(set(names), nested=nested)
    if names:
        walker.block(fn.body, _params(fn))
    if not walker.reads_at and not any(isinstance(n, gast.Delete) for n in walk(fn)):
        return
    checked: set[str] = set()

    def visit(stmts: list[gast.stmt]) -> list[gast.stmt]:
        out: list[gast.stmt] = []
        for s in stmts:
            for n in sorted(walker.reads_at.get(id(s), ())):
                checked.add(n)
                out.extend(_check(n, (spelled or {}).get(n, n), s, namer, where))
            if isinstance(s, gast.Delete):
                # del y: y = Unbound where a later read is checked, else nothing to do
                out.extend(assign(name(t.id, gast.Store), name(SENTINEL), s)
                           for t in s.targets if t.id in names)
                continue
            for field in ("body", "orelse", "finalbody"):
                sub = getattr(s, field, None)
                if isinstance(sub, list) and sub and isinstance(sub[0], gast.stmt):
                    setattr(s, field, visit(sub))
            for h in getattr(s, "handlers", ()):
                h.body = visit(h.body)
            out.append(s)
        return out

    fn.body = visit(fn.body)
    fn.body = [assign(name(n, gast.Store), name(SENTINEL), fn) for n in sorted(checked)] + \
        fn.body


def _check(n: str, user_name: str, at: gast.stmt, namer: Namer,
           where: Callable[[gast.AST], str]) -> list[gast.stmt]:
    """``t = n is Unbound`` and ``if t: raise UnboundLocalError(...)``, at ``at``'s line."""
    flag = namer.fresh("t")
    test = assign(name(flag, gast.Store),
                  gast.Compare(left=name(n), ops=[gast.Is()], comparators=[name(SENTINEL)]), at)
    message = f"{unbound_message(user_name)} ({where(at)})"
    error = gast.Call(func=name("UnboundLocalError"), args=[gast.Constant(message, None)],
                      keywords=[])
    raise_ = located_at(gast.Raise(exc=error, cause=None), at)
    return [test, located_at(gast.If(test=name(flag), body=[raise_], orelse=[]), at)]


def _params(fn: gast.FunctionDef) -> set[str]:
    a = fn.args
    out = {p.id for p in [*getattr(a, "posonlyargs", []), *a.args, *a.kwonlyargs]}
    out |= {p.id for p in (a.vararg, a.kwarg) if p is not None}
    return out


def _locals(fn: gast.FunctionDef) -> set[str]:
    """The names Python makes local to ``fn``: bound anywhere in its body, outside nested
    scopes (a comprehension's targets are its own)."""
    out: set[str] = set()

    def visit(node: gast.AST) -> None:
        if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            out.add(node.name)
            return
        if isinstance(node, (gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp,
                             gast.GeneratorExp)):
            # a walrus in a comprehension binds in the function: rare, and counted
            for sub in gast.walk(node):
                if isinstance(sub, gast.NamedExpr) and isinstance(sub.target, gast.Name):
                    out.add(sub.target.id)
            return
        if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Del)):
            out.add(node.id)
        elif isinstance(node, gast.ExceptHandler) and node.name is not None:
            out.add(node.name.id if isinstance(node.name, gast.Name) else node.name)
        elif isinstance(node, (gast.Import, gast.ImportFrom)):
            out.update(_import_name(a) for a in node.names)
        for child in children(node):
            visit(child)

    for s in fn.body:
        visit(s)
    return out


def _import_name(alias: gast.alias) -> str:
    return alias.asname or alias.name.split(".")[0]


def _meet(*states: set[str] | None) -> set[str] | None:
    """The names assigned on every path that reaches the join (None: no path does)."""
    live = [s for s in states if s is not None]
    if not live:
        return None
    out = set(live[0])
    for s in live[1:]:
        out &= s
    return out


class _Walk:
    """Definite assignment over a block: records, per statement, the tracked names it may
    read unbound (``reads_at``, keyed by ``id`` of the statement; the header of a compound
    statement: an if's test, a loop's iterable or test)."""

    def __init__(self, tracked: set[str], nested: list[str]) -> None:
        self.tracked = tracked
        self.nested = nested
        self.reads_at: dict[int, set[str]] = {}
        self.breaks: list[list[set[str]]] = []

    def reads(self, node: gast.AST | None, state: set[str], at: gast.stmt) -> None:
        if node is None:
            return
        for n in _loads(node, set()):
            if n in self.tracked and n not in state:
                self.reads_at.setdefault(id(at), set()).add(n)

    def block(self, stmts: list[gast.stmt], state: set[str] | None) -> set[str] | None:
        for s in stmts:
            if state is None:
                break  # not reached: its reads never run
            state = self.stmt(s, set(state))
        return state

    def bind(self, target: gast.AST, state: set[str], at: gast.stmt) -> None:
        if isinstance(target, gast.Name):
            state.add(target.id)
        elif isinstance(target, (gast.Tuple, gast.List)):
            for t in target.elts:
                self.bind(t, state, at)
        elif isinstance(target, gast.Starred):
            self.bind(target.value, state, at)
        else:  # x[i] = v, x.a = v: reads x (and i)
            self.reads(target, state, at)

    def stmt(self, s: gast.stmt, state: set[str]) -> set[str] | None:
        if isinstance(s, gast.Assign):
            self.reads(s.value, state, s)
            for t in s.targets:
                self.bind(t, state, s)
            return state
        if isinstance(s, gast.AugAssign):
            self.reads(s.value, state, s)
            target = s.target
            self.reads(name(target.id) if isinstance(target, gast.Name) else target, state, s)
            self.bind(target, state, s)
            return state
        if isinstance(s, gast.AnnAssign):
            if s.value is not None:
                self.reads(s.value, state, s)
                self.bind(s.target, state, s)
            elif not isinstance(s.target, gast.Name):
                self.reads(s.target, state, s)
            return state
        if isinstance(s, gast.Expr):
            v = s.value
            if isinstance(v, gast.Call) and isinstance(v.func, gast.Name) and \
                    v.func.id == MARKER and v.args and isinstance(v.args[0], gast.Constant):
                index = v.args[0].value
                if isinstance(index, int) and index < len(self.nested):
                    state.add(self.nested[index])
                return state
            self.reads(v, state, s)
            return state
        if isinstance(s, (gast.Return, gast.Raise)):
            self.reads(s, state, s)
            return None
        if isinstance(s, gast.Break):
            if self.breaks:
                self.breaks[-1].append(state)
            return None
        if isinstance(s, gast.Continue):
            return None
        if isinstance(s, gast.If):
            self.reads(s.test, state, s)
            return _meet(self.block(s.body, state), self.block(s.orelse, state))
        if isinstance(s, (gast.For, gast.AsyncFor)):
            self.reads(s.iter, state, s)
            inner = set(state)
            self.bind(s.target, inner, s)
            self.breaks.append([])
            self.block(s.body, inner)
            broke = self.breaks.pop()
            return _meet(self.block(s.orelse, state), *broke)
        if isinstance(s, gast.While):
            self.reads(s.test, state, s)
            self.breaks.append([])
            self.block(s.body, state)
            broke = self.breaks.pop()
            forever = isinstance(s.test, gast.Constant) and bool(s.test.value)
            return _meet(None if forever else self.block(s.orelse, state), *broke)
        if isinstance(s, gast.Try):
            body = self.block(s.body, state)
            ends = [self.block(s.orelse, body) if body is not None else None]
            for h in s.handlers:
                # a handler may run after any part of the body: only what held before it
                inner = set(state)
                hname = h.name.id if isinstance(h.name, gast.Name) else h.name
                if hname:
                    inner.add(hname)
                end = self.block(h.body, inner)
                if end is not None and hname:
                    end.discard(hname)  # Python deletes the name at the end of the handler
                ends.append(end)
            normal = _meet(*ends)
            if s.finalbody:
                self.block(s.finalbody, state)  # its reads, after an exception anywhere
                return self.block(s.finalbody, normal) if normal is not None else None
            return normal
        if isinstance(s, (gast.With, gast.AsyncWith)):
            for item in s.items:
                self.reads(item.context_expr, state, s)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, state, s)
            return self.block(s.body, state)
        if isinstance(s, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            for d in s.decorator_list:
                self.reads(d, state, s)
            if not isinstance(s, gast.ClassDef):
                for d in [*s.args.defaults, *s.args.kw_defaults]:
                    self.reads(d, state, s)
            state.add(s.name)
            return state
        if isinstance(s, (gast.Import, gast.ImportFrom)):
            state |= {_import_name(a) for a in s.names}
            return state
        if isinstance(s, gast.Delete) and all(isinstance(t, gast.Name) for t in s.targets):
            for t in s.targets:  # del y reads y (unbound: UnboundLocalError), then unbinds it
                self.reads(name(t.id), state, s)
                state.discard(t.id)
            return state
        if isinstance(s, (gast.Pass, gast.Global, gast.Nonlocal)):
            return state
        # anything else (validate refuses the rest): its reads, and no definite binding
        self.reads(s, state, s)
        return state


def _loads(node: gast.AST, bound: set[str]) -> list[str]:
    """The names ``node`` reads in its own scope (a comprehension's targets are its own; a
    lambda's body runs later)."""
    out: list[str] = []
    if isinstance(node, gast.Name):
        if isinstance(node.ctx, gast.Load) and node.id not in bound:
            out.append(node.id)
        return out
    if isinstance(node, gast.Lambda):
        for d in [*node.args.defaults, *node.args.kw_defaults]:
            if d is not None:
                out += _loads(d, bound)
        return out
    if isinstance(node, (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)):
        inner = set(bound)
        for g in node.generators:
            out += _loads(g.iter, inner)
            inner |= {n.id for n in gast.walk(g.target) if isinstance(n, gast.Name)}
            for cond in g.ifs:
                out += _loads(cond, inner)
        parts = [node.key, node.value] if isinstance(node, gast.DictComp) else [node.elt]
        for p in parts:
            out += _loads(p, inner)
        return out
    for child in children(node):
        out += _loads(child, bound)
    return out
