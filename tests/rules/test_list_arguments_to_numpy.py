"""NumPy functions adgen compiles from a reference implementation take lists where NumPy
does: np.interp of listed points, np.convolve / np.correlate with a listed kernel,
np.histogram of listed data (they raised a raw TypeError inside the reference)."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen


def interp_listed(x):
    return np.sum(np.interp([0.5, 1.5, 1.8], [0, 1, 2], x[:3]) ** 2)


def convolve_listed(x):
    return np.sum(np.convolve(x, [1.0, 2.0, 0.5]) ** 2)


def correlate_listed(x):
    return np.sum(np.correlate(x, [0.5, -1.0], mode="full") ** 2)


def histogram_weighted(x):
    counts, _ = np.histogram([0.1, 0.5, 0.7, 0.2, 0.9, 0.3], bins=3, weights=x)
    return np.sum(counts ** 2)


@pytest.mark.parametrize("f", [interp_listed, convolve_listed, correlate_listed,
                               histogram_weighted], ids=lambda f: f.__name__)
def test_lists_where_numpy_takes_them(f) -> None:
    x = np.random.default_rng(3).random(6) + 0.5
    np.testing.assert_allclose(adgen.grad(f)(x), numerical_grad(f, [x], 0), rtol=1e-6,
                               atol=1e-9)
