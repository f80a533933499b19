"""``reversed(xs)`` of a list, a tuple or an array, written as ``xs[::-1]``.

``for W in reversed(weights)`` was refused ("reversed() has no derivative rule"): the builtin
returns an iterator adgen cannot follow. ``xs[::-1]`` gives the same items in the same order
where ``xs`` is a list, a tuple, an array or a range, and adgen differentiates it (each item's
gradient goes back to its place):

    reversed(xs)              ->  xs[::-1], after the check reversible(xs, file, line)
    reversed(list(v))         ->  list(v)[::-1]      (a list, tuple or display: no check)
    reversed(sorted(v))       ->  sorted(v)[::-1]    (sorted always makes a new list)
    reversed(range(n))        ->  left as is (the loop lowering reads it)

Where the argument is a name or an attribute of one (``self.layers``), its kind is known
only when the code runs: the statement is preceded by ``adgen.reversed_items.reversible(xs,
file, line)``, which refuses at the user's line a dict, an iterator, or an object of the
user's (``__reversed__``, a ``__getitem__`` of its own), whose ``[::-1]`` is not what
``reversed`` gives. Left as is (refused by the rule of ``reversed``, rules/no_gradient): any
other argument (a call, an item); a name or attribute bound anywhere to a generator
expression or an iterator (``iter(v)``, ``map(...)``: adgen may have made it a list); a name
bound inside the statement (a comprehension's target, ``:=``); a list a statement other
than a loop walking it may change (``x = max(reversed(ws), key=f)`` with ``f(ws)``:
``reversed`` reads the list as it goes, ``[::-1]`` copies it); an attribute ``self.layers``
walked by a loop that calls a method of ``self`` or passes ``self`` on (``self.grow()``:
the pullback of ``self.layers[::-1]`` does not follow a change of its length); an iterator
the statement keeps to read later (``it = reversed(ws)``, ``pairs =
enumerate(reversed(ws))``: it would read the list as it is then); a call in a ``while``'s
condition or in a nested function; a function binding its own ``reversed``, ``list`` or
``tuple``.

A loop that walks the items one per step (``for w in reversed(ws)``, also inside
``enumerate`` or ``zip``, and a comprehension's ``for``) reads them from the copy, where
Python's ``reversed`` reads the list as it goes: a change of the list during the loop (an
item stored by the body or by a function it calls, ``WS[0] = ...`` of a global list) would
show in Python. Such a loop counts its steps and checks each one before its body runs::

    walked = reversible(ws, file, line)
    for step, w in enumerate(ws[::-1]):
        reversed_read(walked, step, file, line)
        ...
    [f(w) for walked in [reversible(ws, file, line)]
          for step, w in enumerate(ws[::-1]) if reversed_read(walked, step, file, line)]

(``adgen.reversed_items``: it refuses, at the loop's line, a step whose item Python would
read from a list changed since the start). Its body may then change the list (``ws[i] =
...`` of an item already walked, ``ws.append``) where that changes nothing it reads.

Input: the parsed function, before ``lift_lambdas``. Output: the same tree with those calls
replaced and the checks inserted; the checks are bound in ``parsed.namespace``.
"""

from __future__ import annotations

import builtins
from typing import Any

import gast
from adgen.transforms.names import unused_name
from adgen.transforms.parse import code_names
from adgen.transforms.walk import (
    as_load,
    body_nodes,
    clone,
    replace_children,
    statement_blocks,
    walk,
)

__all__ = ["rewrite_reversed"]

_KNOWN = ("list", "tuple", "sorted")  # calls whose result is a new list or a tuple
_LAZY = frozenset({"iter", "map", "filter", "zip", "enumerate", "reversed"})


def rewrite_reversed(parsed: Any) -> None:
    """Writes ``reversed(xs)`` of a list, tuple or array as ``xs[::-1]`` (see the module)."""
    code = getattr(parsed.fn, "__code__", None)
    if code is not None and "reversed" not in code_names(code):
        return  # (front checks it before importing this module)
    tree = parsed.tree
    if _own("reversed", parsed) or not any(
            _reversed_call(n) for n in walk(tree)):
        return
    known = not any(_own(n, parsed) for n in _KNOWN)
    used = {n.id for n in walk(tree) if isinstance(n, gast.Name)} | set(parsed.namespace)
    names = _Names(used)
    inserted = _rewrite_body(parsed, tree.body, names, known, _lazy_names(tree))
    if inserted:
        from adgen.reversed_items import reversed_read, reversible

        parsed.bound[names.check] = parsed.namespace[names.check] = reversible
        if names.step_check is not None:
            parsed.bound[names.step_check] = parsed.namespace[names.step_check] = reversed_read
            parsed.forget_locals()  # walked, step: locals, not globals to guard


