"""reverse_final.final_store: a loop's pullback reads a float64 value it stored into a float64
array (``h[i] = np.tanh(x[i] * w)``) from the array again, instead of taping it, when no
later write changes that element (issue 15: allocate-then-fill kept a float64 column of the
values ``h`` holds, twice what the hand adjoint keeps).

Each function is differentiated under both policies and compared with central differences of
the plain function (check_grad: the arguments' final contents too). The positive cases check
the value is no longer taped; the near misses (the element overwritten later: by the next
sweep, by a write after the loop, in the same iteration; a float32 array; a store under an
``if``; a loop with ``break``; a parameter filled in place; a caller writing the callee's
result) must stay right whatever the compiler chose.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, numerical_grad

import adgen

# the fill bench/workloads/fill.py times: the benchmark measures what is tested here
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.workloads.fill import fill  # noqa: E402

POLICIES = ["save", "strict"]


def table(C, gamma):
    """A dynamic programme: each cell from its three computed neighbours (soft-DTW's shape,
    a smooth minimum)."""
    n, m = C.shape
    R = np.zeros((n + 1, m + 1))
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            s = np.exp(-R[i - 1, j - 1] / gamma) + np.exp(-R[i - 1, j] / gamma) + \
                np.exp(-R[i, j - 1] / gamma)
            v = C[i - 1, j - 1] - gamma * np.log(s) + np.sin(R[i - 1, j])
            R[i, j] = v
    return R[n, m] + np.sum(R ** 2) * 0.01


def two_sweeps(x, w):
    n = len(x)
    h = np.zeros(n)
    for k in range(2):
        for i in range(n):
            h[i] = np.tanh(h[i] * w + x[i])  # the next sweep overwrites it
    return np.sum(h * h)


def written_after(x, w):
    n = len(x)
    h = np.empty(n)
    for i in range(n):
        h[i] = np.tanh(x[i] * w)
    h[0] = 5.0  # element 0 holds another value when the pullback runs
    return np.sum(h * h)


def written_again_in_the_iteration(x, w):
    n = len(x)
    h = np.empty(n)
    for i in range(n):
        t = np.tanh(x[i] * w)
        h[i] = t
        h[i] *= t
    return np.sum(h * h)


def into_float32(x, w):
    n = len(x)
    h = np.empty(n, dtype=np.float32)  # the store rounds: h[i] is not t
    for i in range(n):
        t = np.tanh(x[i] * w)
        h[i] = t
    return np.sum(h * x) + 0.0


def under_an_if(x, w):
    n = len(x)
    h = np.zeros(n)
    for i in range(n):
        t = np.tanh(x[i] * w)
        if x[i] > 0:
            h[i] = t
    return np.sum(h * h)


def with_break(x, w):
    n = len(x)
    h = np.zeros(n)
    for i in range(n):
        t = np.tanh(x[i] * w)
        if i == 3:
            break
        h[i] = t
    return np.sum(h * h)


def into_the_parameter(x, w):
    for i in range(len(x)):
        x[i] = np.tanh(x[i] * w)
    return np.sum(x * x)


def fill_returned(x, w):
    n = len(x)
    h = np.empty(n)
    for i in range(n):
        h[i] = np.tanh(x[i] * w)
    return h


def caller_writes_the_result(x, w):
    h = fill_returned(x, w)
    h[1] = 3.0 * w  # after the callee returned: its pullback must still see tanh(x[1] w)
    return np.sum(h ** 3)


class Filler:
    """A user's class: the fill as a method."""

    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        h = np.empty(x.shape[0])
        for i in range(x.shape[0]):
            h[i] = np.tanh(x[i] * self.w)
        return np.sum(h * h)


def _forward(fn, args, mutation="save"):
    return adgen.source(fn, *args, mutation=mutation).split(f"def {fn.__name__}_pullback")[0]


@pytest.mark.parametrize("mutation", POLICIES)
def test_fill_reads_h_again(mutation):
    args = (np.random.default_rng(0).standard_normal(9), 0.7)
    check_grad(fill, args, (0, 1), mutation=mutation)
    forward = _forward(fill, args, mutation)
    assert "tape" not in forward, forward  # the value column is gone, and with it the tape
    pullback = adgen.source(fill, *args).split("def fill_pullback")[1]
    assert "= h[i]" in pullback, pullback


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_table_filled_cell_by_cell(mutation):
    args = (np.random.default_rng(1).random((4, 5)), 0.3)
    check_grad(table, args, (0, 1), mutation=mutation)
    forward = _forward(table, args, mutation)
    # v is read from R; the taped rows no longer hold it, nor anything else: the cell's
    # exp terms are computed again from the final neighbours (recomputed_rows)
    assert ".append(" not in forward, forward


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", [two_sweeps, written_after, written_again_in_the_iteration,
                                into_float32, under_an_if, with_break, into_the_parameter])
