"""np.quantile / np.percentile / np.median-style code with NumPy's order-statistic methods
'lower', 'higher', 'nearest' and 'midpoint' (refused before session 29: only 'linear' was
differentiated): a trimmed loss written with percentiles, and a method of an object reading a
quantile of its residuals. Gradients under both policies and jvps against central
differences; the derivative in q is zero."""

import numpy as np
import pytest

import adgen
from tests.gradcheck import central

X = np.array([0.3, 1.2, -0.7, 2.1, 0.45, -1.3, 0.8])
V = np.linspace(0.3, 1.1, 7)
METHODS = ["lower", "higher", "nearest", "midpoint"]


def trimmed(x, method):
    lo = np.percentile(x, 15.0, method=method)
    hi = np.percentile(x, 85.0, method=method)
    return np.sum(np.clip(x, lo, hi) ** 2) + np.quantile(x ** 2, 0.45, method=method)


class Residuals:
    def __init__(self, target, method):
        self.target = target
        self.method = method

    def loss(self, x):
        r = (x - self.target).reshape(1, 7) * np.array([[1.0], [2.0]])
        return np.sum(np.quantile(r ** 2, [0.3, 0.8], axis=1, method=self.method))


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("method", METHODS)
def test_gradient_and_jvp(method, mutation):
    for f in (lambda x: trimmed(x, method), Residuals(X[::-1] * 0.5, method).loss):
        ref = central(f, X)
        np.testing.assert_allclose(adgen.grad(f, mutation=mutation)(X.copy()), ref,
                                   rtol=1e-6, atol=1e-7)
        _, t = adgen.jvp(f, (X.copy(),), (V,))
        assert t == pytest.approx(float(np.dot(ref, V)), rel=1e-6, abs=1e-7)


@pytest.mark.parametrize("method", METHODS)
def test_the_derivative_in_q_is_zero(method):
    assert adgen.grad(lambda q: np.quantile(X, q, method=method))(0.42) == 0.0
