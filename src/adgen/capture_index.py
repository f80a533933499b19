"""The index of the live captures that view one root buffer (``CaptureIndex``): a guarded write
finds the captures its region overlaps at about the cost of the write itself, however many are
live. ``guards`` keeps one per written buffer in the running forward's scope; ``-o`` modules
copy the source (transforms/standalone.py), so it uses only numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from adgen.shadow_memory import root_of

if TYPE_CHECKING:
    from adgen.guards import Capture


class CaptureIndex:
    """The live captures that view one root buffer, indexed by the elements they view, so
    that a guarded write costs about what the write itself costs, however many captures
    are live (an in-place factorisation keeps O(N^2) of them, and a write overlaps none).

    Until a write finds more than ``SMALL`` captures, they are a list checked one by one
    (exactly, as :func:`overlaps`). Then ``counts`` (an int32 array laid out like the
    root's elements) holds, per element, how many live captures view it: a write whose
    region has no counted element overlaps no capture, which one NumPy reduction over the
    region decides exactly (two views of one buffer with the root's element size and
    alignment share memory exactly when they share an element). Only when it has one are
    the captures whose extents overlap the region looked up, in ``levels``: a capture
    spanning ``[lo, hi)`` elements sits in the one or two blocks of size ``2 ** shift >= hi
    - lo`` it touches (``levels[shift][block]``), so a lookup visits a few blocks per shift
    and checks only captures near the region. A capture or a region that does not map
    onto the root's elements (another dtype's view) is checked exactly against everything.
    """

    SMALL = 16
    __slots__ = (
        "added",
        "counts",
        "indexed",
        "levels",
        "listed",
        "loose",
        "low",
        "root",
        "unit",
    )

    def __init__(self, root: np.ndarray) -> None:
        self.root = root
        self.unit = root.itemsize
        self.low = 0
        self.counts: np.ndarray | None = None
        self.listed: list[Capture] = []  # before indexing: every live capture
        # once indexed: id(capture) -> (capture, counts view (None: 0-d), lo, hi, shift, rank)
        self.indexed: dict[int, tuple[Capture, np.ndarray | None, int, int, int, int]] = {}
        self.loose: list[Capture] = []  # once indexed: captures that do not map
        self.levels: dict[int, dict[int, dict[int, Capture]]] = {}
        self.added = 0  # captures indexed so far: hits are reported in capture order

    def __bool__(self) -> bool:
        return bool(self.listed or self.indexed or self.loose)

    def add(self, cap: Capture) -> None:
        if self.counts is None:
            self.listed.append(cap)
        else:
            self._index(cap)

    def remove(self, cap: Capture) -> None:
        if self.counts is None:
            self.listed.remove(cap)
            return
        entry = self.indexed.pop(id(cap), None)
        if entry is None:
            self.loose.remove(cap)
            return
        _, marks, lo, hi, shift, _ = entry
        if marks is None:
            self.counts[lo] -= 1
        else:
            marks -= 1
        level = self.levels[shift]
        for block in {lo >> shift, (hi - 1) >> shift}:
            level[block].pop(id(cap))
            if not level[block]:
                del level[block]
        if not level:
            del self.levels[shift]

    def overlapping(self, region: np.ndarray) -> list[Capture]:
        """The live captures that share memory with ``region`` (a view of the root)."""
        if region.size == 0:
            return []
        if self.counts is None and (len(self.listed) <= self.SMALL or
                                    not self._start_index()):
            return [c for c in self.listed if overlaps(c.array, region)]
        hits = [c for c in self.loose if overlaps(c.array, region)]
        mapped = self._map(region)
        if mapped is None:  # not on the root's element grid: every capture is a candidate
            hits += [e[0] for e in self.indexed.values() if overlaps(e[0].array, region)]
            return hits
        marks, lo, hi = mapped
        if not (self.counts[lo] if marks is None else np.count_nonzero(marks)):
            return hits
        found: list[tuple[int, Capture]] = []
        seen: set[int] = set()
        for shift, level in self.levels.items():
            first, last = lo >> shift, (hi - 1) >> shift
            if last - first < len(level):
                blocks = [level[b] for b in range(first, last + 1) if b in level]
            else:
                blocks = [caps for b, caps in level.items() if first <= b <= last]
            for caps in blocks:
                for k, cap in caps.items():
                    if k in seen:
                        continue
                    seen.add(k)
                    _, _, clo, chi, _, rank = self.indexed[k]
                    if clo < hi and lo < chi and overlaps(cap.array, region):
                        found.append((rank, cap))
        found.sort(key=lambda f: f[0])
        return [cap for _, cap in found] + hits

    def _start_index(self) -> bool:
        """Builds the element index over the listed captures (False: the root's layout
        does not allow one, and the list stays)."""
        root = self.root
        if any(s % self.unit for s in root.strides):
            return False
        low, high = extent(root)
        self.low = low
        self.counts = np.zeros((high - low) // self.unit, dtype=np.int32)
        listed, self.listed = self.listed, []
        for cap in listed:
            self._index(cap)
        return True

    def _map(self, x: np.ndarray) -> tuple[np.ndarray | None, int, int] | None:
        """The view of ``counts`` that ``x`` is of the root, and x's extent in elements;
        None if x is not laid out on the root's elements. For a 0-d ``x`` (one element, a
        scalar loop's write) the view is None: its count is ``counts[lo]``."""
        unit = self.unit
        if x.itemsize != unit or root_of(x) is not self.root:
            return None
        first = x.__array_interface__["data"][0] - self.low  # bytes from the root's start
        if first % unit:
            return None
        lo = hi = first // unit  # x's extent, in elements of the root
        if not x.ndim:
            return None, lo, lo + 1
        strides = []
        for n, st in zip(x.shape, x.strides):
            if st % unit:
                return None
            st //= unit
            if st > 0:
                hi += (n - 1) * st
            else:
                lo += (n - 1) * st
            strides.append(st * 4)
        marks = np.ndarray(x.shape, np.int32, buffer=self.counts, offset=first // unit * 4,
                           strides=tuple(strides))
        return marks, lo, hi + 1

    def _index(self, cap: Capture) -> None:
        mapped = self._map(cap.array)
        if mapped is None:
            self.loose.append(cap)
            return
        marks, lo, hi = mapped
        if marks is None:
            self.counts[lo] += 1
        else:
            marks += 1
        shift = max(3, (hi - lo - 1).bit_length())  # 2 ** shift >= hi - lo: two blocks
        self.added += 1
        self.indexed[id(cap)] = (cap, marks, lo, hi, shift, self.added)
        level = self.levels.setdefault(shift, {})
        for block in {lo >> shift, (hi - 1) >> shift}:
            level.setdefault(block, {})[id(cap)] = cap


def overlaps(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` and ``b`` share memory (True where NumPy's bounded check gives up)."""
    if not np.may_share_memory(a, b):
        return False
    try:
        return bool(np.shares_memory(a, b, max_work=1000))
    except np.exceptions.TooHardError:
        return True


def extent(x: np.ndarray) -> tuple[int, int]:
    """The bytes ``x`` spans in memory: ``[lo, hi)`` addresses."""
    lo = x.__array_interface__["data"][0]
    span = [(n - 1) * st for n, st in zip(x.shape, x.strides)]
    return lo + sum(v for v in span if v < 0), lo + sum(v for v in span if v > 0) + x.itemsize
