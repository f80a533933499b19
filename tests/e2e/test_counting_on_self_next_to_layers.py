"""A method that counts its calls on self (self.steps += 1) and runs layers held by self
(self.layers[i].forward(x)): the gradient is right (vs central differences), under both
policies, with respect to the input and to a layer's weights, and the count moves once.

Until session 29 it was refused (adgen followed self's contents as arrays once the function
wrote self, the layers among them; a layer has an attribute no array has, ``forward``, so it
is no array: analyses.effects' not_arrays). Counting outside the differentiated function,
the gradient is the same.
"""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from tests.gradcheck import numerical_grad


class Dense:
    def __init__(self, w):
        self.w = w

    def forward(self, x):
        return np.tanh(self.w @ x)


class CountingNet:
    def __init__(self, layers):
        self.layers = layers
        self.steps = 0

    def loss(self, x):
        self.steps += 1
        for i in range(len(self.layers)):
            x = self.layers[i].forward(x)
        return np.sum(x ** 2)


class Net:
    def __init__(self, layers):
        self.layers = layers

    def loss(self, x):
        for i in range(len(self.layers)):
            x = self.layers[i].forward(x)
        return np.sum(x ** 2)


W1 = np.array([[0.5, -1.0, 0.2], [0.3, 0.8, -0.6], [1.1, 0.0, 0.4]])
W2 = np.array([[0.2, 0.4, -0.3], [-0.7, 0.1, 0.5], [0.6, -0.2, 0.9]])
X = np.array([0.3, -0.7, 1.2])


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_counting_on_self(mutation):
    """Refused until session 29 (below); the count moves as Python moves it: once per call of
    the primal, which grad runs once."""
    net = CountingNet([Dense(W1), Dense(W2)])
    g = adgen.grad(net.loss, mutation=mutation)(X)
    assert net.steps == 1
    np.testing.assert_allclose(g, numerical_grad(CountingNet([Dense(W1), Dense(W2)]).loss,
                                                 (X,), 0), rtol=1e-6, atol=1e-8)

    def by_weights(w):
        return CountingNet([Dense(w.reshape(3, 3)), Dense(W2)]).loss(X)

    w = W1.ravel().copy()
    np.testing.assert_allclose(adgen.grad(by_weights, mutation=mutation)(w),
                               numerical_grad(by_weights, (w,), 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_counting_outside_the_differentiated_function(mutation):
    net = Net([Dense(W1), Dense(W2)])
    steps = 0
    g = adgen.grad(net.loss, mutation=mutation)(X)
    steps += 1
    np.testing.assert_allclose(g, numerical_grad(net.loss, (X,), 0), rtol=1e-6, atol=1e-8)
    assert steps == 1
