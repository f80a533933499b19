"""bench/experiments/loop_memory.py runs, checks adgen's gradient against the hand one and
reports a row per loop workload (none WRONG)."""

from __future__ import annotations

from bench.experiments import loop_memory


def test_loop_memory_experiment_runs(capsys):
    assert loop_memory.main(["--workloads", "conv,mse"]) == 0
    text = capsys.readouterr().out
    assert "| conv |" in text and "| mse-loop |" in text and "WRONG" not in text
    assert "| logreg |" not in text  # vectorised workloads have no hand loop
