"""The check generated code makes before ``reversed(xs)`` it reads as ``xs[::-1]``.

``for W in reversed(weights)`` walks a list from last to first; adgen writes it
``xs[::-1]`` (``transforms/reversed_items.py``), which gives the same items, each gradient
going back to its place, where ``xs`` is a list, a tuple, an array or a range. Whether it is
one is known only when the code runs: right before the statement, this check refuses at the
user's line anything else (a dict, an iterator, an object with a ``__reversed__`` or a
slicing of its own), whose ``[::-1]`` would not be what ``reversed`` gives.
"""

from __future__ import annotations

import linecache
from typing import Any

import numpy as np

from adgen.rules.registry import defnondiff

__all__ = ["reversible"]

_KINDS = (list, tuple, np.ndarray, range)


def reversible(xs: Any, file: str, line: int) -> None:
    """Refuses, at ``file:line``, ``reversed(xs)`` where ``xs`` is not a list, a tuple, a
    NumPy array (of at least one dimension) or a range."""
    if type(xs) in _KINDS and not (type(xs) is np.ndarray and xs.ndim == 0):
        return
    from adgen.errors import Location, UnsupportedError

    raise UnsupportedError(
        f"reversed() of a {type(xs).__name__}: adgen differentiates reversed() of a list, a "
        "tuple or an array (read as xs[::-1]), and cannot follow the iterator it returns "
        "for anything else",
        Location(file, line, 0, linecache.getline(file, line)),
        hint="make it a list first (reversed(list(xs))), or walk it with an index: "
             "for i in reversed(range(len(xs))): ... xs[i]")


# a call of it has no derivative and changes nothing: the analyses see a rule without one
reversible = defnondiff(reversible)
