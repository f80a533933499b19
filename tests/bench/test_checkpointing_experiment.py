"""bench/experiments/checkpointing.py runs, and its two gradients agree (it asserts so)."""

from __future__ import annotations

from bench.experiments import checkpointing


def test_checkpointing_experiment_runs(capsys):
    assert checkpointing.main(["--steps", "500", "--repeats", "1"]) == 0
    text = capsys.readouterr().out
    assert "checkpointed segments" in text and "x less" in text
    assert "checkpoint=True" in text
