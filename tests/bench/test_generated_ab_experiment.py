"""bench/experiments/generated_ab.py runs: the generated code it execs gives the hand
gradient, and an A/B of this tree against itself reports equal gradients."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.experiments import generated_ab
from bench.workloads import softmax_xent


def test_generated_code_gives_the_hand_gradient():
    fname, source = generated_ab.sources(["softmax_xent"])["softmax_xent"]
    gradient = generated_ab._gradient(fname, source, softmax_xent.__name__)
    args = softmax_xent.make_args(np.random.default_rng(1))
    np.testing.assert_allclose(gradient(*args)[0], softmax_xent.softmax_xent_hand(*args)[0],
                               rtol=1e-10, atol=1e-14)


def test_a_tree_against_itself(capsys):
    generated_ab.main([str(Path(generated_ab.__file__).resolve().parents[2]), "sum3"])
    out = capsys.readouterr().out
    assert "sum3: |before - after| 0.0e+00" in out
