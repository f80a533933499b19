"""A model holding its state in a list or dict attribute (``self.state = [u]``), a method
writing it in place after a call of another method that read it: the callee's pullback read
the overwritten values, a silently wrong gradient under both policies (found in session 28
beside issue 15; the state in a plain attribute was guarded). The capture of the object
handed to the call now covers the arrays of its lists and dicts the callee kept, so the
write is guarded: "save" keeps the old values, "strict" refuses at the line.
"""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from adgen.errors import MutationError


class Listed:
    def __init__(self, W, u0):
        self.W = W
        self.state = [u0.copy()]

    def rhs(self):
        return np.tanh(self.W * self.state[0])

    def step(self):
        u = self.state[0]
        u *= 0.9
        u += 0.5 * self.rhs()


class Keyed:
    def __init__(self, W, u0):
        self.W = W
        self.state = {"u": u0.copy()}

    def rhs(self):
        return np.sin(self.W * self.state["u"])

    def step(self):
        u = self.state["u"]
        u += 0.5 * self.rhs()


class Layer:
    def __init__(self, w):
        self.w = w


class Stepped:
    """Layers, the state in a list rebound between the steps."""

    def __init__(self, W, u0):
        self.layers = [Layer(W[i] * 1.0) for i in range(W.shape[0])]
        self.state = [u0.copy()]

    def rhs(self, t):
        return np.tanh(self.layers[t].w * self.state[0])

    def step(self, t):
        u = self.state[0]
        u *= 0.9
        u += 0.5 * self.rhs(t)


class Unread:
    """The callee reads the state's shape only (its saved values keep the array: "strict"
    refuses the write after it, as it does for a plain attribute)."""

    def __init__(self, W, u0):
        self.W = W
        self.state = [u0.copy()]

    def rhs(self):
        return np.tanh(self.W) * np.ones(self.state[0].shape)

    def step(self):
        u = self.state[0]
        u += 0.5 * self.rhs()


def one_step(u0, W):
    m = Listed(W, u0)
    m.step()
    return np.sum(m.state[0] ** 2)


def keyed_steps(u0, W):
    m = Keyed(W, u0)
    for _ in range(2):
        m.step()
    return np.sum(m.state["u"] ** 2)


def stepped(u0, W):
    m = Stepped(W, u0)
    for t in range(W.shape[0]):
        m.step(t)
        m.state = [m.state[0] * 1.5]
    return np.sum(m.state[0] ** 2)


def unread(u0, W):
    m = Unread(W, u0)
    for _ in range(2):
        m.step()
    return np.sum(m.state[0] ** 2)


def central(f, args, k, eps=1e-6):
    g = np.zeros_like(args[k])
    for i in np.ndindex(g.shape):
        plus = [a.copy() for a in args]
        minus = [a.copy() for a in args]
        plus[k][i] += eps
        minus[k][i] -= eps
        g[i] = (f(*plus) - f(*minus)) / (2 * eps)
    return g


def one_step_by_hand(u0, W):
    """v = 0.9 u0, u1 = v + 0.5 tanh(W v), loss = sum(u1 ** 2)."""
    v = 0.9 * u0
    th = np.tanh(W * v)
    u1 = v + 0.5 * th
    g = 2.0 * u1 * 0.5 * (1.0 - th ** 2)
    return 0.9 * (2.0 * u1 + g * W), g * v


ARGS = {one_step: (3,), keyed_steps: (3,), stepped: (3, 3), unread: (3,)}


def args_of(f):
    rng = np.random.default_rng(7)
    return rng.standard_normal(3), rng.standard_normal(ARGS[f])


@pytest.mark.parametrize("f", [one_step, keyed_steps, stepped, unread],
                         ids=lambda f: f.__name__)
def test_the_gradient_under_save(f):
    args = args_of(f)
    got = adgen.grad(f, argnums=(0, 1))(*args)
    for k in (0, 1):
        np.testing.assert_allclose(got[k], central(f, args, k), rtol=1e-6, atol=1e-8)


def test_one_step_by_hand():
    args = args_of(one_step)
    got = adgen.grad(one_step, argnums=(0, 1))(*args)
    for g, want in zip(got, one_step_by_hand(*args)):
        np.testing.assert_allclose(g, want, rtol=1e-12)


@pytest.mark.parametrize("f", [one_step, keyed_steps, stepped], ids=lambda f: f.__name__)
def test_strict_refuses_the_write_at_its_line(f):
    with pytest.raises(MutationError, match=r"u \+= 0\.5 \* self\.rhs"):
        adgen.grad(f, argnums=(0, 1), mutation="strict")(*args_of(f))


def test_jvp():
    args = args_of(one_step)
    direction = (np.zeros(3), np.array([1.0, -0.5, 2.0]))
    _, tangent = adgen.jvp(one_step, args, direction)
    want = float(np.sum(central(one_step, args, 1) * direction[1]))
    np.testing.assert_allclose(tangent, want, rtol=1e-6)
