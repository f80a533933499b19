"""python -m bench.experiments.forward_scalar_loop: every row computes the dual numbers' jvp
(checked inside ``runs``), and the table prints one line per row."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.experiments import forward_scalar_loop  # noqa: E402


def test_rows_agree_with_the_dual_numbers() -> None:
    rows = forward_scalar_loop.runs(20, jax_rows=False)
    assert {"primal", "adgen.jvp", "jvp code", "dual numbers"} <= set(rows)
    f, args = rows["jvp code"]
    want = forward_scalar_loop.dual_numbers(0.3, 0.9, 1.0, 0.5)[1]
    assert abs(f(*args)[1] - want) <= 1e-12 * abs(want)


def test_experiment_table(capsys) -> None:
    forward_scalar_loop.main(["--steps", "10", "--rounds", "1", "--repeats", "2", "--no-jax"])
    out = capsys.readouterr().out.splitlines()
    assert any(r.strip().startswith("adgen.jvp") for r in out)
    assert any(r.strip().startswith("dual numbers") for r in out)
