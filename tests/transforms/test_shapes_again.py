"""shapes_again.shape_again: a loop's pullback takes the shape of a part it reads only for its
shape (``sum_vjp(g, t.shape)``, ``unbroadcast(g, t.shape)``) from the same part of the same
array again, instead of taping a shape tuple per iteration (issue 15: seidel-2d, syrk, syr2k
and ADI kept one per temporary and step).

Each function is differentiated under both policies and compared with central differences of
the plain function, with the arguments' final contents checked against a plain call. The
positive cases check the tape holds no shape (or no tape is left at all); the near misses
(a part whose shape changes from step to step, an index read from an array, an array bound
in the loop, two arrays that broadcast) must stay right whatever the compiler chose.
"""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, numerical_grad

import adgen

# the conv bench/workloads/conv.py times: the benchmark measures what is tested here
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.workloads.conv import conv  # noqa: E402

POLICIES = ["save", "strict"]
ALPHA = 1.5


def seidel(A):
    A = A.copy()
    n = A.shape[0]
    for _ in range(2):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                # the part is written by the next steps: its values are not final, its shape is
                A[i, j] = np.sum(A[i - 1:i + 2, j - 1:j + 2]) / 9.0
    return np.sum(A ** 2)


def syrk_like(A, B, C):
    C = C.copy()
    for i in range(C.shape[0]):
        for k in range(A.shape[1]):
            C[i, :i + 1] += A[:i + 1, k] * ALPHA * B[i, k]  # a part times numbers
    return np.sum(C ** 2)


def clipped_windows(x):
    y = x.copy()
    s = 0.0
    for i in range(y.shape[0]):
        w = y[i - 1:i + 2]  # empty at i = 0 (-1:2), two long at the end: a shape per step
        s = s + np.sum(w) * x[i]
        y[i] = 0.5 * y[i]
    return s + np.sum(y ** 2)


def indexed_by_a_read(x, stops):
    y = x.copy()
    s = 0.0
    for i in range(stops.shape[0]):
        k = stops[i]
        s = s + np.sum(y[:k]) * x[i]
        y[i] = np.sin(y[i])
    return s + np.sum(y ** 2)


def bound_in_the_loop(x):
    s = 0.0
    for i in range(1, x.shape[0]):
        z = np.cos(x)  # another array each step
        s = s + np.sum(z[:i]) * x[i]
    return s


def broadcast_pair(a, b):
    y = b.copy()
    s = 0.0
    for i in range(1, b.shape[0]):
        r = a[i:i + 1] + y[:i + 1]  # (1,) + (i + 1,): r has the longer one's shape
        s = s + np.sum(r) * a[i]
        y[i] = 2.0 * y[i]
    return s + np.sum(y ** 2)


def growing_list(x):
    parts = []
    s = 0.0
    for i in range(x.shape[0]):
        parts.append(x[i] * 2.0)
        for j in range(len(parts)):  # a list's length: another bound each step
            s = s + np.sin(parts[j] * x[i])
    return s


def column_sums(A):
    A = A.copy()
    for i in range(1, A.shape[0] - 1):
        A[i] = np.sum(A[i - 1:i + 2], axis=0) / 3.0  # a sum along an axis: its vjp stays
    return np.sum(A ** 2)


def weighted_window(A, w):
    A = A.copy()
    for i in range(1, A.shape[0] - 1):
        A[i] = np.sum(A[i - 1:i + 2] * w)  # the sum of a product, not of the part itself
    return np.sum(A ** 2)


class Smoother:
    """A user's class: the stencil as a method reading an attribute."""

    def __init__(self, weight):
        self.weight = weight

    def __call__(self, u):
        u = u.copy()
        for i in range(1, u.shape[0] - 1):
            u[i] = self.weight * np.sum(u[i - 1:i + 2])
        return np.sum(u ** 2)


def _args(fn, rng):
    if fn is seidel:
        return (rng.standard_normal((5, 5)),)
    if fn is syrk_like:
        return rng.standard_normal((5, 3)), rng.standard_normal((5, 3)), \
            rng.standard_normal((5, 5))
    if fn is indexed_by_a_read:
        return rng.standard_normal(6), np.array([2, 5, 0, 6, 3])
    if fn is broadcast_pair:
        return rng.standard_normal(5), rng.standard_normal(5)
    if fn is conv:
        return rng.standard_normal((5, 5)), rng.standard_normal((2, 2))
    if fn is column_sums:
        return (rng.standard_normal((5, 3)),)
    if fn is weighted_window:
        return rng.standard_normal(6), rng.standard_normal(3)
    return (rng.standard_normal(6),)


