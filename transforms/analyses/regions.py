"""Regions: which rows (first-axis positions) of an array an index touches, when the function's
text says so for every call.

Input: a function in SSA form after lower_mutation (read only) and its effects. Output:
:class:`Regions`, whose :meth:`Regions.rows` maps an index expression to the rows it reads or
writes on axis 0 (``None``: unknown), and :meth:`Regions.same_binding`, which tells whether a
name holds the same object wherever it is read (bound once, outside every loop).

Rows are a ``[start, stop)`` interval (a constant integer or unit-step slice with constant
non-negative bounds) or a frozenset of rows (a fancy index: a flat list of constant
non-negative ints, written in place or bound to a name, or ``np.array`` / ``np.asarray`` of
one, which nothing writes). Anything else is unknown: a negative constant (counted from an end
the text does not know), a bool (``x[True]`` is every row, ``[True, False]`` a mask), an index
computed or passed in. Only the first axis is read from a tuple index (``x[[0, 4], 1]``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast
import numpy as np
from adgen.transforms.analyses.effects import Effects
from adgen.transforms.walk import walk

Rows = tuple[int, int] | frozenset[int]

# NumPy calls that make an index array of the list they are given (np.array([0, 4]))
_ARRAY_CALLS = (np.array, np.asarray)
# an interval's open end (x[2:]): beyond any row
_END = 2 ** 62


class Regions:
    """The rows an index touches, over one function."""

    def __init__(self, fn: gast.FunctionDef, eff: Effects,
                 resolve: Callable[[gast.expr], Any]) -> None:
        """Args:
            fn: the function in SSA form.
            eff: its effects (which buffers each name views and which statements write).
            resolve: a global name or attribute chain -> the object it is bound to (None:
                local or unknown), so ``np.array`` is recognised by object, not spelling.
        """
        self.eff = eff
        self.resolve = resolve
        self.bindings: dict[str, int] = {}
        self.value: dict[str, gast.expr] = {}
        self.in_loop: set[str] = set()
        for a in fn.args.args:
            self.bindings[a.id] = 1
        self._count(fn.body, False)

    def _count(self, stmts: list[gast.stmt], looped: bool) -> None:
        for s in stmts:
            inner = looped or isinstance(s, (gast.For, gast.While))
            if isinstance(s, gast.Assign) and len(s.targets) == 1 and \
                    isinstance(s.targets[0], gast.Name):
                self.value[s.targets[0].id] = s.value
            for fieldname in ("targets", "target"):
                sub = getattr(s, fieldname, None)
                for t in sub if isinstance(sub, list) else [sub] if sub is not None else []:
                    for n in walk(t):
                        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                            self.bindings[n.id] = self.bindings.get(n.id, 0) + 1
                            if looped or isinstance(s, gast.For):
                                self.in_loop.add(n.id)
            if isinstance(s, gast.FunctionDef):
                self.bindings[s.name] = self.bindings.get(s.name, 0) + 1
                continue
            for fieldname in ("body", "orelse", "finalbody"):
                sub = getattr(s, fieldname, None)
                if isinstance(sub, list):
                    self._count(sub, inner)
            if isinstance(s, gast.Try):
                for h in s.handlers:
                    if h.name is not None:
                        self.bindings[h.name.id] = self.bindings.get(h.name.id, 0) + 1
                    self._count(h.body, inner)

    def same_binding(self, n: str) -> bool:
        """True when ``n`` is bound once, outside every loop (or is a parameter never
        rebound): every read of it in the function sees the same object. A name bound in a
        loop holds another object (perhaps another view of one buffer) each iteration."""
        return self.bindings.get(n) == 1 and n not in self.in_loop

    def rows(self, idx: gast.expr, depth: int = 0) -> Rows | None:
        """The rows on the first axis that the index ``idx`` touches, or None (unknown)."""
        if depth > 4:
            return None
        if isinstance(idx, gast.Tuple):
            # a tuple index: the first axis's part (x[[0, 4], 1], x[2, :])
            return self.rows(idx.elts[0], depth + 1) if idx.elts else None
        if isinstance(idx, gast.Constant):
            v = idx.value
            return (v, v + 1) if type(v) is int and v >= 0 else None
        if isinstance(idx, gast.Slice):
            if idx.step is not None:
                return None
            lo = 0 if idx.lower is None else _int_constant(idx.lower)
            hi = _END if idx.upper is None else _int_constant(idx.upper)
            if lo is None or hi is None:
                return None
            return lo, max(lo, hi)
        if isinstance(idx, gast.List):
            return _listed_rows(idx)
        if isinstance(idx, gast.Name):
            v = self.value.get(idx.id)
            if v is None or not self.same_binding(idx.id) or self._written(idx.id):
                return None
            if isinstance(v, gast.Tuple):
                return self.rows(v, depth + 1)  # x[t] with t = (0, 4): x[0, 4]
            return self._index_array(v, depth)
        return None

    def _index_array(self, v: gast.expr, depth: int) -> Rows | None:
        """The rows of a name's value used as an index: a list of ints, or an index array
        NumPy makes of one (``np.array([0, 4])``, ``np.asarray(t)``)."""
        if isinstance(v, gast.List):
            return _listed_rows(v)
        if isinstance(v, gast.Call) and len(v.args) == 1 and not v.keywords and \
                any(self.resolve(v.func) is f for f in _ARRAY_CALLS):
            a = v.args[0]
            if isinstance(a, gast.Name):
                if not self.same_binding(a.id) or self._written(a.id):
                    return None
                a = self.value.get(a.id)
            if isinstance(a, (gast.List, gast.Tuple)):
                return _listed_rows(a)
        return None

    def _written(self, n: str) -> bool:
        """True when a statement may write what ``n`` holds (an item stored into the list, an
        element into the array, through any alias)."""
        bufs = self.eff.buffers.get(n, set())
        return any(w.buffers & bufs for w in self.eff.writes)


def apart(a: Rows, b: Rows) -> bool:
    """True when two sets of rows share none."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return a[1] <= b[0] or b[1] <= a[0]
    if isinstance(a, tuple):
        a, b = b, a
    if isinstance(b, tuple):
        return not any(b[0] <= r < b[1] for r in a)
    return not (a & b)


def _int_constant(node: gast.expr) -> int | None:
    if isinstance(node, gast.Constant) and type(node.value) is int and node.value >= 0:
        return node.value
    return None


def _listed_rows(node: gast.List | gast.Tuple) -> frozenset[int] | None:
    """The rows of a flat list of constant non-negative ints (an empty list touches none)."""
    rows = [_int_constant(e) for e in node.elts]
    if any(r is None for r in rows):
        return None
    return frozenset(r for r in rows if r is not None)
