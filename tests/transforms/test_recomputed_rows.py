"""recomputed_rows: a loop's row of numbers computed again by the pullback (the forward's own
statements, from final elements, counters and numbers outside the loop), where that leaves
the row nothing but its counter (issue 15: soft-DTW kept a counter and six NumPy scalars a
cell, about 240 bytes, where the hand adjoint keeps R).

Gradients under both policies against central differences (check_grad also checks the
arguments' final contents). The near misses — a cell read, then written again in the same
iteration or by a later loop, a row written again, a number from a call adgen cannot repeat,
a chain over the cap, a loop with a break — must keep their rows and stay right.
"""

from __future__ import annotations

import numpy as np
import pytest
from adgen.transforms.recomputed_rows import CHAIN_STEPS, STEPS_PER_NUMBER
from gradcheck import assert_grad_close, check_grad, numerical_grad

import adgen
from bench.workloads.softdtw import soft_dtw

POLICIES = ["save", "strict"]


def _forward(fn, args, **kw):
    return adgen.source(fn, *args, **kw).split(f"def {fn.__name__}_pullback")[0]


def softmin_table(C, gamma):
    """soft-DTW's recursion with a log-sum-exp written with np.logaddexp and a float bias."""
    n, m = C.shape
    R = np.zeros((n + 1, m + 1))
    R[0, 1:] = 10.0
    R[1:, 0] = 10.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            a = -R[i - 1, j - 1] / gamma
            b = -R[i - 1, j] / gamma
            c = -R[i, j - 1] / gamma
            lo = min(min(a, b), c)
            s = np.logaddexp(np.logaddexp(a - lo, b - lo), c - lo)
            R[i, j] = C[i - 1, j - 1] - gamma * (s + lo) + 0.25
    return R[n, m]


def decay(x, c):
    """A scalar recurrence: exp and log1p of the previous element, read again."""
    y = np.zeros(x.shape[0])
    y[0] = x[0]
    for i in range(1, x.shape[0]):
        e = np.exp(-c * y[i - 1])
        w = np.log1p(e) * e
        y[i] = w * x[i] + abs(y[i - 1]) * 0.5
    return np.sum(y ** 2)


def decay_rows(X, c):
    """decay on each row of a matrix: the inner loop is nested, so its numbers would be a
    tuple row."""
    rows, cols = X.shape
    Y = np.zeros(X.shape)
    for r in range(rows):
        Y[r, 0] = X[r, 0]
        for i in range(1, cols):
            e = np.exp(-c * Y[r, i - 1])
            w = np.log1p(e) * e
            Y[r, i] = w * X[r, i] + abs(Y[r, i - 1]) * 0.5
    return np.sum(Y ** 2)


def cell_written_again(C, gamma):
    """R[i - 1, j] is written again in the same iteration, after the cell read it."""
    n, m = C.shape
    R = np.ones((n + 1, m + 1))
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            a = np.exp(-R[i - 1, j - 1] * gamma)
            b = np.exp(-R[i - 1, j] * gamma)
            R[i, j] = C[i - 1, j - 1] * (a + b)
            R[i - 1, j] = R[i - 1, j] * 0.5  # the element read above, changed
    return np.sum(R)


def written_twice(C, gamma):
    """Each cell is written twice: by its own iteration, then by the next one, after that
    iteration read it (R[i, j - 1] changed after the read)."""
    n, m = C.shape
    R = np.ones((n + 1, m + 1))
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            a = np.exp(-R[i, j - 1] * gamma)
            b = np.tanh(a * R[i - 1, j])
            R[i, j] = C[i - 1, j - 1] + a * b
            R[i, j - 1] = R[i, j - 1] + b  # a cell written again, after it was read
    return np.sum(R ** 2)


def row_written_again(C, gamma):
    """Each outer step writes the previous row again after the inner loop read it."""
    n, m = C.shape
    R = np.ones((n + 1, m + 1))
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            a = np.exp(-R[i - 1, j] * gamma)
            b = max(a, R[i - 1, j - 1])
            R[i, j] = C[i - 1, j - 1] * b
        for j in range(m + 1):
            R[i - 1, j] = R[i - 1, j] * 0.9  # row i - 1 again
    return np.sum(R ** 2)


