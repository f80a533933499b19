"""A method that counts with ``+=`` (``self.t += 0.1``, ``self.calls += 1``) and sets another
attribute from values with a derivative (``self.u = self.u + k * np.roll(self.u, 1)``).

Each alone was right. Together the gradient was silently wrong: the method's pullback runs
alone (dispatch's "compiled alone", because of the counter) with a shadow map of its own, and
started the object's adjoint from zero instead of from the caller's (``sh.deposit``), so
what the caller read of the object after the call (``np.sum(s.u ** 2)``) did not reach
through the method: grad gave 2 * u0 and 0 for ``k``, for an object built in the function, a
global one or a parameter. The map such a pullback makes now starts with the caller's
deposits (``ShadowMap._carried``). A list of dataclasses advanced in a loop and read back
through the list needs the holder's adjoint too (test_objects_changed_by_a_call_read_through_a_
holder.py). Expected values: central differences, under both policies.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

POLICIES = ["save", "strict"]


@dataclasses.dataclass
class State:
    u: np.ndarray
    t: float = 0.0

    def advance(self, k):
        self.u = self.u + k * np.roll(self.u, 1)
        self.t += 0.1


class Counted:
    def __init__(self, u):
        self.u = u
        self.calls = 0

    def advance(self, k):
        self.calls += 1
        self.u = np.tanh(self.u * k)


def one_state(u0, k):
    s = State(u0)
    s.advance(k)
    return np.sum(s.u ** 2)


def states_in_a_loop(u0, k):
    states = [State(u0.copy()), State(u0 * 2.0)]
    for s in states:
        for _ in range(3):
            s.advance(k)
    return sum(np.sum(s.u ** 2) * s.t for s in states)


GLOBAL_STATE = Counted(np.ones(5))


def a_global_object(u0, k):
    GLOBAL_STATE.u = u0
    GLOBAL_STATE.advance(k)
    GLOBAL_STATE.advance(k)
    return np.sum(GLOBAL_STATE.u ** 2)


def an_object_given(u0, k, c):
    c.advance(k)
    return np.sum(c.u * u0)


U0 = np.array([0.5, -1.0, 2.0, 0.3, 0.1])


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", [one_state, states_in_a_loop, a_global_object],
                         ids=lambda f: f.__name__)
def test_the_attribute_set_next_to_the_counter_carries_the_gradient(f, mutation) -> None:
    gu, gk = adgen.grad(f, argnums=(0, 1), mutation=mutation)(U0.copy(), 0.3)
    np.testing.assert_allclose(gu, numerical_grad(f, (U0.copy(), 0.3), 0),
                               rtol=1e-6, atol=1e-8)
    assert gk == pytest.approx(numerical_grad(f, (U0.copy(), 0.3), 1), rel=1e-6)


@pytest.mark.parametrize("mutation", POLICIES)
def test_an_object_given_gets_its_gradient(mutation) -> None:
    g = adgen.grad(an_object_given, argnums=(1, 2), mutation=mutation)(
        U0.copy(), 0.7, Counted(np.sin(U0)))
    gk = numerical_grad(lambda k: an_object_given(U0.copy(), k, Counted(np.sin(U0))),
                        (0.7,), 0)
    gc = numerical_grad(lambda c: an_object_given(U0.copy(), 0.7, c),
                        (Counted(np.sin(U0)),), 0)
    assert g[0] == pytest.approx(gk, rel=1e-6)
    np.testing.assert_allclose(g[1].u, gc.u, rtol=1e-6, atol=1e-8)
