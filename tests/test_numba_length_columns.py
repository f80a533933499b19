"""A vector's length the forward records for the pullback (shape_saves.lengths_not_shapes:
``t4_len1_recorded = len(t4)``, for a vector whose length changes per step) goes to an
int64 column of the loop's tape, as the lengths of a matrix's shape do, not to a numba
typed list of ints (a list type of its own costs numba about half a second to compile; the
Kalman filter had one before its shapes were kept outside its loop). Gradients against
central differences and the default backend. Skipped without numba."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

numba = pytest.importorskip("numba")


def shrinking(x, a):
    s = 0.0
    for k in range(1, x.shape[0]):
        t = x[:k] * 2.0  # k long: its length changes per step
        u = t + a
        s += np.sum(u * u)
    return s


def shrinking_rows(x, W):
    s = 0.0
    for k in range(1, x.shape[0]):
        t = W[:k, :] @ x
        v = t + x[:k]
        s += np.sum(v * v)
    return s


@pytest.mark.parametrize("fn, second", [(shrinking, 0.5), (shrinking_rows, None)])
def test_recorded_lengths_are_int_columns(fn, second):
    x = np.linspace(0.1, 1.0, 6)
    other = np.random.default_rng(0).random((6, 6)) if second is None else second
    text = adgen.source(fn, x, other, backend="numba")
    lengths = [line.strip() for line in text.splitlines()
               if "_len" in line and "_recorded = " in line and line.strip().startswith("tape")]
    assert lengths, "the loop records a vector's length"
    assert all("np.empty(0, np.int64)" in line or "grow(" in line or "[tape" in line
               for line in lengths), lengths
    assert not any("_len" in line and "List()" in line for line in text.splitlines())
    for n in (0, 1):
        got = adgen.grad(fn, argnums=n, backend="numba")(x, other)
        assert_grad_close(got, numerical_grad(fn, (x, other), n))
        assert_grad_close(got, adgen.grad(fn, argnums=n)(x, other), rtol=1e-12)
