"""np.maximum.accumulate / np.minimum.accumulate (running extremes) as users write them: a
drawdown loss, in reverse and forward mode, against central differences; a ufunc method
without a rule is still refused by name."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad, numerical_jvp

import adgen
from adgen.rules import registry


def drawdown(prices, w):
    value = np.cumsum(prices * w)
    peak = np.maximum.accumulate(value)
    return np.sum((peak - value) ** 2)


def trough_rows(a):
    low = np.minimum.accumulate(a, axis=1)
    return np.sum(np.sin(low) * a)


RNG = np.random.default_rng(7)
PRICES = RNG.standard_normal(12)
W = RNG.uniform(0.5, 1.5, 12)
A = RNG.standard_normal((3, 6))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_drawdown_gradient(mutation):
    g = adgen.grad(drawdown, argnums=(0, 1), mutation=mutation)(PRICES.copy(), W.copy())
    for k in (0, 1):
        np.testing.assert_allclose(g[k], numerical_grad(drawdown, (PRICES, W), k), rtol=1e-6,
                                   atol=1e-7)


def test_rows_gradient_and_jvp():
    np.testing.assert_allclose(adgen.grad(trough_rows)(A.copy()),
                               numerical_grad(trough_rows, (A,), 0), rtol=1e-6, atol=1e-9)
    t = RNG.standard_normal(A.shape)
    value, tangent = adgen.jvp(trough_rows, (A.copy(),), (t,))
    assert value == pytest.approx(trough_rows(A))
    assert tangent == pytest.approx(numerical_jvp(trough_rows, (A,), (t,)), rel=1e-6)


def test_a_lambda():
    f = lambda x: np.sum(np.maximum.accumulate(np.tanh(x)) ** 2)  # noqa: E731
    x = np.array([0.3, -0.2, 0.9, 0.1, 1.4])
    np.testing.assert_allclose(adgen.grad(f)(x.copy()), numerical_grad(f, (x,), 0), rtol=1e-6)


def test_every_bound_method_finds_the_rule():
    # a new bound method object at every attribute access
    assert np.maximum.accumulate is not np.maximum.accumulate
    assert registry.lookup(np.maximum.accumulate).name == "numpy.maximum.accumulate"
    assert registry.lookup(np.minimum.accumulate).name == "numpy.minimum.accumulate"
    assert registry.lookup(np.add.reduceat).name == "numpy.add.reduceat"
    assert registry.lookup(np.multiply.reduceat) is None


def test_a_method_without_a_rule_is_refused_by_name():
    def f(x):
        return np.sum(np.subtract.accumulate(x))

    with pytest.raises(adgen.AdgenError, match="subtract.accumulate"):
        adgen.grad(f)(np.array([1.0, 2.0]))


def test_second_derivatives():
    """hvp (forward over reverse) and vjp of grad (reverse over reverse) through the running
    maximum, against central differences of adgen's gradient."""
    v = np.random.default_rng(1).standard_normal(12)
    eps = 1e-5
    g = adgen.grad(drawdown)
    fd = (g(PRICES + eps * v, W) - g(PRICES - eps * v, W)) / (2 * eps)
    np.testing.assert_allclose(adgen.hvp(drawdown)(PRICES.copy(), W.copy(), v), fd,
                               rtol=1e-5, atol=1e-8)
    _, pullback = adgen.vjp(g, PRICES.copy(), W.copy())
    u = np.random.default_rng(2).standard_normal(12)
    assert np.sum(pullback(u)[0] * v) == pytest.approx(np.sum(u * fd), rel=1e-5)
