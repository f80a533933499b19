"""Second derivatives through np.quantile, np.percentile and np.median (hessian, hvp,
jacfwd / jacrev of grad), in the values and in q, checked against central differences of
adgen's gradient at random points (no ties, no q on a grid point, where the quantile is
smooth) and against jax.hessian where jax is installed."""

from __future__ import annotations

import numpy as np
import pytest

import adgen


def median_of_cubes(x):
    return np.median(x ** 3) * np.sum(x)


def quantile_rows(x):
    m = x.reshape(3, 4)
    return np.sum(np.quantile(np.sin(m) * m, 0.3, axis=1) ** 2)


def percentile_kept(x):
    m = x.reshape(2, 5)
    p = np.percentile(m * m, np.array([20.0, 65.0]), axis=-1, keepdims=True)
    return np.sum(p ** 3) + np.sum(p[0] * m)


def median_columns(x):
    m = x.reshape(4, 3)
    return np.sum(np.exp(np.median(m, axis=0)) * x[:3])


class Robust:
    """A user's class: a quantile loss of residuals."""

    def __init__(self, level):
        self.level = level

    def loss(self, w):
        r = np.arange(1.0, 7.0) * w[0] - np.cos(np.arange(6.0) * w[1]) * w
        return np.quantile(r * r, self.level)


def in_q(x):
    # q itself differentiated: x[0] moves the level
    q = 0.2 + 0.5 / (1.0 + np.exp(-x[0]))
    return np.quantile(x[1:] ** 3, q) * x[0] + np.percentile(x[1:], 100.0 * q) ** 2


CASES = [(median_of_cubes, 7), (quantile_rows, 12), (percentile_kept, 10),
         (median_columns, 12), (Robust(0.7).loss, 6), (in_q, 6)]
IDS = ["median", "quantile_axis", "percentile_keepdims", "median_axis0", "method", "in_q"]


def _hessian_by_differences(f, x, eps=1e-6):
    g = adgen.grad(f)
    return np.array([(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(x.size)])


@pytest.mark.parametrize("f, n", CASES, ids=IDS)
def test_hessian_matches_central_differences_of_the_gradient(f, n):
    for seed in (0, 1):
        x = np.random.default_rng(seed).standard_normal(n)
        h = adgen.hessian(f)(x)
        fd = _hessian_by_differences(f, x)
        scale = max(1.0, np.abs(fd).max())
        assert np.abs(h - fd).max() < 1e-6 * scale, f"seed {seed}"
        assert np.allclose(h, h.T, atol=1e-9 * scale)


@pytest.mark.parametrize("f, n", [(quantile_rows, 12), (in_q, 6)], ids=["values", "in_q"])
def test_every_second_order_spelling_agrees(f, n):
    rng = np.random.default_rng(5)
    x, v = rng.standard_normal(n), rng.standard_normal(n)
    h = adgen.hessian(f)(x)
    assert np.allclose(adgen.jacfwd(adgen.grad(f))(x), h, rtol=1e-9, atol=1e-9)
    assert np.allclose(adgen.jacrev(adgen.grad(f))(x), h, rtol=1e-9, atol=1e-9)
    assert np.allclose(adgen.hvp(f)(x, v), h @ v, rtol=1e-9, atol=1e-9)


def test_the_quantile_is_linear_between_order_statistics():
    # np.median(x) of distinct values has a zero Hessian; times x[0] it has the hand one:
    # d2 (x0 * med) = e0 e_m^T + e_m e0^T with m the middle element's index
    x = np.array([0.3, -1.0, 2.0, 0.9, -0.4])
    h = adgen.hessian(lambda z: z[0] * np.median(z))(x)
    m = int(np.argsort(x)[2])
    expected = np.zeros((5, 5))
    expected[0, m] += 1.0
    expected[m, 0] += 1.0
    assert np.allclose(h, expected, atol=1e-12)


def test_other_methods_are_refused_naming_the_line():
    with pytest.raises(adgen.AdgenError, match="method='weibull'"):
        adgen.hessian(lambda z: np.quantile(z ** 3, 0.4, method="weibull"))(np.arange(4.0))


@pytest.mark.parametrize("method, weights", [("nearest", {1: 1.0}), ("lower", {1: 1.0}),
                                             ("higher", {2: 1.0}),
                                             ("midpoint", {1: 0.5, 2: 0.5})])
def test_order_statistic_methods(method, weights):
    # (refused before session 29) the 0.4-quantile of 4 values: pos 1.2, so lower and nearest
    # take the 2nd smallest of z ** 3, higher the 3rd, midpoint half of each: the hessian is
    # 6 z there, by hand
    x = np.array([0.9, -1.3, 0.2, 1.6])
    order = np.argsort(x ** 3)
    expected = np.zeros((4, 4))
    for rank, w in weights.items():
        k = order[rank]
        expected[k, k] = 6.0 * x[k] * w
    h = adgen.hessian(lambda z: np.quantile(z ** 3, 0.4, method=method))(x)
    np.testing.assert_allclose(h, expected, atol=1e-12)


@pytest.mark.parametrize("f, n", [(median_of_cubes, 7), (quantile_rows, 12),
                                  (percentile_kept, 10), (median_columns, 12)],
                         ids=IDS[:4])
def test_hessian_agrees_with_jax(f, n):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    jf = type(f)(f.__code__, dict(f.__globals__, np=jnp))  # the same source, on jax.numpy
    x = np.random.default_rng(3).standard_normal(n)
    assert float(jf(jnp.asarray(x))) == pytest.approx(f(x), rel=1e-10)
    expected = np.asarray(jax.hessian(jf)(jnp.asarray(x)))
    assert np.allclose(adgen.hessian(f)(x), expected, rtol=1e-7, atol=1e-8)
