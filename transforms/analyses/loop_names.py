"""Names a loop body reads, binds and writes into, for splitting a loop into segments.

Analyses of the standard library's ``ast`` (the user's source as ``segment_loops`` reads it),
not of the compiler's gast trees; they change nothing. Each is conservative in the direction
that keeps a segmented loop right: a name counts as read before it is bound when some path
reads it first, as bound before the loop only when every path binds it, and as having its
items written when any statement may write into them.
"""

from __future__ import annotations

import ast
import builtins
from typing import Any

__all__ = ["bound_before", "exposed", "is_range_loop", "items_written", "loads",
           "param_names", "stores_of_statements", "walk_body"]

_WRITERS = {"copyto", "put", "place", "putmask", "fill_diagonal", "at", "put_along_axis"}
_BUILTINS = set(dir(builtins))


def _rooted(node: ast.AST, name: str) -> int | None:
    """How many subscripts and attributes ``node`` reads through from the name ``name``
    (0: the name itself), or None when it does not start from it."""
    depth = 0
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node, depth = node.value, depth + 1
    return depth if isinstance(node, ast.Name) and node.id == name else None


def items_written(body: list[ast.stmt], name: str) -> bool:
    """Whether the body may write into the items of ``name`` (a list or dict) in place,
    rather than only append to it or rebind its slots: ``xs[i][j] = v``, ``xs[i] += v``,
    ``xs[i].fill(0)``, ``out=xs[i]``, or an item passed to a function that is not NumPy's or
    a builtin (it may write it)."""
    for node in (n for s in body for n in ast.walk(s)):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = [t for x in node.targets for t in ast.walk(x)]
        elif isinstance(node, ast.AugAssign):
            if _rooted(node.target, name) not in (None, 0):
                return True
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and (_rooted(func.value, name) or 0) >= 1:
                return True  # a method of an item
            if any(k.arg == "out" and _rooted(k.value, name) is not None
                   for k in node.keywords):
                return True
            known = (isinstance(func, ast.Name) and func.id in _BUILTINS) or (
                isinstance(func, ast.Attribute) and _rooted(func, "np") is not None and
                func.attr not in _WRITERS)
            if not known and any(_rooted(a, name) is not None for a in node.args):
                return True
        for t in targets:
            if isinstance(t, (ast.Subscript, ast.Attribute)) and (
                    _rooted(t.value, name) or 0) >= 1:
                return True
    return False


def param_names(fdef: ast.FunctionDef) -> set[str]:
    a = fdef.args
    names = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
    names |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
    return names


def walk_body(stmts: list[ast.stmt]) -> Any:
    """The body's nodes, without those of nested loops' break (a break there ends the nested
    loop, not this one) and without lambdas' and comprehensions' insides."""
    for s in stmts:
        yield from _walk_stmt(s, in_loop=False)


def _walk_stmt(node: ast.AST, in_loop: bool) -> Any:
    if isinstance(node, ast.Break) and in_loop:
        return
    yield node
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                              ast.GeneratorExp)):
            continue
        inner = in_loop or (isinstance(node, (ast.For, ast.While)) and child in node.body)
        yield from _walk_stmt(child, inner)


def stores_of_statements(stmts: list[ast.stmt]) -> set[str]:
    """Names the statements bind (not inside comprehensions or lambdas)."""
    out: set[str] = set()
    for s in stmts:
        for node in _walk_stmt(s, False):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                out.add(node.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                out |= {a.asname or a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ExceptHandler) and node.name:
                out.add(node.name)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(node.name)
    return out


def loads(node: ast.AST) -> set[str]:
    """Names an expression or simple statement reads (lambdas and comprehensions included:
    they read the enclosing function's names)."""
    return {x.id for x in ast.walk(node) if isinstance(x, ast.Name) and
            isinstance(x.ctx, ast.Load)}


def exposed(stmts: list[ast.stmt], defined: set[str]) -> set[str]:
    """Names read on some path before the statements bind them (upward-exposed uses);
    ``defined`` is updated with what every path binds."""
    out: set[str] = set()
    for s in stmts:
        if isinstance(s, ast.If):
            out |= loads(s.test) - defined
            d1, d2 = set(defined), set(defined)
            out |= exposed(s.body, d1) | exposed(s.orelse, d2)
            defined |= d1 & d2
        elif isinstance(s, (ast.For, ast.While)):
            head = s.iter if isinstance(s, ast.For) else s.test
            out |= loads(head) - defined
            inner = set(defined) | (stores_of_statements([s.target]) if isinstance(s, ast.For) else set())
            # a nested loop carries its own values from one iteration to the next
            out |= exposed(s.body + s.body, inner) | exposed(s.orelse, set(inner))
        elif isinstance(s, (ast.With, ast.Try)):
            inner = set(defined)
            if isinstance(s, ast.With):
                for item in s.items:
                    out |= loads(item.context_expr) - inner
                    if item.optional_vars is not None:
                        inner |= _stores_of(item.optional_vars)
                out |= exposed(s.body, inner)
                defined |= inner
            else:
                out |= exposed(s.body, inner)
                for h in s.handlers:
                    out |= exposed(h.body, set(defined) | ({h.name} if h.name else set()))
                out |= exposed(s.orelse, set(inner)) | exposed(s.finalbody, set(defined))
        else:
            if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
                out |= {s.target.id} - defined
            out |= loads(s) - defined
            defined |= stores_of_statements([s])
    return out


def _stores_of(target: ast.AST) -> set[str]:
    return {x.id for x in ast.walk(target) if isinstance(x, ast.Name)}


def bound_before(stmts: list[ast.stmt], params: set[str]) -> tuple[set[str], set[str]]:
    """Names bound on every path through ``stmts`` (with the parameters), and names bound on
    some path only."""
    sure = set(params)
    every: set[str] = set()
    for s in stmts:
        every |= stores_of_statements([s])
        if is_range_loop(s) and isinstance(s.target, ast.Name) and \
                s.target.id not in stores_of_statements(s.body):
            every.discard(s.target.id)  # an int, or unbound: it shares no memory
        if isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Import,
                          ast.ImportFrom, ast.Expr, ast.FunctionDef, ast.ClassDef)):
            sure |= stores_of_statements([s])
        elif isinstance(s, ast.With):
            sure |= bound_before(s.body, set())[0] | {
                n for item in s.items if item.optional_vars is not None
                for n in _stores_of(item.optional_vars)}
        elif isinstance(s, ast.If):
            sure |= bound_before(s.body, set())[0] & bound_before(s.orelse, set())[0]
    return sure, every - sure


def is_range_loop(s: ast.stmt) -> bool:
    return (isinstance(s, ast.For) and isinstance(s.iter, ast.Call) and
            isinstance(s.iter.func, ast.Name) and s.iter.func.id == "range" and
            not s.iter.keywords and 1 <= len(s.iter.args) <= 3 and
            not any(isinstance(a, ast.Starred) for a in s.iter.args))
