"""A Python list of weights times an array (``W * v ** 2`` with ``W = [1., 2., 3.]`` a global,
``v * w`` with ``w`` a list built in the function) is NumPy's elementwise arithmetic, a new
array: the analyses took it for list repetition and the pullback raised Python's TypeError
"can't multiply sequence by non-int of type 'list'"."""
import numpy as np
import pytest

import adgen
from tests.gradcheck import numerical_grad

WEIGHTS = [1.0, 2.0, 3.0]


def weighted_energy(v):
    return np.sum(WEIGHTS * v ** 2)


def dot_with_local_list(v):
    w = [1.0, 2.0, 3.0]
    return np.sum(v * w)


def shifted_by_a_tuple(v):
    w = (0.5, 1.5, 2.5)
    return np.sum((v + w) ** 2 + list(WEIGHTS) * v)


V = np.array([0.5, -1.0, 2.0])


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_global_list_of_weights_times_an_array(mutation):
    g = adgen.grad(weighted_energy, mutation=mutation)(V)
    np.testing.assert_allclose(g, 2.0 * np.array(WEIGHTS) * V, rtol=1e-12)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_an_array_times_a_list_built_in_the_function(mutation):
    g = adgen.grad(dot_with_local_list, mutation=mutation)(V)
    np.testing.assert_allclose(g, [1.0, 2.0, 3.0], rtol=1e-12)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_an_array_plus_a_tuple(mutation):
    g = adgen.grad(shifted_by_a_tuple, mutation=mutation)(V)
    np.testing.assert_allclose(g, numerical_grad(shifted_by_a_tuple, (V,), 0), rtol=1e-6)


def test_forward_mode_agrees():
    t = np.array([1.0, -2.0, 0.5])
    _, dy = adgen.jvp(weighted_energy, (V,), (t,))
    assert dy == pytest.approx(np.sum(2.0 * np.array(WEIGHTS) * V * t), rel=1e-12)
