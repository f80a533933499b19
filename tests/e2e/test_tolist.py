"""x.tolist(): nested lists of Python numbers whose items keep their derivatives (it was
MissingRuleError). Checked against central differences (tests/gradcheck.py) under both policies, on a
vector, a matrix and a 0-d array, in a method and a lambda, and in forward mode."""

import numpy as np
import pytest
from gradcheck import central

import adgen

X = np.array([0.3, -0.7, 1.1, 0.4, -0.2, 0.9])


def vector(x):
    t = (x * 2.0).tolist()
    return t[0] * t[1] + sum(t)


def matrix(x):
    rows = x.reshape(2, 3).tolist()
    return rows[1][2] * rows[0][0] + sum(v * v for v in rows[1])


def zero_d(x):
    return np.sum(x * x).tolist() * x[0]


class Logger:
    def loss(self, x):
        values = np.tanh(x).tolist()
        self.last = values  # kept for printing, as users do
        return values[2] ** 2 + values[5]


CASES = [vector, matrix, zero_d, Logger().loss, lambda x: vector(x) * matrix(x)]
IDS = ["vector", "matrix", "zero_d", "method", "lambda"]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=IDS)
def test_against_central_differences(f, mutation):
    g = adgen.grad(f, mutation=mutation)(X.copy())
    np.testing.assert_allclose(g, central(f, X.copy()), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("f", [vector, matrix], ids=["vector", "matrix"])
def test_forward_mode(f):
    d = np.linspace(-1.0, 1.0, 6)
    _, tangent = adgen.jvp(f, (X.copy(),), (d,))
    assert tangent == pytest.approx(float(central(f, X.copy()) @ d), rel=1e-5)
