"""Objects built and called at once (``Net(3).forward(x)``): the object bound to a name first.

A method that writes an array of its object in place is followed where the object is bound
to a name the function builds it into (``net = Net(3); net.forward(x)``: bound_callees
writes the call as the call of the class's function); built in the call's own expression,
the method ran through the dispatch, which cannot follow the write, and was refused at the
line. Where the object is the first thing the statement computes (nothing before it calls
a function, and no ``and``/``or``, conditional expression, comprehension or lambda leads to
it), it is bound to a fresh name right before the statement, which evaluates the same
things in the same order:

    return np.sum(Net(3).forward(x))   ->  net = Net(3); return np.sum(net.forward(x))

Run by ``bind_callees`` before it looks for the objects the function builds.
"""

from __future__ import annotations

from typing import Any

import gast
from adgen.transforms.names import unused_name
from adgen.transforms.walk import statement_blocks, walk

__all__ = ["name_built_receivers"]

# the nodes a path from a statement's value down to the object may pass through: each
# evaluates its parts in order, unconditionally
_PLAIN = (gast.Call, gast.Attribute, gast.Subscript, gast.BinOp, gast.UnaryOp, gast.Compare,
          gast.Tuple, gast.List, gast.Starred, gast.keyword)


def name_built_receivers(parsed: Any, is_class: Any) -> None:
    """Binds each object built and called at once, first in its statement, to a name (see
    the module); ``is_class(node)``: whether a call's function is a class of the user's."""
    tree = parsed.tree
    used: set[str] | None = None

    def body(stmts: list[Any]) -> None:
        nonlocal used
        k = 0
        while k < len(stmts):
            st = stmts[k]
            if isinstance(st, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
                k += 1
                continue
            for inner in statement_blocks(st):
                body(inner)
            value = getattr(st, "value", None) if isinstance(
                st, (gast.Assign, gast.Return, gast.Expr, gast.AugAssign, gast.AnnAssign)) \
                else None
            found = _first_built_receiver(value, is_class) if value is not None else None
            if found is None:
                k += 1
                continue
            parent, built = found
            if used is None:
                used = {n.id for n in walk(tree) if isinstance(n, gast.Name)} | \
                    set(parsed.namespace)
            cls_name = getattr(built.func, "id", None) or getattr(built.func, "attr", "obj")
            fresh = unused_name(cls_name.lower() if cls_name.lower().isidentifier() and
                                cls_name.lower() != cls_name else "obj", used)
            at = dict(lineno=built.lineno, col_offset=built.col_offset,
                      end_lineno=getattr(built, "end_lineno", built.lineno),
                      end_col_offset=getattr(built, "end_col_offset", built.col_offset))
            parent.value = gast.Name(id=fresh, ctx=gast.Load(), annotation=None,
                                     type_comment=None, **at)
            stmts.insert(k, gast.Assign(
                targets=[gast.Name(id=fresh, ctx=gast.Store(), annotation=None,
                                   type_comment=None, **at)],
                value=built, type_comment=None, **at))
            k += 2

    body(tree.body)
    if used is not None:
        parsed.forget_locals()


def _first_built_receiver(value: Any, is_class: Any) -> tuple[Any, Any] | None:
    """``(attribute, call)`` for the first call ``value`` completes when it is ``Cls(...)``
    of a user's class whose method is called at once (``Cls(...).m(...)``, the attribute
    ``.m`` of the call), reached through plain nodes only; else None."""
    path: list[Any] = []

    def first(node: Any) -> Any:
        """The first Call completed in evaluating ``node`` (None: none; False: a node that
        evaluates conditionally or runs code out of order comes first)."""
        if isinstance(node, (gast.Name, gast.Constant)) or node is None:
            return None
        if not isinstance(node, _PLAIN):
            return False
        path.append(node)
        if isinstance(node, gast.Call):
            parts = [node.func, *node.args, *node.keywords]
        elif isinstance(node, gast.Attribute):
            parts = [node.value]
        elif isinstance(node, gast.Subscript):
            parts = [node.value, node.slice]
        elif isinstance(node, gast.BinOp):
            parts = [node.left, node.right]
        elif isinstance(node, gast.UnaryOp):
            parts = [node.operand]
        elif isinstance(node, gast.Compare):
            parts = [node.left, node.comparators[0]]  # (later ones: only if it holds)
        elif isinstance(node, (gast.Tuple, gast.List)):
            parts = list(node.elts)
        else:  # Starred, keyword
            parts = [node.value]
        for part in parts:
            got = first(part)
            if got is not None:
                return got
        if isinstance(node, gast.Call):
            return node
        path.pop()
        return None

    call = first(value)
    if not isinstance(call, gast.Call):
        return None
    # the built object: the call itself, or the nearest call above it on the path (its
    # arguments completed first: Net(f(x)).forward(x))
    for k in range(len(path) - 1, 1, -1):
        node, attr, method = path[k], path[k - 1], path[k - 2]
        if isinstance(node, gast.Call) and is_class(node.func) and \
                isinstance(attr, gast.Attribute) and attr.value is node and \
                isinstance(method, gast.Call) and method.func is attr:
            return attr, node
    return None
