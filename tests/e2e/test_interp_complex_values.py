"""np.interp with complex values fp: NumPy interpolates the real and imaginary parts (a
complex128 result), but adgen's reference cast the result to float64, dropping the imaginary
part: a silently wrong value inside the gradient (np.abs of it: [0.71 1.41 0.71 0 0] where
central differences give [0.5 1.0 0.5 0 0]) and jvp, under both policies. The reference now
keeps complex128 for complex fp; checked against central differences of NumPy's own
np.interp, left=/right= and period= included, and at second order."""

import numpy as np
import pytest

import adgen
from tests.gradcheck import central, numerical_hessian

X = np.array([0.3, 1.2, -0.7, 2.1, 0.45])
V = np.linspace(0.3, 1.1, 5)
POINTS = np.array([-0.5, 0.5, 1.5, 3.2, 7.0])
KNOTS = np.arange(5.0)


def magnitude(x):
    return np.sum(np.abs(np.interp(POINTS, KNOTS, x + 1j * x ** 2)) ** 2)


def imaginary_with_ends(x):
    return np.sum(np.imag(np.interp(POINTS, KNOTS, x + 1j * x ** 2, left=1j, right=x[0] * 1j)))


def periodic(x):
    return np.sum(np.imag(np.interp(POINTS, KNOTS, np.exp(1j * x), period=4.5)) * V)


class Table:
    """Complex samples held by an object, read through a method."""

    def __init__(self, phase):
        self.phase = phase

    def value(self, x):
        return np.sum(np.real(np.interp(POINTS, KNOTS, x * np.exp(1j * self.phase))) * V)


FUNCTIONS = [magnitude, imaginary_with_ends, periodic, Table(0.7).value]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", FUNCTIONS)
def test_gradient_and_jvp_match_central_differences(f, mutation):
    g = adgen.grad(f, mutation=mutation)(X.copy())
    np.testing.assert_allclose(g, central(f, X), rtol=1e-6, atol=1e-8)
    _, t = adgen.jvp(f, (X.copy(),), (V,))
    np.testing.assert_allclose(t, np.dot(central(f, X), V), rtol=1e-6, atol=1e-8)


def test_the_value_is_numpys():
    points = np.array([0.5, 1.5])
    value = adgen.value_and_grad(
        lambda x: np.sum(np.imag(np.interp(points, KNOTS, x + 2j * x))))(X.copy())[0]
    assert value == pytest.approx(np.sum(np.imag(np.interp(points, KNOTS, X + 2j * X))))
    assert value != 0.0


def test_hessian_matches_second_differences():
    np.testing.assert_allclose(adgen.hessian(magnitude)(X.copy()),
                               numerical_hessian(magnitude, X), rtol=1e-4, atol=1e-6)
