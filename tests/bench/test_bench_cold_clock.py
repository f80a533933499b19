"""The clock of the rebuilt cold-start table (bench.run.cold_clock): a build is
single-threaded, so under the CPU clock it is timed with the building thread's CPU time, which
another thread of the process (a peer's thread pool) does not enter."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import run, timing  # noqa: E402


def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_another_threads_work_is_not_the_builds() -> None:
    now = run.cold_clock(timing.Settings())
    start, process_start = now(), time.process_time()
    worker = threading.Thread(target=_spin, args=(0.3,))
    worker.start()
    worker.join()  # this thread waits: it spends (almost) no CPU time of its own
    assert time.process_time() - process_start >= 0.25  # the process's clock counts it
    assert now() - start < 0.05


def test_the_wall_clock_stays_wall_time() -> None:
    assert run.cold_clock(timing.Settings(clock="wall")) is time.perf_counter
