"""Second derivatives through np.prod and np.cumprod (hessian, hvp, jacfwd / jacrev of grad): against the
hand Hessian of a product (the product of the other entries off the diagonal, zero on it),
also where entries are zero, against central differences of the gradient, and against
jax.hessian where jax is installed."""

from __future__ import annotations

import numpy as np
import pytest

import adgen


def _hand_hessian(x):
    n = x.size
    h = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if i != j:
                h[i, j] = np.prod(np.delete(x, [i, j]))
    return h


@pytest.mark.parametrize("x", [np.array([0.3, -1.2, 2.0, 0.7]),
                               np.array([0.0, -1.2, 2.0, 0.7]),
                               np.array([0.0, 0.0, 2.0, 0.7]),
                               np.array([0.0, 0.0, 0.0])],
                         ids=["nonzero", "one_zero", "two_zeros", "three_zeros"])
def test_hessian_of_a_product_is_the_hand_one(x):
    h = adgen.hessian(lambda z: np.prod(z))(x)
    assert np.allclose(h, _hand_hessian(x), rtol=1e-12, atol=1e-12)
    assert np.allclose(adgen.jacfwd(adgen.grad(lambda z: np.prod(z)))(x), h, atol=1e-12)
    assert np.allclose(adgen.jacrev(adgen.grad(lambda z: np.prod(z)))(x), h, atol=1e-12)


def rows(x):
    m = x.reshape(2, 3)
    return np.sum(np.prod(m ** 2, axis=1) * np.sin(x[:2]))


def columns_kept(x):
    m = x.reshape(2, 3)
    return np.sum(np.prod(m, axis=0, keepdims=True) * m)


def method_form(x):
    return x.reshape(3, 2).prod(axis=-1).sum() + np.cumsum(x).prod()


class Likelihood:
    """A user's class: a product of per-sample probabilities."""

    def __init__(self, data):
        self.data = data

    def __call__(self, w):
        return np.prod(1.0 / (1.0 + np.exp(-self.data @ w)))


def _hessian_by_differences(f, x, eps=1e-6):
    g = adgen.grad(f)
    return np.array([(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(x.size)])


CASES = [(rows, 6), (columns_kept, 6), (method_form, 6),
         (Likelihood(np.random.default_rng(4).standard_normal((5, 3))), 3)]


@pytest.mark.parametrize("f, n", CASES, ids=["rows", "columns_kept", "method", "class"])
def test_hessian_matches_central_differences_of_the_gradient(f, n):
    for seed in (0, 1):
        x = np.random.default_rng(seed).standard_normal(n)
        h = adgen.hessian(f)(x)
        fd = _hessian_by_differences(f, x)
        assert np.abs(h - fd).max() < 1e-6 * max(1.0, np.abs(fd).max()), f"seed {seed}"
        v = np.random.default_rng(seed + 10).standard_normal(n)
        assert np.allclose(adgen.hvp(f)(x, v), h @ v, rtol=1e-9, atol=1e-9)


def test_grad_of_grad_of_a_scalar_product():
    f = lambda t: np.prod(np.array([t, t * t, 2.0 + t]))  # noqa: E731  t^4 + 2 t^3
    assert adgen.grad(adgen.grad(f))(0.7) == pytest.approx(12 * 0.49 + 12 * 0.7, rel=1e-12)


def product_energy(z):
    return np.prod(z ** 2 + z) * np.sum(z)


@pytest.mark.parametrize("x", [np.array([0.3, -1.2, 2.0, 0.7]), np.array([0.0, -1.2, 2.0, 0.7])],
                         ids=["nonzero", "one_zero"])
def test_hessian_agrees_with_jax(x):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    f = product_energy
    jf = type(f)(f.__code__, dict(f.__globals__, np=jnp))  # the same source, on jax.numpy
    expected = np.asarray(jax.hessian(jf)(jnp.asarray(x)))
    assert np.allclose(adgen.hessian(f)(x), expected, rtol=1e-9, atol=1e-10)


def cumulative(x):
    return np.sum(np.cumprod(x) ** 2)


def cumulative_rows(x):
    m = x.reshape(2, 3)
    return np.sum(np.cumprod(m, axis=1) * np.cos(m))


def cumulative_columns(x):
    m = x.reshape(2, 3)
    return np.sum(np.cumprod(m, axis=0) * m)


@pytest.mark.parametrize("f, x", [
    (cumulative, np.array([0.3, -1.2, 2.0, 0.7])),
    (cumulative, np.array([0.0, -1.2, 2.0, 0.7])),       # a zero: the other branch
    (cumulative, np.array([0.5, 0.0, 0.0, 0.7])),
    (cumulative_rows, np.array([0.4, 1.1, -0.8, 0.9, 0.0, 1.3])),
    (cumulative_columns, np.array([0.0, 1.0, 2.0, 3.0, 0.0, 1.0])),
], ids=["nonzero", "one_zero", "two_zeros", "rows", "columns_zeros"])
def test_cumprod_hessian_matches_central_differences_of_the_gradient(f, x):
    h = adgen.hessian(f)(x)
    fd = _hessian_by_differences(f, x)
    assert np.abs(h - fd).max() < 1e-6 * max(1.0, np.abs(fd).max())
    assert np.allclose(adgen.jacrev(adgen.grad(f))(x), h, atol=1e-10)


def test_cumprod_hessian_agrees_with_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    f = cumulative_rows
    jf = type(f)(f.__code__, dict(f.__globals__, np=jnp))
    x = np.random.default_rng(9).standard_normal(6)
    expected = np.asarray(jax.hessian(jf)(jnp.asarray(x)))
    assert np.allclose(adgen.hessian(f)(x), expected, rtol=1e-9, atol=1e-10)
