"""A model's slots recorded once per forward pass, not once per step (issue 15).

A method that writes an array in place and hands its object to another method
(``u += dt * self.rhs(u, t)``) keeps a record of the object's slots around the call
(``runtime.items_at``: the object, its list of layers, every layer). A model of N layers
stepped N times was walked N times: the gradient's cost grew as N squared. The forward now
notes each statement that may change a slot (``runtime.slots_changed``,
transforms/slot_changes.py), and a record is taken again while none ran since, in the same
forward pass. These tests count the walks, and check that a slot changed between two steps
(by an attribute stored in the loop, ``setattr``, a helper, a method of another object) or
between two gradients (by plain Python) is walked again: with a stale record the gradient
through the array the model holds goes to the old array (wrong, silently).
"""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from adgen.errors import MutationError

DECAY, DT = 0.9, 0.5


# -- the workload's model: one step per layer, the state handed in and written in place ----

class Layer:
    def __init__(self, w):
        self.w = w
        self.scale = 1.0


class Model:
    def __init__(self, W):
        self.layers = [Layer(W[i] * 1.0) for i in range(W.shape[0])]

    def rhs(self, u, t):
        layer = self.layers[t]
        return layer.scale * np.tanh(layer.w * u)

    def step(self, u, t):
        u *= DECAY
        u += DT * self.rhs(u, t)


def stepped(u0, W):
    m = Model(W)
    u = u0.copy()
    for t in range(W.shape[0]):
        m.step(u, t)
    return np.sum(u ** 2)


def stepped_by_hand(u0, W):
    """v_t = DECAY u_t, u_{t+1} = v_t + DT tanh(W_t v_t), run back."""
    u, vs, ths = u0.copy(), [], []
    for t in range(W.shape[0]):
        v = DECAY * u
        th = np.tanh(W[t] * v)
        vs.append(v)
        ths.append(th)
        u = v + DT * th
    u_bar, W_bar = 2.0 * u, np.zeros_like(W)
    for t in reversed(range(W.shape[0])):
        g = DT * u_bar * (1.0 - ths[t] ** 2)
        W_bar[t] = g * vs[t]
        u_bar = DECAY * (u_bar + g * W[t])
    return u_bar, W_bar


# -- the same steps where the pullback reads no value the steps overwrite ("strict" too) ----

class LinearModel(Model):
    def rhs(self, u, t):
        layer = self.layers[t]
        return layer.scale * np.tanh(layer.w) + 0.5 * u


def stepped_linear(u0, W):
    m = LinearModel(W)
    u = u0.copy()
    for t in range(W.shape[0]):
        m.step(u, t)
    return np.sum(u ** 2)


def central(f, args, k, eps=1e-6):
    args = [np.array(a, dtype=float) for a in args]
    g = np.zeros_like(args[k])
    for i in np.ndindex(g.shape):
        plus = [a.copy() for a in args]
        minus = [a.copy() for a in args]
        plus[k][i] += eps
        minus[k][i] -= eps
        g[i] = (f(*plus) - f(*minus)) / (2 * eps)
    return g


def walks(monkeypatch, f, n_layers, mutation):
    """The gradient for ``n_layers`` layers and the walks of the model one call of it made
    (a walk records the list of layers once: item_shadows.ListItems)."""
    from adgen import item_shadows

    made = [0]

    class Counted(item_shadows.ListItems):
        __slots__ = ()

        def __init__(self, *a):
            made[0] += 1
            super().__init__(*a)

    rng = np.random.default_rng(n_layers)
    args = rng.standard_normal(3), rng.standard_normal((n_layers, 3))
    g = adgen.grad(f, argnums=(0, 1), mutation=mutation)
    g(*args)  # compiled: the count is the call's
    monkeypatch.setattr(item_shadows, "ListItems", Counted)
    got = g(*args)
    monkeypatch.undo()
    return made[0], got, args


