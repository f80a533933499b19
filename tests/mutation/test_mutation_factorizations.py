"""Issue 15, in-place factorisations: many live captures of one buffer, guarded writes.

The textbook Cholesky and LU loops write ``A[i, j]`` while the pullbacks read slices of ``A``
captured earlier (``A[i, :j]``, ``A[j, :j]``, ``A[:j, j]``). No write overlaps a capture, so
under "save" nothing is saved and under "strict" nothing is raised (design §2 rule 7: guards
are region-precise; rule 3: strict raises only where a captured value is overwritten). With N
above the runtime's small-list size (16 captures) the guards go through its element index,
so both sizes are tested. Variants that do overwrite a captured slice, with hundreds of
captures live, must save exactly that (gradient right) or raise naming both lines.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from harness import (
    adgen_grad,
    assert_names_conflict,
    check_gradient,
    check_value,
    fresh,
    in_dtype,
    line_of,
)

import adgen

# the kernels bench/experiments/guards.py times: the benchmark measures what is tested here
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.experiments.guards import cholesky, lu  # noqa: E402


def lu_on_argument(A):
    """LU written into the argument itself (Polybench's signature): its final state counts."""
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[:j, j])
            A[i, j] /= A[j, j]
        for j in range(i, n):
            A[i, j] -= np.dot(A[i, :i], A[:i, j])
    return np.sum(np.sin(A))


def cholesky_then_scale_last_row(A):
    """The factor's last row is scaled after the loop: it overwrites A[n-1, :j] for every j,
    which the dots of lines 'A[i, j] -= ...' and 'A[i, i] = ...' read."""
    A = A.copy()
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] = np.sqrt(A[i, i] - np.dot(A[i, :i], A[i, :i]))
    A[n - 1] *= 0.5
    return np.sum(np.tril(A) ** 2)


def rows_recurrence(X):
    """Each step reads rows i - 1 and i and overwrites row i: one captured row overwritten per
    step while the captures of all earlier rows stay live."""
    X = X.copy()
    s = 0.0
    for i in range(1, X.shape[0]):
        s += np.sum(X[i - 1] * X[i])
        X[i] = np.sin(X[i - 1]) * X[i]
    return s + np.sum(X ** 2)


def columns_recurrence(X):
    """The same along columns: strided captures and strided writes."""
    X = X.copy()
    s = 0.0
    for j in range(1, X.shape[1]):
        s += np.sum(X[:, j - 1] * X[:, j])
        X[:, j] = np.cos(X[:, j - 1]) * X[:, j]
    return s + np.sum(X ** 3)


def spd(n: int, seed: int) -> np.ndarray:
    b = np.random.default_rng(seed).standard_normal((n, n))
    return b @ b.T / n + np.eye(n)


def dominant(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, n)) + n * np.eye(n)


def small(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-0.9, 0.9, size=shape)


FREE = [(cholesky, spd), (lu, dominant), (lu_on_argument, dominant)]


DTYPES = ["float64", "float32"]  # float32: the factorisation runs in float32 buffers


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("n", [5, 12])
@pytest.mark.parametrize("fn, make", FREE, ids=[f.__name__ for f, _ in FREE])
def test_factorization_gradient(fn, make, n: int, mutation: str, dtype: str) -> None:
    args, fd_args, rtol = in_dtype((make(n, n),), dtype)
    check_gradient(fn, args, (0,), adgen_grad(mutation), fd_args, rtol)
    check_value(fn, args, (0,), mutation)


@pytest.mark.parametrize("fn, make", FREE, ids=[f.__name__ for f, _ in FREE])
def test_factorization_guards_save_nothing(fn, make) -> None:
    # every write is guarded (the analysis cannot prove the slices disjoint) and the guards
    # find that no write overlaps a capture: no bytes saved
    sites = adgen.explain(fn, make(20, 1), file=None)
    assert sites and all(s.decision == "guarded-save" for s in sites), sites
    assert all(s.bytes_saved == 0 for s in sites), sites


@pytest.mark.parametrize("fn, make", FREE, ids=[f.__name__ for f, _ in FREE])
def test_factorization_large_strict_matches_save(fn, make) -> None:
    # N = 30: about a thousand captures live in one buffer; strict raises nothing, and both
    # policies give the gradient of a Cholesky/LU whose first rows are checked by differences
    a = make(30, 2)
    g_save = adgen.grad(fn)(a.copy())
    g_strict = adgen.grad(fn, mutation="strict")(a.copy())
    np.testing.assert_allclose(g_strict, g_save, rtol=1e-12)
    eps = 1e-6
    for k in [(0, 0), (3, 1), (29, 29), (17, 5), (5, 17), (29, 0)]:
        up, down = a.copy(), a.copy()
        up[k] += eps
        down[k] -= eps
        fd = (fn(up) - fn(down)) / (2 * eps)
        np.testing.assert_allclose(g_save[k], fd, rtol=1e-5, atol=1e-6 * abs(fd) + 1e-7)


NEEDED = [
    (cholesky_then_scale_last_row, lambda: (spd(20, 3),), "A[n - 1] *= 0.5",
     ("A[i, j] -= np.dot(A[i, :j], A[j, :j])",
      "A[i, i] = np.sqrt(A[i, i] - np.dot(A[i, :i], A[i, :i]))")),
    (rows_recurrence, lambda: (small((24, 3), 4),), "X[i] = np.sin(X[i - 1]) * X[i]",
     ("s += np.sum(X[i - 1] * X[i])", "X[i] = np.sin(X[i - 1]) * X[i]")),
    (columns_recurrence, lambda: (small((3, 24), 5),), "X[:, j] = np.cos(X[:, j - 1]) * X[:, j]",
     ("s += np.sum(X[:, j - 1] * X[:, j])", "X[:, j] = np.cos(X[:, j - 1]) * X[:, j]")),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn, make, write, reads", NEEDED, ids=[c[0].__name__ for c in NEEDED])
def test_overwritten_capture_is_saved(fn, make, write, reads, dtype: str) -> None:
    args, fd_args, rtol = in_dtype(make(), dtype)
    check_gradient(fn, args, (0,), adgen_grad("save"), fd_args, rtol)
    check_value(fn, args, (0,), "save")
    measured = adgen.explain(fn, *fresh(args), file=None)
    at = line_of(fn, write)
    assert any(s.line == at and s.decision == "guarded-save" and s.bytes_saved
               for s in measured), measured


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn, make, write, reads", NEEDED, ids=[c[0].__name__ for c in NEEDED])
def test_overwritten_capture_raises_in_strict(fn, make, write, reads, dtype: str) -> None:
    import inspect

    file = inspect.getsourcefile(fn)
    with pytest.raises(adgen.MutationError) as info:
        adgen.grad(fn, mutation="strict")(*in_dtype(make(), dtype)[0])
    assert_names_conflict(info.value, [(line_of(fn, r), line_of(fn, write)) for r in reads],
                          file)
