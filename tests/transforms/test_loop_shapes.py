"""Shapes the same in every iteration of a loop are kept once, outside it
(analyses.loop_shapes, ``Pullback.shapes_outside``): the loop's row loses them, the enclosing
loop's row or the saved values hold them. Gradients against central differences under both
policies, where the shape is the same in every iteration and in look-alikes where it is not
(a slice bound by the loop's own counter, a loop-carried array whose length changes, a
branch, an inner loop that runs no iteration), as a user writes them: functions, a method,
a lambda, a while loop; and the numba backend against the default one.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

POLICIES = ["save", "strict"]


def rank_two_update(A, B):
    """syr2k's shape: the inner loop's part ``A[:i + 1, k]`` has i + 1 rows for every k."""
    n, m = A.shape
    C = np.zeros((n, n))
    for i in range(n):
        for k in range(m):
            C[:i + 1, i] += A[:i + 1, k] * 0.5 * B[i, k] + B[:i + 1, k] * 0.5 * A[i, k]
    return np.sum(C ** 2)


def growing_inner(A, b):
    """Look-alike: the part's length follows the inner loop's own counter."""
    n, m = A.shape
    out = np.zeros(m)
    for i in range(n):
        for k in range(m):
            out[:k + 1] += A[i, :k + 1] * b[k] + b[:k + 1] * A[i, k]
    return np.sum(out ** 2)


def sweep(u0):
    """adi's shape: sums of parts of ``u`` bounded by ``n``, the same in every step of both
    loops, so kept once for the call."""
    n = u0.shape[0]
    u = u0.copy()
    q = np.zeros((n, n))
    for _ in range(2):
        for j in range(1, n - 1):
            q[1:n - 1, j] = (-0.3 * u[j, 0:n - 2] + 1.6 * u[j, 1:n - 1] - 0.3 * u[j, 2:n]
                             - 0.5 * q[1:n - 1, j - 1]) / (0.2 * u[1:n - 1, j - 1] + 3.0)
        for j in range(n - 2, 0, -1):
            u[1:n - 1, j] = 0.5 * u[1:n - 1, j + 1] + q[1:n - 1, j]
    return np.sum(u ** 2)


def triangle_rows(L, b):
    """An inner loop that runs no iteration at i = 0, its parts bounded by the outer
    counter."""
    n = L.shape[0]
    x = np.zeros(n)
    for i in range(n):
        for k in range(i):
            x[:i] += L[i, :i] * b[k] + np.sin(L[k, :i]) * 0.1
        x[i] = b[i] + np.sum(x[:i])
    return np.sum(x ** 2)


def concatenated(u0, alpha):
    """Look-alike: ``u`` is longer after a step while it has fewer than 2 points."""
    u = u0
    for _ in range(3):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        u = np.concatenate([u[:1], u[1:-1] + alpha * lap, u[-1:]])
    return np.sum(u * u)


def branchy(X, w):
    """A part bound on one arm only, and a while loop around it."""
    n = X.shape[0]
    acc = np.zeros(X.shape[1] - 1)
    i = 0
    while i < n:
        if X[i, 0] > 0:
            t = X[i, 1:] * w + X[i, :-1]
            acc = acc + t
        else:
            acc = acc * 0.5
        i += 1
    return np.sum(acc ** 2)


class Smoother:
    """A user's class: the rank-two update as a method reading an attribute."""

    def __init__(self, scale):
        self.scale = scale

    def __call__(self, A, B):
        n, m = A.shape
        C = np.zeros(n)
        for i in range(n):
            for k in range(m):
                C[:i + 1] += A[:i + 1, k] * self.scale + B[:i + 1, k] * A[i, k]
        return np.sum(C ** 2)


def _rng(seed):
    return np.random.default_rng(seed)


@pytest.mark.parametrize("mutation", POLICIES)
def test_parts_bounded_by_an_outer_counter(mutation):
    rng = _rng(0)
    A, B = rng.standard_normal((5, 3)), rng.standard_normal((5, 3))
    check_grad(rank_two_update, (A, B), (0, 1), mutation=mutation)
    L, b = rng.standard_normal((5, 5)), rng.standard_normal(5)
    check_grad(triangle_rows, (L, b), (0, 1), mutation=mutation)


@pytest.mark.parametrize("mutation", POLICIES)
def test_look_alikes_whose_shapes_change(mutation):
    rng = _rng(1)
    A, b = rng.standard_normal((3, 4)), rng.standard_normal(4)
    check_grad(growing_inner, (A, b), (0, 1), mutation=mutation)
    for n in (1, 2, 3, 6):
        check_grad(concatenated, (rng.standard_normal(n), 0.2), (0, 1), mutation=mutation,
                   rtol=1e-5)
    X = rng.standard_normal((6, 4))
    X[::2, 0] = np.abs(X[::2, 0])
    check_grad(branchy, (X, 0.7), (0, 1), mutation=mutation)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("n", [2, 3, 6])
def test_sweeps_kept_once_for_the_call(n, mutation):
    check_grad(sweep, (_rng(n).standard_normal((n, n)),), 0, mutation=mutation, rtol=1e-5)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_method_and_a_lambda(mutation):
    rng = _rng(2)
    A, B = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    check_grad(Smoother(0.3), (A, B), (0, 1), mutation=mutation)
    f = lambda A, B: 2.0 * rank_two_update(A * 0.5, B)  # noqa: E731
    check_grad(f, (A, B), (0, 1), mutation=mutation)


def _forward(fn, args):
    return adgen.source(fn, *args).split("_pullback(")[0]


def test_the_inner_loop_keeps_no_tape():
    # the inner loop's shapes are kept in the outer row: it tapes nothing, its range runs
    # again (it taped (k, len(t)) per step)
    rng = _rng(3)
    text = _forward(rank_two_update, (rng.standard_normal((5, 3)), rng.standard_normal((5, 3))))
    appends = [line for line in text.splitlines() if ".append(" in line]
    assert len(appends) == 1 and "_shape" in appends[0], text
    assert "for k in reversed(range(" in adgen.source(
        rank_two_update, rng.standard_normal((5, 3)), rng.standard_normal((5, 3)))


def test_a_shape_that_changes_stays_in_the_row():
    rng = _rng(4)
    text = _forward(growing_inner, (rng.standard_normal((3, 4)), rng.standard_normal(4)))
    inner = [line for line in text.splitlines() if ".append(" in line]
    assert any("len(" in line or ".shape" in line for line in inner[:1]), text
    text = _forward(concatenated, (rng.standard_normal(5), 0.2))
    assert "len(" in text.split(".append(")[1].splitlines()[0], text


def test_sweep_rows_hold_no_shapes():
    text = _forward(sweep, (_rng(5).standard_normal((6, 6)),))
    rows = [line for line in text.splitlines() if ".append(" in line]
    assert rows and not any("len(" in r or "shape" in r for r in rows), text


def test_numba_backend_agrees():
    pytest.importorskip("numba")
    rng = _rng(6)
    for fn, args, argnums in ((sweep, (rng.standard_normal((5, 5)),), 0),
                              (rank_two_update, (rng.standard_normal((4, 3)),
                                                 rng.standard_normal((4, 3))), (0, 1))):
        want = adgen.grad(fn, argnums=argnums)(*args)
        got = adgen.grad(fn, argnums=argnums, backend="auto")(*args)
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
