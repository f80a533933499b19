"""A list, dict or object parameter the function changes in place, also reached through
another parameter: refused when the call is made.

The adjoint of a list, dict or object follows the parameter's *name*: a function's code
takes its parameters for separate containers. A call that hands it one object twice breaks
that::

    def rescale(p, q):
        p.a = p.a * 3.0          # rebinds the attribute of the object p ...
        return np.sum(q.a ** 2)  # ... which q reads, when q is p

    def loss(x):
        p = Model(x)
        return rescale(p, p)     # (or rescale(p, [p]), or q holding p: q.inner is p)

The pullback sends ``q.a``'s gradient to the attribute ``q`` was given, not through the line
that rebound it: a silently wrong gradient (1.8 x for 18 x). Only the call can tell, so the
forward of a function that changes a container parameter in place (the parameters
``reverse_pullback`` takes entry items of) calls :func:`refuse_shared` first: another
parameter that is that container, or holds it at any depth (attributes, items; each value
once, 4096 values in all), raises a ``MutationError`` at the line of the write, under both
policies.
"""

from __future__ import annotations

from typing import Any

__all__ = ["refuse_shared"]


def refuse_shared(written: Any, others: tuple[Any, ...], name: str,
                  other_names: tuple[str, ...], file: str, line: int) -> None:
    """Raises ``MutationError`` at ``file:line`` when one of ``others`` (the parameters
    ``other_names``) is ``written`` or holds it: attributes, list, tuple and set items, dict
    values, each value once, 4096 values in all. (Self-contained: ``adgen FILE -o`` copies
    it into standalone modules.)"""
    plain = (float, int, bool, complex, str, bytes, type(None))
    if all(type(o) in plain or type(o).__module__ == "numpy" for o in others):
        return  # numbers and arrays hold nothing (the common case: no import below)
    import linecache
    import types

    import numpy as np

    from adgen.errors import Location, MutationError

    leaves = (np.ndarray, np.generic, float, int, complex, bool, str, bytes, type(None),
              types.ModuleType, types.FunctionType, type)
    if isinstance(written, leaves):
        return
    for other, other_name in zip(others, other_names):
        seen: set[int] = set()
        todo = [other]
        found = False
        while todo and len(seen) < 4096:
            v = todo.pop()
            if v is written:
                found = True
                break
            if id(v) in seen or isinstance(v, leaves):
                continue
            seen.add(id(v))
            if isinstance(v, (list, tuple, set, frozenset)):
                todo.extend(v)
            elif isinstance(v, dict):
                todo.extend(v.values())
            else:
                held = getattr(v, "__dict__", None)
                if isinstance(held, dict):
                    todo.extend(held.values())
                for slot in getattr(type(v), "__slots__", ()):
                    if isinstance(slot, str) and hasattr(v, slot):
                        todo.append(getattr(v, slot))
        if not found:
            continue
        how = "is the same object as" if other is written else "holds"
        raise MutationError(
            f"{other_name} {how} {name}, which the function changes in place here; adgen "
            f"takes the function's list, dict and object parameters for separate ones, and "
            f"the gradient of what it reads through {other_name} would miss this change",
            Location(file, line, 0, linecache.getline(file, line)),
            hint=f"pass separate objects (a copy: copy.copy({name}) or copy.deepcopy), or "
                 f"read {name} through one parameter only")
