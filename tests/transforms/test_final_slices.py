"""A part ``x[:i]`` read before ``x[i] = ...`` in the same ascending loop is final when the
pullback runs (later steps write rows ``i' >= i``): the pullback takes the part again
instead of taping it (``writes_behind.slice_behind``). Gradients against central
differences under both policies, and look-alikes that must keep their tape: a part reaching
the row written (``x[:i + 1]``), a descending loop, a write through another name, a write
after the loop, rows of a matrix; as users write them (a method, a lambda).
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

POLICIES = ["save", "strict"]


def trisolv(L, b):
    x = b.copy()
    for i in range(x.shape[0]):
        x[i] -= L[i, :i] @ x[:i]
        x[i] /= L[i, i]
    return np.sum(x ** 2)


def reaches_the_row(L, b):
    """Look-alike: x[:i + 1] holds x[i], which the step then overwrites."""
    x = b.copy()
    for i in range(x.shape[0]):
        s = L[i, :i + 1] @ x[:i + 1]
        x[i] = np.sin(s) + b[i]
    return np.sum(x ** 2)


def descending(L, b):
    """Look-alike: the rows below i are written later."""
    x = b.copy()
    n = x.shape[0]
    for i in range(n - 1, -1, -1):
        x[i] = np.tanh(L[i, :i] @ x[:i]) + x[i]
    return np.sum(x ** 2)


def through_an_alias(L, b):
    """Look-alike: the write goes through another name of x's buffer."""
    x = b.copy()
    y = x[:]
    for i in range(x.shape[0]):
        s = np.sum(np.sin(x[:i]))
        y[i] = s * L[i, i] + x[i]
        if i > 0:
            y[i - 1] = y[i - 1] * 0.5
    return np.sum(x ** 2)


def written_after(L, b):
    """Look-alike: x[:i] is read in the loop and x is scaled in place after it."""
    x = b.copy()
    acc = 0.0
    for i in range(x.shape[0]):
        acc = acc + np.sum(np.cos(x[:i]) * L[i, :i])
        x[i] = x[i] * 2.0
    x *= 3.0
    return acc + np.sum(x ** 2)


def matrix_rows(A, B):
    """Rows of a matrix: X[:i] read, X[i] written."""
    X = B.copy()
    for i in range(X.shape[0]):
        X[i] = X[i] + np.tanh(A[i, :i] @ X[:i])
    return np.sum(X ** 2)


class Solver:
    def __init__(self, scale):
        self.scale = scale

    def __call__(self, L, b):
        return self.scale * trisolv(L, b)


def _args(n=6, seed=0):
    rng = np.random.default_rng(seed)
    return 0.3 * rng.standard_normal((n, n)) + 2.0 * np.eye(n), rng.standard_normal(n)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", [trisolv, reaches_the_row, descending, through_an_alias,
                                written_after])
def test_gradients(fn, mutation):
    check_grad(fn, _args(), (0, 1), mutation=mutation)


@pytest.mark.parametrize("mutation", POLICIES)
def test_rows_of_a_matrix(mutation):
    rng = np.random.default_rng(3)
    check_grad(matrix_rows, (0.4 * rng.standard_normal((5, 5)), rng.standard_normal((5, 3))),
               (0, 1), mutation=mutation)


def test_a_method_and_a_lambda():
    L, b = _args(5, 1)
    check_grad(Solver(0.5), (L, b), (0, 1))
    check_grad(lambda L, b: 2.0 * trisolv(L * 1.0, b), (L, b), (0, 1))


def test_the_part_is_taken_again():
    text = adgen.source(trisolv, *_args())
    forward, pullback = text.split("_pullback(")
    assert ".append(" not in forward and "x[:i]" in pullback, text
    # a part reaching the row written stays on the tape
    text = adgen.source(reaches_the_row, *_args())
    assert ".append(" in text.split("_pullback(")[0], text
