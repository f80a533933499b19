"""adgen's gradient of every benchmark workload against its hand gradient (quick sizes).

The hand gradients are proven against central differences by test_bench_smoke.py; here
adgen must agree with them to the suite's tolerance, and leave the arguments as the primal
does (the primals copy what they write).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import adgen  # noqa: E402
from bench import workloads  # noqa: E402
from bench.check import RTOL, relative_error  # noqa: E402

WORKLOADS = workloads.load(quick=True)


@pytest.mark.parametrize("workload", WORKLOADS, ids=[w.name for w in WORKLOADS])
def test_adgen_gradient_matches_hand_gradient(workload: workloads.Workload) -> None:
    args = workload.make_args(np.random.default_rng(7))
    before = [np.array(a, copy=True) for a in args]
    reference = workload.hand(*args)
    grads = adgen.grad(workload.primal, argnums=workload.argnums)(*args)
    if not isinstance(grads, tuple):  # argnums is always a tuple: adgen returns a tuple
        grads = (grads,)
    assert relative_error(grads, reference) <= RTOL
    for got, arg in zip(grads, (args[n] for n in workload.argnums)):
        assert np.shape(got) == np.shape(arg)
    for a, b in zip(args, before):
        assert np.array_equal(a, b), workload.name
