"""The checks generated code makes around ``reversed(xs)`` it reads as ``xs[::-1]``.

``for W in reversed(weights)`` walks a list from last to first; adgen writes it
``xs[::-1]`` (``transforms/reversed_items.py``), which gives the same items, each gradient
going back to its place, where ``xs`` is a list, a tuple, an array or a range. Whether it is
one is known only when the code runs: right before the statement, :func:`reversible` refuses
at the user's line anything else (a dict, an iterator, an object with a ``__reversed__`` or a
slicing of its own), whose ``[::-1]`` would not be what ``reversed`` gives.

``[::-1]`` copies a list when the loop starts; Python's ``reversed`` reads it by index as the
loop goes (item ``n - 1 - k`` at step ``k``, and stops where the list has become shorter). A
loop that changes the list on the way (``WS[0] = ...`` in a function it calls) would see
other items in Python. Where the loop walks a list, :func:`reversible` returns a
:class:`ReversedWalk` (the list and its items at the start), and :func:`reversed_read`,
called at each step before its item is used, refuses at the user's line a step whose item
is no longer the one the copy holds (an item replaced, the list shortened). Appending does
not change what ``reversed`` reads, and passes.
"""

from __future__ import annotations

import linecache
from typing import Any

import numpy as np

from adgen.rules.registry import defnondiff

__all__ = ["ReversedWalk", "reversed_read", "reversible"]

_KINDS = (list, tuple, np.ndarray, range)


class ReversedWalk:
    """A list ``reversed()`` walks, and its items when the walk started."""

    # a plain class (no dataclass: the first gradient makes none, tests/test_cold_start_records)
    __slots__ = ("xs", "items")

    def __init__(self, xs: list[Any]) -> None:
        self.xs = xs
        self.items = tuple(xs)


def reversible(xs: Any, file: str, line: int) -> ReversedWalk | None:
    """Refuses, at ``file:line``, ``reversed(xs)`` where ``xs`` is not a list, a tuple, a
    NumPy array (of at least one dimension) or a range.

    Returns:
        For a list, what :func:`reversed_read` needs to check each step of a loop over it;
        None for the others (a tuple does not change, an array's ``[::-1]`` is a view, which
        reads the array as ``reversed`` does).
    """
    if type(xs) in _KINDS and not (type(xs) is np.ndarray and xs.ndim == 0):
        return ReversedWalk(xs) if type(xs) is list else None
    from adgen.errors import UnsupportedError

    raise UnsupportedError(
        f"reversed() of a {type(xs).__name__}: adgen differentiates reversed() of a list, a "
        "tuple or an array (read as xs[::-1]), and cannot follow the iterator it returns "
        "for anything else",
        _location(file, line),
        hint="make it a list first (reversed(list(xs))), or walk it with an index: "
             "for i in reversed(range(len(xs))): ... xs[i]")


def reversed_read(walk: ReversedWalk | None, k: int, file: str, line: int) -> bool:
    """Refuses, at ``file:line``, step ``k`` of a loop over ``reversed(xs)`` read as
    ``xs[::-1]`` where Python's ``reversed`` would read another item: the list's item
    ``n - 1 - k`` (``n`` its length when the loop started) has been replaced, or the list
    has become shorter than that. Returns True (it is also a comprehension's condition)."""
    if walk is None:
        return True
    at = len(walk.items) - 1 - k
    if at < len(walk.xs) and walk.xs[at] is walk.items[at]:
        return True
    from adgen.errors import UnsupportedError

    what = f"its item {at} was replaced" if at < len(walk.xs) else \
        f"it has only {len(walk.xs)} items now"
    raise UnsupportedError(
        f"the list this loop walks with reversed() changed during the loop ({what} before "
        f"step {k + 1} reads it): Python's reversed() reads the list as it goes, and adgen reads "
        "the items the list held when the loop started (xs[::-1]), which would give another "
        "value and gradient",
        _location(file, line),
        hint="walk the list by index, which reads it as it is at each step: for i in "
             "reversed(range(len(xs))): x = xs[i]; or change the list after the loop")


def _location(file: str, line: int) -> Any:
    """The user's line, the caret under its first character."""
    from adgen.errors import Location

    text = linecache.getline(file, line)
    return Location(file, line, len(text) - len(text.lstrip()), text)


# calls of them have no derivative and change nothing: the analyses see rules without one
reversible = defnondiff(reversible)
reversed_read = defnondiff(reversed_read)
