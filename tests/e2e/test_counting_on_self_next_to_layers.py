"""A method that counts its calls on self (self.steps += 1) and runs layers held by self
(self.layers[i].forward(x)): refused (adgen follows self's contents as arrays once the
function writes self), with a message that names this case and what to do: count outside
the differentiated function. Counting outside, the gradient is right (vs central
differences), under both policies.

Before: the message listed only "an array a method returned, an item of a list, or an array
a helper given the object writes and returns", none of which the user wrote.
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
def test_the_refusal_names_the_count_on_self(mutation):
    net = CountingNet([Dense(W1), Dense(W2)])
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(net.loss, mutation=mutation)(X)
    text = str(info.value)
    assert "self.steps += 1" in text and "count or record outside" in text
    assert "x = self.layers[i].forward(x)" in text  # the user's line


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_counting_outside_the_differentiated_function(mutation):
    net = Net([Dense(W1), Dense(W2)])
    steps = 0
    g = adgen.grad(net.loss, mutation=mutation)(X)
    steps += 1
    np.testing.assert_allclose(g, numerical_grad(net.loss, (X,), 0), rtol=1e-6, atol=1e-8)
    assert steps == 1
