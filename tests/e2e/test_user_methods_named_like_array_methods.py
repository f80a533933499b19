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
from gradcheck import assert_grad_close, check_grad, numerical_grad

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
