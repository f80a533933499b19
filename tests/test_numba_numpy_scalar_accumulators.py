"""A scalar loop accumulating into a NumPy scalar (``s = np.float32(0.0)``, ``s =
np.float64(0)``), as code written for float32 data does: the kinds analysis took the cast
for an array, so ``s += x[i] * x[i]`` was an in-place write of a buffer, and the numba
backend refused it ("cannot tell which buffer s is (a view, a slice, or an array of unknown
origin)", about a number). ``np.float32(number)`` is a number now: the gradient is the
default backend's and the hand formula's, in float32 and float64."""

from __future__ import annotations

import numpy as np
import pytest

import adgen

pytest.importorskip("numba")


def sum_of_squares32(x):
    s = np.float32(0.0)
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s


def sum_of_squares64(x):
    s = np.float64(0)
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("f", [sum_of_squares32, sum_of_squares64])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_numpy_scalar_accumulator(f, dtype, mutation):
    x = np.array([0.5, 1.5, -0.25, 2.0], dtype=dtype)
    got = adgen.grad(f, backend="numba", mutation=mutation)(x.copy())
    assert got.dtype == dtype
    np.testing.assert_allclose(got, 2 * x, rtol=1e-6)  # by hand
    np.testing.assert_allclose(got, adgen.grad(f, mutation=mutation)(x.copy()), rtol=1e-6)
