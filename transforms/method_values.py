"""A method taken as a value from an object the function builds, before the function changes
that object's attributes.

``m = M(a); g = m.f; m.s = a * 2; return g(x)`` (or ``o.g = m.f``, ``setattr(o, "g", m.f)``):
the call's pullback gives the method's receiver its cotangent through ``g``, which reaches
``m``'s adjoint where ``g`` was bound, after the pullback of ``m.s = a * 2`` has passed: the
gradient through the new ``m.s`` went to the old one (``x cos(2ax)`` for ``2x cos(2ax)``,
silently, until session 23). Refused at the store, naming the method taken; calling
``m.f(x)`` where it is used is followed.
"""

from __future__ import annotations

import inspect
import types
from typing import Any

import gast
from adgen.transforms.bindings import NOT_FOUND, dotted_object
from adgen.transforms.parse import Parsed
from adgen.transforms.walk import walk

from adgen.errors import UnsupportedError

__all__ = ["refuse_methods_taken_before_changes"]


def refuse_methods_taken_before_changes(parsed: Parsed) -> None:
    """Refuses a store into an attribute of an object the function builds (``m = M(a)``)
    after, or in a loop with, a read of one of its methods as a value (``g = m.f``)."""
    fn = parsed.tree
    binds: dict[str, list[gast.AST]] = {}
    for n in walk(fn):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
            binds.setdefault(n.id, []).append(n)
    built: dict[str, type] = {}
    for st in walk(fn):
        if isinstance(st, gast.Assign) and len(st.targets) == 1 and \
                isinstance(st.targets[0], gast.Name) and isinstance(st.value, gast.Call) and \
                len(binds.get(st.targets[0].id, ())) == 1:
            cls = dotted_object(parsed, st.value.func)
            if cls is not NOT_FOUND and isinstance(cls, type) and \
                    isinstance(getattr(cls, "__init__", None), types.FunctionType):
                built[st.targets[0].id] = cls
    if not built:
        return
    called = {id(c.func) for c in walk(fn) if isinstance(c, gast.Call)}
    looped = {id(x) for loop in walk(fn) if isinstance(loop, (gast.For, gast.While))
              for x in walk(loop)}
    taken: list[tuple[gast.Attribute, str]] = []
    stores: list[tuple[gast.AST, str]] = []
    for node in walk(fn):
        if isinstance(node, gast.Attribute) and isinstance(node.value, gast.Name) and \
                node.value.id in built:
            if isinstance(node.ctx, gast.Store):
                stores.append((node, node.value.id))
            elif isinstance(node.ctx, gast.Load) and id(node) not in called and \
                    _is_method(built[node.value.id], node.attr):
                taken.append((node, node.value.id))
        elif isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and \
                node.func.id == "setattr" and node.args and \
                isinstance(node.args[0], gast.Name) and node.args[0].id in built:
            stores.append((node, node.args[0].id))
    for value, owner in taken:
        for store, target in stores:
            if target == owner and (_line(store) > _line(value) or id(value) in looped):
                what = gast.unparse(value).strip()
                raise UnsupportedError(
                    f"{owner}'s attributes are set here after its method {what} was taken as "
                    f"a value (line {parsed.location(value).line}): adgen gives the method's gradient to "
                    f"{owner} as it was where the method was taken, not as the call finds it",
                    parsed.location(store),
                    hint=f"call {what}(...) where it is used, or take it after the last change "
                         f"of {owner}")


def _is_method(cls: type, attr: str) -> bool:
    return isinstance(inspect.getattr_static(cls, attr, None), types.FunctionType)


def _line(node: Any) -> int:
    return getattr(node, "lineno", 0) or 0
