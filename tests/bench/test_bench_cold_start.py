"""The fresh-process cold-start measurement the suite runs (bench.experiments.cold_start)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.experiments import cold_start  # noqa: E402


def test_one_fresh_process_of_each_measurement() -> None:
    result = cold_start.measure(runs=1)
    for key in ("import numpy", "import adgen", "first gradient", "cli"):
        assert result[key] > 0.0, key
        assert result[key + " wall"] > 0.0, key
        assert 0.0 < result[key + " min"] <= result[key], key  # min and median of the runs
    # the CLI starts an interpreter and imports numpy and adgen: it cannot cost less
    assert result["cli"] > result["import adgen"]
    assert result["runs"] == 1.0
