"""The check generated code makes before a method call it compiled as the call of a class's
function, on an object the function built.

``sim = Heat(dt); sim.step(u)`` with ``Heat.step`` writing ``u``: adgen compiles the call as
``Heat.step(sim, u)`` (``transforms/bound_callees.py``), which holds only while ``sim`` is a
``Heat`` holding no ``step`` of its own (an ``__init__`` choosing a scheme, ``self.step =
self.rk4``, sets one). The forward checks that right before each such call, and refuses at
the user's line where it does not hold: the call runs no other code than Python's would.
"""

from __future__ import annotations

import linecache
from typing import Any

from adgen.rules.registry import defnondiff

__all__ = ["method_of_class"]


def method_of_class(obj: Any, cls: type, name: str, file: str, line: int) -> None:
    """Refuses, at ``file:line``, a call ``obj.name(...)`` compiled as ``cls``'s function where
    ``obj`` is not of class ``cls`` or holds a value of its own under ``name``."""
    own = getattr(obj, "__dict__", None)
    if type(obj) is cls and not (isinstance(own, dict) and name in own):
        return
    from adgen.errors import Location, UnsupportedError

    what = f"holds a {name} of its own (set on the object, by its __init__ or a call)" \
        if type(obj) is cls else f"is a {type(obj).__name__}, not the {cls.__name__} " \
        "its constructor was expected to make"
    raise UnsupportedError(
        f"{name}() is called on an object this function built that {what}; adgen compiled "
        f"the call as {cls.__name__}.{name}, which is not what Python runs here",
        Location(file, line, 0, linecache.getline(file, line)),
        hint=f"build the object outside and pass it in (its own {name} then runs as Python "
             f"finds it), or call {cls.__name__}.{name}(obj, ...) if that is the one meant")


# a call of it has no derivative and changes nothing: the analyses see a rule without one
method_of_class = defnondiff(method_of_class)
