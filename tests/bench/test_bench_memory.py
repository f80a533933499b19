"""The suite's memory measurements: tracemalloc peaks and adgen's tape."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import memory  # noqa: E402


def test_peak_counts_a_temporary_and_the_result() -> None:
    x = np.ones(10_000)

    def two_temporaries() -> float:
        y = x * 2.0  # 80 kB
        z = y + 1.0  # 80 kB, while y is alive
        return float(z[0])

    peak = memory.peak_bytes(two_temporaries)
    assert 160_000 <= peak < 200_000
    assert 80_000 <= memory.peak_bytes(lambda: x * 2.0) < 100_000  # the result counts


def exp_sum(x):
    return np.sum(np.exp(x))


def test_adgen_tape_holds_what_the_pullback_reads() -> None:
    # exp's pullback reads its output (8 bytes an element); the argument itself is not new
    x = np.linspace(0.0, 1.0, 5_000)
    tape = memory.adgen_tape(exp_sum, (x,), (0,))
    assert 40_000 <= tape.held < 400_000
    assert tape.guard_saves == 0  # no mutation, nothing guarded
