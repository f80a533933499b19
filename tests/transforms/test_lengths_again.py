"""Lengths a loop's row held that are functions of another length of the row, computed again
by the pullback (``Pullback.lengths_from_others``, ``shape_saves.length_expression``).

The expressions are checked against Python's slicing for every constant bound and short
axis; gradients against central differences where the lengths change from step to step (a
concatenation that makes a short vector longer) and where they do not, under both policies,
through a method and a lambda, and on the numba backend.
"""

from __future__ import annotations

import itertools

import gast
import numpy as np
import pytest
from adgen.transforms.shape_saves import length_expression
from gradcheck import check_grad

import adgen

POLICIES = ["save", "strict"]
BOUNDS = [None, -4, -3, -2, -1, 0, 1, 2, 3, 5]


@pytest.mark.parametrize("lo,hi", list(itertools.product(BOUNDS, BOUNDS)))
def test_slice_lengths_match_python(lo, hi):
    sym = ("sl", ("p", "u", 0), None if lo is None else ("c", lo),
           None if hi is None else ("c", hi), None)
    reads: set[str] = set()
    e = length_expression(sym, {"u": "u_len"}, reads)
    assert e is not None and reads == {"u_len"}
    code = compile(gast.unparse(e), "<len>", "eval")
    for d in range(7):
        assert eval(code, {}, {"u_len": d}) == len(list(range(d))[lo:hi]), (lo, hi, d)


def test_offsets_and_arithmetic():
    reads: set[str] = set()
    e = length_expression(("op", "-", ("off", ("p", "u", 0), -2), ("c", 1)), {"u": "n"}, reads)
    code = compile(gast.unparse(e), "<len>", "eval")
    for d in range(6):
        assert eval(code, {}, {"n": d}) == max(0, d - 2) - 1
    # a symbol it cannot spell (a counter's value, another array's axis): None
    assert length_expression(("int", "k"), {"u": "n"}, set()) is None
    assert length_expression(("p", "w", 0), {"u": "n"}, set()) is None


def heat(u0, alpha):
    u = u0
    for _ in range(5):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        u = np.concatenate([u[:1], u[1:-1] + alpha * lap, u[-1:]])
    return np.sum(u * u)


def trimmed(x, w):
    """Parts of a vector that shrinks by one each step: u[1:] and u[:-1] of len(u)."""
    u = x
    for _ in range(3):
        u = u[1:] * w + u[:-1] * (1.0 - w)
    return np.sum(u ** 2)


class Stepper:
    def __init__(self, alpha):
        self.alpha = alpha

    def run(self, u0):
        return heat(u0, self.alpha) * 0.5


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("n", [1, 2, 3, 7, 300])
def test_heat_at_every_length(n, mutation):
    u0 = np.random.default_rng(n).standard_normal(n)
    check_grad(heat, (u0, 0.2), (0, 1), mutation=mutation, rtol=1e-5)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("n", [3, 4, 9])
def test_a_vector_that_shrinks(n, mutation):
    check_grad(trimmed, (np.random.default_rng(n).standard_normal(n), 0.3), (0, 1),
               mutation=mutation)


def heat_fixed(u0):
    """The step is linear in u: its pullback reads only lengths."""
    return heat(u0, 0.2)


def test_heat_row_is_one_length():
    # with respect to alpha too, the row keeps lap and the one length
    text = adgen.source(heat, np.random.default_rng(0).standard_normal(9), 0.2)
    rows = [line.strip() for line in text.split("_pullback(")[0].splitlines()
            if ".append(" in line]
    assert rows == ["tape1.append((lap, len(u_1)))"], text
    u0 = np.random.default_rng(1).standard_normal(9)
    check_grad(heat_fixed, (u0,), 0, rtol=1e-5)  # through a callee compiled for any args


def test_a_method_and_a_lambda():
    u0 = np.random.default_rng(5).standard_normal(6)
    check_grad(Stepper(0.25).run, (u0,), 0)
    check_grad(lambda u, a: 2.0 * heat(u * a, a), (u0, 0.5), (0, 1), rtol=1e-5)


def test_numba_backend_agrees():
    pytest.importorskip("numba")
    rng = np.random.default_rng(6)
    for n in (2, 8):
        args = (rng.standard_normal(n), 0.2)
        want = adgen.grad(heat, argnums=(0, 1))(*args)
        got = adgen.grad(heat, argnums=(0, 1), backend="numba")(*args)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
