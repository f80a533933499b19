"""An object changed by a call (a method setting ``self.z``, a helper setting ``o.z``) and read
again after the call through a list, a dict or an object that holds it.

A network whose layers keep their pre-activations (``self.z = x @ self.w`` in ``forward``)
and a loss that penalises them through the network (``sum(np.sum(l.z ** 2) for l in
self.layers)``) got a silently wrong gradient: the read after the call put its adjoint in the
holder's adjoint (``layers``, ``self``), which the pullback hands to the object's own name
only past the line that read the object out (``for l in self.layers``, ``m = layers[0]``), so
the call's pullback saw a zero for ``z`` (grad [0, 0, 0, 0] where central differences give
[1, 1, 0.5, 0.5]; also ``hold.inner.forward(x); hold.inner.z``, ``set_z(layers[0], x)``). The
pullback of such a call now takes the object's adjoint out of the holders first
(``runtime.held_adjoint``), and a method on an object read out of a parameter counts as
changing that parameter (``analyses.changed_parameters``). Expected values: central
differences, under both policies.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

POLICIES = ["save", "strict"]


class Layer:
    def __init__(self, w):
        self.w = w
        self.z = None

    def forward(self, x):
        z = x @ self.w
        self.z = z
        return np.tanh(z)


class Net:
    def __init__(self, w):
        self.layers = [Layer(w), Layer(w * 2.0)]

    def forward(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return x

    def activity_penalty(self):
        return sum(np.sum(layer.z ** 2) for layer in self.layers)


def penalised(x, net):
    y = net.forward(x)
    return np.sum(y) + 0.5 * net.activity_penalty()


def built_net(w, x):
    net = Net(w)
    return penalised(x, net)


def loop_then_first(w, x):
    layers = [Layer(w), Layer(w.T)]
    for m in layers:
        x = m.forward(x)
    return np.sum(x) + np.sum(layers[0].z)


class Holder:
    def __init__(self, w):
        self.inner = Layer(w)


def through_an_attribute(w, x):
    hold = Holder(w)
    hold.inner.forward(x)
    return np.sum(hold.inner.z ** 2)


def set_z(o, x):
    o.z = x @ o.w


def helper_by_name(x, layers):
    set_z(layers[0], x)
    return np.sum(layers[0].z ** 3)


def another_name(w, x):
    m = Layer(w)
    layers = [m]
    layers[0].forward(x)
    return np.sum(m.z)


W = np.array([[0.3, 0.6], [0.9, -0.4]])
X = np.array([[1.0, 0.5], [-0.3, 0.8]])


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_penalty_on_the_layers_activations(mutation) -> None:
    g = adgen.grad(penalised, mutation=mutation)(X.copy(), Net(W))
    expected = numerical_grad(lambda x: penalised(x, Net(W)), (X.copy(),), 0)
    np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-8)
    g = adgen.grad(built_net, mutation=mutation)(W.copy(), X)
    np.testing.assert_allclose(g, numerical_grad(built_net, (W.copy(), X), 0),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mutation", POLICIES)
def test_the_network_gets_its_gradient(mutation) -> None:
    g = adgen.grad(penalised, argnums=1, mutation=mutation)(X.copy(), Net(W))
    expected = numerical_grad(lambda net: penalised(X.copy(), net), (Net(W),), 0)
    for got, want in zip(g.layers, expected.layers):
        np.testing.assert_allclose(got.w, want.w, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", [loop_then_first, through_an_attribute, another_name],
                         ids=lambda f: f.__name__)
def test_read_again_through_the_holder(f, mutation) -> None:
    g = adgen.grad(f, mutation=mutation)(W.copy(), X)
    np.testing.assert_allclose(g, numerical_grad(f, (W.copy(), X), 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_helper_called_by_name_on_an_item(mutation) -> None:
    g = adgen.grad(helper_by_name, mutation=mutation)(X.copy(), [Layer(W)])
    expected = numerical_grad(lambda x: helper_by_name(x, [Layer(W)]), (X.copy(),), 0)
    np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-8)
    H = adgen.hessian(helper_by_name)(X.copy(), [Layer(W)])
    eps = 1e-4
    rows = []
    for k in np.ndindex(X.shape):
        e = np.zeros_like(X)
        e[k] = eps
        rows.append((numerical_grad(lambda x: helper_by_name(x, [Layer(W)]), (X + e,), 0) -
                     numerical_grad(lambda x: helper_by_name(x, [Layer(W)]), (X - e,), 0))
                    / (2 * eps))
    np.testing.assert_allclose(H.reshape(4, 4), np.array(rows).reshape(4, 4).T,
                               rtol=1e-4, atol=1e-5)


class Encoder:
    def __init__(self, w):
        self.w = w

    def forward(self, x):
        self.z = x @ self.w
        return np.tanh(self.z)


class AutoEncoder:
    def __init__(self, w):
        self.enc = Encoder(w)
        self.dec = Encoder(w.T)

    def forward(self, x):
        return self.dec.forward(self.enc.forward(x))

    def loss(self, x):
        y = self.forward(x)
        return np.sum((y - x) ** 2) + 0.1 * np.sum(self.enc.z ** 2)  # the code's penalty


@pytest.mark.parametrize("mutation", POLICIES)
def test_an_autoencoder_penalising_its_code(mutation) -> None:
    ae = AutoEncoder(W)
    g = adgen.grad(ae.loss, mutation=mutation)(X.copy())
    np.testing.assert_allclose(g, numerical_grad(AutoEncoder(W).loss, (X.copy(),), 0),
                               rtol=1e-6, atol=1e-8)
    g = adgen.grad(lambda ae, x: ae.loss(x), mutation=mutation)(AutoEncoder(W), X.copy())
    expected = numerical_grad(lambda ae: ae.loss(X.copy()), (AutoEncoder(W),), 0)
    np.testing.assert_allclose(g.enc.w, expected.enc.w, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g.dec.w, expected.dec.w, rtol=1e-6, atol=1e-8)
