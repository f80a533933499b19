"""Counters of global containers that compiled code updates as numbers, checked around the
calls of functions adgen runs as they come (callbacks).

``STATS["calls"] += 1`` of a global dict holding an int is compiled as a number's update
(``transforms/analyses/number_items.py``): no in-place write, no saved copy. That holds while
the item holds an immutable value, which an ``item`` guard checks when a gradient is called.
A callback run during the gradient (``cb(x)`` of a parameter, through adgen's dispatch) may
put an array there, ``STATS["calls"] = np.full(3, 2)``, which the function then reads
(``w = STATS["calls"]``; ``q = w * x ** 2``) or the callback returns: the next
``STATS["calls"] += 1`` changes that array in place, under the value ``q``'s pullback reads
(gradient ``6 x`` for Python's ``4 x``, silently, under both policies).

Each counter compiled as a number is held here (:func:`hold_counter`); a callback called
through :func:`adgen.runtime.call_forward` or :func:`adgen.callbacks.checked_callable` is
run by :func:`keeping_counters`, which refuses, naming the counter's update, one that leaves
anything but an immutable value in such a counter where it found another object. So is the
forward pass of a gradient as a whole (``compiled_calls.run_forward``), for a helper adgen
compiles into the function that stores the array (``w = fill(x)`` called by its name). A
run that puts an array there, updates it, and puts a number back before it ends passes that
check: a helper compiled into the function that may store anything but a number there is
refused when compiling instead (``analyses.number_items.refuse_counter_stores``), and a
callback when it returns (above).
"""

from __future__ import annotations

import functools
from typing import Any

from adgen.errors import Location, UnsupportedError

__all__ = ["COUNTERS", "hold_counter", "keeping_counters"]

# (id of the container, key, attr) -> (the container, key, attr, the counter as the user
# writes it, where the update is)
COUNTERS: dict[tuple[int, Any, bool], tuple[Any, Any, bool, str, Location]] = {}
_MISSING = object()


def hold_counter(container: Any, key: Any, attr: bool, name: str, where: Location) -> None:
    """Records that compiled code updates ``container[key]`` (``container.key`` when
    ``attr``; the container's name is ``name`` there) as a number, at ``where``."""
    item = f"{name}.{key}" if attr else f"{name}[{key!r}]"
    COUNTERS.setdefault((id(container), key, attr), (container, key, attr, item, where))


def keeping_counters(fn: Any, shown: Any = None) -> Any:
    """``fn``, called so that it refuses to leave a mutable value (an array, a list) in a
    counter of :data:`COUNTERS` it changed; ``shown`` is the callee named (or its name; the
    first argument, or ``fn`` itself, when None)."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        before = {k: _held(c, key, attr) for k, (c, key, attr, _, _) in COUNTERS.items()}
        out = fn(*args, **kwargs)
        for k, (c, key, attr, item, where) in list(COUNTERS.items()):
            now = _held(c, key, attr)
            if now is not before.get(k, _MISSING) and now is not _MISSING and \
                    not _immutable(now):
                callee = shown if shown is not None else args[0] if args else fn
                name = callee if isinstance(callee, str) else \
                    getattr(callee, "__qualname__", None) or type(callee).__name__
                raise UnsupportedError(
                    f"{name}, called while adgen differentiates, put a {type(now).__name__} "
                    f"into {item}, which this line updates as a counter (compiled as a "
                    "number's update, with no in-place write): the update would now change "
                    "that object in place, under values the derivative reads", where,
                    hint="keep the counter a number: put the array under another key, or "
                         "return it from the function and use what it returns")
        return out

    return call


def _held(container: Any, key: Any, attr: bool) -> Any:
    """What the counter holds now (without running a property's getter), or _MISSING."""
    import inspect

    from adgen.transforms.bindings import UNBOUND

    if attr:
        value = inspect.getattr_static(container, key, UNBOUND)
    elif type(container) is dict:
        value = container.get(key, UNBOUND)
    elif type(container) is list and type(key) is int and \
            -len(container) <= key < len(container):
        value = container[key]
    else:
        return _MISSING
    return _MISSING if value is UNBOUND else value


def _immutable(value: Any) -> bool:
    from adgen.transforms.bindings import holds_immutable

    return holds_immutable({0: value}, 0, False)
