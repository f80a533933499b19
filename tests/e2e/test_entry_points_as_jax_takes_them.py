"""What a user coming from JAX passes to the entry points: outputs of each scalar type,
``has_aux``, negative and repeated ``argnums``, a bound method, and the deliberate
difference (an integer output's gradient is zero; JAX raises). Expected values by hand:
d/dx sum(x * y * y) = y ** 2, d/dy = 2 x y."""

from __future__ import annotations

import numpy as np
import pytest

import adgen

X = np.array([1.0, 2.0])
Y = np.array([3.0, 4.0])


def product(x, y):
    return np.sum(x * y * y)


def zero_d(x):
    return np.array(np.sum(x * x))


def as_float32(x):
    return np.float32(np.sum(x * x))


def size_one(x):
    return np.sum(x * x, keepdims=True)


def counted(x):
    return 3


def with_aux(x):
    return np.sum(x * x), {"n": 3}


@pytest.mark.parametrize("fn", [zero_d, as_float32, size_one])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_scalar_outputs_of_each_type(fn, mutation):
    np.testing.assert_allclose(adgen.grad(fn, mutation=mutation)(X), 2 * X)


def test_an_integer_output_has_a_zero_gradient():
    np.testing.assert_array_equal(adgen.grad(counted)(X), np.zeros(2))


def test_has_aux_and_argnums_as_jax():
    g, aux = adgen.grad(with_aux, has_aux=True)(X)
    np.testing.assert_allclose(g, 2 * X)
    assert aux == {"n": 3}
    gx, gx2 = adgen.grad(product, argnums=(0, 0))(X, Y)
    np.testing.assert_allclose(gx, Y ** 2)
    np.testing.assert_allclose(gx2, Y ** 2)
    np.testing.assert_allclose(adgen.grad(product, argnums=-1)(X, Y), 2 * X * Y)
    gx, gy = adgen.grad(product, argnums=(0, -1))(X, Y)
    np.testing.assert_allclose(gy, 2 * X * Y)
    np.testing.assert_allclose(adgen.jacrev(product, argnums=-1)(X, Y), 2 * X * Y)
    np.testing.assert_allclose(adgen.jacfwd(product, argnums=-1)(X, Y), 2 * X * Y)
    np.testing.assert_allclose(adgen.hessian(product, argnums=-1)(X, Y), np.diag(2 * X))
    a, b = adgen.jacfwd(product, argnums=(0, 0))(X, Y)
    np.testing.assert_allclose(a, Y ** 2)
    np.testing.assert_allclose(b, Y ** 2)


class Model:
    def __init__(self, k):
        self.k = k

    def loss(self, x):
        return self.k * np.sum(x ** 2)


def test_value_and_grad_of_a_method():
    value, g = adgen.value_and_grad(Model(2.0).loss)(X)
    assert value == pytest.approx(10.0)
    np.testing.assert_allclose(g, 4 * X)
