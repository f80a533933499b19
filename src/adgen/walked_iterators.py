"""The check generated code makes before a ``for`` loop whose iterable may be an iterator
that something else advances, or computes its items from values the loop changes.

Python's ``for v in it`` takes each item from ``it`` when its step begins. adgen's loop
(desugar: ``seq = loop_sequence(it)``, ``for i in range(len(seq))``) lists the items first.
For a list, a tuple, an array or a range that is the same walk; for an iterator it is not
where the loop's body, or what it calls, advances the same iterator (``next(it)``, a helper
``skip(it)``, ``zip(it, it)``, ``islice(it, 2)`` then ``next(it)``), or where the iterator
makes its items lazily from values the body changes (``map(lambda i: y[i], ...)`` with
``y[...] = ...`` in the body), or where the loop stops early and code that holds the
iterator reads the rest: Python's loop and adgen's would walk other items, a silently wrong
value and gradient. ``transforms/shared_iterators.check_walked_iterators`` puts
:func:`walked_iterator` before such a loop, for each object its header walks; the check
refuses, at the loop's line, an object that is an iterator (its type has ``__next__``:
``iter(...)``, ``map``, ``filter``, ``zip``, ``enumerate`` objects, generators, ``itertools``
objects); lists, tuples, arrays, ranges, dicts and the user's sequences pass.
"""

from __future__ import annotations

from typing import Any

from adgen.rules.registry import defnondiff

__all__ = ["walked_iterator"]


def walked_iterator(xs: Any, why: str, file: str, line: int) -> bool:
    """Refuses, at ``file:line``, a for loop over ``xs`` when ``xs`` is an iterator; ``why``
    says what in the loop would make adgen's walk differ from Python's. Returns True."""
    if not hasattr(type(xs), "__next__"):
        return True
    import linecache  # (here: a standalone module copies this function, not the module)

    from adgen.errors import Location, UnsupportedError

    text = linecache.getline(file, line)
    kind = type(xs).__name__
    raise UnsupportedError(
        f"this for loop walks an iterator (a {kind} object) and {why}: adgen lists the "
        "iterator's items when the loop starts, where Python takes each item when its step "
        "begins, so the two would walk other items (another value and gradient)",
        Location(file, line, len(text) - len(text.lstrip()), text),
        hint="make the list first (items = list(it)) and walk it, by index where the loop "
             "also takes items itself (for k in range(0, len(items), 2)); or walk the list "
             "or array the iterator was made from")


# calls of it have no derivative and change nothing: the analyses see a rule without one
walked_iterator = defnondiff(walked_iterator)
