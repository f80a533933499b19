"""What adgen says when a NumPy call has no derivative, and random draws as constants."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

_RNG = np.random.default_rng(0)


def test_a_numpy_function_without_a_rule_says_so_not_that_its_source_is_unreadable() -> None:
    def f(x):
        return np.sum(np.emath.sqrt(x))

    with pytest.raises(adgen.MissingRuleError) as info:
        adgen.grad(f)(np.ones(3))
    message = str(info.value)
    assert "np.emath.sqrt() has no derivative rule" in message
    assert "cannot read its source" not in message
    assert "rules and reference implementations" in message


def test_a_refused_function_gives_its_reason() -> None:
    def f(x):
        return np.sum(np.unique(x))

    with pytest.raises(adgen.MissingRuleError, match="output's size depends on the values"):
        adgen.grad(f)(np.array([1.0, 2.0, 2.0]))


def test_draws_are_constants() -> None:
    def f(x):
        r = np.random.default_rng(7)  # the same draws at each call: central differences agree
        return np.sum(x * r.normal(size=3)) + np.sum(x * np.random.default_rng(8).random(3))

    x = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(adgen.grad(f)(x), numerical_grad(f, [x], 0), rtol=1e-7)


def test_a_draw_with_a_differentiated_parameter_is_refused_with_the_rewrite() -> None:
    def f(x):
        return np.sum(_RNG.normal(0.0, x))

    with pytest.raises(adgen.MissingRuleError, match="reparameterization"):
        adgen.grad(f)(np.ones(3))
