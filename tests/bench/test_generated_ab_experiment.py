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


def test_one_blas_thread_as_bench_run_times():
    """The A/B pins NumPy's BLAS pool to one thread (set before numpy loads), as bench.run
    does: with the pool's threads contending, mlp's A/B took 53 ms a gradient against 5 ms."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    root = Path(generated_ab.__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", "import sys, os\n"
         "import bench.experiments.generated_ab\n"
         "print([os.environ.get(v) for v in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', "
         "'MKL_NUM_THREADS')])"],
        cwd=root, env=env, capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.strip() == "['1', '1', '1']", done.stdout + done.stderr
