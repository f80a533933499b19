"""A global array handed to a method of an object the function builds, then read by index
(``d.f(P) + d.f(P[0])``): the jvp code read ``P_dot[0]``, a NameError (activity takes ``P``
for active after the call, which gives it no tangent; found by H6 in session 23). A global
is a constant of the derivative: its items' tangents are zero. Expected values: central
differences (tests/gradcheck.py) and the hand formula."""

import numpy as np
import pytest
from gradcheck import check_jvp, numerical_grad

import adgen

P = np.arange(6.0).reshape(3, 2)


class Distance:
    def __init__(self, m):
        self.m = m

    def f(self, x):
        return np.sum((x - self.m) ** 2)


def loss(m):
    d = Distance(m)
    return d.f(P) + d.f(P[0])


def test_jvp_of_a_global_passed_then_indexed():
    m, v = np.ones(2), np.array([1.0, -0.5])
    _, t = adgen.jvp(loss, (m,), (v,))
    by_hand = -2.0 * np.sum(P - m, axis=0) @ v - 2.0 * (P[0] - m) @ v
    assert t == pytest.approx(by_hand)
    check_jvp(loss, (m,), (v,))
    np.testing.assert_allclose(adgen.jacfwd(loss)(m), numerical_grad(loss, (m,), 0),
                               rtol=1e-6)
