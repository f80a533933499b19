"""The checks forward mode's code runs where it reads an attribute of a constant object as a
constant (``transforms/analyses/constant_attributes.py``).

A method given no tangent for its object that stores one attribute (``self.h = ...``) and
reads another (``np.sqrt(self.data)``) reads the other as a constant: no tangent, so no
``0 / 0`` from the zero one. That holds where the value read does not hold the object itself
(whose stored attributes then change under it) and where each store stores its value as it is
(no property setter or ``__setattr__`` storing other attributes): both checked here, refused
at the user's line where they do not hold.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adgen.adjoints import locate

__all__ = ["constant_attribute", "plain_attribute_store"]


def constant_attribute(obj: Any, name: str) -> None:
    """Checks the read ``obj.name`` that forward mode takes for a constant: a stored
    attribute (not a property computed from others), whose value does not hold ``obj``.

    Raises:
        UnsupportedError: at the user's line.
    """
    from adgen.runtime import stored_attribute

    stored_attribute(obj, name)  # a property or descriptor: refused as a read with a tangent
    value = getattr(obj, name, None)
    if isinstance(value, (np.ndarray, np.generic, float, int, complex, str, type(None))):
        return
    if _holds(value, obj, set()):
        from adgen.errors import UnsupportedError

        raise locate(UnsupportedError(
            f"{type(obj).__name__}.{name} holds the object itself, whose attributes this "
            "function stores: forward mode reads it as a constant",
            hint=f"read the attribute from the object directly (self.h, not "
                 f"self.{name}...h), or give the object a tangent: "
                 "adgen.jvp(type(m).method, (m, x), (None, v))"))


def _holds(value: Any, obj: Any, seen: set[int]) -> bool:
    """Whether ``value`` is ``obj`` or reaches it through items and attributes."""
    if value is obj:
        return True
    if isinstance(value, (np.ndarray, np.generic, float, int, complex, str, bytes,
                          type(None), type)) or callable(value) or id(value) in seen:
        return False
    seen.add(id(value))
    if isinstance(value, dict):
        return any(_holds(v, obj, seen) for v in value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_holds(v, obj, seen) for v in value)
    held = getattr(value, "__dict__", None)
    return isinstance(held, dict) and any(_holds(v, obj, seen) for v in held.values())


def plain_attribute_store(obj: Any, name: str, bypass: bool = False) -> None:
    """Checks the store ``obj.name = v`` of an object whose other attributes forward mode
    reads as constants: it must store ``v`` as ``name`` (a property's setter or a class's
    ``__setattr__`` may store another attribute, which a read would then take for a
    constant: silently). ``bypass``: the store is ``object.__setattr__(obj, "name", v)``,
    which does not run the class's ``__setattr__``.

    Raises:
        UnsupportedError: at the user's line.
    """
    cls = type(obj)
    if cls.__setattr__ is _OBJECT_SETATTR and getattr(cls, name, None) is None:
        # (the common case, first: no __setattr__ of the class's own and nothing of that
        # name on the class, so nothing but the value is stored; jvp checks every store of
        # an object with a tangent, 0.5 us here against 2.4 us through stored_as_written)
        return
    from adgen.runtime import stored_as_written

    stored_as_written(obj, name, bypass)


_OBJECT_SETATTR = object.__setattr__
