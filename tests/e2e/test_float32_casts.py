"""np.float32(x) of a tracked value (it was MissingRuleError) and x.astype(np.float32) then
written in place. The float32 rounding is part of the primal; the derivative is the
identity's, in the argument's dtype (JAX's astype). Central differences of the function
itself see the rounding (steps of 1e-6 on float32 values), so each is checked against central
differences (tests/gradcheck.py) of its float64 twin (the same code without the cast), with
a tolerance far above float32's rounding (rtol 1e-5) and far below any wrong term; under both
policies, as a function, a loop, a method and a lambda, and in forward mode."""

import numpy as np
import pytest
from gradcheck import central

import adgen

X = np.array([0.3, -0.8, 0.5])
CAST = np.float32  # the cast the functions make: np.float64 in their twins
D = np.array([0.7, -0.2, 1.3])


def number(x):
    s = CAST(x[0] * 2.0)
    return s * x[1] + s ** 2


def in_a_loop(x):
    s = 0.0
    for i in range(3):
        v = CAST(x[i] * 1.5)
        s = s + v * v * x[(i + 1) % 3]
    return s


def array_then_written(x):
    y = CAST(x * 2.0)
    y[1] = y[0] + y[2] ** 2
    return np.sum(y ** 2)


def astype_then_written(x):
    y = x.astype(CAST)
    y[0] = y[1] * 3.0
    y *= 2.0
    return np.sum(y * x)


class Quantized:
    def __init__(self):
        self.scale = 0.5

    def loss(self, x):
        q = (x * self.scale).astype(CAST)
        q[1:] += q[:-1]
        return np.sum(np.sin(q))


CASES = [number, in_a_loop, array_then_written, astype_then_written, Quantized().loss,
         lambda x: number(x) * in_a_loop(x)]
IDS = ["number", "loop", "array_written", "astype_written", "method", "lambda"]


def twin(f):
    """f with the cast to float64 (a plain call: central differences only)."""

    def plain(x):
        global CAST
        CAST = np.float64
        try:
            return f(x)
        finally:
            CAST = np.float32

    return plain


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=IDS)
def test_identity_derivative(f, mutation):
    x = X.copy()
    g = adgen.grad(f, mutation=mutation)(x)
    assert g.dtype == np.float64 and g.shape == X.shape
    np.testing.assert_allclose(g, central(twin(f), X.copy()), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(x, X)
    assert adgen.value_and_grad(f)(X.copy())[0] == f(X.copy())  # the rounded primal


@pytest.mark.parametrize("f", CASES, ids=IDS)
def test_float32_argument_gets_a_float32_gradient(f):
    x = X.astype(np.float32)
    g = adgen.grad(f)(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, central(twin(f), x.astype(np.float64)), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("f", CASES, ids=IDS)
def test_forward_mode(f):
    out, tangent = adgen.jvp(f, (X.copy(),), (D,))
    assert out == f(X.copy())
    assert tangent == pytest.approx(float(central(twin(f), X.copy()) @ D), rel=1e-5)
