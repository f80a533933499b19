"""Calls of ``functools.singledispatch`` functions: the implementation chosen as the code runs.

The wrapper ``singledispatch`` makes (``def wrapper(*args, **kw): return dispatch(
args[0].__class__)(*args, **kw)``) reads ``args`` itself, which adgen's reading of a
decorator's wrapper refuses. A call of a name (or attribute chain) bound to such a function,
with a first positional argument, is written as the call of the implementation the wrapper
would choose, found when the call runs (adgen.single_dispatch.dispatched, a call without a
derivative):

    act(h, k=2)        ->  dispatched(act, h)(h, k=2)
    act(W @ h)         ->  dispatched(act, (t := W @ h))(t)    (an expression: once)

The implementation is then differentiated as a function called through a variable is, in
reverse and forward mode. Run by ``front`` where the function's code names a global or
closure value with a ``registry`` (a function without code, a ``functools.partial``, is not
looked at: a call of a singledispatch function there stays refused).
"""

from __future__ import annotations

from typing import Any

import gast
from adgen.transforms.names import unused_name
from adgen.transforms.walk import clone, replace_children, walk

__all__ = ["call_dispatched"]


def call_dispatched(parsed: Any) -> None:
    """Writes each call of a ``singledispatch`` function as the call of the implementation
    chosen for its first argument when it runs (see the module)."""
    from adgen.transforms.front import resolve  # front runs this pass

    from adgen.single_dispatch import dispatched, is_single_dispatch

    tree = parsed.tree
    calls = {id(n) for n in walk(tree) if isinstance(n, gast.Call) and n.args and
             not isinstance(n.args[0], gast.Starred) and
             isinstance(n.func, (gast.Name, gast.Attribute)) and
             is_single_dispatch(resolve(parsed, n.func))}
    if not calls:
        return
    used = {n.id for n in walk(tree) if isinstance(n, gast.Name)} | set(parsed.namespace)
    chooser = unused_name("dispatched", used)

    def rewritten(node: Any) -> Any:
        if not (isinstance(node, gast.Call) and id(node) in calls):
            return None
        at = dict(lineno=node.lineno, col_offset=node.col_offset,
                  end_lineno=getattr(node, "end_lineno", node.lineno),
                  end_col_offset=getattr(node, "end_col_offset", node.col_offset))
        first = node.args[0]
        if _simple(first):
            given, again = first, clone(first)
        else:  # evaluated once, where Python evaluates it
            name = unused_name("first", used)
            given = gast.NamedExpr(
                target=gast.Name(id=name, ctx=gast.Store(), annotation=None,
                                 type_comment=None, **at), value=first, **at)
            again = gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None,
                              **at)
        choose = gast.Call(func=gast.Name(id=chooser, ctx=gast.Load(), annotation=None,
                                          type_comment=None, **at),
                           args=[node.func, given], keywords=[], **at)
        return gast.Call(func=choose, args=[again, *node.args[1:]], keywords=node.keywords,
                         **at)

    replace_children(tree, rewritten)
    parsed.bound[chooser] = parsed.namespace[chooser] = dispatched
    parsed.forget_locals()


def _simple(node: Any) -> bool:
    """A name, a constant, or an attribute or item of one read with a name or constant:
    read twice, it gives the same value and runs no code of the user's."""
    if isinstance(node, (gast.Name, gast.Constant)):
        return True
    if isinstance(node, gast.Attribute):
        return isinstance(node.value, gast.Name)
    if isinstance(node, gast.Subscript):
        return isinstance(node.value, gast.Name) and \
            isinstance(node.slice, (gast.Name, gast.Constant))
    return False
