"""Deterministic fresh names for generated code (``t1``, ``cond2``, ``x_1``): no uuids.

Not a pass: a helper every rewriting pass shares, so names never clash with the user's.
"""

from __future__ import annotations

from collections.abc import Iterable

import gast
from adgen.transforms.walk import walk


def unused_name(base: str, taken: set[str], sep: str = "", first: int = 1) -> str:
    """``base``, else ``base{sep}{first}``, ``base{sep}{first + 1}``, ...: the first that
    is an identifier not in ``taken``; added to ``taken``."""
    name, k = base, first
    while name in taken or not name.isidentifier():
        name = f"{base}{sep}{k}"
        k += 1
    taken.add(name)
    return name


class Namer:
    """Hands out names not used anywhere in the function, numbered per prefix."""

    def __init__(self, tree: gast.AST, also: Iterable[str] = ()) -> None:
        """``also``: names the function may read besides its own (its globals and closure
        cells): a generated local named like one (a comprehension's ``f`` renamed ``f1``
        beside a global function ``f1``) was resolved as that global by the analyses."""
        self.taken: set[str] = {n.id for n in walk(tree) if isinstance(n, gast.Name)}
        self.taken.update(also)
        # the generated pullback's own parameters and locals
        self.taken |= {"out_bar", "saved", "sh", "top"}
        self.user = frozenset(self.taken)  # the function's own names (and those above)
        self.counts: dict[str, int] = {}

    def fresh(self, prefix: str) -> str:
        n = self.counts.get(prefix, 0)
        while True:
            n += 1
            candidate = f"{prefix}{n}"
            if candidate not in self.taken:
                break
        self.counts[prefix] = n
        self.taken.add(candidate)
        return candidate

    def temporary(self, name: str) -> bool:
        """``name`` is a temporary this namer made (``t3``), not one of the user's."""
        return name not in self.user and name[:1] == "t" and name[1:].isdigit()

    def reserve(self, name: str) -> str:
        """Claims ``name`` if free, else a numbered variant of it."""
        if name not in self.taken:
            self.taken.add(name)
            return name
        return self.fresh(name + "_")
