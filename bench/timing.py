"""Interleaved timing: warm-up, calibrated batches, rounds across systems, medians.

Every entry runs one batch per round, and the rounds go across all entries of a workload in a
rotating order, so a slow drift of the machine (another process, frequency scaling) spreads
over all systems instead of landing on whichever ran last.

The default clock is the process's CPU time (user + system, all its threads): on a machine
shared with other work it does not count the time this process waits for a core, which wall
time does (seen here: the same hand gradient 3.4 µs in one run, 24 µs in another under load).
``--clock wall`` measures wall time instead.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}


@dataclass
class Settings:
    """How long to measure.

    Attributes:
        rounds: rounds per entry (fewer for an entry whose calls are slow, never under 3).
        min_batch_s: calls are batched until one batch takes at least this long.
        budget_s: time one entry may spend in its rounds; slower entries get fewer rounds.
        warmup_s: warm-up calls run until this much time has passed (at least one call).
        clock: the name of the clock in :data:`CLOCKS`.
        max_call_s: a computation whose checked first call took longer is not timed (the
            row gives that first call): a full run must stay a few minutes on 2 cores.
    """

    rounds: int = 15
    min_batch_s: float = 0.02
    budget_s: float = 1.5
    warmup_s: float = 0.1
    clock: str = "cpu"
    max_call_s: float = 5.0

    @property
    def now(self) -> Callable[[], float]:
        return CLOCKS[self.clock]

    @classmethod
    def quick(cls) -> Settings:
        return cls(rounds=3, min_batch_s=0.002, budget_s=0.5, warmup_s=0.01, max_call_s=1.0)


@dataclass
class Entry:
    """One timed computation (a system's variant on one workload)."""

    key: Any
    call: Callable[[], Any]
    batch: int = 1
    rounds: int = 0
    samples: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def best(self) -> float:
        return min(self.samples)


def _time_once(call: Callable[[], Any], now: Callable[[], float]) -> float:
    start = now()
    call()
    return now() - start


def calibrate(entry: Entry, settings: Settings) -> None:
    """Warms the entry up and chooses its batch size and number of rounds."""
    spent = 0.0
    last = _time_once(entry.call, settings.now)
    spent += last
    while spent < settings.warmup_s:
        last = _time_once(entry.call, settings.now)
        spent += last
    per_call = max(last, 1e-9)
    entry.batch = max(1, math.ceil(settings.min_batch_s / per_call))
    affordable = int(settings.budget_s / (per_call * entry.batch))
    # Three rounds at least, unless one call takes seconds (eager JAX on a 1000-step loop).
    entry.rounds = max(3 if per_call < 2.0 else 1, min(settings.rounds, affordable))


def run(entries: list[Entry], settings: Settings) -> None:
    """Measures all entries in interleaved rounds; fills each entry's ``samples`` (s per call)."""
    for entry in entries:
        calibrate(entry, settings)
    now = settings.now
    total_rounds = max((e.rounds for e in entries), default=0)
    # What is alive now (the peers' caches: JAX's traces grow the heap past a million
    # objects) is frozen, so that the collection before each batch scans only what the
    # rounds allocate: a full collection cost 0.15-0.5 s here, 100 of them a workload.
    gc.collect()
    gc.freeze()
    try:
        for r in range(total_rounds):
            shift = r % len(entries)
            for entry in entries[shift:] + entries[:shift]:
                if r >= entry.rounds:
                    continue
                gc.collect()  # garbage left by the previous entry is not this one's cost
                start = now()
                for _ in range(entry.batch):
                    entry.call()
                entry.samples.append((now() - start) / entry.batch)
    finally:
        gc.unfreeze()
