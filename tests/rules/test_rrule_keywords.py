"""A user rule (adgen.rrule) called with keyword arguments gets them in the forward pass.

The forward of a call of a function with an rrule dropped the call's keywords: f(x, scale=3.0)
ran the rule with scale's default, a silently wrong value and gradient.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen


def scaled(x, scale=1.0):
    return x * scale


@adgen.rrule(scaled)
def _scaled_rule(x, scale=1.0):
    return x * scale, lambda g: (g * scale,)


def loss(x):
    return np.sum(scaled(x, scale=3.0) ** 2)


def test_keywords_reach_the_rule() -> None:
    x = np.array([0.5, -1.0, 2.0])
    value, grad = adgen.value_and_grad(loss)(x)
    assert value == loss(x)
    np.testing.assert_allclose(grad, numerical_grad(loss, [x], 0), rtol=1e-7)


def scaled_both(x, scale=1.0):
    return x * scale


@adgen.rrule(scaled_both)
def _scaled_both_rule(x, scale=1.0):
    # one cotangent per argument passed, in the order of the parameters
    return x * scale, lambda g: (g * scale, np.sum(g * x))


def loss_scaled_by(x, s):
    return np.sum(scaled_both(x, scale=s * s) ** 2)


def loss_scaled_only_positionally(x, s):
    return np.sum(scaled(x, scale=s) ** 2)


def test_a_keyword_with_a_gradient_gets_its_cotangent() -> None:
    x, s = np.array([0.5, -1.0, 2.0]), 1.3
    gx, gs = adgen.grad(loss_scaled_by, argnums=(0, 1))(x, s)
    np.testing.assert_allclose(gx, numerical_grad(loss_scaled_by, [x, s], 0), rtol=1e-7)
    # by hand: d/ds sum((x s^2)^2) = 4 s^3 sum(x^2)
    np.testing.assert_allclose(gs, 4 * s ** 3 * np.sum(x * x), rtol=1e-12)


def test_a_rule_without_the_keywords_cotangent_is_refused_where_it_has_one() -> None:
    # scaled's rule returns x's cotangent only: fine for a constant scale (above), refused
    # when scale carries a gradient (it would be dropped)
    x = np.array([0.5, -1.0, 2.0])
    with pytest.raises(adgen.RuleError) as err:
        adgen.grad(loss_scaled_only_positionally, argnums=(0, 1))(x, 1.3)
    msg = str(err.value)
    assert "test_rrule_keywords.py" in msg and "scale" in msg and "positional" in msg
    # only x differentiated: s is a constant there, and the rule is enough
    g = adgen.grad(loss_scaled_only_positionally)(x, 1.3)
    np.testing.assert_allclose(g, numerical_grad(loss_scaled_only_positionally, [x, 1.3], 0),
                               rtol=1e-7)
