"""Front-end rewrite: a local name bound once to a NumPy or ``math`` function, ufunc method or
index trick (``add = np.add``, ``at = np.add.at``, ``c = np.r_``) is read as what it names.

Input: the function as parsed (lambdas not lifted yet). Output: every read of such a name
(in the function, its lambdas and nested defs that do not bind the name themselves) replaced
by the dotted expression it was bound to. The binding stays (``Parsed.aliases_in_defs``
keeps an index trick's too): forward mode runs a nested def from its own code, which reads
the name in its closure.

Why: the later passes know ``np.add(y, t, y)`` (its positional output lowered as a write of
``y``, transforms/out_positions.py), ``np.add.at(y, i, v)``, ``np.copyto(y, v)``, ``np.r_[a,
1.0]``; through a variable the call was run as it is when the function ran, so the write of
``y`` went unseen and the pullback raised NumPy's own ``TypeError`` ("numpy.add() takes 2
positional arguments"), and ``c[a, 1.0]`` of ``c = np.r_`` in a lambda a runtime TypeError.

Only where it means the same: the name is a local of the function (not a parameter, not
declared global or nonlocal), bound by one plain assignment among the function's top-level
statements and read only in statements after it; the value is a global name or attribute
chain (``front.resolve``; its guards keep it what it was at compile time) naming an object of
NumPy or ``math`` that is not a module.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import gast
from adgen.transforms.walk import clone, walk

__all__ = ["read_function_aliases"]


def read_function_aliases(fn: gast.FunctionDef, resolve: Callable[[gast.expr], Any]
                          ) -> set[str]:
    """Replaces the reads of the local names bound to NumPy or ``math`` functions (the
    module's docstring) by the expressions they were bound to, in place; returns those of
    the names a nested def or lambda may read (its own code, which forward mode runs, reads
    them in its closure: their bindings stay)."""
    params = {a.id for a in walk(fn.args) if isinstance(a, gast.Name)}
    declared = {n for s in walk(fn) if isinstance(s, (gast.Global, gast.Nonlocal))
                for n in s.names}
    stores: dict[str, int] = {}
    for node in _own_nodes(fn):
        if isinstance(node, gast.Name) and not isinstance(node.ctx, gast.Load):
            stores[node.id] = stores.get(node.id, 0) + 1
    aliased: set[str] = set()
    for i, s in enumerate(fn.body):
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1 and
                isinstance(s.targets[0], gast.Name)):
            continue
        n = s.targets[0].id
        if stores.get(n) != 1 or n in params or n in declared or \
                not isinstance(s.value, (gast.Attribute, gast.Name)) or \
                not _named_function(resolve(s.value)):
            continue
        if any(isinstance(x, gast.Name) and x.id == n for st in fn.body[:i] for x in walk(st)):
            continue  # read before it is bound (in a loop around, or an error)
        for st in fn.body[i + 1:]:
            if not _shadows(st, n):
                _replace_reads(st, n, s.value)
        if any(isinstance(x, (gast.FunctionDef, gast.Lambda)) and x is not fn
               for st in fn.body[i + 1:] for x in walk(st)):
            aliased.add(n)
    return aliased


def _named_function(obj: Any) -> bool:
    """Whether ``obj`` is a function, ufunc, ufunc method or index trick of NumPy or
    ``math`` (not a module, a class or a value)."""
    if obj is None or isinstance(obj, (types.ModuleType, type)):
        return False
    owner = getattr(obj, "__self__", None)  # np.add.at: a method of the ufunc np.add
    module = getattr(obj if owner is None or isinstance(owner, types.ModuleType) else owner,
                     "__module__", None) or type(obj).__module__
    if not isinstance(module, str) or not (module == "math" or module == "numpy" or
                                           module.startswith("numpy.")):
        return False
    return callable(obj) or type(obj).__name__ in ("RClass", "CClass")


def _own_nodes(fn: gast.FunctionDef) -> list[Any]:
    """The nodes of ``fn``'s body outside its nested defs and lambdas (its own scope)."""
    out: list[Any] = []
    todo: list[Any] = list(fn.body)
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda,
                             gast.ClassDef)):
            if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
                out.append(gast.Name(id=node.name, ctx=gast.Store(), annotation=None,
                                     type_comment=None))
            continue
        todo.extend(gast.iter_child_nodes(node))
    return out


def _binds(scope: Any, n: str) -> bool:
    """Whether a nested def or lambda binds ``n`` itself (a parameter or a local)."""
    args = scope.args
    if any(isinstance(a, gast.Name) and a.id == n for a in walk(args)):
        return True
    body = scope.body if isinstance(scope.body, list) else [scope.body]
    return any(isinstance(x, gast.Name) and x.id == n and not isinstance(x.ctx, gast.Load)
               for st in body for x in walk(st))


def _replace_reads(node: Any, n: str, value: gast.expr) -> None:
    """Replaces each read of ``n`` under ``node`` by a copy of ``value``, except in nested
    scopes that bind ``n`` themselves."""
    for field, old in gast.iter_fields(node):
        if isinstance(old, list):
            for k, item in enumerate(old):
                if isinstance(item, gast.Name) and item.id == n and \
                        isinstance(item.ctx, gast.Load):
                    old[k] = _copy_at(value, item)
                elif isinstance(item, gast.AST) and not _shadows(item, n):
                    _replace_reads(item, n, value)
        elif isinstance(old, gast.Name) and old.id == n and isinstance(old.ctx, gast.Load):
            setattr(node, field, _copy_at(value, old))
        elif isinstance(old, gast.AST) and not _shadows(old, n):
            _replace_reads(old, n, value)


def _shadows(node: Any, n: str) -> bool:
    return isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda)) and \
        _binds(node, n)


def _copy_at(value: gast.expr, at: gast.Name) -> gast.expr:
    """A copy of ``value`` placed where ``at`` was (its line, for errors)."""
    new = clone(value)
    for x in walk(new):
        if hasattr(at, "lineno") and hasattr(x, "lineno"):
            x.lineno, x.col_offset = at.lineno, at.col_offset
    return new
