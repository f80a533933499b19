"""Second derivatives of an integrator object whose step calls a function it holds
(``self.rhs``) and then updates its argument in place, as RK4 steppers are written:

    def step(self, y, h):
        y += h * self.rhs(y)
        return y

Problem found by the lead's hunt: the hessian was off by 0.88 (0.92 for a two-stage
stepper with scratch arrays), silently; at the session's start it was refused, and a bound
method held in a variable (``f = R.f; y += h * f(y)``) was wrong already. Reverse mode over
the jvp code calls such a function through call_jvp's rule, whose saved values held the
caller's ``y``; the caller's write then changed what the pullback read. The rule now guards
the arrays it is given as a compiled caller guards its callee (adgen.guards.capture and
remap_saved).
"""

from __future__ import annotations

import numpy as np
import pytest

import adgen

X = np.array([0.7, -1.3, 2.1, 0.4])


def rhs(y):
    return -y ** 3 + np.sin(y)


class Euler:
    def __init__(self):
        self.rhs = rhs

    def step(self, y, h):
        y += h * self.rhs(y)
        return y


class TwoStage:
    def __init__(self, n):
        self.k1 = np.empty(n)
        self.k2 = np.empty(n)
        self.tmp = np.empty(n)
        self.rhs = rhs

    def step(self, y, h):
        self.k1[:] = self.rhs(y)
        self.tmp[:] = y + 0.5 * h * self.k1
        self.k2[:] = self.rhs(self.tmp)
        y += h * self.k2
        return y


class Field:
    def __init__(self, k):
        self.k = k

    def f(self, y):
        return -self.k * y ** 3 + np.sin(y)


FIELD = Field(1.0)


class ThroughAVariable:
    def step(self, y, h):
        f = FIELD.f
        y += h * f(y)
        return y


def euler(y0):
    it = Euler()
    y = y0.copy()
    for _ in range(2):
        y = it.step(y, 0.1)
    return np.sum(y ** 2)


def two_stage(y0):
    it = TwoStage(4)
    y = y0.copy()
    for _ in range(2):
        y = it.step(y, 0.1)
    return np.sum(y ** 2)


def one_two_stage(y0):
    it = TwoStage(4)
    y = it.step(y0.copy(), 0.1)
    return np.sum(y ** 2)


def through_a_variable(y0):
    it = ThroughAVariable()
    y = y0.copy()
    y = it.step(y, 0.1)
    return np.sum(y ** 2)


def second_differences(f, x, h=1e-4):
    e = np.eye(x.size) * h
    return np.array([[(f(x + e[i] + e[j]) - f(x + e[i] - e[j]) - f(x - e[i] + e[j]) +
                       f(x - e[i] - e[j])) / (4 * h * h) for j in range(x.size)]
                     for i in range(x.size)])


@pytest.mark.parametrize("f", [euler, two_stage, one_two_stage, through_a_variable])
def test_hessian(f):
    np.testing.assert_allclose(adgen.hessian(f)(X), second_differences(f, X),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("f", [euler, through_a_variable])
def test_hessian_under_strict_is_refused_at_the_write(f):
    # rhs's pullback reads y, which the step then overwrites: strict refuses that write
    with pytest.raises(adgen.MutationError, match=r"y \+= h \* "):
        adgen.hessian(f, mutation="strict")(X)


def top_level_variable(y0):
    # the same in the function differentiated itself: the compiler saw no read of y in
    # call_jvp's argument tuple, so no write guard was emitted (0.88 off at the session start)
    y = y0.copy()
    g = FIELD.f
    y += 0.1 * g(y)
    return np.sum(y ** 2)


def test_hessian_through_a_bound_method_in_a_variable_of_the_function_itself():
    np.testing.assert_allclose(adgen.hessian(top_level_variable)(X),
                               second_differences(top_level_variable, X), rtol=1e-5, atol=1e-5)
    with pytest.raises(adgen.MutationError, match=r"y \+= 0\.1 \* g\(y\)"):
        adgen.hessian(top_level_variable, mutation="strict")(X)
