"""Reverse over reverse through a pullback that adds into a shadow it took from the map
(``sh.of(v_1)[...] += v_2_bar`` for ``v += y`` on a name a loop rebinds): the write changes
the shadow memory, not the map object, which the second-level pullback took for an array
written in place and refused ('an object of class ShadowMap ...'). Found by the long
reverse-over-reverse fuzz campaign. ⟨u, d(grad f)/d(x, y) v⟩ against central differences of
adgen's gradient, and the Hessian by hand."""

from __future__ import annotations

import numpy as np
import pytest

import adgen


def accumulate(x, y):
    v = x + x
    for k in range(2):
        v += y
    return np.sum(np.sin(v))


def swap_and_accumulate(x, y):
    w = x + x
    v = x + x
    for k in range(2):
        w[[0, 1]] = w[[1, 0]]
        v += y
        w[w < 0.0] = 0.0
    return np.sum(np.sin(v)) + 0.5 * np.sum(y * y)


@pytest.mark.parametrize("f", [accumulate, swap_and_accumulate])
def test_second_derivatives_against_central_differences(f):
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-1, 1, 6), rng.uniform(-1, 1, 6)
    g = adgen.grad(f, argnums=0)
    _, pullback = adgen.vjp(g, x.copy(), y.copy())
    u = rng.standard_normal(6)
    v = (rng.standard_normal(6), rng.standard_normal(6))
    cts = pullback(u)
    eps = 1e-5
    ahead = g(x + eps * v[0], y + eps * v[1])
    behind = g(x - eps * v[0], y - eps * v[1])
    expected = np.sum(u * (ahead - behind) / (2 * eps))
    assert np.sum(cts[0] * v[0]) + np.sum(cts[1] * v[1]) == pytest.approx(expected, rel=1e-6)


def test_hessian_by_hand():
    # f = sum(sin(2x + 2y)): d2f/dx2 = -4 diag(sin(2x + 2y))
    x = np.array([0.1, 0.4, -0.3])
    y = np.array([0.2, -0.1, 0.5])
    _, pullback = adgen.vjp(adgen.grad(accumulate, argnums=0), x.copy(), y.copy())
    hx, hy = pullback(np.ones(3))
    np.testing.assert_allclose(hx, -4.0 * np.sin(2 * x + 2 * y), rtol=1e-12)
    np.testing.assert_allclose(hy, -4.0 * np.sin(2 * x + 2 * y), rtol=1e-12)
