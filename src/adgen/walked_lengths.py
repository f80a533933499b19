"""The check generated code makes at each step of a ``for`` loop over a list, dict or set
that something the loop calls may change the length of.

Python's ``for w in ws`` reads ``ws`` live: it stops once its index reaches the list's
*current* length, so an item appended during the loop (``WS.append(v)`` in a function the
loop calls, ``self.items.append`` in a method, a helper's ``ws2 = ws; ws2.append(v)``) is
walked too, and a removed one ends the walk early. ``for k in d`` over a dict or a set
raises RuntimeError ("dictionary changed size during iteration") at the step after its size
changed. adgen's loop counts the items the list held when the loop started
(``transforms/walked_lengths.py``), so where the length changes on the way, it walks other
items than Python does (a silently wrong value and gradient), or runs where Python raises.

:func:`walked_list` (before the loop) keeps the list and its length; :func:`same_length`,
called at the start of each step and once after the last step (the loop's ``else``), refuses
at the user's line a walk whose list, dict or set changed its length since the loop started.
A tuple, an array or a range cannot change: :func:`walked_list` returns None for them, and
the checks pass.
"""

from __future__ import annotations

import linecache
from typing import Any

from adgen.rules.registry import defnondiff

__all__ = ["WalkedList", "same_length", "walked_list"]


class WalkedList:
    """A list, dict or set a ``for`` loop walks, its length when the loop started, and for a
    dict or set its keys then and the number of steps checked so far."""

    # a plain class (no dataclass: the first gradient makes none, tests/test_cold_start_records)
    __slots__ = ("xs", "n", "keys", "steps")

    def __init__(self, xs: Any) -> None:
        self.xs = xs
        self.n = len(xs)
        self.keys = None if isinstance(xs, list) else tuple(xs)
        self.steps = 0


def walked_list(xs: Any, file: str, line: int) -> WalkedList | None:
    """What :func:`same_length` needs to check a loop over ``xs`` at ``file:line`` (None
    where ``xs`` is no list, dict or set: its length cannot change)."""
    return WalkedList(xs) if isinstance(xs, (list, dict, set)) else None


def same_length(walk: WalkedList | None, file: str, line: int) -> bool:
    """Refuses, at ``file:line``, a step of a loop whose list, dict or set has another length
    than when the loop started. Returns True."""
    if walk is None:
        return True
    if len(walk.xs) == walk.n:
        if walk.keys is None or _same_keys(walk):
            return True
        from adgen.errors import Location, UnsupportedError

        text = linecache.getline(file, line)
        kind = type(walk.xs).__name__
        raise UnsupportedError(
            f"the keys of the {kind} this for loop walks changed during the loop (not its "
            f"size): Python's loop walks the {kind} as it is at each step (the new keys, or "
            f"RuntimeError: {'dictionary' if kind == 'dict' else kind} keys changed during "
            "iteration), adgen's walks the keys it had when the loop started, which would "
            "give another value and gradient",
            Location(file, line, len(text) - len(text.lstrip()), text),
            hint="walk a copy of the keys (for k in list(d)), or remove and add keys after "
                 "the loop")
    from adgen.errors import Location, UnsupportedError

    text = linecache.getline(file, line)
    where = Location(file, line, len(text) - len(text.lstrip()), text)
    now = len(walk.xs)
    if isinstance(walk.xs, list):
        raise UnsupportedError(
            f"the list this for loop walks changed its length during the loop (it had "
            f"{walk.n} items when the loop started, {now} now): Python's loop walks the list "
            f"as it is at each step ({'the new items too' if now > walk.n else 'and stops early'}), "
            "adgen's walks the items it had when the loop started, which would give another "
            "value and gradient",
            where,
            hint="walk a copy (for w in list(ws)) if the new items should not be walked, or "
                 "an index in a while loop (i = 0; while i < len(ws): ...; i += 1) if they "
                 "should; or change the list after the loop")
    kind = type(walk.xs).__name__
    raise UnsupportedError(
        f"the {kind} this for loop walks changed size during the loop ({walk.n} items when "
        f"the loop started, {now} now): Python raises RuntimeError ({kind if kind == 'set' else 'dictionary'} "
        "changed size during iteration) here",
        where,
        hint="walk a copy of the keys (for k in list(d)), or add and remove items after "
             "the loop")


def _same_keys(walk: WalkedList) -> bool:
    """Whether the dict or set ``walk`` keeps (of the length it had) may still be walked as
    adgen walks it: at each step the key the step walks is still there (one deleted ahead,
    with another added, is a key Python walks instead), and after the last step (the loop's
    ``else``: the check after the steps) the keys are the ones it had, in their order (a
    walked key deleted and another added, a key moved to the end, Python walks those too)."""
    keys = walk.keys
    assert keys is not None
    i = walk.steps
    walk.steps = i + 1
    if i < len(keys):
        return keys[i] in walk.xs
    return tuple(walk.xs) == keys


# calls of them have no derivative and change nothing: the analyses see rules without one
walked_list = defnondiff(walked_list)
same_length = defnondiff(same_length)
