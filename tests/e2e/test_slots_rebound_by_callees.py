"""An object, dict or list whose array the loss writes in place, handed to a method or
function that rebinds the slot (``self.u = self.u * c``) or reads it before the loss rebinds
it: state objects as simulation code writes them (``s = System(A, B); s.x[:] = x0; for t:
u = -K @ s.x; s.step(u)``). The adjoints of the arrays written in place live in shadow
memory and the callee's per slot: at pullback time the object held its last arrays, and
the gradient was zero or partial, silently, until session 21 (runtime.item_shadows).
So was an array written in place three levels down (``m.layers[0].w[0] = 0.3``) whose
adjoint came back inside the cotangent of a call given ``m``."""

import numpy as np
import pytest

import adgen
from tests.gradcheck import numerical_grad

POLICIES = ("save", "strict")


class System:
    def __init__(self, A, B):
        self.A, self.B = A, B
        self.x = np.zeros(A.shape[0])

    def step(self, u):
        self.x = self.A @ self.x + self.B * u
        return self.x


A0 = np.array([[1.0, 0.1], [0.0, 1.0]])
B0 = np.array([0.0, 0.1])


def lqr_cost(K):
    s = System(A0, B0)
    s.x[:] = [1.0, 0.0]
    cost = 0.0
    for _ in range(30):
        u = -K @ s.x
        s.step(u)
        cost += s.x @ s.x + 0.1 * u * u
    return cost


def one_step_item_init(K):
    s = System(A0, B0)
    s.x[0] = 1.0
    u = -K @ s.x
    s.step(u)
    return s.x @ s.x


class Grid:
    def __init__(self, u):
        self.u = u * 1.0

    def energy(self):
        return np.sum(self.u ** 2)

    def scale(self, c):
        self.u = self.u * c


def read_then_rebound_by_caller(u):
    g = Grid(u)
    g.u[1:] *= 2.0
    e = g.energy()
    g.u = g.u * 3.0
    return e + np.sum(g.u)


def method_rebinds(u):
    g = Grid(u)
    g.u[1:] *= 2.0
    g.scale(3.0)
    return np.sum(g.u ** 2)


def two_rebinds_then_method(u):
    g = Grid(u)
    g.u[1:] *= 2.0
    g.scale(3.0)
    g.scale(2.0)
    return g.energy()


def method_before_and_after(u):
    g = Grid(u)
    g.u[1:] *= 2.0
    e = g.energy()
    g.scale(3.0)
    return e + g.energy()


def rescale(g, c):
    g.u = g.u * c


def function_rebinds(u):
    g = Grid(u)
    g.u[1:] *= 2.0
    rescale(g, 3.0)
    return np.sum(g.u ** 2)


def rescale_entry(d, c):
    d["u"] = d["u"] * c


def dict_entry_rebound(u):
    d = {"u": u * 1.0}
    d["u"][1:] *= 2.0
    rescale_entry(d, 3.0)
    return np.sum(d["u"] ** 2)


class Layer:
    def __init__(self, w):
        self.w = w * 1.0

    def shrink(self, c):
        self.w = self.w * c

    def __call__(self, x):
        return np.tanh(self.w * x)


class Model:
    def __init__(self, w1, w2):
        self.layers = [Layer(w1), Layer(w2)]

    def decay(self, c):
        for layer in self.layers:
            layer.shrink(c)

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def nested_write(w):
    # the write three levels down (m.layers[0].w), m's cotangent from the call holding it
    m = Model(w, w * 2.0)
    m.layers[0].w[0] = 0.3
    return np.sum(m(np.ones(3)) ** 2)


def nested_write_then_rebound(w):
    m = Model(w, w * 2.0)
    m.layers[0].w[0] = 0.3
    m.decay(0.9)
    return np.sum(m(np.ones(3)) ** 2)


def rebound_then_nested_write(w):
    m = Model(w, w * 2.0)
    m.decay(0.9)
    m.layers[1].w[0] = 0.3
    return np.sum(m(np.ones(3)) ** 2)


CASES = [
    (nested_write, np.array([0.5, 0.8, 1.1])),
    (nested_write_then_rebound, np.array([0.5, 0.8, 1.1])),
    (rebound_then_nested_write, np.array([0.5, 0.8, 1.1])),
    (lqr_cost, np.array([0.5, 0.8])),
    (one_step_item_init, np.array([0.5, 0.8])),
    (read_then_rebound_by_caller, np.array([0.5, 0.8, 1.1])),
    (method_rebinds, np.array([0.5, 0.8, 1.1])),
    (two_rebinds_then_method, np.array([0.5, 0.8, 1.1])),
    (method_before_and_after, np.array([0.5, 0.8, 1.1])),
    (function_rebinds, np.array([0.5, 0.8, 1.1])),
    (dict_entry_rebound, np.array([0.5, 0.8, 1.1])),
]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f,x", CASES, ids=[f.__name__ for f, _ in CASES])
def test_gradient_matches_central_differences(f, x, policy):
    g = adgen.grad(f, mutation=policy)(x)
    np.testing.assert_allclose(g, numerical_grad(f, (x,), 0), rtol=1e-5, atol=1e-7)


def test_hand_formula_method_rebinds():
    # sum((3 * u * [1, 2, 2]) ** 2): gradient 18 * u * [1, 4, 4]
    u = np.array([0.5, 0.8, 1.1])
    np.testing.assert_allclose(adgen.grad(method_rebinds)(u), 18 * u * [1, 4, 4])


def test_value_and_grad_in_a_loop_of_steps_is_the_primal_value():
    K = np.array([0.5, 0.8])
    v, g = adgen.value_and_grad(lqr_cost)(K)
    assert v == pytest.approx(lqr_cost(K))
    np.testing.assert_allclose(g, numerical_grad(lqr_cost, (K,), 0), rtol=1e-5)


def method_first_then_write(u):
    g = Grid(u)
    g.scale(3.0)
    g.u[1:] *= 2.0
    return g.energy()


def test_write_after_a_rebinding_method_under_save():
    u = np.array([0.5, 0.8, 1.1])
    np.testing.assert_allclose(adgen.grad(method_first_then_write)(u),
                               numerical_grad(method_first_then_write, (u,), 0), rtol=1e-5)
