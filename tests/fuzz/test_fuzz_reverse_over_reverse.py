"""Reverse over reverse on fuzzed programs (tests/progen.py): ``adgen.vjp(adgen.grad(f), x,
y, W)`` differentiates the generated forward and pullback of ``grad(f)`` again where it can.
Its pullback, for a cotangent u of the gradient with respect to x, gives the second
derivatives ⟨u, d(grad_x f)/d(x, y, W)⟩; their product with a random direction v is checked
against central differences of adgen's gradient along v (the gradient itself is checked by
the other fuzzers). The programs write buffers in place through views, helpers, out=,
np.add.at, loops and branches. A program that reverse over reverse does not cover takes the
forward-over-reverse path and is checked the same way (``event`` counts both); that path may
refuse, loudly, where a tangent helper has no rule (np.clip's), reverse over reverse may not.

A failure prints the program as a module (``note``); hypothesis shrinks it.
"""

from __future__ import annotations

import copy

import numpy as np
import progen
from gradcheck import flatten
from hypothesis import assume, event, given, note

import adgen

CONFIG = progen.GenConfig(max_stmts=6, max_body=3, helpers=True, loops=True, branches=True,
                          drop_terms=True)
EPS = 1e-5
_DIRS: dict[int, object] = {}


def _directory(factory):
    key = id(factory)
    if key not in _DIRS:
        _DIRS[key] = factory.mktemp("fuzz_rr")
    return _DIRS[key]


def _moved(args, tangents, step):
    return tuple(a + step * t for a, t in zip(args, tangents))


@progen.campaign_settings(ci_examples=60)
@given(prog=progen.programs(CONFIG))
def test_second_derivatives_of_random_programs(prog: progen.Program, tmp_path_factory,
                                               shrink_budget) -> None:
    note(prog.summary())
    assume(prog.wide_source == prog.source)  # float64 arguments: second differences
    f = progen.load(prog.source, _directory(tmp_path_factory)).f
    args = prog.make_args()
    try:
        out = f(*copy.deepcopy(args))
    except (TypeError, FloatingPointError):
        assume(False)
    assume(np.isfinite(out) and abs(out) < 1e4)
    grad = adgen.grad(f)  # "save": the gradient is right (the other fuzzers check it)
    route = adgen.explain(grad, *copy.deepcopy(args), file=None).route
    event("reverse over reverse" if "reverse over reverse" in route else
          "forward over reverse")
    rng = np.random.default_rng(5)
    u = rng.standard_normal(np.shape(args[0]))
    v = tuple(rng.standard_normal(np.shape(a)) for a in args)

    def along(step: float) -> float:
        return float(flatten(grad(*_moved(copy.deepcopy(args), v, step))) @ flatten(u))

    fine = (along(EPS) - along(-EPS)) / (2 * EPS)
    coarse = (along(1e-3) - along(-1e-3)) / 2e-3
    assume(abs(fine - coarse) <= 1e-3 * max(1.0, abs(fine)))  # no kink within reach
    run_args = copy.deepcopy(args)
    g, pullback = adgen.vjp(grad, *run_args)
    np.testing.assert_allclose(g, grad(*copy.deepcopy(args)), rtol=1e-12, atol=1e-12)
    if "reverse over reverse" in route:
        cts = pullback(u)  # the path taken must differentiate what it took
    else:
        try:
            cts = pullback(u)
        except adgen.AdgenError:
            # forward over reverse refuses a few rules' tangent helpers (np.clip's), loudly
            event("forward over reverse: refused")
            return
    again = pullback(u)  # reusable
    got = sum(float(flatten(c) @ flatten(t)) for c, t in zip(cts, v) if c is not None)
    assert abs(got - fine) <= 1e-5 * max(1.0, abs(fine)), (got, fine, route)
    for c, d in zip(cts, again):
        if c is not None:
            np.testing.assert_array_equal(c, d)
