"""balanced_eq's path for numbers (a scalar loop's max(a, b)) gives what its array path gives:
1 where x is the result and y is not, 0.5 on a tie, 0 otherwise, NaN equal to nothing."""

import itertools

import numpy as np
import pytest

import adgen
from adgen.rules.helpers_core import balanced_eq

VALUES = [1.0, 2.0, np.float64(2.0), 3, float("nan"), -0.0, 0.0]


@pytest.mark.parametrize("x, z, y", list(itertools.product(VALUES, repeat=3)))
def test_numbers_as_arrays(x, z, y):
    as_array = balanced_eq(np.array([x], float), np.array([z], float), np.array([y], float))
    assert balanced_eq(x, z, y) == as_array[0]


def soft_max3(a, b, c):
    m = max(max(a, b), c)
    return m * m + max(a, c)


@pytest.mark.parametrize("args, want", [
    ((1.0, 2.0, 0.5), (1.0, 4.0, 0.0)),
    ((2.0, 2.0, 0.5), (1.0 + 2.0, 2.0, 0.0)),  # a tie: half each
    ((1.0, 0.5, 1.0), (1.0 + 0.5, 0.0, 1.0 + 0.5)),
])
def test_gradients_of_max_of_numbers(args, want):
    """d/da of max(max(a, b), c) ** 2 + max(a, c), by hand: 2m times a's share of m, plus a's
    share of max(a, c) (JAX's rule: ties share equally)."""
    got = adgen.grad(soft_max3, argnums=(0, 1, 2))(*args)
    np.testing.assert_allclose(got, want, rtol=1e-12)