def _check(fn, args, argnums, mutation):
    """Right gradient and final arguments under ``mutation``; strict may not refuse here."""
    assert check_grad(fn, args, argnums, mutation=mutation) is not None, "strict refused"


def _taped(fn, args, mutation):
    forward = adgen.source(fn, *args, mutation=mutation).split(f"def {fn.__name__}_pullback")[0]
    return [line for line in forward.splitlines() if ".append(" in line]


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_stencil_keeps_no_tape(mutation):
    args = _args(seidel, np.random.default_rng(1))
    _check(seidel, args, (0,), mutation)
    assert _taped(seidel, args, mutation) == [], adgen.source(seidel, *args)
    pullback = adgen.source(seidel, *args, mutation=mutation).split("def seidel_pullback")[1]
    # the sum's cotangent, a number, is added to the part of the adjoint itself
    assert "sum_vjp" not in pullback and "t8_bar += t9_bar" in pullback, pullback


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_part_times_numbers(mutation):
    args = _args(syrk_like, np.random.default_rng(2))
    _check(syrk_like, args, (0, 1, 2), mutation)
    taped = _taped(syrk_like, args, mutation)
    assert all(".shape" not in line for line in taped), taped


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", [clipped_windows, indexed_by_a_read, bound_in_the_loop,
                                broadcast_pair, column_sums, weighted_window])
def test_near_misses_stay_right(fn, mutation):
    args = _args(fn, np.random.default_rng(3))
    if fn is weighted_window and mutation == "strict":
        with pytest.raises(adgen.MutationError, match="overwrites"):
            adgen.grad(fn, argnums=(0, 1), mutation=mutation)(*copy.deepcopy(args))
        return
    _check(fn, args, (0, 1) if fn in (broadcast_pair, weighted_window) else (0,), mutation)
    if fn is column_sums:
        assert "sum_vjp" in adgen.source(fn, *args, mutation=mutation)


def test_broadcast_pair_takes_the_broadcast_shape():
    """The two arrays' shapes differ ((1,) against (i + 1,)): the longer one's is r's; taking
    a[i:i + 1]'s would sum b's adjoint into one element."""
    args = _args(broadcast_pair, np.random.default_rng(4))
    g = adgen.grad(broadcast_pair, argnums=(0, 1))(*copy.deepcopy(args))
    for k in (0, 1):
        assert_grad_close(g[k], numerical_grad(broadcast_pair, copy.deepcopy(args), k))
    pullback = adgen.source(broadcast_pair, *args).split("def broadcast_pair_pullback")[1]
    assert not re.search(r"r_shape\w* = a\[", pullback), pullback


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_method_and_a_lambda(mutation):
    u = np.random.default_rng(5).standard_normal(7)
    smooth = Smoother(0.3)
    g = adgen.grad(smooth, mutation=mutation)(u.copy())
    assert_grad_close(g, numerical_grad(smooth, (u.copy(),), 0))
    loss = lambda v: seidel(v.reshape(3, 3)) * 2.0  # noqa: E731 - a user's lambda
    v = np.random.default_rng(6).standard_normal(9)
    assert_grad_close(adgen.grad(loss, mutation=mutation)(v.copy()),
                      numerical_grad(loss, (v.copy(),), 0))


def test_pullback_runs_twice_and_vjp():
    args = _args(seidel, np.random.default_rng(7))
    out, pullback = adgen.vjp(seidel, *copy.deepcopy(args))
    first = pullback(1.0)[0]
    second = pullback(1.0)[0]
    np.testing.assert_array_equal(first, second)
    assert_grad_close(first, numerical_grad(seidel, copy.deepcopy(args), 0))


def test_numba_backend():
    pytest.importorskip("numba")
    args = _args(seidel, np.random.default_rng(8))
    g = adgen.grad(seidel, backend="numba")(*copy.deepcopy(args))
    assert_grad_close(g, numerical_grad(seidel, copy.deepcopy(args), 0))


@pytest.mark.parametrize("mutation", POLICIES)
def test_the_length_of_an_array_is_taken_again(mutation):
    """conv's inner bound len(k) is bound in the loop around it: computed again, no tape."""
    args = _args(conv, np.random.default_rng(9))
    _check(conv, args, (0, 1), mutation)
    assert _taped(conv, args, mutation) == [], adgen.source(conv, *args)


@pytest.mark.parametrize("mutation", POLICIES)
def test_the_length_of_a_growing_list_stays_taped(mutation):
    args = _args(growing_list, np.random.default_rng(10))
    _check(growing_list, args, (0,), mutation)
    assert _taped(growing_list, args, mutation), adgen.source(growing_list, *args)