def second_pass(C, gamma):
    """A later loop writes the table again."""
    n, m = C.shape
    R = np.ones((n + 1, m + 1))
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            a = np.exp(-R[i - 1, j] * gamma)
            R[i, j] = C[i - 1, j - 1] * a + R[i, j - 1] * 0.5
    for i in range(n + 1):
        for j in range(m + 1):
            R[i, j] = np.sin(R[i, j])
    return np.sum(R ** 2)


def helper(v):
    return v * v + 1.0


def through_a_call(x, c):
    y = np.zeros(x.shape[0])
    y[0] = x[0]
    for i in range(1, x.shape[0]):
        e = np.exp(-c * y[i - 1])
        h = helper(e)  # a user function: not repeated
        y[i] = h * x[i]
    return np.sum(y ** 2)


def long_chain(x, c):
    y = np.zeros(x.shape[0])
    y[0] = x[0]
    for i in range(1, x.shape[0]):
        e = y[i - 1] * c
        e1 = np.sin(e)
        e2 = np.sin(e1)
        e3 = np.sin(e2)
        e4 = np.sin(e3)
        e5 = np.sin(e4)
        e6 = np.sin(e5)
        e7 = np.sin(e6)
        e8 = np.sin(e7)
        e9 = np.sin(e8)
        e10 = np.sin(e9)
        e11 = np.sin(e10)
        e12 = np.sin(e11)
        e13 = np.sin(e12)
        e14 = np.sin(e13)
        e15 = np.sin(e14)
        e16 = np.sin(e15)
        e17 = np.sin(e16)
        e18 = np.sin(e17)
        e19 = np.sin(e18)
        e20 = np.sin(e19)
        e21 = np.sin(e20)
        e22 = np.sin(e21)
        e23 = np.sin(e22)
        e24 = np.sin(e23)
        e25 = np.sin(e24)
        e26 = np.sin(e25)
        e27 = np.sin(e26)
        e28 = np.sin(e27)
        e29 = np.sin(e28)
        e30 = np.sin(e29)
        e31 = np.sin(e30)
        e32 = np.sin(e31)
        e33 = np.sin(e32)
        y[i] = e33 * x[i]
    return np.sum(y ** 2)


def with_break(x, c):
    y = np.zeros(x.shape[0])
    y[0] = x[0]
    for i in range(1, x.shape[0]):
        e = np.exp(-c * y[i - 1])
        y[i] = e * x[i]
        if e < 0.0:
            break
    return np.sum(y ** 2)


class Table:
    """A user's class: soft-DTW as a method, gamma an attribute."""

    def __init__(self, gamma):
        self.gamma = gamma

    def loss(self, C):
        return soft_dtw(C, self.gamma)


@pytest.mark.parametrize("mutation", POLICIES)
def test_soft_dtw_keeps_no_row(mutation):
    args = (np.random.default_rng(0).random((5, 4)), 0.3)
    check_grad(soft_dtw, args, (0,), mutation=mutation)
    forward = _forward(soft_dtw, args, mutation=mutation)
    assert "tape" not in forward and "append" not in forward, forward


@pytest.mark.parametrize("mutation", POLICIES)
def test_soft_dtw_gamma_too(mutation):
    # finite costs on the border, so that gamma's gradient is a number (soft_dtw's own
    # border of inf makes it nan, at HEAD before this change too): the log of the sum is
    # computed again for gamma's cotangent
    args = (np.random.default_rng(1).random((4, 3)), 0.7)
    check_grad(softmin_table, args, (0, 1), mutation=mutation)
    forward = _forward(softmin_table, args, mutation=mutation)
    assert "tape" not in forward, forward


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_scalar_recurrence(mutation):
    args = (np.random.default_rng(2).standard_normal((3, 6)), 0.6)
    check_grad(decay_rows, args, (0, 1), mutation=mutation)
    forward = _forward(decay_rows, args, mutation=mutation)
    assert "tape" not in forward, forward
    # a loop at the top level keeps its numbers in typed columns (8 bytes each, no tuple):
    # not computed again
    args = (np.random.default_rng(2).standard_normal(7), 0.6)
    check_grad(decay, args, (0, 1), mutation=mutation)
    assert "tape_columns(" in _forward(decay, args, mutation=mutation)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", [cell_written_again, written_twice, row_written_again,
                                second_pass])
