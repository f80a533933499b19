"""Python's ``pow(x, y)`` on numbers and arrays, as ``x ** y`` (it had no rule: MissingRuleError
"pow() has no derivative rule and adgen cannot read its source"). Expected values: central
differences and hand formulas."""

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

X = np.array([0.31, 0.72, 1.23])


def powers(x):
    return pow(x[0], 2) + pow(x[1], x[2]) + pow(2.0, x[0]) + np.sum(pow(x, 3))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_grad_of_pow(mutation):
    x0, x1, x2 = X
    want = 3 * X ** 2
    want[0] += 2 * x0 + np.log(2.0) * 2.0 ** x0
    want[1] += x2 * x1 ** (x2 - 1)
    want[2] += np.log(x1) * x1 ** x2
    np.testing.assert_allclose(adgen.grad(powers, mutation=mutation)(X), want, rtol=1e-12)


def test_jvp_and_hessian_of_pow():
    v = np.array([1.0, -0.5, 2.0])
    _, dot = adgen.jvp(powers, (X,), (v,))
    np.testing.assert_allclose(dot, numerical_grad(powers, (X,), 0) @ v, rtol=1e-7)
    g = adgen.grad(powers)
    H = np.array([numerical_grad(lambda y, i=i: g(y)[i], (X,), 0) for i in range(3)])
    assert_grad_close(adgen.hessian(powers)(X), H)


def modular(x):
    return pow(3, 2, 5) * np.sum(x)  # integers: a constant 4


def test_pow_with_a_modulus_of_integers_is_a_constant():
    np.testing.assert_allclose(adgen.grad(modular)(X), 4.0 * np.ones(3))
