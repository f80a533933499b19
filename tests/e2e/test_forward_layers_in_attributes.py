"""Forward mode (jvp, jacfwd) of models written as PyTorch users write them: layers held in
attributes and called as ``self.fc(x)``, tied layers (``self.dec = self.enc``), and dataclasses
built inside the differentiated function.

Forward mode refused ``self.fc(x)`` ('a method or callable object taken from a variable (its
object's arrays would get no tangent)') where reverse mode followed it, and refused building
a dataclass inside the function. The layer's tangent is now the attribute's tangent in the
model's (a method changing its object sets that tangent object's attributes); a dataclass's
``__init__`` is compiled as adgen.dataclass_init writes it, as reverse mode does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen


class Dense:
    def __init__(self, w, b):
        self.w = w
        self.b = b

    def __call__(self, x):
        return np.tanh(x @ self.w + self.b)


class Recording(Dense):
    def __call__(self, x):
        self.last = x
        return np.tanh(x @ self.w + self.b)


class MLP:
    def __init__(self, w1, w2):
        self.fc = Dense(w1, 0.1)
        self.out = Dense(w2, -0.2)

    def forward(self, x):
        return self.out(self.fc(x))


class Tied:
    def __init__(self, w):
        self.enc = Dense(w, 0.1)
        self.dec = self.enc

    def forward(self, x):
        return self.dec(self.enc(x))


class Recorded:
    def __init__(self, w):
        self.fc = Recording(w, 0.1)

    def forward(self, x):
        return self.fc(x)


@dataclass
class Params:
    w: np.ndarray
    scale: float
    shift: float = 0.25


W2 = np.array([[0.5, 0.1], [-0.3, 0.4]])
X = np.array([[0.5, -1.0], [1.2, 0.3], [0.1, 0.9]])
W = np.array([0.3, -0.2, 0.5, 0.1])
V = np.array([1.0, 0.5, -0.3, 0.2])
MODEL = MLP(W2 * 0.5, W2)


def mlp_built_inside(w):
    return np.sum(MLP(w.reshape(2, 2), W2).forward(X) ** 2)


def tied_built_inside(w):
    return np.sum(Tied(w.reshape(2, 2)).forward(X) ** 2)


def global_model(w):
    return np.sum(MODEL.forward(X * w[:2]) ** 2)


def dataclass_built_inside(w):
    p = Params(w * 2.0, w[0] ** 2)
    return np.sum(np.tanh(p.w) * p.scale) + np.sum((p.w - p.shift) ** 2)


LOSSES = [mlp_built_inside, tied_built_inside, global_model, dataclass_built_inside]


@pytest.mark.parametrize("loss", LOSSES)
def test_jvp(loss):
    _, dot = adgen.jvp(loss, (W,), (V,))
    assert dot == pytest.approx(numerical_grad(loss, (W,), 0) @ V, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("loss", LOSSES)
def test_jacfwd_is_the_gradient(loss):
    np.testing.assert_allclose(adgen.jacfwd(loss)(W), numerical_grad(loss, (W,), 0),
                               rtol=1e-6, atol=1e-9)


def test_jvp_of_a_model_given_with_a_tangent():
    def loss(m, x):
        return np.sum(m.forward(x) ** 2)

    tangent = MLP(np.ones((2, 2)), np.zeros((2, 2)))
    tangent.fc.b = tangent.out.b = 0.0
    _, dot = adgen.jvp(loss, (MODEL, X), (tangent, np.zeros_like(X)))
    eps = 1e-6
    up, down = MLP(W2 * 0.5 + eps, W2), MLP(W2 * 0.5 - eps, W2)
    assert dot == pytest.approx((loss(up, X) - loss(down, X)) / (2 * eps), rel=1e-6)


def test_a_layer_changing_itself():
    # an RNN cell or a normalisation layer recording what it saw (self.last = x), read after
    def loss(w):
        m = Recorded(w.reshape(2, 2))
        return np.sum(m.forward(X) ** 2) + np.sum(m.fc.last * w[0])

    _, dot = adgen.jvp(loss, (W,), (V,))
    assert dot == pytest.approx(numerical_grad(loss, (W,), 0) @ V, rel=1e-6, abs=1e-9)

