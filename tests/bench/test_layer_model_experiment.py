"""The layers workload (a model object holding many layers, stepped by a method writing its
argument in place) and python -m bench.experiments.layer_model: the hand gradient against
central differences, adgen's against it, the experiment's table."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import workloads  # noqa: E402
from bench.experiments import layer_model  # noqa: E402
from bench.workloads import layers  # noqa: E402
from tests.gradcheck import numerical_grad  # noqa: E402


def test_hand_gradient_matches_central_differences() -> None:
    (w,) = workloads.load(["layers"], quick=True)
    args = w.make_args(np.random.default_rng(1))
    got = w.hand(*args)
    for k in w.argnums:
        np.testing.assert_allclose(got[k], numerical_grad(w.primal, args, k), rtol=1e-6,
                                   atol=1e-9)


def test_experiment_table(capsys) -> None:
    layer_model.main(["--layers", "4,8", "--rounds", "1"])
    rows = [r for r in capsys.readouterr().out.splitlines() if r.startswith("| 4 ") or
            r.startswith("| 8 ")]
    assert len(rows) == 2
    r = layer_model.measure(6, 1)
    assert r["error"] < 1e-10 and r["grad_ms"] > 0 and 0 <= r["record"] <= 1


def test_quick_size_is_small() -> None:
    (w,) = layers.workloads(quick=True)
    assert w.make_args(np.random.default_rng(0))[1].shape == (10, layers.WIDTH)
