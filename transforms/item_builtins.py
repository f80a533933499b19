"""Builtins that call a function on each item: ``map``, ``filter``, and ``max`` / ``min``
with ``key=``, written as what adgen differentiates.

``sum(map(lambda t: t ** 3, v))`` was refused ("map() has no derivative rule"): the builtin
calls the function in a loop adgen cannot see, and so does ``max(v, key=abs)``. A generator
expression is the same lazy iterator, and adgen differentiates those (lowered to loops); the
first item of ``sorted`` (whose ``key=`` adgen follows) is the extreme ``max`` and ``min``
find, ties included (``sorted`` is stable: the first of equal items, as ``max`` gives):

    map(lambda t: t ** 3, v)          ->  (t ** 3 for t in v)
    map(lambda a, b: a * b, xs, ys)   ->  (a * b for a, b in zip(xs, ys))
    map(f, xs)                        ->  (f(item1) for item1 in xs)
    filter(lambda t: t > 0, v)        ->  (t for t in v if t > 0)
    max(v, key=abs)                   ->  sorted(v, key=abs, reverse=True)[0]
    min(a, b, key=f)                  ->  sorted((a, b), key=f)[0]
    dict(w=W, b=b)                    ->  {'w': W, 'b': b}
    dict(), list()                    ->  {}, []
    zip(*rows)                        ->  (tuple(r[k] for r in t)
                                           for t in [[list(r) for r in rows]]
                                           for k in range(min((len(r) for r in t), default=0)))

``zip(*pairs)`` (``xs, ys = zip(*pairs)``, ``for x, y in zip(*pairs)``, the columns of a list of
rows) was refused ('adgen cannot see how zip builds its objects'): NumPy-free Python, a
transpose, which the generator expression computes with items adgen follows (each row is
walked by ``list`` first, as ``zip`` walks it: the keys of a dict, the rows of an array).

A lambda's body is written in place, its parameters the loop's targets (a lambda with
defaults, ``*args`` or keyword-only parameters, or whose parameter count is not the number of
iterables, is called as a function instead). A call is rewritten only where the names are the
builtins (a function that binds or imports its own ``map``, ``filter``, ``zip``, ``max``,
``min`` or ``sorted`` is left alone), and not where it has other keywords
(``max(v, key=f, default=0.0)``, ``map(f, xs, strict=True)``) or starred arguments. An empty
sequence raises IndexError where ``max`` raises ValueError.

Input: the parsed function, before ``lift_lambdas``. Output: the same tree with those calls
replaced.
"""

from __future__ import annotations

import builtins
import types
from typing import Any

import gast
from adgen.transforms.feature_names import ITEM_BUILTINS
from adgen.transforms.walk import replace_children, walk

__all__ = ["rewrite_item_builtins"]

_NAMES = ("map", "filter", "zip", "max", "min", "sorted", "dict", "list", "tuple", "len",
          "range")
# the builtins whose calls are rewritten (front imports this module only where the
# function's code names one: feature_names)
_CALLED = ITEM_BUILTINS


def rewrite_item_builtins(parsed: Any) -> None:
    """Writes ``map(f, *xs)`` and ``filter(f, xs)`` calls as generator expressions,
    ``max`` / ``min`` with ``key=`` as the first item of ``sorted``, and ``dict`` of keywords
    (``dict()``, ``list()``) as a display."""
    if not _CALLED & _code_names(getattr(parsed.fn, "__code__", None)):
        return  # the function's code (nested code too) names none of them: most functions
    tree = parsed.tree
    calls = [n for n in walk(tree) if isinstance(n, gast.Call) and
             isinstance(n.func, gast.Name) and (n.func.id in ("map", "filter") or (
                 n.func.id in ("max", "min") and any(k.arg == "key" for k in n.keywords)) or
             (n.func.id == "dict" and not n.args and
              all(k.arg is not None for k in n.keywords)) or
             (n.func.id == "list" and not n.args and not n.keywords) or
             (n.func.id == "zip" and _transposed(n) is not None))]
    if not calls:
        return
    if any(parsed.namespace.get(n, getattr(builtins, n)) is not getattr(builtins, n)
           for n in _NAMES) or any(isinstance(n, gast.Name) and n.id in _NAMES and
                                   isinstance(n.ctx, (gast.Store, gast.Param))
                                   for n in walk(tree)):
        return  # not the builtins there
    used = {n.id for n in walk(tree) if isinstance(n, gast.Name)}
    fresh = (f"item{k}" for k in range(1, 1_000_000) if f"item{k}" not in used)
    replaced: dict[int, Any] = {}
    for call in reversed(calls):  # the inner ones first: map(f, map(g, xs))
        if call.func.id in ("dict", "list"):
            replaced[id(call)] = _display(call, replaced)
        elif call.func.id in ("max", "min"):
            replaced[id(call)] = _extreme(call, replaced)
        elif call.func.id == "zip":
            replaced[id(call)] = _transpose(call, fresh, replaced)
        else:
            replaced[id(call)] = _generator(call, fresh, replaced)
    replace_children(tree, lambda sub: replaced.get(id(sub)))


def _code_names(code: Any) -> set[str]:
    """The global and attribute names ``code`` and the code nested in it read (all of them
    where there is no code: a function adgen was given as a tree)."""
    if not isinstance(code, types.CodeType):
        return set(_CALLED)
    names: set[str] = set()
    todo = [code]
    for c in todo:
        names.update(c.co_names)
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return names


