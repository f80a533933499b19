"""Issue 3, the seeds' cases: mutation that Zygote refuses, differentiated by adgen.

Each case runs under mutation="save" and mutation="strict" (see harness.run_case): gradient
against central differences of the plain function, final argument state against a plain call,
and the decisions of ``adgen.explain`` (free cases: no guard, no save; needed cases: a
guarded-save under "save", a MutationError naming both lines under "strict").
"""

from __future__ import annotations

import numpy as np
import pytest
from harness import Case, run_case


def _vec(seed: int, n: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1.0, 1.0, n)


# --- Zygote's "Design Limitations": a helper fills a fresh array ------------------------------

def g_inner(x, y):
    for i in range(x.shape[0]):
        x[i] = 2.0 * y[i]
    return x


def g_outer(y):
    z = np.empty_like(y)
    g_inner(z, y)
    return np.sum(np.sin(z))


# --- "Which functions need rules?": addone ----------------------------------------------------

def addone(a):
    b = np.empty_like(a)
    b[...] = a + 1
    return np.sum(b)


def addone_sq(a):
    b = np.empty_like(a)
    b[...] = a + 1
    return np.sum(b * b)


# --- f!(x): x .= 2 .* x on the input itself ---------------------------------------------------

def double_input(x):
    x[:] = 2 * x
    return np.sum(x ** 2)


# --- the thread's example: fill! after the value was used -------------------------------------

def fill_after_use(x):
    y = x * x
    x.fill(0.0)
    return np.sum(y) + np.sum(x)


# --- Float64[f(x) for x in input] -------------------------------------------------------------

def _elementwise(v):
    return v * v + np.sin(v)


def comprehension(xs):
    return np.sum(np.array([_elementwise(v) for v in xs]) ** 2)


# --- a mutating call whose result is discarded: its pullback must still run -------------------

def _scale_in_place(buf):
    buf *= 3.0
    return buf


def discarded_mutating_call(x):
    z = np.sin(x)           # sin's pullback reads x, not z: overwriting z is free
    _scale_in_place(z)
    return np.sum(z * z)


CASES = [
    Case("g_outer_g_inner", g_outer, lambda: (_vec(1),),
         sites=((g_inner, "x[i] = 2.0 * y[i]"),), forced=("g_inner(z, y)",)),
    Case("addone", addone, lambda: (_vec(2),), sites=("b[...] = a + 1",)),
    Case("addone_nonlinear_use", addone_sq, lambda: (_vec(3),), sites=("b[...] = a + 1",)),
    Case("x_assign_2x_on_input", double_input, lambda: (_vec(4),), sites=("x[:] = 2 * x",)),
    Case("fill_after_use", fill_after_use, lambda: (_vec(5),), needed=True,
         conflicts=(("y = x * x", "x.fill(0.0)"),), guarded=(("x.fill(0.0)",),)),
    Case("array_of_comprehension", comprehension, lambda: (_vec(6),)),
    Case("discarded_mutating_call", discarded_mutating_call, lambda: (_vec(7),),
         sites=((_scale_in_place, "buf *= 3.0"),), forced=("_scale_in_place(z)",)),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_seed_case(case: Case, mutation: str, dtype: str) -> None:
    run_case(case, mutation, dtype)
