"""jvp and jacfwd of a bound method give its object no tangent: the object's arrays are
constants, as in JAX (``jax.jacfwd(model.loss)``). The object got a zero tangent, so a
method reading ``np.sqrt(self.data)`` with a 0 in ``data`` gave ``0 / 0`` in the tangent of
the square root, and jvp and jacfwd NaN everywhere (hessian, which compiles for the argument
alone, was right). Checked against the hand formula and central differences."""

import numpy as np
import pytest

import adgen

DATA = np.array([0.0, 1.0, 4.0])
X = np.array([0.3, -0.7, 1.1])
V = np.array([1.0, -0.5, 2.0])


class Model:
    def __init__(self, data):
        self.data = data

    def plain(self, w):
        return np.sum(np.sqrt(self.data) * w ** 3)

    def nested(self, w):
        def term(v):
            return np.sqrt(self.data) * v ** 3
        return np.sum(term(w))


@pytest.mark.parametrize("method", ["plain", "nested"])
def test_jvp_and_jacfwd(method):
    m = Model(DATA)
    f = getattr(m, method)
    with np.errstate(divide="ignore", invalid="ignore"):
        _, dot = adgen.jvp(f, (X,), (V,))
        J = adgen.jacfwd(f)(X)
    grad = 3 * np.sqrt(DATA) * X ** 2
    assert np.isclose(dot, grad @ V)
    assert np.allclose(J, grad)
    eps = 1e-6
    assert np.isclose(dot, (f(X + eps * V) - f(X - eps * V)) / (2 * eps))
