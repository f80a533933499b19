"""A method called on an object, then rebound on the object by the same function (``s =
m.f(x); m.f = other.f``, a monkeypatched forward, an activation swapped for a lambda).

The pullback of the first call asked the object what its attribute ``f`` held when the
pullback ran: another object's method then, so it took the cotangent of the method's receiver
(m) for that of an object held in ``m.f`` and put it under an attribute ``f`` of m's adjoint.
m.w's gradient through the first call was lost, silently, under both policies. The forward
now keeps m's slots as the call found them (runtime.with_receiver's ``slots``) where the
function stores such an attribute, and (since session 23) where it hands m to another call
while a method of a class it can name stores one (``m.swap(other)`` doing ``self.f =
other.f``, ``t.lend_to(m)`` doing ``m.f = self.f``: silently wrong before, both policies;
analyses.rebinding_methods).
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad
from rebound_helpers import rebound_by_a_method_of_a_given_object

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
    ga, gb = adgen.grad(f, argnums=(0, 1), mutation=policy)(a, b)
    np.testing.assert_allclose(ga, numerical_grad(f, (a, b), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb, numerical_grad(f, (a, b), 1), rtol=1e-6, atol=1e-8)


def test_lambda_patch_by_hand():
    # (a . b)^2 + |a|^2: d/da = 2 (a . b) b + 2 a
    a, b = _data()
    ga = adgen.grad(patched_with_a_lambda)(a, b)
    np.testing.assert_allclose(ga, 2.0 * np.dot(a, b) * b + 2.0 * a)


# --- rebound by a method the function calls (session 23) --------------------------------


class Swapping(Scorer):
    def swap(self, other):
        self.score = other.score

    def plain(self):
        self.score = lambda x: np.sum(x ** 2)


class Lender:
    def __init__(self, w):
        self.w = w

    def score(self, x):
        return np.sum(self.w * x)

    def lend_to(self, m):
        m.score = self.score


def swapped_by_its_method(a, b):
    m = Swapping(a * 1.0)
    other = Swapping(b * 1.0)
    s = m.score(b)
    m.swap(other)
    return s + m.score(a)


def swapped_for_a_lambda_by_its_method(a, b):
    m = Swapping(a * 1.0)
    s = m.score(b)
    m.plain()
    return s + m.score(a)


def rebound_by_another_object(a, b):
    m = Swapping(a * 1.0)
    lender = Lender(b * 1.0)
    s = m.score(b)
    lender.lend_to(m)
    return s + m.score(a)


def swapped_in_a_loop_by_its_method(a, b):
    m = Swapping(a * 1.0)
    other = Swapping(b * 1.0)
    s = 0.0
    for k in range(3):
        s = s + m.score(b * (k + 1.0))
        if k == 0:
            m.swap(other)
    return s


def swapped_on_an_object_given(a, b, m, other):
    s = m.score(b)
    m.swap(other)
    return s + m.score(a)


def given_objects(a, b):
    return swapped_on_an_object_given(a, b, Swapping(a * 1.0), Swapping(b * 1.0))


BY_CALLEES = [swapped_by_its_method, swapped_for_a_lambda_by_its_method,
              rebound_by_another_object, swapped_in_a_loop_by_its_method, given_objects]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", BY_CALLEES, ids=lambda f: f.__name__)
def test_rebound_by_a_method_it_calls(f, policy):
    a, b = _data()
    ga, gb = adgen.grad(f, argnums=(0, 1), mutation=policy)(a, b)
    np.testing.assert_allclose(ga, numerical_grad(f, (a, b), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb, numerical_grad(f, (a, b), 1), rtol=1e-6, atol=1e-8)


def test_rebound_by_its_method_by_hand():
    # (a . b)^2 + (b . a)^2 = 2 (a . b)^2: d/da = 4 (a . b) b
    a, b = _data()
    ga = adgen.grad(swapped_by_its_method)(a, b)
    np.testing.assert_allclose(ga, 4.0 * np.dot(a, b) * b)



def hands_them_to_a_helper_of_another_module(a, b):
    # (the helper's module names no class of these objects)
    return rebound_by_a_method_of_a_given_object(a, b, Swapping(a * 1.0), Swapping(b * 1.0))


@pytest.mark.parametrize("policy", POLICIES)
def test_rebound_in_a_helper_that_cannot_name_the_class(policy):
    f = hands_them_to_a_helper_of_another_module
    a, b = _data()
    ga, gb = adgen.grad(f, argnums=(0, 1), mutation=policy)(a, b)
    np.testing.assert_allclose(ga, numerical_grad(f, (a, b), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb, numerical_grad(f, (a, b), 1), rtol=1e-6, atol=1e-8)


# --- a method taken as a value, then its object changed (session 23, found by H7) -------


def taken_then_object_changed(a, x):
    m = Scorer(a * 1.0)
    g = m.score
    m.w = a * 2.0
    return g(x)


def held_then_object_changed(a, x):
    m = Scorer(a * 1.0)
    box = Scorer(x)
    box.fn = m.score
    m.w = a * 2.0
    return box.fn(x)


def object_changed_then_taken(a, x):
    m = Scorer(a * 1.0)
    m.w = a * 2.0
    g = m.score
    return g(x)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", [taken_then_object_changed, held_then_object_changed])
def test_method_taken_before_its_object_changes_is_refused(f, policy):
    # (its gradient went to the attribute the object held when the method was taken: half
    # of it, silently)
    a, b = _data()
    with pytest.raises(adgen.UnsupportedError, match="taken as a value") as err:
        adgen.grad(f, mutation=policy)(a, b)
    assert err.value.location.file == __file__
    assert err.value.location.source_line.strip() == "m.w = a * 2.0"
    assert "m.score(...)" in err.value.hint


@pytest.mark.parametrize("policy", POLICIES)
def test_method_taken_after_its_object_changes(policy):
    a, b = _data()
    got = adgen.grad(object_changed_then_taken, mutation=policy)(a, b)
    np.testing.assert_allclose(got, numerical_grad(object_changed_then_taken, (a, b), 0),
                               rtol=1e-6, atol=1e-8)
