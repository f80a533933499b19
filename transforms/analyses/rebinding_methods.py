"""Which attribute names the user's methods rebind on an object.

A method called as ``m.score(x)`` and then rebound on ``m`` by a method that call is followed
by (``m.swap(other)`` doing ``self.score = other.score``, ``t.lend_to(m)`` doing ``m.score =
self.score``) is found under that name in ``m``'s ``__dict__`` when the pullback of the first
call runs: the caller must keep ``m``'s slots as the call found them
(``runtime.with_receiver``'s ``slots``). Read from the source of the methods of the classes a
function can name (its globals and closure cells, the classes of the objects they hold):
the attribute names their methods store on any object (``x.name = ...``, or any name where
they call ``setattr``), but for ``self.name = ...`` in ``__init__`` (an object being built
has had no method called yet).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
import weakref
from typing import Any

ANY = "*"  # setattr(o, key, v): any name

_STORED: weakref.WeakKeyDictionary[type, frozenset[str]] = weakref.WeakKeyDictionary()


def rebound_names(namespace: dict[str, Any], classes: tuple[type, ...] = ()
                  ) -> frozenset[str]:
    """The attribute names the methods of the classes ``namespace`` names (or of the objects
    it holds), and of ``classes``, store, ``ANY`` among them where one calls ``setattr``."""
    out: set[str] = set()
    for value in [*namespace.values(), *classes]:
        cls = value if isinstance(value, type) else type(value)
        if _users(cls):
            out |= _stored_by(cls)
    return frozenset(out)


def _users(cls: type) -> bool:
    module = str(getattr(cls, "__module__", "") or "")
    return module not in ("builtins", "__builtin__") and \
        not module.startswith(("numpy", "adgen", "scipy", "typing", "collections", "abc",
                               "functools", "enum", "types"))


def _stored_by(cls: type) -> frozenset[str]:
    try:
        return _STORED[cls]
    except (KeyError, TypeError):
        pass
    names: set[str] = set()
    for klass in cls.__mro__:
        if not _users(klass):
            continue
        for key, member in vars(klass).items():
            fn = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
            if isinstance(fn, types.FunctionType):
                names |= _stored_in(fn, key == "__init__")
    found = frozenset(names)
    try:
        _STORED[cls] = found
    except TypeError:
        pass
    return found


def _stored_in(fn: types.FunctionType, init: bool) -> set[str]:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return set()
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if not (init and isinstance(node.value, ast.Name) and node.value.id == "self"):
                out.add(node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "setattr":
            out.add(ANY)
    return out
