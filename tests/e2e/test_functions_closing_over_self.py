"""A lambda or nested def stored in an attribute that closes over ``self`` (``self.act =
lambda z: self.scale * np.tanh(z)``; ``h = self.act(h)``), as PyTorch users write an
activation chosen in ``__init__``, in a model built inside the differentiated function.

The closure's pullback gives a cotangent for ``self`` (the values of it the lambda reads),
which adgen refused with a garbled message ("a lambda reads a Act of the enclosing
function"). It now goes to the adjoint the caller handed over for that object
(ShadowMap.add_deposited); called where no caller did (``act = self.act; act(h)``) it is
refused at the line, naming the variable and the rewrites.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen
from adgen.errors import UnsupportedError

POLICIES = ["save", "strict"]
W2 = np.array([[0.6, -0.3], [0.2, 0.9]])


class Act:
    def __init__(self, w, scale):
        self.w = w
        self.scale = scale
        self.act = lambda z: self.scale * np.tanh(z)

    def forward(self, x):
        h = x @ self.w
        for _ in range(2):
            h = self.act(h) @ W2
        return h


class NestedDef:
    def __init__(self, w, scale):
        self.w = w
        self.scale = scale

        def act(z):
            return self.scale * np.tanh(z * self.w[0, 0])

        self.act = act
        self.first = self.act(w)  # called in __init__ too

    def forward(self, x):
        return self.act(x @ self.w) + np.sum(self.first)


class Inner:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return self.act(x @ self.w)


class Outer:
    """The lambda is stored on a layer and closes over the model that holds the layer."""

    def __init__(self, w, scale):
        self.scale = scale
        self.fc = Inner(w)
        self.fc.act = lambda z: self.scale * np.sin(z)

    def forward(self, x):
        return self.fc(x) * self.scale


class Aliased(Act):
    def forward(self, x):
        act = self.act
        return act(x @ self.w)


def loss_of(cls):
    def loss(w, x):
        m = cls(w, 1.5 * w[0, 1])
        return np.sum(m.forward(x) ** 2)
    return loss


X = np.array([[0.3, -1.2], [0.8, 0.5], [-0.4, 0.9]])
W = np.array([[0.7, -0.5], [0.4, 1.1]])


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("cls", [Act, NestedDef, Outer])
def test_closure_over_self_in_an_attribute(cls, policy):
    loss = loss_of(cls)
    got = adgen.grad(loss, mutation=policy)(W, X)
    np.testing.assert_allclose(got, numerical_grad(loss, (W, X), 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("policy", POLICIES)
def test_scale_alone_by_hand(policy):
    # d/ds sum((s * tanh(x @ w)) ** 2) = 2 s sum(tanh(x @ w) ** 2)
    class One:
        def __init__(self, s):
            self.s = s
            self.act = lambda z: self.s * np.tanh(z)

        def forward(self, z):
            return self.act(z)

    def loss(s, x, w):
        m = One(s)
        return np.sum(m.forward(x @ w) ** 2)

    want = 2 * 0.8 * np.sum(np.tanh(X @ W) ** 2)
    assert adgen.grad(loss, mutation=policy)(0.8, X, W) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("policy", POLICIES)
def test_called_through_a_variable_is_refused_at_the_line(policy):
    with pytest.raises(UnsupportedError) as err:
        adgen.grad(loss_of(Aliased), mutation=policy)(W, X)
    text = str(err.value)
    assert "test_functions_closing_over_self.py" in text
    assert "return act(x @ self.w)" in text
    assert "closes over self (an object of class Aliased)" in text
    assert "make it a method" in text


@pytest.mark.parametrize("policy", POLICIES)
def test_called_outside_a_method_of_the_object_is_refused(policy):
    def loss(w, x):
        m = Act(w, 1.5)
        return np.sum(m.act(x @ m.w) ** 2)

    with pytest.raises(UnsupportedError) as err:
        adgen.grad(loss, mutation=policy)(W, X)
    text = str(err.value)
    assert "return np.sum(m.act(x @ m.w) ** 2)" in text
    assert "call it from a method of the object" in text
