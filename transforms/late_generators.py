"""Generator expressions bound to a name and read later: adgen evaluates a generator
expression where it stands (desugar: a list filled by a loop), Python when its items are read.

    g = (y[i] * 2.0 for i in range(4))       # also m = map(lambda i: y[i], ...), filter(...)
    y[0] = y[0] * 5.0                        # Python's g reads the new y[0]
    return sum(g)

gave a silently wrong value and gradient, and so did a name the expression reads rebound in
between (``w = x[1]``), a list it walks grown (``out.append(v)``), and the generator read twice
(``sum(g)`` then ``sum(g)``: Python's second read finds it used up). Refused at the binding's
line unless the name is bound once and read once, by a statement of the same block, whole
(the first argument of ``sum``, ``list``, ``tuple``, ``sorted``, ``min``, ``max``, ``any``,
``all``, ``set``, ``dict``, ``enumerate``, ``zip``, ``math.fsum``, ``np.array``, or that
statement's ``for`` loop, which transforms/walked_iterators checks), outside any lambda or
comprehension of it, with nothing between that writes in place or rebinds what the
expression reads or calls code that may (the helpers of transforms/walked_iterators).

A generator expression returned (``return (v ** 2 for v in x)``: the caller may read it after
changing what it reads) or given to a function of the user's (``helper(v ** 2 for v in x)``,
which may read it twice: Python's second read finds it used up) is refused at its line too;
given to a library's function or a consumer (``sum``, ``np.array``, ``functools.reduce``) it
is taken at once.

Input: the parsed function after ``rewrite_item_builtins`` (map and filter are generator
expressions by then), before ``lift_lambdas``. Output: nothing (a check).
"""

from __future__ import annotations

import builtins
import types
from typing import Any

import gast
import numpy as np
from adgen.transforms.walk import body_nodes, statement_blocks, walk
from adgen.transforms.walked_iterators import (
    bindings_of,
    may_run_code,
    sharing_names,
    writes_in_place,
)

from adgen.errors import UnsupportedError

__all__ = ["refuse_late_generators"]

# builtins that take every item of the iterable they are given first
_CONSUMERS = frozenset({"sum", "list", "tuple", "sorted", "min", "max", "any", "all", "set",
                        "dict", "enumerate", "zip", "frozenset"})
_MODULE_CONSUMERS = frozenset({("math", "fsum"), ("np", "array"), ("numpy", "array"),
                               ("np", "fromiter"), ("numpy", "fromiter")})
_REPEATED = (gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp,
             gast.FunctionDef)


def refuse_late_generators(parsed: Any) -> None:
    """Raises at the first generator expression bound to a name that the function may read
    other than at once and whole (see the module doc)."""
    tree = parsed.tree
    loads: dict[str, list[gast.Name]] = {}
    stores: dict[str, int] = {}
    for n in walk(tree):
        if isinstance(n, gast.Name):
            if isinstance(n.ctx, gast.Load):
                loads.setdefault(n.id, []).append(n)
            else:
                stores[n.id] = stores.get(n.id, 0) + 1
    parents = {id(c): n for n in walk(tree) for c in gast.iter_child_nodes(n)}
    bindings = bindings_of(tree)
    _check_block(parsed, tree.body, loads, stores, parents, bindings)
    for n in body_nodes(tree.body):
        if isinstance(n, gast.GeneratorExp):
            up = parents.get(id(n))
            _check_handed_on(parsed, n, parents.get(id(up)) if isinstance(up, gast.keyword)
                             else up)


def _check_handed_on(parsed: Any, gen: gast.GeneratorExp, up: gast.AST | None) -> None:
    """Refuses a generator expression returned, or given to a function of the user's (which
    gets the list adgen makes, and may read it twice, or in part: a silently wrong value)."""
    if isinstance(up, gast.Return):
        what = "returned (the caller gets its items made here, and may read them later)"
    elif isinstance(up, gast.Call) and gen is not up.func and not _consumer(up.func) and \
            _user_callable(parsed, up.func):
        what = ("given to a function of yours, which gets its items made here (and may read "
                "them twice, or after changing what they are made from)")
    else:
        return
    raise UnsupportedError(
        f"a generator expression {what}: adgen evaluates a generator expression where it "
        "stands (map(...) and filter(...) too), Python takes its items when they are read",
        parsed.location(gen),
        hint="make it a list ([... for ...]) if its items may be made here, or pass the "
             "sequence and write the generator expression where it is read")


_LIBRARIES = ("numpy", "scipy", "math", "cmath", "functools", "itertools", "operator",
              "statistics", "builtins", "adgen")
_CONSUMING_METHODS = frozenset({"extend", "update", "join"})


