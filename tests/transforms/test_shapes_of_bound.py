"""shapes_again.shape_of_bound: a loop's pullback that reads a temporary only for its shape
(``unbroadcast(g, t14.shape)``) takes it from a value it computes again anyway (syr2k's
``t14 = A[:i + 1, k] * ALPHA * B[i, k]``, whose pullback computes ``A[:i + 1, k] * ALPHA``
again for the cotangent of ``B[i, k]``): no shape on the tape and no part taken again
(issue 15: syr2k kept three shape tuples per inner step).

Each function is differentiated under both policies and compared with central differences of
the plain function, with the arguments' final contents checked against a plain call. The near
misses (a number times an array that broadcasts to more than the array, a part whose length
changes from step to step, two arrays) must stay right whatever the compiler chose.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.workloads.polybench_linalg import syr2k  # noqa: E402

POLICIES = ["save", "strict"]
ALPHA = 1.5


def syr2k_like(A, B, C):
    C = C.copy()
    for i in range(C.shape[0]):
        for k in range(A.shape[1]):
            C[i, :i + 1] += A[:i + 1, k] * ALPHA * B[i, k] + B[:i + 1, k] * ALPHA * A[i, k]
    return np.sum(C ** 2)


def clipped(x, w):
    # x[i - 1:i + 2] is empty at i = 0 and shorter at the end: a shape that changes per step
    s = 0.0
    for i in range(x.shape[0]):
        t = x[i - 1:i + 2] * w[i]
        s = s + np.sum(t * np.sin(t)) + np.sum(t * 0.5 + x[i]) * w[i]
    return s


def widened(x, W):
    # t = u * W[i] with W[i] a row: broadcasts to the row's shape, not u's
    s = 0.0
    for i in range(W.shape[0]):
        u = x[:1] * 2.0
        t = u * W[i]
        s = s + np.sum(t) * np.sum(u)
    return s


class Accumulator:
    """A user's class: the rank-2 update as a method reading attributes."""

    def __init__(self, alpha):
        self.alpha = alpha

    def __call__(self, A, B, C):
        C = C.copy()
        for i in range(C.shape[0]):
            for k in range(A.shape[1]):
                C[i, :i + 1] += A[:i + 1, k] * self.alpha * B[i, k] + \
                    B[:i + 1, k] * self.alpha * A[i, k]
        return np.sum(C ** 2)


def _rank2(rng, n=5, m=3):
    return rng.standard_normal((n, m)), rng.standard_normal((n, m)), \
        rng.standard_normal((n, n))


def _forward(fn, args, mutation):
    text = adgen.source(fn, *args, mutation=mutation)
    return text, [line for line in text.split("_pullback(")[0].splitlines()
                  if ".append(" in line]


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", [syr2k_like, syr2k], ids=["syr2k_like", "bench_syr2k"])
def test_the_summands_shapes_are_read_from_values_computed_again(fn, mutation):
    args = _rank2(np.random.default_rng(1))
    assert check_grad(fn, args, (0, 1, 2), mutation=mutation) is not None, "strict refused"
    text, taped = _forward(fn, args, mutation)
    # only the sum's broadcast shape is left of the three (the two summands' lengths are
    # not related by the signature); it is the same for every k, so the outer loop's row
    # keeps it once per i (analyses.loop_shapes) and the inner loop tapes nothing
    assert len(taped) == 1 and taped[0].count("_shape") == 1, text
    assert "for k in reversed(range(" in text, text
    pullback = text.split("_pullback(")[1]
    assert len(re.findall(r"_shape\w* = t\d+\.shape", pullback)) == 2, pullback


def test_a_lambda_and_a_method():
    rng = np.random.default_rng(2)
    args = _rank2(rng)
    acc = Accumulator(0.7)
    assert check_grad(acc, args, (0, 1, 2)) is not None
    wrapped = lambda A, B, C: acc(A, B, C) * 2.0  # noqa: E731
    assert check_grad(wrapped, args, (0, 1, 2)) is not None


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", [clipped, widened])
def test_near_misses_stay_right(fn, mutation):
    rng = np.random.default_rng(3)
    args = (rng.standard_normal(6), rng.standard_normal(6)) if fn is clipped else \
        (rng.standard_normal(4), rng.standard_normal((3, 4)))
    assert check_grad(fn, args, (0, 1), mutation=mutation) is not None, "strict refused"


@pytest.mark.parametrize("n, m", [(1, 1), (4, 1), (2, 6)])
def test_odd_sizes(n, m):
    """A C wider or narrower than A and B have rows: the summands' lengths stay right."""
    rng = np.random.default_rng(4)
    args = (rng.standard_normal((n, m)), rng.standard_normal((n, m)),
            rng.standard_normal((n, n)))
    assert check_grad(syr2k_like, args, (0, 1, 2)) is not None