def test_cells_written_again_stay_right(fn, mutation):
    args = (np.random.default_rng(3).random((4, 3)), 0.4)
    check_grad(fn, args, (0, 1), mutation=mutation)


@pytest.mark.parametrize("fn", [cell_written_again, written_twice, row_written_again])
def test_cells_written_again_keep_their_rows(fn):
    args = (np.random.default_rng(4).random((4, 3)), 0.4)
    assert "tape" in _forward(fn, args)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", [through_a_call, long_chain, with_break])
def test_rows_that_stay(fn, mutation):
    args = (np.random.default_rng(5).standard_normal(6) * 0.5, 0.7)
    check_grad(fn, args, (0, 1), mutation=mutation)
    assert "tape" in _forward(fn, args) or "_col" in _forward(fn, args)


def one_number_for_eight_steps(x, c):
    """The row would lose one number, exp's output, for a chain of eight operations (the
    linear steps before it read nothing the row keeps): over three a number, so it keeps it."""
    n = x.shape[0]
    y = np.zeros((2, n))
    for r in range(2):
        y[r, 0] = x[0]
        for i in range(1, n):
            e = (((y[r, i - 1] * c + 1.0) * 0.5 - 0.25) * 0.9 + 0.1) * 0.8
            s = np.exp(e)
            y[r, i] = s * x[i]
    return np.sum(y ** 2)


def test_the_caps():
    assert CHAIN_STEPS < 34  # long_chain is over it
    args = (np.random.default_rng(11).standard_normal(5) * 0.5, 0.7)
    check_grad(one_number_for_eight_steps, args, (0, 1))
    assert "tape" in _forward(one_number_for_eight_steps, args)
    assert 8 > STEPS_PER_NUMBER


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_method_and_a_lambda(mutation):
    C = np.random.default_rng(6).random((4, 5))
    table = Table(0.5)
    assert_grad_close(adgen.grad(table.loss, mutation=mutation)(C.copy()),
                      numerical_grad(table.loss, (C.copy(),), 0))
    x = np.random.default_rng(7).standard_normal(5)
    loss = lambda v: decay_rows(np.outer(v, v), 0.3) + softmin_table(np.outer(v, v[:3]), 0.6)  # noqa: E731,E501
    assert_grad_close(adgen.grad(loss, mutation=mutation)(x.copy()),
                      numerical_grad(loss, (x.copy(),), 0))


def test_numba_backend():
    pytest.importorskip("numba")
    # (decay's abs has no nopython adjoint: refused by the numba backend before this too)
    for fn, args in ((soft_dtw, (np.random.default_rng(9).random((4, 3)), 0.3)),
                     (softmin_table, (np.random.default_rng(10).random((3, 4)), 0.5))):
        g = adgen.grad(fn, backend="numba")(*args)
        assert_grad_close(g, adgen.grad(fn)(*args))
        assert_grad_close(g, numerical_grad(fn, args, 0))


def _flat_table(c):
    return softmin_table(c.reshape(3, 2), 0.6)


def _flat_decay(x):
    return decay_rows(x.reshape(2, 3), 0.4)


@pytest.mark.parametrize("fn, n", [(_flat_table, 6), (_flat_decay, 6)])
def test_second_derivatives(fn, n):
    # the gradient's code (a recomputed row, comparisons for max) differentiated again:
    # against central differences of the gradient (soft_dtw itself: its border of inf
    # makes 72 of 81 second derivatives nan, at the session's start too)
    x = np.random.default_rng(n).random(n) + 0.1
    grad = adgen.grad(fn)
    eps = 1e-5
    want = np.stack([(grad(x + eps * e) - grad(x - eps * e)) / (2 * eps) for e in np.eye(n)],
                    axis=1)
    for second in (adgen.hessian(fn), adgen.jacfwd(grad), adgen.jacrev(grad)):
        np.testing.assert_allclose(second(x), want, rtol=1e-4, atol=1e-6)