def _user_callable(parsed: Any, f: gast.expr) -> bool:
    """Whether ``f`` may be a function of the user's: a local (a nested def, a lambda), a
    Python function or class of a module that is not a library's, a method of an object."""
    if isinstance(f, gast.Name):
        if parsed.is_local(f.id):
            return True
        obj = parsed.namespace.get(f.id, getattr(builtins, f.id, None))
        if obj is None:
            return True
        if not callable(obj) or isinstance(obj, (types.BuiltinFunctionType, np.ufunc)):
            return False
        module = getattr(obj, "__module__", None)
        return not isinstance(module, str) or module.split(".")[0] not in _LIBRARIES
    if isinstance(f, gast.Attribute):
        root = f.value
        while isinstance(root, gast.Attribute):
            root = root.value
        if isinstance(root, gast.Name) and not parsed.is_local(root.id):
            obj = parsed.namespace.get(root.id)
            if isinstance(obj, types.ModuleType):
                return obj.__name__.split(".")[0] not in _LIBRARIES
        return f.attr not in _CONSUMING_METHODS
    return True


def _check_block(parsed: Any, body: list[gast.stmt], loads: dict[str, list[gast.Name]],
                 stores: dict[str, int], parents: dict[int, gast.AST],
                 bindings: dict[str, list[Any]]) -> None:
    for k, st in enumerate(body):
        if isinstance(st, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            continue
        for inner in statement_blocks(st):
            _check_block(parsed, inner, loads, stores, parents, bindings)
        if not (isinstance(st, gast.Assign) and len(st.targets) == 1 and
                isinstance(st.targets[0], gast.Name) and
                isinstance(st.value, gast.GeneratorExp)):
            continue
        name = st.targets[0].id
        why = _why(parsed, body, k, name, st.value, loads, stores, parents, bindings)
        if why is not None:
            raise UnsupportedError(
                f"a generator expression bound to {name} and {why}: adgen evaluates a "
                "generator expression where it stands (map(...) and filter(...) too), "
                "Python takes its items when they are read, so the two would differ",
                parsed.location(st),
                hint=f"make it a list where its items should be computed ({name} = [...]), "
                     f"or write the generator expression where it is read "
                     f"(sum(... for ...))")


def _why(parsed: Any, body: list[gast.stmt], k: int, name: str, gen: gast.GeneratorExp,
         loads: dict[str, list[gast.Name]], stores: dict[str, int],
         parents: dict[int, gast.AST], bindings: dict[str, list[Any]]) -> str | None:
    reads = loads.get(name, [])
    if stores.get(name, 0) != 1:
        return f"{name} bound again"
    if len(reads) != 1:
        return f"read {len(reads)} times (a second read finds the generator used up)"
    read = reads[0]
    where = next((j for j in range(k + 1, len(body))
                  if any(m is read for m in walk(body[j]))), None)
    if where is None:
        return "read outside the statements after it in its block"
    consumer = body[where]
    if not _read_whole(read, consumer, parents):
        return (f"read at line {getattr(read, 'lineno', '?')} where it may not be taken "
                "whole at once")
    own = {n.id for g in gen.generators for n in walk(g.target) if isinstance(n, gast.Name)}
    free = {n.id for n in walk(gen) if isinstance(n, gast.Name) and
            isinstance(n.ctx, gast.Load)} - own
    shared = sharing_names(free, bindings)
    for between in body[k + 1:where]:
        for n in walk(between):
            if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load) and \
                    n.id in free:
                return f"{n.id}, which it reads, bound again at line {n.lineno}"
            if isinstance(n, gast.Call) and may_run_code(n, parsed, shared):
                return (f"code that may change what it reads called at line "
                        f"{getattr(n, 'lineno', '?')}")
            if writes_in_place(n, shared, bindings):
                return (f"what it reads written in place at line "
                        f"{getattr(n, 'lineno', '?')}")
    return None


def _read_whole(read: gast.Name, stmt: gast.stmt, parents: dict[int, gast.AST]) -> bool:
    """Whether ``read`` is ``stmt``'s for loop's iterable, or the first argument of a call
    of a consumer (the module doc) that ``stmt`` makes once (not in a lambda or a
    comprehension)."""
    up = parents.get(id(read))
    if isinstance(stmt, gast.For) and stmt.iter is read:
        return True
    if not (isinstance(up, gast.Call) and up.args and up.args[0] is read and
            _consumer(up.func)):
        return False
    node: gast.AST | None = up
    while node is not None and node is not stmt:
        if isinstance(node, _REPEATED) or isinstance(node, gast.comprehension):
            return False
        if isinstance(node, gast.stmt):
            return False  # in a statement nested in stmt (a loop's body)
        node = parents.get(id(node))
    if node is not stmt or isinstance(stmt, (gast.While, gast.Try)):
        return False
    if isinstance(stmt, (gast.For, gast.If, gast.With)):  # its header, run once
        header = stmt.iter if isinstance(stmt, gast.For) else \
            stmt.test if isinstance(stmt, gast.If) else stmt.items
        return any(m is read for h in (header if isinstance(header, list) else [header])
                   for m in walk(h))
    return True


def _consumer(f: gast.expr) -> bool:
    if isinstance(f, gast.Name):
        return f.id in _CONSUMERS
    return isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and \
        (f.value.id, f.attr) in _MODULE_CONSUMERS
