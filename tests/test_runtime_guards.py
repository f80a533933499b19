"""The index of live captures (adgen.capture_index.CaptureIndex) against NumPy's exact overlap test.

A guarded write must find every live capture that shares memory with the region it writes
(design §2 rule 1: a missed overlap is a silent wrong gradient) and no capture it does not
touch (rule 7: region-precise). The index answers from per-element counts and block lookups;
here random basic-slice views of one buffer (steps, negative steps, integer indices,
transposes, reshapes, views of another dtype) are captured, written and removed in random
order, and every answer is compared with ``np.shares_memory`` computed exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

from adgen import capture_index, guards


def _random_slice(rng: np.random.Generator, n: int) -> slice | int:
    if rng.random() < 0.25:
        return int(rng.integers(-n, n))
    start, stop = sorted(int(v) for v in rng.integers(0, n + 1, size=2))
    step = int(rng.choice([1, 1, 1, 2, 3, -1, -2]))
    return slice(start, stop, step) if step > 0 else slice(stop - 1 if stop else None,
                                                           start - 1 if start else None, step)


def _random_view(rng: np.random.Generator, root: np.ndarray) -> np.ndarray:
    x = root
    if rng.random() < 0.15:
        x = x.T
    if rng.random() < 0.1 and root.ndim == 2:
        x = x.reshape(-1)  # a view: the root is contiguous (or a copy, then skipped)
    index = tuple(_random_slice(rng, d) for d in x.shape)
    v = x[index]
    if not isinstance(v, np.ndarray):
        v = x[(*index, Ellipsis)]  # one element, as a 0-d view (what write_region gives)
    if rng.random() < 0.1 and isinstance(v, np.ndarray) and v.ndim and v.shape[-1] % 2 == 0 \
            and v.strides[-1] == v.itemsize:
        v = v.view(np.float32)  # another dtype's view: checked without the index
    if not isinstance(v, np.ndarray):
        v = x[...]
    return v


def _exact(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.shares_memory(a, b, max_work=None))


@pytest.mark.parametrize("small", [0, 16])  # index from the first write, or past 16 captures
@pytest.mark.parametrize("shape", [(40,), (9, 11), (5, 6, 7)])
@pytest.mark.parametrize("seed", range(5))
def test_watch_finds_exactly_the_overlapping_captures(shape: tuple[int, ...], seed: int,
                                                      small: int,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capture_index.CaptureIndex, "SMALL", small)
    rng = np.random.default_rng(seed)
    root = np.zeros(shape)
    watch = capture_index.CaptureIndex(root)
    live: list[guards.Capture] = []
    found = missed = 0
    for step in range(400):
        if rng.random() < 0.6 or not live:
            view = _random_view(rng, root)
            if view.size == 0 or guards.root_of(view) is not root:
                continue
            cap = guards.Capture(view, "f.py", step, "x")
            watch.add(cap)
            live.append(cap)
            continue
        region = _random_view(rng, root)
        if guards.root_of(region) is not root:
            continue
        expected = [c for c in live if region.size and _exact(c.array, region)]
        got = watch.overlapping(region)
        # overlaps may answer "overlap" when NumPy's bounded check gives up: only a superset
        # is allowed there, never a missed capture
        assert {id(c) for c in expected} <= {id(c) for c in got}, (step, region.shape)
        for c in got:
            assert c in live
            if c not in expected:
                with pytest.raises(np.exceptions.TooHardError):
                    np.shares_memory(c.array, region, max_work=1000)
        # hits in capture order (the strict error names the first capture)
        order = [live.index(c) for c in got if c.array.itemsize == root.itemsize]
        assert order == sorted(order)
        found += bool(got)
        missed += not got
        if got and rng.random() < 0.7:  # save: the hits stop being live
            for c in got:
                watch.remove(c)
                live.remove(c)
    assert found and missed  # both answers were exercised
    if small == 0:
        assert watch.counts is not None  # the index answered, not the small list


def test_watch_counts_return_to_zero() -> None:
    root = np.zeros((6, 6))
    watch = capture_index.CaptureIndex(root)
    caps = [guards.Capture(root[i, : i + 1], "f.py", i, "x") for i in range(6)]
    caps += [guards.Capture(root[:, j], "f.py", j, "x") for j in range(6)]
    caps += [guards.Capture(root[::2, ::-3], "f.py", 0, "x")] * 1
    for c in caps * 2:
        watch.add(guards.Capture(c.array, c.file, c.line, c.what))
    assert watch.overlapping(root[5, 5:])  # builds the index (more than SMALL captures)
    assert watch.counts is not None and watch.counts.sum() > 0
    while True:
        hits = watch.overlapping(root)
        if not hits:
            break
        for c in hits:
            watch.remove(c)
    assert not watch
    assert not watch.counts.any()
    assert not watch.levels
