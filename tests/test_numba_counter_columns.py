"""A loop's counter that the numba backend's pullback computes again from its row instead of
reading it from a tape column (transforms/numba_counter_columns.py): a Viterbi recursion
(its ``j``, ``k`` and ``t``), a strided range; and look-alikes with ``continue`` (lowered to
a flag: every iteration still records its row) and ``break``. Each gradient against central
differences under both policies. Skipped without numba."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

numba = pytest.importorskip("numba")

from tests.test_numba_user_kernels import viterbi  # noqa: E402 (after the skip)


def strided(x, w):
    s = 0.0
    for i in range(3, x.shape[0], 2):  # rows 0, 1, ... are i = 3, 5, ...
        if x[i] > 0.0:
            s += w * x[i] * x[i - 1]
        else:
            s -= x[i] ** 2
    return s


def skipping(x, w):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] < -0.5:
            continue  # no row for this iteration
        if x[i] > 0.0:
            s += w * x[i] * x[i]
        else:
            s += np.sin(x[i])
    return s


def stopping(x, w):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            s += w * x[i] * x[i]
        else:
            s += np.sin(x[i]) * w
        if s > 3.0:
            break
    return s


_RNG = np.random.default_rng(3)
_X = _RNG.standard_normal(15)
CASES = {
    "viterbi": (viterbi, (_RNG.standard_normal((9, 4)), _RNG.standard_normal((4, 4))), (0, 1),
                "tape2_j"),
    "strided range": (strided, (_X, 0.7), (0, 1), "tape1_i"),
    "continue": (skipping, (_X, 0.7), (0, 1), None),
    "break": (stopping, (np.abs(_X), 0.7), (0, 1), None),
}


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_counters_from_rows(name, mutation):
    f, args, argnums, dropped = CASES[name]
    check_grad(f, args, argnums, grad=functools.partial(adgen.grad, backend="numba"),
               mutation=mutation, strict_must_compute=True)
    if dropped:  # the counter computed from its row, not recorded in a column
        text = adgen.source(f, *args, mutation=mutation, backend="numba")
        assert "_row" in text and dropped not in text
