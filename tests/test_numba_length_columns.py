"""A vector's length the forward records for the pullback (shape_saves.lengths_not_shapes:
``t24_len1_recorded = len(t24)``) goes to an int64 column of the loop's tape, as the
lengths of a matrix's shape do, not to a numba typed list of ints (a list type of its own
costs numba about half a second to compile: the Kalman filter's cold compile). The
gradient is checked against the default backend. Skipped without numba."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close

import adgen

numba = pytest.importorskip("numba")


def test_the_kalman_filters_recorded_lengths_are_int_columns():
    from bench.workloads import kalman

    args = kalman.make_args(np.random.default_rng(0))
    text = adgen.source(kalman.kalman, *args, backend="numba")
    lengths = [line.strip() for line in text.splitlines()
               if "_len" in line and "_recorded = " in line and "tape" in line]
    assert lengths, "the Kalman filter records a vector's length"
    for line in lengths:
        assert "np.empty(0, np.int64)" in line or "grow(" in line, line
    assert not any("_len" in line and "List()" in line for line in text.splitlines())


def test_the_kalman_filters_gradient():
    from bench.workloads import kalman

    args = kalman.make_args(np.random.default_rng(1))
    got = adgen.grad(kalman.kalman, argnums=(0, 3), backend="numba")(*args)
    ref = adgen.grad(kalman.kalman, argnums=(0, 3))(*args)
    for a, b in zip(got, ref):
        assert_grad_close(a, b, rtol=1e-10)
