"""A user rule (adgen.rrule) called with keyword arguments gets them in the forward pass.

The forward of a call of a function with an rrule dropped the call's keywords: f(x, scale=3.0)
ran the rule with scale's default, a silently wrong value and gradient.
"""

from __future__ import annotations

import numpy as np
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
