"""The user's classes whose operators a function may apply (``Vec.__add__``): what front reads
before it imports ``operator_methods``, which writes such operators as the methods' calls
(most functions see no such class, and their first gradient does not import it: issue 15's
cold start).

Input: a parsed function (its namespace, its function object). Read only.
"""

from __future__ import annotations

import inspect
import sys
import types
from typing import Any

import gast
import numpy as np

__all__ = ["BINARY", "LIBRARY", "OPERATORS", "UNARY", "classes_seen", "method_owner",
           "sees_operator_classes", "user_class", "user_method"]

# the method Python calls for each operator, and the reflected one it tries next
BINARY = {
    gast.Add: ("__add__", "__radd__"), gast.Sub: ("__sub__", "__rsub__"),
    gast.Mult: ("__mul__", "__rmul__"), gast.MatMult: ("__matmul__", "__rmatmul__"),
    gast.Div: ("__truediv__", "__rtruediv__"), gast.FloorDiv: ("__floordiv__", "__rfloordiv__"),
    gast.Mod: ("__mod__", "__rmod__"), gast.Pow: ("__pow__", "__rpow__"),
}
UNARY = {gast.USub: "__neg__", gast.UAdd: "__pos__"}
OPERATORS = frozenset({m for pair in BINARY.values() for m in pair} | set(UNARY.values()) |
                      {"__i" + pair[0][2:] for pair in BINARY.values()} |
                      {"__getitem__", "__setitem__", "__abs__"})
LIBRARY = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix})


def method_owner(fn: Any, namespace: dict[str, Any]) -> Any:
    """The class a method was defined in (from its ``__class__`` cell or ``__qualname__``),
    or None."""
    cell = namespace.get("__class__")
    if isinstance(cell, type):
        return cell
    parts = getattr(fn, "__qualname__", "").split(".")
    if len(parts) < 2 or "<locals>" in parts:
        return None
    obj: Any = getattr(fn, "__globals__", {}).get(parts[0])
    for p in parts[1:-1]:
        obj = getattr(obj, p, None)
    return obj if isinstance(obj, type) else None


def sees_operator_classes(parsed: Any) -> bool:
    """Whether the function can name a class of the user's defining an operator (its globals
    and closure, modules of the user's it imports), or is a method of one: where it cannot,
    ``operator_methods.call_operator_methods`` changes nothing."""
    if classes_seen(parsed.namespace):
        return True
    params = parsed.tree.args.args
    return bool(params) and user_class(method_owner(parsed.fn, parsed.namespace))


def user_class(cls: Any) -> bool:
    """Whether ``cls`` is a class of the user's that defines an operator as a function."""
    if not isinstance(cls, type) or issubclass(cls, (np.ndarray, np.generic, list, dict,
                                                     tuple, set, str, bytes, int, float,
                                                     complex)):
        return False
    module = str(getattr(cls, "__module__", ""))
    if module in ("builtins", "numpy") or module.startswith(("numpy.", "adgen.")):
        return False
    return any(user_method(cls, name) is not None for name in OPERATORS)


def user_method(cls: Any, name: str) -> Any:
    """``cls``'s method ``name`` when it is a plain function of the user's code (not of an
    installed package or the standard library: ``pathlib.Path.__truediv__``), else None."""
    try:
        found = inspect.getattr_static(cls, name)
    except AttributeError:
        return None
    if not isinstance(found, types.FunctionType) or \
            found.__code__.co_filename.startswith(LIBRARY):
        return None
    return found


def classes_seen(namespace: dict[str, Any]) -> list[tuple[type, gast.expr]]:
    """The user's classes with an operator of their own that ``namespace`` (a function's
    globals and closure) names, each with the expression that reads it (``Vec``, or
    ``vecs.Vec`` for a module of the user's the function imports)."""
    found = []
    for key, value in list(namespace.items()):
        if isinstance(value, type) and key.isidentifier() and user_class(value):
            found.append((value, gast.Name(id=key, ctx=gast.Load(), annotation=None, type_comment=None)))
        elif isinstance(value, types.ModuleType) and key.isidentifier() and \
                not str(getattr(value, "__file__", None) or LIBRARY[0]).startswith(LIBRARY):
            for attr, held in list(vars(value).items()):
                if isinstance(held, type) and attr.isidentifier() and \
                        held.__module__ == value.__name__ and user_class(held):
                    found.append((held, gast.Attribute(value=gast.Name(id=key, ctx=gast.Load(), annotation=None, type_comment=None), attr=attr,
                                                       ctx=gast.Load())))
    return found
