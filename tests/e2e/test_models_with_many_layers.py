"""A model object holding many layers, stepped by a method that writes its argument in place
and calls another method of its object: the forward records the object's slots around that
call (runtime.items_at) and the pullback moves adjoints between shadow memory and the object's
adjoint. Since session 22 a record knows the arrays it reaches and the pullback skips the
walk of the model where it holds none of the arrays written in place; where the model does
hold the state it is handed (m.step(m.state, t): silently wrong at fbc3ecb, right at
c2bcce0), the adjoints must still move (bench/workloads/layers.py;
python -m bench.experiments.layer_model)."""

import numpy as np
import pytest

import adgen
from adgen.errors import MutationError
from tests.gradcheck import check_grad

DT, DECAY = 0.1, 0.99


class Layer:
    def __init__(self, w):
        self.w = w
        self.scale = 1.0


class Model:
    def __init__(self, W):
        self.layers = [Layer(W[i] * 1.0) for i in range(W.shape[0])]
        self.state = np.zeros(W.shape[1])

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


def stepped_state(u0, W):
    """The state the model holds is the array its method writes."""
    m = Model(W)
    m.state[:] = u0
    for t in range(W.shape[0]):
        m.step(m.state, t)
    return np.sum(m.state ** 2)


def stepped_state_then_layer(u0, W):
    """A layer's weights are the array written: the model holds it, one level down."""
    m = Model(W)
    for t in range(W.shape[0]):
        m.step(m.layers[0].w, t)
    return np.sum(m.layers[0].w * u0)


def hand(u0, W):
    u = u0.copy()
    vs, ths = [], []
    for t in range(W.shape[0]):
        v = DECAY * u
        th = np.tanh(W[t] * v)
        vs.append(v)
        ths.append(th)
        u = v + DT * th
    u_bar = 2.0 * u
    W_bar = np.zeros_like(W)
    for t in reversed(range(W.shape[0])):
        g = DT * u_bar * (1.0 - ths[t] ** 2)
        W_bar[t] = g * vs[t]
        u_bar = DECAY * (u_bar + g * W[t])
    return u_bar, W_bar


def args(layers=12, width=5):
    rng = np.random.default_rng(3)
    return rng.standard_normal(width), rng.standard_normal((layers, width))


@pytest.mark.parametrize("f", [stepped, stepped_state, stepped_state_then_layer])
def test_gradient_matches_central_differences(f):
    u0, W = args()
    check_grad(f, (u0, W), (0, 1), mutation="save", rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", [stepped, stepped_state])
def test_gradient_matches_hand_formula(f):
    u0, W = args()
    gu, gW = adgen.grad(f, argnums=(0, 1), mutation="save")(u0, W)
    hu, hW = hand(u0, W)
    np.testing.assert_allclose(gu, hu, rtol=1e-10)
    np.testing.assert_allclose(gW, hW, rtol=1e-10)


@pytest.mark.parametrize("f", [stepped, stepped_state, stepped_state_then_layer])
def test_strict_refuses_at_the_write(f):
    """strict keeps no copy: u += DT * self.rhs(u, t) overwrites what tanh's pullback reads."""
    u0, W = args()
    line = Model.step.__code__.co_firstlineno + 2
    with pytest.raises(MutationError, match=rf"test_models_with_many_layers\.py:{line}:.*u \+= DT"):
        adgen.grad(f, argnums=(0, 1), mutation="strict")(u0, W)
