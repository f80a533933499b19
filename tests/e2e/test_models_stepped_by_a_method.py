"""A model of many layer objects stepped by a method that writes the state in place after
calling another method of its object (``u *= c; u += dt * self.rhs(u, t)``; issue 15,
bench/workloads/layers.py). The forward records the object's slots around the call and as
the method returns (runtime.items_at); each record walked the whole model, twice per step.
Since session 23 the record at the return is the one after the call where the lines since
only bind or write names in place (transforms/exit_records.py), and an object's zero
adjoint is empty (a missing attribute is zero), not a zero per array the model holds. The
gradients must stay those of central differences, under both policies where the step
allows them, and a counter written in place or a state the model holds itself change
nothing."""

import numpy as np
import pytest

import adgen
from adgen.errors import MutationError
from tests.gradcheck import numerical_grad

DT, DECAY = 0.1, 0.99
POLICIES = ["save", "strict"]


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
        u += DT * self.rhs(u.copy(), t)

    def counted_step(self, u, t):
        u *= DECAY
        u += DT * self.rhs(u.copy(), t)
        k = t
        k += 1
        return k


def stepped(u0, W):
    m = Model(W)
    u = u0.copy()
    for t in range(W.shape[0]):
        m.step(u, t)
    return np.sum(u ** 2)


def stepped_state(u0, W):
    m = Model(W)
    m.state[:] = u0
    for t in range(W.shape[0]):
        m.step(m.state, t)
    return np.sum(m.state ** 2) + np.sum(m.layers[0].w * m.state)


def counted(u0, W):
    m = Model(W)
    u = u0.copy()
    t = 0
    while t < W.shape[0]:
        t = m.counted_step(u, t)
    return np.sum(u ** 3)


def _args(n_layers=6, width=5):
    rng = np.random.default_rng(3)
    return rng.standard_normal(width), rng.standard_normal((n_layers, width))


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", [stepped, stepped_state, counted])
def test_models_stepped_in_place_by_a_method(f, mutation):
    args = _args()
    if f is stepped_state and mutation == "strict":
        # the step overwrites the state the loss reads through the model
        with pytest.raises(MutationError, match="overwrites self.state"):
            adgen.grad(f, argnums=(0, 1), mutation=mutation)(*args)
        return
    got = adgen.grad(f, argnums=(0, 1), mutation=mutation)(*args)
    for i in (0, 1):
        np.testing.assert_allclose(got[i], numerical_grad(f, args, i), rtol=1e-6, atol=1e-7)


def test_the_step_walks_the_model_once_per_call():
    # the record as step returns is the record after self.rhs (two walks of the model per
    # step before: quadratic in the layers for a model stepped once per layer)
    text = adgen.source(stepped, *_args())
    step = text[text.index("def step_forward"):text.index("def step_pullback")]
    assert step.count("items_at(self)") == 1, step
    assert "items_at(self, None, self_after1, (u_2,))" in step, step