class _Names:
    """The fresh names the rewrite binds: the two checks, each loop's walk and step."""

    def __init__(self, used: set[str]) -> None:
        self.used = used
        self.check = self.fresh("reversible")
        self.step_check: str | None = None  # reversed_read, once a loop is checked

    def fresh(self, base: str) -> str:
        return unused_name(base, self.used)

    def read_check(self) -> str:
        if self.step_check is None:
            self.step_check = self.fresh("reversed_read")
        return self.step_check


def _rewrite_body(parsed: Any, body: list[gast.stmt], names: _Names, known: bool,
                  lazy: set[str]) -> bool:
    """Rewrites the calls of each statement of ``body`` (and of the bodies in it); True
    where a check was inserted."""
    inserted = False
    for st in list(body):
        if isinstance(st, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            continue
        for inner in statement_blocks(st):
            inserted |= _rewrite_body(parsed, inner, names, known, lazy)
        own = [c for c in gast.iter_child_nodes(st)
               if not isinstance(c, (gast.stmt, gast.excepthandler, gast.match_case))]
        if isinstance(st, gast.While):
            continue  # its condition runs again each turn: left to the refusal
        nodes = list(body_nodes(own))
        bound_here = {n.id for n in nodes if isinstance(n, gast.Name) and
                      isinstance(n.ctx, gast.Store)}
        checks: list[gast.stmt] = []
        replaced: dict[int, Any] = {}
        kept = _kept_for_later(st)
        # the calls whose items a loop reads one per step (checked at each step)
        loops = _walking_loops(st, nodes)
        stepped: dict[int, list[tuple[Any, int]]] = {}  # loop -> (argument, line) walked
        for call in nodes:
            if not _reversed_call(call) or id(call) in kept:
                continue
            arg = call.args[0]
            chain = _chain(arg)
            loop = loops.get(id(call))
            if loop is not None and chain and _object_may_change(chain, st):
                loop = None  # self.grow() in the loop: left to the refusal, as below
            if chain and chain[0].id not in bound_here and gast.dump(arg) not in lazy and \
                    (loop is not None or not _may_change(chain, st)):
                line = getattr(call, "lineno", 0) or getattr(st, "lineno", 0)
                if loop is not None:
                    stepped.setdefault(id(loop), []).append((arg, line))
                else:
                    checks.append(gast.copy_location(gast.Expr(
                        _check_call(names.check, arg, parsed.file, line)), st))
            elif not (known and _list_or_tuple(arg)):
                continue
            replaced[id(call)] = gast.copy_location(gast.Subscript(
                value=arg, slice=gast.copy_location(gast.Slice(
                    lower=None, upper=None, step=gast.copy_location(gast.UnaryOp(
                        gast.USub(), gast.copy_location(gast.Constant(1, None), call)),
                        call)), call), ctx=gast.Load()), call)
        if not replaced:
            continue
        replace_children(st, lambda sub: replaced.get(id(sub)))
        for loop in (n for n in [st, *nodes] if id(n) in stepped):
            checks += _count_steps(loop, stepped[id(loop)], names, parsed.file, st)
        at = body.index(st)
        body[at:at] = checks
        inserted |= bool(checks) or bool(stepped)
    return inserted


def _check_call(func: str, arg: Any, file: str, line: int) -> gast.Call:
    """``func(arg, file, line)``."""
    return gast.Call(gast.Name(func, gast.Load(), None, None),
                     [clone(arg), gast.Constant(file, None), gast.Constant(line, None)], [])


def _walking_loops(st: gast.stmt, nodes: list[Any]) -> dict[int, Any]:
    """The ``reversed(...)`` calls (by id) a loop of ``st`` walks one item per step, each
    with the loop: the iterable of the ``for`` statement ``st`` or of a comprehension's
    ``for`` in it, as it is or in ``enumerate(...)`` or ``zip(...)`` (nested)."""
    out: dict[int, Any] = {}

    def reach(it: Any, loop: Any) -> None:
        if _reversed_call(it):
            out[id(it)] = loop
        elif isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and \
                it.func.id in ("enumerate", "zip") and it.args and not it.keywords:
            for a in it.args[:1] if it.func.id == "enumerate" else it.args:
                reach(a, loop)

    if isinstance(st, gast.For):
        reach(st.iter, st)
    for n in nodes:
        if isinstance(n, gast.comprehension):
            reach(n.iter, n)
    return out


def _count_steps(loop: Any, walked: list[tuple[Any, int]], names: _Names, file: str,
                 st: gast.stmt) -> list[gast.stmt]:
    """Makes ``loop`` (a ``for`` statement or a comprehension's ``for``, whose iterable now
    holds the ``[::-1]`` copies of the lists ``walked``) count its steps and check each
    (see the module); returns the statements to put before a ``for`` statement."""
    step = names.fresh("step")
    target = gast.Tuple([gast.Name(step, gast.Store(), None, None), loop.target], gast.Store())
    loop.target = gast.copy_location(target, loop.target)
    loop.iter = gast.copy_location(gast.Call(gast.Name("enumerate", gast.Load(), None, None),
                                             [loop.iter], []), loop.iter)
    before: list[gast.stmt] = []
    reads: list[gast.expr] = []
    snapshots: list[gast.comprehension] = []
    for arg, line in walked:
        walk_name = names.fresh("walked")
        start = _check_call(names.check, arg, file, line)
        if isinstance(loop, gast.For):
            before.append(gast.copy_location(gast.Assign(
                [gast.Name(walk_name, gast.Store(), None, None)], start, None), st))
        else:  # bound in the comprehension: its own for runs once before the loop's
            snapshots.append(gast.comprehension(
                gast.Name(walk_name, gast.Store(), None, None), gast.List([start], gast.Load()),
                [], 0))
        reads.append(gast.Call(gast.Name(names.read_check(), gast.Load(), None, None), [
            gast.Name(walk_name, gast.Load(), None, None), gast.Name(step, gast.Load(), None, None),
            gast.Constant(file, None), gast.Constant(line, None)], []))
    if isinstance(loop, gast.For):
        loop.body[:0] = [gast.copy_location(gast.Expr(r), loop.body[0]) for r in reads]
    else:
        loop.ifs[:0] = reads
        comp = next(c for c in walk(st) if getattr(c, "generators", None) and
                    any(g is loop for g in c.generators))
        at = next(k for k, g in enumerate(comp.generators) if g is loop)
        comp.generators[at:at] = snapshots
    for node in walk(loop):
        if not hasattr(node, "lineno") and isinstance(node, (gast.expr, gast.stmt)):
            gast.copy_location(node, st)
    return before


def _lazy_names(tree: Any) -> set[str]:
    """The names and attributes (``gast.dump`` of their reads) the function binds anywhere to a generator expression or an iterator
    (``iter``, ``map``, ``filter``, ``zip``, ``enumerate``, ``reversed``): adgen lowers some
    of them to lists, which the check would let through where Python raises TypeError."""
    lazy: set[str] = set()
    for n in walk(tree):
        value = getattr(n, "value", None)
        if not isinstance(n, (gast.Assign, gast.AnnAssign, gast.NamedExpr)) or not (
                isinstance(value, gast.GeneratorExp) or isinstance(value, gast.Call) and
                isinstance(value.func, gast.Name) and value.func.id in _LAZY):
            continue
        targets = n.targets if isinstance(n, gast.Assign) else [n.target]
        lazy.update(gast.dump(as_load(t)) for target in targets for t in walk(target)
                    if isinstance(t, (gast.Name, gast.Attribute)))
    return lazy


def _chain(node: Any) -> list[Any] | None:
    """``[a, a.b, a.b.c]`` for ``a.b.c`` (a name, or attributes of one), else None."""
    chain = [node]
    while isinstance(chain[0], gast.Attribute):
        chain.insert(0, chain[0].value)
    return chain if isinstance(chain[0], gast.Name) else None


def _may_change(chain: list[Any], st: gast.stmt) -> bool:
    """Whether the statement (a loop's body included) may store an item of the list
    ``chain[-1]`` or call something that may: ``ws[i] = v``, ``del ws[i]``, ``ws.append(v)``,
    ``f(ws)``, and for ``self.ws`` also ``self.grow()``, ``f(self)``. ``reversed`` reads a
    list's items as the loop walks it, ``ws[::-1]`` copies them first: the two differ where
    the list changes on the way (left to the refusal there)."""
    whole = gast.dump(chain[-1])
    prefixes = {gast.dump(p) for p in chain}
    for n in walk(st):
        if isinstance(n, gast.Attribute) and gast.dump(n.value) == whole:
            return True  # ws.append, ws.sort, a method of the list itself
        if isinstance(n, gast.Subscript) and gast.dump(n.value) in prefixes and \
                isinstance(n.ctx, (gast.Store, gast.Del)):
            return True
        if isinstance(n, gast.Call) and not _reversed_call(n) and (
                isinstance(n.func, gast.Attribute) and gast.dump(n.func.value) in prefixes or
                any(gast.dump(a.value if isinstance(a, gast.Starred) else a) in prefixes
                    for a in n.args) or
                any(gast.dump(k.value) in prefixes for k in n.keywords)):
            return True
    return False


def _object_may_change(chain: list[Any], st: gast.stmt) -> bool:
    """Whether the statement calls a method of an object the list ``chain[-1]`` is an
    attribute of, or passes that object to a call (``self.grow()``, ``f(self)`` for
    ``self.layers``): its gradient would not follow the list's change of length
    (``reversed(self.layers)`` read as ``self.layers[::-1]``, then ``self.grow()`` appending
    to it, failed in the pullback)."""
    prefixes = {gast.dump(p) for p in chain[:-1]}
    return bool(prefixes) and any(
        isinstance(n, gast.Call) and not _reversed_call(n) and (
            isinstance(n.func, gast.Attribute) and gast.dump(n.func.value) in prefixes or
            any(gast.dump(a.value if isinstance(a, gast.Starred) else a) in prefixes
                for a in n.args) or
            any(gast.dump(k.value) in prefixes for k in n.keywords))
        for n in walk(st))


def _kept_for_later(st: gast.stmt) -> set[int]:
    """The ``reversed(...)`` calls (by id) whose iterator the statement keeps to be read
    later: ``it = reversed(ws)``, ``pairs = enumerate(reversed(ws))``, ``g = (w for w in
    reversed(ws))``, a walrus or a return of one. Python's iterator reads the list when it
    is walked, ``ws[::-1]`` copies it now: left to the refusal."""
    values = []
    if isinstance(st, (gast.Assign, gast.AnnAssign)) and st.value is not None and not (
            isinstance(st, gast.Assign) and all(isinstance(t, (gast.Tuple, gast.List))
                                                for t in st.targets)):
        values.append(st.value)  # a, b = reversed(pair) unpacks it at once
    elif isinstance(st, gast.Return) and st.value is not None:
        values.append(st.value)
    values += [n.value for n in walk(st) if isinstance(n, gast.NamedExpr)]
    kept: set[int] = set()
    while values:
        v = values.pop()
        if _reversed_call(v):
            kept.add(id(v))
        elif isinstance(v, gast.Call) and isinstance(v.func, gast.Name) and \
                v.func.id in _LAZY:
            values.extend(v.args)
        elif isinstance(v, gast.GeneratorExp):
            values.extend(g.iter for g in v.generators)
        elif isinstance(v, (gast.Tuple, gast.List)):
            values.extend(v.elts)  # return reversed(a), b
    return kept


def _reversed_call(node: Any) -> bool:
    """``reversed(x)`` with one plain argument, not ``reversed(range(...))``."""
    return isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and \
        node.func.id == "reversed" and len(node.args) == 1 and not node.keywords and \
        not isinstance(node.args[0], gast.Starred) and not (
            isinstance(node.args[0], gast.Call) and
            isinstance(node.args[0].func, gast.Name) and node.args[0].func.id == "range")


def _list_or_tuple(node: Any) -> bool:
    """Whether ``node`` is a list or tuple display, a list comprehension, or a call of
    ``list`` / ``tuple`` / ``sorted``."""
    return isinstance(node, (gast.List, gast.Tuple, gast.ListComp)) or (
        isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and
        node.func.id in _KNOWN)


def _own(name: str, parsed: Any) -> bool:
    """Whether the function reads ``name`` as something other than the builtin."""
    if parsed.namespace.get(name, getattr(builtins, name)) is not getattr(builtins, name):
        return True
    return any(isinstance(n, gast.Name) and n.id == name and
               isinstance(n.ctx, (gast.Store, gast.Param, gast.Del)) for n in walk(parsed.tree))