def test_the_stepped_model_is_walked_as_often_at_any_number_of_layers(monkeypatch):
    counts = []
    for n in (3, 6, 12):
        count, got, args = walks(monkeypatch, stepped, n, "save")
        want = stepped_by_hand(*args)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-10, atol=1e-12)
        counts.append(count)
    # one walk per forward pass (it was one per step: 3, 6, 12)
    assert counts[0] == counts[1] == counts[2], counts
    assert counts[0] <= 2, counts


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_walks_do_not_grow_under_either_policy(monkeypatch, mutation):
    counts = []
    for n in (3, 6, 12):
        count, got, args = walks(monkeypatch, stepped_linear, n, mutation)
        for k in (0, 1):
            np.testing.assert_allclose(got[k], central(stepped_linear, args, k),
                                       rtol=1e-6, atol=1e-7)
        counts.append(count)
    assert counts[0] == counts[1] == counts[2], counts


# -- a slot rebound between two steps: the record must be made again ----------------------

class Held:
    """A model holding its state, which each step writes in place."""

    def __init__(self, W, u0):
        self.layers = [Layer(W[i] * 1.0) for i in range(W.shape[0])]
        self.u = u0.copy()

    def rhs(self, t):
        layer = self.layers[t]
        return layer.scale * np.tanh(layer.w * self.u)

    def step(self, t):
        u = self.u
        u *= DECAY
        u += DT * self.rhs(t)


def rescale(m):
    m.u = m.u * 1.5


class Scaler:
    def __init__(self, m):
        self.m = m

    def apply(self):
        self.m.u = self.m.u * 1.5


def rebound_in_the_loop(u0, W):
    m = Held(W, u0)
    for t in range(W.shape[0]):
        m.step(t)
        m.u = m.u * 1.5
    return np.sum(m.u ** 2)


def rebound_by_setattr(u0, W):
    m = Held(W, u0)
    for t in range(W.shape[0]):
        m.step(t)
        setattr(m, "u", m.u * 1.5)
    return np.sum(m.u ** 2)


def rebound_by_a_helper(u0, W):
    m = Held(W, u0)
    for t in range(W.shape[0]):
        m.step(t)
        rescale(m)
    return np.sum(m.u ** 2)


def rebound_by_another_object(u0, W):
    m = Held(W, u0)
    s = Scaler(m)
    for t in range(W.shape[0]):
        m.step(t)
        s.apply()
    return np.sum(m.u ** 2)


REBOUND = [rebound_in_the_loop, rebound_by_setattr, rebound_by_a_helper,
           rebound_by_another_object]


@pytest.mark.parametrize("f", REBOUND, ids=lambda f: f.__name__)
def test_a_slot_rebound_between_steps_is_recorded_again(f):
    rng = np.random.default_rng(3)
    args = rng.standard_normal(3), rng.standard_normal((4, 3))
    got = adgen.grad(f, argnums=(0, 1))(*args)
    for k in (0, 1):
        np.testing.assert_allclose(got[k], central(f, args, k), rtol=1e-6, atol=1e-7)
    # "strict" refuses the steps (u += ... overwrites self.u, which rhs's pullback reads)
    with pytest.raises(MutationError, match="overwrites self.u"):
        adgen.grad(f, argnums=(0, 1), mutation="strict")(*args)


# -- a slot changed by plain Python between two gradients ----------------------------------

class Given:
    def __init__(self, W, u0):
        self.layers = [Layer(W[i] * 1.0) for i in range(W.shape[0])]
        self.u = u0.copy()

    def rhs(self, t, x):
        return np.tanh(self.layers[t].w * self.u * x)

    def step(self, t, x):
        u = self.u
        u += DT * self.rhs(t, x)


def run(x, m):
    for t in range(len(m.layers)):
        m.step(t, x)
    return np.sum(m.u ** 2)


def test_a_slot_changed_between_two_gradients_is_recorded_again():
    rng = np.random.default_rng(0)
    u0, W, x = rng.standard_normal(3), rng.standard_normal((3, 3)), rng.standard_normal(3)
    m = Given(W, u0)
    g = adgen.grad(run)
    for k in range(3):
        m.u = u0 * (k + 1.0)  # a new array in the slot, between the calls
        got = g(x, m)

        def fresh(x, k=k):
            return run(x, Given(W, u0 * (k + 1.0)))

        np.testing.assert_allclose(got, central(fresh, (x,), 0), rtol=1e-6, atol=1e-8)
