"""Third derivatives through np.quantile, np.percentile and np.median (method='linear'), in
the values and in q: ``jacfwd(hessian(f))``, ``jacrev(hessian(f))``, ``jvp`` of ``hessian``
and ``grad(grad(grad(f)))`` of a number.

The quantile is linear between two order statistics, so its second derivative is zero
almost everywhere in the values, and the derivatives of its tangent (``quantile_jvp_vjp``,
``quantile_jvp_jvp``) are NumPy over functions with rules with the sort order held fixed: read
from their source, their derivatives are those of the same pieces, as ``jax.jacfwd(
jax.hessian(f))`` of JAX's sort-based quantile gives. Checked against central differences of
adgen's Hessian (itself checked in test_second_order_quantiles.py) at points without ties,
and against JAX. Small sizes: each third derivative runs a Hessian per element.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import adgen


def median_of_cubes(x):
    return np.median(x ** 3) * np.sum(x)


def quantile_rows(x):
    m = x.reshape(2, 3)
    return np.sum(np.quantile(np.sin(m) * m, 0.3, axis=1) ** 3)


def percentile_kept(x):
    m = x.reshape(2, 3)
    p = np.percentile(m * m, np.array([20.0, 65.0]), axis=-1, keepdims=True)
    return np.sum(p ** 3) + np.sum(p[0] * m)


def in_q(x):
    # q itself differentiated: x[0] moves the level
    q = 0.2 + 0.5 / (1.0 + np.exp(-x[0]))
    return np.quantile(x[1:] ** 3, q) * x[0] ** 2 + np.percentile(x[1:], 100.0 * q) ** 3


class Robust:
    def __init__(self, level):
        self.level = level

    def loss(self, w):
        r = np.arange(1.0, 5.0) * w[0] - np.cos(np.arange(4.0) * w[1]) * w
        return np.quantile(r * r, self.level) ** 2


CASES = [(median_of_cubes, 5), (quantile_rows, 6), (percentile_kept, 6), (in_q, 5),
         (Robust(0.7).loss, 4), (lambda x: median_of_cubes(x * 2.0), 5)]
IDS = ["median", "quantile_axis", "percentile_keepdims", "in_q", "method", "lambda"]


def third_by_differences(f, x, eps=1e-5):
    h = adgen.hessian(f)
    return np.stack([(h(x + eps * e) - h(x - eps * e)) / (2 * eps) for e in np.eye(x.size)],
                    axis=-1)


@pytest.mark.parametrize("f, n", CASES, ids=IDS)
def test_third_derivatives_match_central_differences_of_the_hessian(f, n):
    x = np.random.default_rng(3).standard_normal(n)
    want = third_by_differences(f, x)
    scale = max(1.0, np.abs(want).max())
    T = adgen.jacfwd(adgen.hessian(f))(x)
    assert np.abs(T - want).max() < 1e-6 * scale
    assert np.allclose(adgen.jacrev(adgen.hessian(f))(x), T, atol=1e-9 * scale)
    v = np.linspace(-1.0, 1.0, n)
    _, dH = adgen.jvp(adgen.hessian(f), (x,), (v,))
    assert np.allclose(dH, T @ v, atol=1e-9 * scale)


def test_against_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def f(x):
        return (np.quantile(x, 0.3) ** 3 + np.median(x * x) * np.sum(x) +
                np.percentile(x, 70.0) * x[0] ** 2)

    def port(x):
        return (jnp.quantile(x, 0.3) ** 3 + jnp.median(x * x) * jnp.sum(x) +
                jnp.percentile(x, 70.0) * x[0] ** 2)

    x = np.array([0.3, -0.7, 1.1, 0.45, -0.2])
    np.testing.assert_allclose(adgen.jacfwd(adgen.hessian(f))(x),
                               np.asarray(jax.jit(jax.jacfwd(jax.hessian(port)))(x)),
                               atol=1e-12)  # (jit: 1.8 s, where op by op took 13 s)


def test_grad_of_grad_of_grad_of_a_number():
    def s(t):
        return np.quantile(np.array([t, 2.0 * t * t, 0.5]), 0.4) ** 3

    # at t = 0.7 the 0.4-quantile of (0.7, 0.98, 0.5) is 0.5 + 0.8 (0.7 - 0.5) = 0.2 + 0.8 t
    t = 0.7
    got = adgen.grad(adgen.grad(adgen.grad(s)))(t)
    assert math.isclose(got, 6 * 0.8 ** 3, rel_tol=1e-12)


def test_other_methods_are_still_refused():
    with pytest.raises(adgen.AdgenError, match="method='weibull'"):
        adgen.jacfwd(adgen.hessian(lambda z: np.quantile(z ** 3, 0.4, method="weibull")))(
            np.arange(4.0))
