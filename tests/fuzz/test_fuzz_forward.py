"""Forward mode on fuzzed programs (tests/progen.py): ``adgen.jvp`` of each generated program
against central differences of the plain function along a random tangent, and against
adgen's reverse mode through ⟨u, J v⟩ = ⟨Jᵀ u, v⟩. The programs write buffers in place
through views, helpers, out=, np.add.at, loops and branches; forward mode mirrors each write
on the tangents, so every program must be differentiated (a refusal fails the test).

A failure prints the program as a module (``note``); hypothesis shrinks it.
"""

from __future__ import annotations

import copy

import numpy as np
import progen
from gradcheck import flatten, numerical_jvp
from hypothesis import assume, event, given, note

import adgen

FULL = progen.GenConfig(max_stmts=8, max_body=3, helpers=True, loops=True, branches=True,
                        drop_terms=True)
_DIRS: dict[int, object] = {}


def _directory(factory):
    key = id(factory)
    if key not in _DIRS:
        _DIRS[key] = factory.mktemp("fuzz_forward")
    return _DIRS[key]


@progen.campaign_settings(ci_examples=120)
@given(prog=progen.programs(FULL))
def test_jvp_of_random_programs(prog: progen.Program, tmp_path_factory, shrink_budget) -> None:
    note(prog.summary())
    f = progen.load(prog.source, _directory(tmp_path_factory)).f
    # a program with float16/float32 buffers is checked against the same program with
    # float64 ones (as the reverse-mode fuzzer does): tangents are float64
    wide = prog.wide_source
    truth = progen.load(wide, _directory(tmp_path_factory)).f if wide != prog.source else f
    args = prog.make_args()
    try:
        out = f(*copy.deepcopy(args))
    except (TypeError, FloatingPointError):
        assume(False)
    assume(np.isfinite(out) and abs(out) < 1e6)
    rng = np.random.default_rng(11)
    tangents = [rng.standard_normal(np.shape(a)) for a in args]
    fine = numerical_jvp(truth, args, tangents, eps=1e-6)
    coarse = numerical_jvp(truth, args, tangents, eps=1e-4)
    assume(np.allclose(fine, coarse, rtol=1e-4, atol=1e-5))  # no kink within reach
    run_args = copy.deepcopy(args)
    value, dot = adgen.jvp(f, run_args, tangents)
    np.testing.assert_allclose(value, out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dot, fine[0], rtol=prog.rtol or 1e-5, atol=1e-6)
    # the arguments end as a plain call leaves them
    plain = copy.deepcopy(args)
    f(*plain)
    for a, b in zip(run_args, plain):
        np.testing.assert_array_equal(a, b)
    # <u, J v> with reverse mode, u = 1 (a scalar output)
    _, pullback = adgen.vjp(f, *copy.deepcopy(args))
    cts = pullback(1.0)
    rhs = sum(float(flatten(c) @ flatten(t)) for c, t in zip(cts, tangents) if c is not None)
    tol = 1e-8 if wide == prog.source else (prog.rtol or 1e-5)  # narrow buffers round
    assert abs(float(dot) - rhs) <= tol * max(1.0, abs(rhs)), (float(dot), rhs)
    event("forward: differentiated")
