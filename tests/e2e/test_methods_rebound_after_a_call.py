"""A method called on an object, then rebound on the object by the same function (``s =
m.f(x); m.f = other.f``, a monkeypatched forward, an activation swapped for a lambda).

The pullback of the first call asked the object what its attribute ``f`` held when the
pullback ran: another object's method then, so it took the cotangent of the method's receiver
(m) for that of an object held in ``m.f`` and put it under an attribute ``f`` of m's adjoint.
m.w's gradient through the first call was lost, silently, under both policies. The forward
now keeps m's slots as the call found them (runtime.with_receiver's ``slots``) where the
function stores such an attribute.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

POLICIES = ["save", "strict"]


class Scorer:
    def __init__(self, w):
        self.w = w

    def score(self, x):
        return np.sum(self.w * x) ** 2


def patched_with_another_objects_method(a, b):
    m = Scorer(a * 1.0)
    other = Scorer(b * 1.0)
    s = m.score(b)
    m.score = other.score
    return s + m.score(a)


def patched_with_a_lambda(a, b):
    m = Scorer(a * 1.0)
    s = m.score(b)
    m.score = lambda x: np.sum(x ** 2)
    return s + m.score(a)


def patched_in_a_loop(a, b):
    m = Scorer(a * 1.0)
    other = Scorer(b * 1.0)
    s = 0.0
    for k in range(3):
        s = s + m.score(b * (k + 1.0))
        if k == 0:
            m.score = other.score
    return s


PROGRAMS = [patched_with_another_objects_method, patched_with_a_lambda, patched_in_a_loop]


def _data():
    rng = np.random.default_rng(11)
    return rng.normal(size=3), rng.normal(size=3)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_gradient_matches_central_differences(f, policy):
    a, b = _data()
    check_grad(f, (a, b), (0, 1), mutation=policy, strict_must_compute=True, rtol=1e-6,
               atol=1e-8)


def test_lambda_patch_by_hand():
    # (a . b)^2 + |a|^2: d/da = 2 (a . b) b + 2 a
    a, b = _data()
    ga = adgen.grad(patched_with_a_lambda)(a, b)
    np.testing.assert_allclose(ga, 2.0 * np.dot(a, b) * b + 2.0 * a)
