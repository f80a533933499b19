"""Second derivatives of a function that loops over ``d.items()`` of a dict argument.

A user's weighted penalty, ``for name, w in weights.items(): t = t + w * term(x)``, called
through a lambda that closes over the dict (``hessian(lambda x: loss(x, weights))``).
Reverse mode over its jvp code met the jvp's ``keys = dict_keys(weights)`` (the front end's
spelling of the loop) as a call without a rule: MissingRuleError 'dict_keys() has no
derivative rule'. The keys carry no derivative; the Hessian is checked against a hand formula
and against central differences of adgen's gradient.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

WEIGHTS = {"smooth": 0.5, "size": 1.5, "cubic": 0.25}


def penalty(x, weights):
    t = 0.0
    for name, w in weights.items():
        if name == "cubic":
            t = t + w * np.sum(x ** 3)
        else:
            t = t + w * np.sum(x ** 2)
    return t


def by_keys(x, weights):
    t = 0.0
    for name in weights:
        t = t + weights[name] * np.sum(np.sin(x) * x)
    return t


X = np.array([0.3, -1.2, 2.0])


def test_hessian_of_a_loop_over_items_matches_the_hand_formula():
    h = adgen.hessian(lambda x: penalty(x, WEIGHTS))(X)
    # d2/dx2 of (0.5 + 1.5) * x**2 + 0.25 * x**3, element by element
    expected = np.diag(2 * (0.5 + 1.5) + 6 * 0.25 * X)
    np.testing.assert_allclose(h, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("f", [penalty, by_keys])
def test_hessian_matches_central_differences_of_the_gradient(f):
    h = adgen.hessian(lambda x: f(x, WEIGHTS))(X)
    g = adgen.grad(lambda x: f(x, WEIGHTS))
    rows = [numerical_grad(lambda x, k=k: g(x)[k], (X.copy(),), 0) for k in range(X.size)]
    np.testing.assert_allclose(h, np.array(rows), rtol=1e-6, atol=1e-7)
