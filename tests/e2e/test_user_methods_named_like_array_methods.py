"""A class of the user's with its own ``copy()`` (any name of an ndarray method adgen maps to a
rule: ``copy``, ``sum``, ``reshape`` ...) had that call taken for ``np.copy(x)``: ``c =
cam.copy(); np.sum(c.w * v)`` with ``Cam.copy`` returning ``Cam(2 * self.w)`` gave ``cam.w``
the gradient ``v`` for ``2 v``, silently (np.copy's pullback instead of the method's). Where the
code shows the receiver or the result to be an object (an attribute no ndarray has, an
instance built from the user's class, ``self`` in a class defining the method), the call is
the object's own method, differentiated through it. Arrays keep the rule (no dispatch in the
generated code). Against central differences under both policies."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, check_jvp, numerical_grad

import adgen

V = np.array([1.0, -0.5, 2.0])
W = np.array([0.3, 1.2, -0.7])


class State:
    """A simulation state whose copy() is not a plain copy (it advances the state)."""

    def __init__(self, w):
        self.w = w

    def copy(self):
        return State(self.w * 2.0)

    def loss(self, v):
        c = self.copy()
        return np.sum(c.w * v)


def result_read_as_an_object(v, state):
    c = state.copy()
    return np.sum(np.sin(c.w) * v)


def receiver_read_as_an_object(v, state):
    c = state.copy()
    return np.sum(c.w * v) + np.sum(state.w ** 2)


def helper(state, v):
    c = state.copy()
    return np.sum(c.w ** 2 * v)


def through_a_helper(v, state):
    return helper(state, v)


def built_in_the_function(v, w):
    state = State(w)
    c = state.copy()
    return np.sum(c.w * v)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [result_read_as_an_object, receiver_read_as_an_object,
                               through_a_helper], ids=lambda f: f.__name__)
def test_the_objects_own_copy(f, mutation):
    check_grad(f, (V, State(W.copy())), argnums=(0, 1), mutation=mutation)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_built_in_the_function(mutation):
    check_grad(built_in_the_function, (V, W.copy()), argnums=(0, 1), mutation=mutation)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_self_copy_in_a_method(mutation):
    state = State(W.copy())
    g = adgen.grad(State.loss, argnums=0, mutation=mutation)(state, V)
    assert isinstance(g, State)
    np.testing.assert_allclose(g.w, 2.0 * V)  # hand formula: d/dw sum(2 w v)
    assert_grad_close(g, numerical_grad(State.loss, (state, V), 0))


def test_arrays_keep_the_rule():
    def f(x):
        y = x.copy()
        y[0] = 2.0
        return np.sum(y * x) + x.sum()

    assert "call_forward" not in adgen.source(f, W.copy())
    check_grad(f, (W.copy(),))


# Session 23: forward mode took such calls for the rule too, silently (jvp of
# model.scaler.dot(v) with a user's Scaler.dot gave 1.5 for 0.405: np.dot's linear rule ran the
# method on the tangent), and reverse mode raised a plain TypeError in np.dot's pullback where
# the object reached the call through a name (s = model.scaler; s.dot(v)) or a parameter.


class Scaler:
    def __init__(self, c):
        self.c = c

    def dot(self, v):  # named like ndarray.dot
        return self.c * np.sum(v ** 3)


class Model:
    pass


MODEL = Model()
MODEL.scaler = Scaler(1.5)


def global_objects_attribute(v):
    return MODEL.scaler.dot(v)


def bound_to_a_name(v):
    s = MODEL.scaler
    return s.dot(v) + np.sum(v)


def object_given(v, s):
    return s.dot(v) * 2.0


class Cam:
    def __init__(self, w):
        self.w = w

    def copy(self):  # not a plain copy
        return Cam(2.0 * self.w)

    def sum(self):  # named like ndarray.sum
        return np.sum(self.w ** 2)


def copy_then_sum(v, w):
    c = Cam(w).copy()  # a Cam: c.sum() is Cam.sum, not np.sum
    return c.sum() + np.sum(c.w * v)


@pytest.mark.parametrize("f", [global_objects_attribute, bound_to_a_name])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_methods_of_objects_reached_through_a_global(f, mutation):
    check_grad(f, (V,), mutation=mutation)
    np.testing.assert_allclose(adgen.grad(f, mutation=mutation)(V) - (f is bound_to_a_name),
                               4.5 * V ** 2)  # by hand
    check_jvp(f, (V,), (W,))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_an_object_given_to_forward_mode(mutation):
    check_grad(object_given, (V, Scaler(1.5)), mutation=mutation)
    check_jvp(object_given, (V, Scaler(1.5)), (W, None))
    h = adgen.hessian(object_given)(V, Scaler(1.5))
    np.testing.assert_allclose(h, np.diag(18.0 * V))  # by hand: d2/dv2 of 3 sum(v^3)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_result_of_the_objects_copy(mutation):
    # c = Cam(w).copy(); c.sum(): jvp gave 4.0 for 2.4 (np.copy's and np.sum's rules ran the
    # methods on the tangent object), grad refused the object as read as an array
    check_grad(copy_then_sum, (V, W.copy()), argnums=(0, 1), mutation=mutation)
    check_jvp(copy_then_sum, (V, W.copy()), (W, V))
    _, t = adgen.jvp(copy_then_sum, (V, W.copy()), (None, V))
    assert t == pytest.approx(float(np.sum(8.0 * W * V + 2.0 * V * V)))  # by hand
