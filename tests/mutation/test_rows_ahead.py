"""Rows ahead of a growing loop counter (``B[i + 1:]``, ``x[i + 1]``), read before any
iteration writes them: under "save" the pullback reads them from one copy of the array taken
before the loop, and the loop's writes carry no guard. Whenever a write may reach the rows
read first (a row ahead written, the row read written earlier in the same iteration, a
counter that may be negative, a nested loop, a write through another name), the site stays
an ordinary guarded one. Gradients against central differences of the plain function, under
both policies; the final state of the arguments too."""

import numpy as np
import pytest
from harness import adgen_grad, check_gradient, check_value, fresh, line_of

import adgen
from adgen.errors import MutationError

ALPHA = 1.5


def trmm(A, B):
    B = B.copy()
    for i in range(B.shape[0]):
        B[i, :] += A[i + 1:, i] @ B[i + 1:, :]  # the rows below i still hold the input
        B[i, :] *= ALPHA
    return np.sum(B ** 2)


def seidel(x, b):
    x = x.copy()
    for i in range(x.shape[0]):
        x[i] = np.tanh(b[i] - np.sum(x[i + 1:] ** 2)) + 0.2 * x[i]
    return np.sum(x * x)


def next_row(X):
    X = X.copy()
    for i in range(X.shape[0] - 1):
        X[i] = np.sin(X[i + 1]) * X[i]  # reads row i + 1 before iteration i + 1 writes it
    return np.sum(X ** 2)


def ahead_written_after(x):
    x = x.copy()
    for i in range(x.shape[0] - 1):
        s = np.sum(x[i + 1:] ** 2)
        x[i + 1] = 0.5 * x[i + 1] + s  # after the read: the next iteration reads from i + 2
    return np.sum(x ** 3)


def ahead_then_written_ahead(x):
    x = x.copy()
    for i in range(x.shape[0] - 2):
        s = np.sum(x[i + 1:] ** 2)
        x[i + 2] = 0.5 * x[i + 2] + s  # row i + 2: read again by the next iteration
    return np.sum(x ** 3)


def written_before_read(x):
    x = x.copy()
    for i in range(x.shape[0] - 1):
        x[i + 1] = np.cos(x[i + 1])  # the row read below, written first
        x[i] = x[i] * np.sum(x[i + 1:] ** 2)
    return np.sum(x ** 2)


def negative_start(x):
    y = x.copy()
    for i in range(-1, y.shape[0] - 1):
        y[i] = np.sum(y[i + 1:] ** 2) * 0.3  # y[-1] at first: the last row, read later
    return np.sum(y ** 2)


def nested(x):
    x = x.copy()
    for t in range(2):
        for i in range(x.shape[0]):
            x[i] = np.tanh(np.sum(x[i + 1:] ** 2) - x[i])  # a restarting counter
    return np.sum(x ** 2)


def through_another_name(x):
    x = x.copy()
    y = x[::-1]
    for i in range(x.shape[0] - 1):
        s = np.sum(x[i + 1:] ** 2)
        y[i] = s  # writes the last rows of x: the ones read
    return np.sum(x ** 2)


def rng_args(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.random(s) * 0.5 + 0.1 for s in shapes)


AHEAD = [
    (trmm, rng_args((5, 5), (5, 4)), (0, 1), "B[i, :] += A[i + 1:, i] @ B[i + 1:, :]"),
    (seidel, rng_args(6, 6, seed=1), (0, 1), "x[i] = np.tanh(b[i] - np.sum(x[i + 1:] ** 2))"),
    (next_row, rng_args((5, 3), seed=2), (0,), "X[i] = np.sin(X[i + 1]) * X[i]"),
    (ahead_written_after, rng_args(6, seed=8), (0,), "x[i + 1] = 0.5 * x[i + 1] + s"),
]
GUARDED = [
    (ahead_then_written_ahead, rng_args(6, seed=3), (0,)),
    (written_before_read, rng_args(6, seed=4), (0,)),
    (negative_start, rng_args(6, seed=5), (0,)),
    (nested, rng_args(5, seed=6), (0,)),
    (through_another_name, rng_args(6, seed=7), (0,)),
]


@pytest.mark.parametrize("fn, args, argnums, write", AHEAD, ids=[c[0].__name__ for c in AHEAD])
def test_rows_ahead_are_read_from_one_copy(fn, args, argnums, write):
    check_gradient(fn, args, argnums, adgen_grad("save"))
    check_value(fn, args, argnums, "save")
    src = adgen.source(fn, *args).split("_pullback")[0]
    assert "copy_before_loop(" in src and "before_write(" not in src and "capture(" not in src
    sites = adgen.explain(fn, *fresh(args), file=None)
    at = line_of(fn, write)
    copied = args[argnums[-1]] if fn is trmm else args[0]
    assert any(s.line == at and s.decision == "guarded-save" and
               s.bytes_saved == copied.nbytes for s in sites), sites


@pytest.mark.parametrize("fn, args, argnums, write", AHEAD, ids=[c[0].__name__ for c in AHEAD])
def test_rows_ahead_under_strict_still_raise(fn, args, argnums, write):
    with pytest.raises(MutationError):
        adgen.grad(fn, argnums=argnums, mutation="strict")(*fresh(args))


@pytest.mark.parametrize("fn, args, argnums", GUARDED, ids=[c[0].__name__ for c in GUARDED])
def test_rows_a_write_may_reach_stay_guarded(fn, args, argnums):
    check_gradient(fn, args, argnums, adgen_grad("save"))
    assert "copy_before_loop(" not in adgen.source(fn, *args)
    with pytest.raises(MutationError):
        adgen.grad(fn, argnums=argnums, mutation="strict")(*fresh(args))
