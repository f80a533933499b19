"""Issue 5: the differential fuzzer.

Programs (tests/progen.py) with straight-line code, element loops, repeat loops, data-dependent
branches, helper calls that mutate their arguments (aliased or not), views and every mutation
form adgen supports (writes through basic slices, transposes, reshapes and ``.real`` too),
over vectors of length 6 and a 6 x 6 matrix in float64, float32 or float16, and local buffers
of float16/float32/float64/int64. Each goes through
``adgen.grad`` under both policies and ``adgen.vjp`` (pullback called twice), against central
differences of the plain function; see progen.check_program for what is asserted.

A failure prints the program as a Python module (``note``) and hypothesis shrinks the program
itself (fewer, simpler statements; the inputs come from one seed that shrinks to 0). To keep a
fixed failure, save the printed module as tests/fuzz/regressions/<name>.py.

Thread-pool mode (test_fuzz_threads): a program that passed, compiled afresh from 4 threads
at once and run from them, 1 us switch interval; every gradient and final argument state must
be the single-thread one.

CI: ``.venv/bin/python -m pytest tests/fuzz`` (a bounded campaign).
Long: ``ADGEN_FUZZ=long .venv/bin/python -m pytest tests/fuzz -x`` (5000 programs per test).
"""

from __future__ import annotations

import copy
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import progen
from adgen.transforms import pipeline
from gradcheck import flatten
from hypothesis import assume, event, given, note

import adgen

FULL = progen.GenConfig(max_stmts=8, max_body=3, helpers=True, loops=True, branches=True,
                        drop_terms=True, arg_dtypes=("float64", "float32", "float16"))
STRAIGHT = progen.GenConfig(max_stmts=10, helpers=True, loops=False, branches=False,
                            drop_terms=True)

_DIRS: dict[int, object] = {}


def _directory(factory):
    key = id(factory)
    if key not in _DIRS:
        _DIRS[key] = factory.mktemp("fuzz")
    return _DIRS[key]


def _check(prog: progen.Program, factory) -> None:
    note(prog.summary())   # the falsifying example prints as its source
    for form in prog.forms:
        event(f"form: {form}")
    event("model: needed" if prog.may_need else "model: conflict-free")
    verdict = progen.run(prog, _directory(factory), reuse=True)
    assume(not verdict.rejected)
    event("strict: MutationError" if verdict.strict_raised else "strict: gradient")


@progen.campaign_settings(ci_examples=150)
@given(prog=progen.programs(FULL))
def test_fuzz_programs(prog: progen.Program, tmp_path_factory, shrink_budget) -> None:
    _check(prog, tmp_path_factory)


@progen.campaign_settings(ci_examples=80)
@given(prog=progen.programs(STRAIGHT))
def test_fuzz_straight_line(prog: progen.Program, tmp_path_factory, shrink_budget) -> None:
    _check(prog, tmp_path_factory)


BINDINGS = progen.GenConfig(max_stmts=6, max_body=3, helpers=True, loops=True, branches=True,
                            drop_terms=True, bindings=True)


@progen.campaign_settings(ci_examples=40)
@given(prog=progen.programs(BINDINGS))
def test_fuzz_bindings(prog: progen.Program, tmp_path_factory, shrink_budget) -> None:
    """Programs that also read a keyword-only parameter shadowing a global, globals defined
    after f and rebound between calls, same-named helpers of two modules, and two closures of
    one factory (progen.BINDING_TRAILER)."""
    _check(prog, tmp_path_factory)


@progen.campaign_settings(ci_examples=25)
@given(prog=progen.programs(FULL))
def test_fuzz_threads(prog: progen.Program, tmp_path_factory, shrink_budget) -> None:
    _check(prog, tmp_path_factory)  # the single-thread gradient is right
    f = progen.load(prog.source, _directory(tmp_path_factory)).f
    args = prog.make_args()
    argnums = tuple(range(len(args)))
    alone = copy.deepcopy(args)
    expected = flatten(adgen.grad(f, argnums)(*alone))
    pipeline.clear_cache()  # the threads compile f and its helpers at the same time
    g = adgen.grad(f, argnums)

    def work(_: int) -> tuple[np.ndarray, np.ndarray]:
        mine = copy.deepcopy(args)
        return flatten(g(*mine)), flatten(mine)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(work, range(16)))
    finally:
        sys.setswitchinterval(old)
    for got, final in results:
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)
        np.testing.assert_array_equal(final, flatten(alone))
