"""values_again.final_value: parts of arrays (and such a part times a number) that a loop's
pullback computes again instead of taping them, because no later write changes the array.

Each function is differentiated under both policies and compared with central differences
of the plain function, with the arguments' final contents checked against a plain call; the
positive cases also check that the value is no longer on the tape, and the near misses
(the array written after the read: later in the iteration, by a later loop, through a
parameter that may be the same array; a part indexed by a value read from an array) keep it.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, numerical_grad

import adgen

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.workloads.conv import conv  # noqa: E402

POLICIES = ["save", "strict"]
ALPHA = 1.5


def syrk(A, C):
    C = C.copy()
    for i in range(C.shape[0]):
        C[i, :i + 1] *= 0.8
        for k in range(A.shape[1]):
            C[i, :i + 1] += ALPHA * A[i, k] * A[:i + 1, k]  # a global number times a part
    return np.sum(C ** 2)


def rows_of_a_copy(a):
    b = np.tanh(a)  # bound once, before the loop, never written
    s = 0.0
    for i in range(1, a.shape[0]):
        r = b[:i] / 3.0
        s = s + np.sum(r * r * a[i])
    return s


def columns_then_rows(a):
    s = 0.0
    for j in range(a.shape[1]):
        c = 2.0 - a[:, j]
        s = s + np.sum(c * c * c)
    return s


def written_later_in_the_iteration(a):
    x = a.copy()
    s = 0.0
    for i in range(1, x.shape[0]):
        r = x[:i] * 2.0
        s = s + np.sum(r * r)
        x[:i] = x[:i] * 0.5  # r's rows change after the read
    return s + np.sum(x)


def written_by_a_later_loop(a):
    x = a.copy()
    s = 0.0
    for i in range(1, x.shape[0]):
        r = x[:i] * 2.0
        s = s + np.sum(r * r)
    for i in range(x.shape[0]):
        x[i] = np.sin(x[i])
    return s + np.sum(x * x)


def through_a_parameter(a, c):
    s = 0.0
    for i in range(1, a.shape[0]):
        r = a[:i] * 2.0
        s = s + np.sum(r * r)
        c[i] = s  # c may be a
    return s


def indexed_by_a_read(a, idx):
    s = 0.0
    for i in range(idx.shape[0]):
        k = idx[i]
        r = a[:k] * 2.0
        s = s + np.sum(r * r * r)
    return s


def soft_min_table(C, gamma):
    n, m = C.shape
    R = np.full((n + 1, m + 1), np.inf)
    R[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            r0 = -R[i - 1, j - 1] / gamma
            r1 = -R[i - 1, j] / gamma
            r2 = -R[i, j - 1] / gamma
            rmax = max(max(r0, r1), r2)
            rsum = np.exp(r0 - rmax) + np.exp(r1 - rmax) + np.exp(r2 - rmax)
            R[i, j] = C[i - 1, j - 1] - gamma * (np.log(rsum) + rmax)
    return R[n, m]


def bound_in_a_branch(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            stop = i + 1
        else:
            stop = 1
        for j in range(stop):  # its bound depends on the arm that ran
            s = s + np.sin(x[j] * x[i])
    return s


def _args(fn, rng):
    if fn is syrk:
        return rng.standard_normal((6, 3)), rng.standard_normal((6, 6))
    if fn is columns_then_rows:
        return (rng.standard_normal((4, 5)),)
    if fn is through_a_parameter:
        return rng.standard_normal(6), rng.standard_normal(6)
    if fn is indexed_by_a_read:
        return rng.standard_normal(6), np.array([2, 5, 3, 6])
    if fn is conv:
        return rng.standard_normal((5, 5)), rng.standard_normal((2, 2))
    if fn is soft_min_table:
        return rng.random((4, 3)), 0.5
    return (rng.standard_normal(6),)


def _check(fn, args, argnums, mutation):
    """Right gradient and final arguments under ``mutation``; strict may not refuse here."""
    assert check_grad(fn, args, argnums, mutation=mutation) is not None, "strict refused"


def _tape_records(fn, args, mutation, name):
    forward = adgen.source(fn, *args, mutation=mutation).split(f"def {fn.__name__}_pullback")[0]
    return any(name in line for line in forward.splitlines() if ".append((" in line)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn, untaped, again", [
    (syrk, "t", "A[:t"), (rows_of_a_copy, "r", "b[:i] / 3.0"),
    (columns_then_rows, "c", "2.0 - a[:, j]")])
def test_parts_are_computed_again(fn, untaped, again, mutation):
    args = _args(fn, np.random.default_rng(1))
    _check(fn, args, tuple(range(len(args))), mutation)
    src = adgen.source(fn, *args, mutation=mutation)
    pullback = src.split(f"def {fn.__name__}_pullback")[1]
    assert again in pullback, src
    forward = src.split(f"def {fn.__name__}_pullback")[0]
    # the tape keeps no array: only numbers and shapes
    taped = [line for line in forward.splitlines() if ".append((" in line]
    assert all("A[" not in t and ", r," not in t and ", c," not in t for t in taped), src


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", [written_later_in_the_iteration, written_by_a_later_loop])
def test_near_misses_keep_their_tapes(fn, mutation):
    args = _args(fn, np.random.default_rng(2))
    _check(fn, args, (0,), mutation)
    assert _tape_records(fn, args, mutation, "r"), adgen.source(fn, *args)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_parameter_that_may_be_the_written_one(mutation):
    a, c = _args(through_a_parameter, np.random.default_rng(3))
    _check(through_a_parameter, (a, c), (0,), mutation)
    assert _tape_records(through_a_parameter, (a, c), mutation, "r")
    # one array passed twice: the writes of c change a's later rows
    shared = a.copy()
    g = adgen.grad(through_a_parameter, mutation="save")(shared, shared)

    def once(z):
        return through_a_parameter(z, z)

    assert_grad_close(g, numerical_grad(once, (a.copy(),), 0))


@pytest.mark.parametrize("mutation", POLICIES)
def test_an_index_read_from_an_array(mutation):
    args = _args(indexed_by_a_read, np.random.default_rng(4))
    _check(indexed_by_a_read, args, (0,), mutation)


def test_vjp_then_the_argument_changes():
    """The pullback reads A when it runs: changing A after vjp raises, as for any value the
    pullback reads."""
    A, C = _args(syrk, np.random.default_rng(5))
    out, pullback = adgen.vjp(syrk, A, C)
    ct = pullback(1.0)
    assert_grad_close(ct[0], numerical_grad(syrk, (A.copy(), C.copy()), 0))
    A[2, 1] += 1.0
    with pytest.raises(adgen.MutationError, match="argument 0"):
        pullback(1.0)


@pytest.mark.parametrize("mutation", POLICIES)
def test_counters_and_bounds_are_not_taped(mutation):
    """conv's i + a, j + b are computed again, and its innermost loop runs its range again
    (len(k), bound in the loop around it): no tape at all for that loop."""
    args = _args(conv, np.random.default_rng(6))
    _check(conv, args, (0, 1), mutation)
    src = adgen.source(conv, *args, mutation=mutation)
    forward, pullback = src.split("def conv_pullback")
    assert "for b in reversed(range(" in pullback and "t7 = i + a" in pullback, src
    assert all("(b," not in line for line in forward.splitlines() if ".append(" in line), src


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_dynamic_programme(mutation):
    args = _args(soft_min_table, np.random.default_rng(7))
    _check(soft_min_table, args, (0,), mutation)
    forward = adgen.source(soft_min_table, *args, mutation=mutation).split("_pullback")[0]
    # the neighbours' indices (i - 1, j - 1) and -gamma are not taped, nor the rest of the
    # cell (recomputed_rows)
    assert ".append(" not in forward, forward


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_bound_bound_in_a_branch(mutation):
    _check(bound_in_a_branch, (np.random.default_rng(8).standard_normal(5),), (0,), mutation)


def sweeps(u0):
    d = (0.3, 0.2)[0]  # a number bound outside the loops (a tuple's item)
    n = u0.shape[0]
    u = u0.copy()
    p = np.zeros(n)
    for _ in range(2):
        for j in range(1, n - 1):
            p[j] = (1.0 + 2.0 * d) * u[j] - d * p[j - 1]  # 1.0 + 2.0 * d, n - 1: not taped
        for j in range(1, n - 1):
            u[j] = np.tanh(p[j]) + u[j - 1] * d
    return np.sum(u ** 2)


@pytest.mark.parametrize("mutation", POLICIES)
def test_numbers_bound_outside_and_their_arithmetic(mutation):
    x = np.random.default_rng(9).standard_normal(6)
    _check(sweeps, (x,), (0,), mutation)
    src = adgen.source(sweeps, x, mutation=mutation)
    # the first sweep tapes nothing (its numbers computed again, its range run again); the
    # second tapes its counter and tanh's output, one tuple of two a step
    assert "in reversed(range(1, " in src.split("def sweeps_pullback")[1], src
    taped = [line for line in src.split("def sweeps_pullback")[0].splitlines()
             if ".append((" in line and "(tape" not in line]
    assert len(taped) == 1 and taped[0].count(",") == 1, src


def transposes(A, x):
    s = 0.0
    for t in range(3):
        K = np.tanh(A * (t + 1.0))
        KT = K.T  # a view of K, computed again from K by the pullback
        AT = A.T  # a view of the argument
        y = KT @ x + AT @ x
        K *= 0.5  # KT sees this write, taped or not
        s = s + np.sum(y * y) + np.sum(K * x)
    return s


def transposed_from_an_inner_loop(A, x):
    s = 0.0
    for t in range(2):
        M = A
        for k in range(2):
            M = np.sin(M) + k  # bound in the inner loop: KT's base is not at hand
        MT = M.T
        s = s + np.sum((MT @ x) ** 2)
    return s


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", [transposes, transposed_from_an_inner_loop])
def test_transposed_views(fn, mutation):
    rng = np.random.default_rng(10)
    args = (0.5 * rng.standard_normal((3, 3)), rng.standard_normal(3))
    if fn is transposes and mutation == "strict":
        # K *= 0.5 overwrites what the gradient of K * x's line reads
        with pytest.raises(adgen.MutationError):
            adgen.grad(fn, argnums=(0, 1), mutation="strict")(*copy.deepcopy(args))
        return
    _check(fn, args, (0, 1), mutation)
