"""bench.experiments.build_instructions: a cold build's instructions under cachegrind (the
measure of build time that does not depend on the machine's load)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.experiments import build_instructions  # noqa: E402


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_a_cold_build_costs_instructions() -> None:
    counts = build_instructions.measure(["sum3"])
    # a build of sum3 parses, analyses, emits and compiles: millions of instructions, far
    # fewer than a process's start (about 400 M with NumPy's import)
    assert 1_000_000 < counts["sum3"] < 400_000_000
