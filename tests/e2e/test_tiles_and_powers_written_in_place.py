"""Results of NumPy functions adgen differentiates through its own implementation (a
"reference"), written in place afterwards, as NumPy code does.

Problems found by the lead probing in-place idioms: ``A = np.tile(x, (3, 1)); A.T[1:, :] *=
2.0`` raised NumPy's ``ValueError: output array is read-only`` from the generated forward, and
``A = np.tile(y, (2, 1)); y[0] = 100.0`` was refused as a write under a broadcast view: the
reference returned a reshaped ``np.broadcast_to`` of ``y`` where NumPy returns a new array.
``P = np.linalg.matrix_power(B, 1); P[0, 0] = 0.0`` is a write into ``B`` itself in NumPy (its
short-cut returns ``B``), and adgen's copy left ``B`` alone: the value 30.0 for NumPy's 29.0,
and its jvp 20.0 for 18.0, silently.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

POLICIES = ["save", "strict"]


def doubled_columns(x):
    A = np.tile(x, (3, 1))
    A.T[1:, :] *= 2.0            # columns 1 and 2 of every row
    return np.sum(A ** 2 * np.arange(1.0, 10.0).reshape(3, 3))


def tiled_before_the_write(x):
    y = x.copy()
    A = np.tile(y, (2, 1))       # a new array: the write below does not reach it
    y[0] = 100.0
    return np.sum(A * x) + np.sum(y * x)


def first_power_written(A):
    B = A.copy()
    P = np.linalg.matrix_power(B, 1)   # B itself
    P[0, 0] = 0.0
    return np.sum(B * A)


x = np.array([0.3, -1.2, 0.7])
A = np.array([[1.0, 2.0], [3.0, 4.0]])


def test_values_are_numpys():
    # hand values: a new tile, and the write through B's first power
    assert tiled_before_the_write(x) == pytest.approx(2 * np.sum(x * x) + 100 * x[0] +
                                                      np.sum(x[1:] ** 2))
    assert first_power_written(A) == pytest.approx(29.0)
    assert adgen.value_and_grad(first_power_written)(A)[0] == pytest.approx(29.0)


@pytest.mark.parametrize("f, mutation", [(doubled_columns, "save"),
                                         (tiled_before_the_write, "save"),
                                         (tiled_before_the_write, "strict")])
def test_tiles(f, mutation):
    np.testing.assert_allclose(adgen.grad(f, mutation=mutation)(x),
                               numerical_grad(f, (x,), 0), rtol=1e-6, atol=1e-8)
    v = np.array([1.0, -0.5, 2.0])
    _, t = adgen.jvp(f, (x,), (v,))
    assert t == pytest.approx(numerical_grad(f, (x,), 0) @ v, rel=1e-6)


def test_a_tile_written_in_place_under_strict():
    # refused until session 22 (strict took the result for a value np.tile's gradient reads;
    # it reads only the shapes: Compiled.reads_result)
    np.testing.assert_allclose(adgen.grad(doubled_columns, mutation="strict")(x),
                               numerical_grad(doubled_columns, (x,), 0), rtol=1e-6, atol=1e-8)


def test_a_first_power_written_through():
    want = numerical_grad(first_power_written, (A,), 0)
    np.testing.assert_allclose(want, [[0.0, 4.0], [6.0, 8.0]], atol=1e-6)  # 2 A, B[0, 0] zero
    np.testing.assert_allclose(adgen.grad(first_power_written)(A), want, atol=1e-8)
    value, t = adgen.jvp(first_power_written, (A,), (np.ones((2, 2)),))
    assert (value, t) == (pytest.approx(29.0), pytest.approx(18.0))
    # strict: the reference compiled for any exponent reads B for the other powers, so the
    # write is refused (loudly) rather than saved
    with pytest.raises(adgen.MutationError, match="P\\[0, 0\\]"):
        adgen.grad(first_power_written, mutation="strict")(A)
