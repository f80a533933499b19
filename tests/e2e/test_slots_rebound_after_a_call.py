"""A model whose attribute is rebound after a call that read it (``h = self.fc(x); self.fc =
self.other``), or an object's attribute pointed at another object held elsewhere (``p.a =
p.b``), as PyTorch users swap layers.

The pullback of the call that built the model (or of a call changing an object) walked what
the model's attributes held when the pullback ran, not when the call returned: the adjoint of
what ``self.fc`` held then (the first layer) went to the weights of the layer the attribute
held at the end, silently, under both policies (a zero gradient for the first layer, the
second's doubled). The forward now keeps what such a name holds right after the call
(runtime.held_items) and the pullback walks that.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad, numerical_grad

import adgen

POLICIES = ["save", "strict"]


class Dense:
    def __init__(self, w, b):
        self.w = w
        self.b = b

    def __call__(self, x):
        return np.tanh(x @ self.w + self.b)


class SwappedNet:
    def __init__(self, w1, w2):
        self.fc = Dense(w1, 0.1)
        self.other = Dense(w2, -0.2)

    def loss(self, x):
        h = self.fc(x)
        self.fc = self.other
        out = self.fc(h)
        return np.sum(out ** 2)


class DroppedNet(SwappedNet):
    def loss(self, x):
        h = self.fc(x)
        self.fc = self.other
        return np.sum(h ** 2)


def swapped(w1, w2, x):
    return SwappedNet(w1, w2).loss(x)


def dropped(w1, w2, x):
    return DroppedNet(w1, w2).loss(x)


class Box:
    def __init__(self, v):
        self.v = v


class Pair:
    def __init__(self, w1, w2):
        self.a = Box(w1)
        self.b = Box(w2)


def pointed_elsewhere(w1, w2, x):
    p = Pair(w1, w2)
    s = np.sum((p.a.v @ x) ** 2)
    p.a = p.b
    return s + 3.0 * np.sum(p.a.v)


def _data():
    rng = np.random.default_rng(3)
    return rng.normal(size=(3, 3)), rng.normal(size=(3, 3)), rng.normal(size=(2, 3))


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", [swapped, dropped])
def test_layer_swapped_after_its_call(f, policy):
    w1, w2, x = _data()
    g = adgen.grad(f, argnums=(0, 1, 2), mutation=policy)(w1, w2, x)
    for k in range(3):
        np.testing.assert_allclose(g[k], numerical_grad(f, (w1, w2, x), k), atol=1e-6)


@pytest.mark.parametrize("policy", POLICIES)
def test_attribute_pointed_at_another_object(policy):
    w1, w2, x = _data()
    x = x.T
    g = adgen.grad(pointed_elsewhere, argnums=(0, 1), mutation=policy)(w1, w2, x)
    # by hand: d/dw1 sum((w1 @ x)^2) = 2 (w1 @ x) x^T; d/dw2 3 sum(w2) = 3
    np.testing.assert_allclose(g[0], 2.0 * (w1 @ x) @ x.T, atol=1e-9)
    np.testing.assert_allclose(g[1], np.full((3, 3), 3.0), atol=1e-9)


@pytest.mark.parametrize("policy", POLICIES)
def test_model_passed_in_swaps_its_layer(policy):
    w1, w2, x = _data()

    def loss(net, x):
        return net.loss(x)

    g = adgen.grad(loss, mutation=policy)(SwappedNet(w1.copy(), w2.copy()), x)
    np.testing.assert_allclose(g.fc.w, numerical_grad(swapped, (w1, w2, x), 0), atol=1e-6)
    np.testing.assert_allclose(g.other.w, numerical_grad(swapped, (w1, w2, x), 1), atol=1e-6)


@pytest.mark.parametrize("policy", POLICIES)
def test_layers_swapped_in_a_loop(policy):
    w1, w2, x = _data()

    class Swap:
        def __init__(self, ws):
            self.layers = [Dense(w, 0.05 * i) for i, w in enumerate(ws)]

        def loss(self, x):
            h = x
            for lay in self.layers:
                self.cur = lay
                h = self.cur(h)
            return np.sum(h ** 2)

    def f(w1, w2, x):
        return Swap([w1, w2]).loss(x)

    check_grad(f, (w1, w2, x), (0, 1), mutation=policy, strict_must_compute=True, rtol=1e-7,
               atol=1e-6)
