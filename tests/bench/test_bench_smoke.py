"""Smoke test of the benchmark suite, with NumPy alone (no bench extras needed).

Proves the anchors right: every hand gradient against central differences (entry by entry where
the problem is small, along random directions where it is not), every loop-keeping hand adjoint
and functional rewrite against it; then runs the harness in its quickest mode on the NumPy and
hand systems.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import workloads
from bench.check import (
    central_differences,
    directional_errors,
    relative_error,
)

WORKLOADS = workloads.load(quick=True)
IDS = [w.name for w in WORKLOADS]
#: Entry-by-entry central differences up to this many differentiated entries.
FULL_FD_MAX = 400


def _size(workload: workloads.Workload, args: tuple) -> int:
    return sum(int(np.size(args[n])) for n in workload.argnums)


@pytest.mark.parametrize("workload", WORKLOADS, ids=IDS)
def test_hand_gradient_matches_central_differences(workload: workloads.Workload) -> None:
    args = workload.make_args(np.random.default_rng(1))
    grads = workload.hand(*args)
    assert len(grads) == len(workload.argnums)
    if _size(workload, args) <= FULL_FD_MAX:
        numeric = central_differences(workload.primal, args, workload.argnums,
                                      eps=workload.fd_eps)
        assert relative_error(grads, numeric) < 1e-6
    else:
        errors = directional_errors(workload.primal, args, workload.argnums, grads,
                                    eps=workload.fd_eps, seed=2)
        assert max(errors) < 1e-6, errors


@pytest.mark.parametrize("workload", WORKLOADS, ids=IDS)
def test_hand_loop_and_rewrite_agree_with_hand(workload: workloads.Workload) -> None:
    args = workload.make_args(np.random.default_rng(3))
    reference = workload.hand(*args)
    if workload.hand_loop is not None:
        assert relative_error(workload.hand_loop(*args), reference) < 1e-12
    if workload.functional is not None:
        assert np.isclose(workload.functional(*args), workload.primal(*args), rtol=1e-12)
        errors = directional_errors(workload.functional, args, workload.argnums, reference,
                                    eps=workload.fd_eps, seed=4)
        assert max(errors) < 1e-6, errors


def test_primal_does_not_mutate_its_arguments() -> None:
    for workload in WORKLOADS:
        args = workload.make_args(np.random.default_rng(5))
        before = [np.array(a, copy=True) for a in args]
        workload.primal(*args)
        workload.hand(*args)
        for a, b in zip(args, before):
            assert np.array_equal(a, b), workload.name


def test_harness_quick_mode_on_numpy_and_hand(capsys: pytest.CaptureFixture[str]) -> None:
    saved = dict(os.environ)  # bench.run pins thread pools through the environment
    try:
        from bench import run
    finally:
        os.environ.clear()
        os.environ.update(saved)
    results = run.run(["--quick", "--systems", "numpy,hand,hand-loop", "--no-cold"])
    out = capsys.readouterr().out
    for heading in ("## Overview", "## Targets", "## Allocate-then-fill", "## Per workload"):
        assert heading in out
    for row in results.rows + results.linearity:
        assert row.ok or row.status.startswith("not applicable"), row
        if row.ok:
            assert row.median is not None and row.median > 0
            if row.system != "numpy":
                assert row.error is not None and row.error < 1e-10
    timed = {(r.workload, r.system) for r in results.rows if r.ok}
    assert {(w.name, "hand") for w in WORKLOADS} <= timed
    # adgen was not asked for: its targets are reported as not measured, never as met.
    assert "adgen not run" in out