def test_near_misses_stay_right(fn, mutation):
    args = (np.random.default_rng(2).standard_normal(7), 0.6)
    # float32 rounding: central differences need a wide step
    wide = {"eps": 1e-2, "rtol": 2e-3} if fn is into_float32 else {}
    check_grad(fn, args, (0, 1), mutation=mutation, **wide)


@pytest.mark.parametrize("fn", [two_sweeps, written_after, into_float32])
def test_near_misses_keep_the_value(fn):
    args = (np.random.default_rng(3).standard_normal(7), 0.6)
    pullback = adgen.source(fn, *args).split(f"def {fn.__name__}_pullback")[1]
    assert "= h[i]\n" not in pullback, pullback


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_caller_writing_the_result(mutation):
    args = (np.random.default_rng(4).standard_normal(6), 0.8)
    check_grad(caller_writes_the_result, args, (0, 1), mutation=mutation)


def test_vjp_of_the_returned_array_changed_before_the_pullback():
    x = np.random.default_rng(5).standard_normal(6)
    out, pullback = adgen.vjp(fill_returned, x.copy(), 0.8)
    ones = np.ones_like(out)
    expected = pullback(ones)
    out[2] = 7.0  # the user changes the output the pullback reads: refused, never wrong
    with pytest.raises(adgen.MutationError):
        pullback(ones)
    out[2] = np.tanh(x[2] * 0.8)
    again = pullback(ones)
    np.testing.assert_array_equal(again[0], expected[0])
    assert_grad_close(expected[0], numerical_grad(
        lambda v, w: np.sum(fill_returned(v, w)), (x.copy(), 0.8), 0))


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_method_and_a_lambda(mutation):
    x = np.random.default_rng(6).standard_normal(8)
    filler = Filler(0.4)
    assert_grad_close(adgen.grad(filler, mutation=mutation)(x.copy()),
                      numerical_grad(filler, (x.copy(),), 0))
    loss = lambda v: fill(v, 1.3) + fill(2.0 * v, 0.5)  # noqa: E731 - a user's lambda
    assert_grad_close(adgen.grad(loss, mutation=mutation)(x.copy()),
                      numerical_grad(loss, (x.copy(),), 0))


def test_numba_backend():
    pytest.importorskip("numba")
    for fn, args in ((fill, (np.random.default_rng(7).standard_normal(9), 0.7)),
                     (table, (np.random.default_rng(8).random((4, 3)), 0.3))):
        g = adgen.grad(fn, argnums=(0, 1), backend="numba")(*copy.deepcopy(args))
        for k in (0, 1):
            assert_grad_close(g[k], numerical_grad(fn, copy.deepcopy(args), k))


def test_second_order():
    """vjp of the gradient differentiates the pullback, which now reads h[i]; hvp is reverse
    over forward mode."""
    x = np.random.default_rng(9).standard_normal(5)
    v = np.random.default_rng(10).standard_normal(5)
    loss = lambda y: fill(y, 0.9)  # noqa: E731 - a user's lambda
    g = adgen.grad(loss)
    eps = 1e-5
    expected = (g(x + eps * v) - g(x - eps * v)) / (2 * eps)
    assert_grad_close(adgen.hvp(loss)(x.copy(), v), expected)
    _, pull = adgen.vjp(g, x.copy())
    assert_grad_close(pull(v)[0], expected)  # the Hessian is symmetric


def test_values_are_the_tuple_tapes_bit_for_bit():
    """Read back from h, the values are the ones a tape of the generic compilation (no
    signature: no float64 facts, a tuple tape) keeps: the gradients are equal exactly."""
    from adgen.transforms import pipeline

    x = np.linspace(-1.3, 1.7, 50)
    special = adgen.grad(fill, argnums=(0, 1))(x.copy(), 0.7)
    generic = pipeline.compile_function(fill, wrt=(0, 1))
    _out, saved = generic.forward(x.copy(), 0.7)
    assert any(isinstance(v, list) for v in saved)  # its tape of tanh's outputs
    gx, gw = generic.pullback(saved, 1.0)
    np.testing.assert_array_equal(special[0], gx)
    assert special[1] == gw