def _generator(call: gast.Call, fresh: Any, replaced: dict[int, Any]
               ) -> gast.GeneratorExp | None:
    """The generator expression of ``map(...)`` or ``filter(...)``, or None (left as is);
    ``replaced``: the expressions of the calls inside it."""
    if call.keywords or len(call.args) < 2 or \
            any(isinstance(a, gast.Starred) for a in call.args):
        return None
    args = [replaced.get(id(a)) or a for a in call.args]
    fn, iterables = args[0], args[1:]
    if call.func.id == "filter" and len(iterables) != 1:
        return None
    at = _place(call)
    lam = fn if isinstance(fn, gast.Lambda) and _plain(fn.args, len(iterables)) else None
    names = [a.id for a in lam.args.args] if lam is not None else \
        [next(fresh) for _ in iterables]

    def load(n: str) -> gast.Name:
        return gast.Name(id=n, ctx=gast.Load(), annotation=None, type_comment=None, **at)

    def called() -> gast.expr:
        # the lambda's body, or the call of the function on the items
        if lam is not None:
            return lam.body
        return gast.Call(func=fn, args=[load(n) for n in names], keywords=[], **at)

    stores = [gast.Name(id=n, ctx=gast.Store(), annotation=None, type_comment=None, **at)
              for n in names]
    target = stores[0] if len(stores) == 1 else gast.Tuple(elts=stores, ctx=gast.Store(),
                                                           **at)
    source = iterables[0] if len(iterables) == 1 else gast.Call(
        func=load("zip"), args=list(iterables), keywords=[], **at)
    if call.func.id == "map":
        return gast.GeneratorExp(elt=called(), generators=[gast.comprehension(
            target=target, iter=source, ifs=[], is_async=0)], **at)
    if isinstance(fn, gast.Constant) and fn.value is None:  # filter(None, xs): truthy items
        test: gast.expr = load(names[0])
    else:
        test = called()
    return gast.GeneratorExp(elt=load(names[0]), generators=[gast.comprehension(
        target=target, iter=source, ifs=[test], is_async=0)], **at)


def _display(call: gast.Call, replaced: dict[int, Any]) -> gast.expr:
    """``{'w': W, 'b': b}`` for ``dict(w=W, b=b)`` (params = dict(W=W, b=b) was refused:
    the rule of ``dict`` copies one mapping), ``{}`` and ``[]`` for ``dict()`` and ``list()``
    (the kinds analysis knows a display for a dict or a list). The values keep their order,
    so they are evaluated as the call evaluates them."""
    at = _place(call)
    if call.func.id == "list":
        return gast.List(elts=[], ctx=gast.Load(), **at)
    return gast.Dict(keys=[gast.Constant(k.arg, None, **at) for k in call.keywords],
                     values=[replaced.get(id(k.value)) or k.value for k in call.keywords],
                     **at)


def _extreme(call: gast.Call, replaced: dict[int, Any]) -> gast.expr | None:
    """``sorted(xs, key=f, reverse=True)[0]`` for ``max(xs, key=f)`` (``min``: ascending),
    or None (left as is)."""
    if len(call.keywords) != 1 or not call.args or \
            any(isinstance(a, gast.Starred) for a in call.args):
        return None
    at = _place(call)
    args = [replaced.get(id(a)) or a for a in call.args]
    items = args[0] if len(args) == 1 else gast.Tuple(elts=args, ctx=gast.Load(), **at)
    keywords = list(call.keywords)
    if call.func.id == "max":
        keywords.append(gast.keyword(arg="reverse", value=gast.Constant(True, None, **at)))
    ordered = gast.Call(func=gast.Name(id="sorted", ctx=gast.Load(), annotation=None,
                                       type_comment=None, **at),
                        args=[items], keywords=keywords, **at)
    return gast.Subscript(value=ordered, slice=gast.Constant(0, None, **at), ctx=gast.Load(),
                          **at)


def _transposed(call: gast.Call) -> gast.expr | None:
    """The rows of ``zip(*rows)`` (one starred argument, no keyword), or None."""
    if call.keywords or len(call.args) != 1 or not isinstance(call.args[0], gast.Starred):
        return None
    return call.args[0].value


def _transpose(call: gast.Call, fresh: Any, replaced: dict[int, Any]) -> gast.expr:
    """The generator expression of ``zip(*rows)``: the k-th tuple holds the k-th item of each
    row, for k up to the shortest row's length (as ``zip``)."""
    from adgen.transforms.gast_ast import parse

    rows = _transposed(call)
    rows = replaced.get(id(rows)) or rows
    r, t, k, placeholder = next(fresh), next(fresh), next(fresh), next(fresh)
    expr = parse(f"(tuple({r}[{k}] for {r} in {t}) for {t} in [[list({r}) for {r} in "
                 f"{placeholder}]] for {k} in range(min((len({r}) for {r} in {t}), "
                 f"default=0)))").body[0].value
    at = _place(call)
    for node in walk(expr):
        for field, value in at.items():
            if field in getattr(node, "_attributes", ()):
                setattr(node, field, value)
    replace_children(expr, lambda sub: rows if isinstance(sub, gast.Name) and
                     sub.id == placeholder else None)
    return expr


def _plain(args: gast.arguments, count: int) -> bool:
    """Whether a lambda's parameters are ``count`` plain positional names."""
    return not (args.vararg or args.kwarg or args.kwonlyargs or args.defaults or
                getattr(args, "posonlyargs", None)) and len(args.args) == count


def _place(node: Any) -> dict[str, int]:
    line = getattr(node, "lineno", 1)
    col = getattr(node, "col_offset", 0)
    return dict(lineno=line, col_offset=col, end_lineno=getattr(node, "end_lineno", line),
                end_col_offset=getattr(node, "end_col_offset", col))
