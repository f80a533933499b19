"""A model whose method runs the layers it holds in a list and updates a state array it
holds in place (``for l in self.layers: h = l(h)``, then ``self.state *= 0.5;
self.state += h``): the recurrent cell, the running filter, the reservoir.

Before: every mode but jvp refused it at run time, "an object of class Layer that may share
an array with one written in place ...: adgen took it for an array when compiling" (the
layers were kept in shadow memory because the method writes its object in place;
test_counting_on_self_next_to_layers has the same for ``self.steps += 1``). And the hessian of
a method returning its state, called in a loop that binds the result first (``for t in
range(2): s = a.add(x)``), raised NumPy's casting error (the zero tangent of the unbound name
was given an adjoint). Now: grad under both policies, jvp and hessian vs central
differences, with respect to the input and to a layer's weights.
"""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from tests.gradcheck import numerical_grad, numerical_hessian


class Layer:
    def __init__(self, W):
        self.W = W

    def __call__(self, h):
        return np.tanh(self.W @ h)


class Reservoir:
    """Runs every layer, then decays and adds to its state in place."""

    def __init__(self, Ws):
        self.layers = [Layer(W) for W in Ws]
        self.state = np.zeros(4)

    def step(self, x):
        h = x
        for layer in self.layers:
            h = layer(h)
        self.state *= 0.5
        self.state += h
        return self.state


class FirstLayerOnly(Reservoir):
    def step(self, x):
        h = self.layers[0](x)
        self.state += h
        return self.state


class ReturnsACopy(Reservoir):
    def step(self, x):
        h = x
        for layer in self.layers:
            h = layer(h)
        self.state += h
        return self.state.copy()


class Accumulator:
    def __init__(self):
        self.y = np.zeros(4)

    def add(self, x):
        self.y += np.sin(x)
        return self.y


_rng = np.random.default_rng(7)
WS = [_rng.normal(size=(4, 4)) * 0.4 for _ in range(3)]
X = np.array([0.3, -0.7, 1.1, 0.2])


def reservoir_twice(x):
    m = Reservoir(WS)
    for t in range(2):
        s = m.step(x * (t + 1))
    return np.sum(s ** 2)


def reservoir_once(x):
    m = Reservoir(WS)
    s = m.step(x)
    return np.sum(s ** 2)


def first_layer_twice(x):
    m = FirstLayerOnly(WS)
    for t in range(2):
        s = m.step(x * (t + 1))
    return np.sum(s ** 2)


def copies_twice(x):
    m = ReturnsACopy(WS)
    for t in range(2):
        s = m.step(x * (t + 1))
    return np.sum(s ** 2)


def with_respect_to_a_layer(w):
    """The first layer's weights, flattened, as the variable."""
    m = Reservoir([w.reshape(4, 4)] + WS[1:])
    for t in range(2):
        s = m.step(X * (t + 1))
    return np.sum(s ** 2)


def accumulated(x):
    a = Accumulator()
    for t in range(2):
        s = a.add(x * (t + 1))
    return np.sum(s ** 2)


CASES = [reservoir_twice, reservoir_once, first_layer_twice, copies_twice, accumulated]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("fn", CASES + [with_respect_to_a_layer], ids=lambda f: f.__name__)
def test_grad(fn, mutation):
    x = WS[0].ravel().copy() if fn is with_respect_to_a_layer else X.copy()
    g = adgen.grad(fn, mutation=mutation)(x)
    np.testing.assert_allclose(g, numerical_grad(fn, (x,), 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_jvp_and_hessian(fn):
    v = np.array([0.5, -1.0, 0.25, 2.0])
    out, tangent = adgen.jvp(fn, (X.copy(),), (v,))
    assert out == pytest.approx(fn(X.copy()))
    assert tangent == pytest.approx(numerical_grad(fn, (X,), 0) @ v, rel=1e-6, abs=1e-8)
    np.testing.assert_allclose(adgen.hessian(fn)(X.copy()), numerical_hessian(fn, X),
                               rtol=1e-4, atol=1e-5)

