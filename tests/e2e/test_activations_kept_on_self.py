"""A model whose forward method keeps each layer's activation on its object while it loops
over its layers (``for i, l in enumerate(self.layers): h = l(h); self.cache[i] = h``), the
loss reading one back (``net.cache[0]``).

Keeping them in a dict by a variable key is refused; the message named the method's
``return h`` line and "a list" (the layers, which adgen had refused to give a shadow) instead
of the user's ``self.cache[i] = h`` and the dict, and it pointed only at optimizer steps. It
now names the line and the dict, and says to append to a list, which adgen follows: that
spelling (``self.acts.append(h)``) is checked against central differences, both policies.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import adgen
from adgen.errors import UnsupportedError
from tests.gradcheck import check_grad, check_jvp


class Layer:
    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.W = rng.normal(size=(n, n)) * 0.3
        self.b = np.linspace(-0.1, 0.2, n)

    def __call__(self, h):
        return np.tanh(self.W @ h + self.b)


class CachingNet:
    def __init__(self):
        self.layers = [Layer(4, s) for s in range(3)]
        self.cache = {}

    def forward(self, x):
        h = x
        for i, layer in enumerate(self.layers):
            h = layer(h)
            self.cache[i] = h
        return h


class AppendingNet:
    def __init__(self):
        self.layers = [Layer(4, s) for s in range(3)]
        self.acts = []

    def forward(self, x):
        h = x
        for layer in self.layers:
            h = layer(h)
            self.acts.append(h)
        return h


caching = CachingNet()
appending = AppendingNet()


def caching_loss(x):
    out = caching.forward(x)
    return np.sum(out ** 2) + np.sum(caching.cache[0])


def appending_loss(x):
    appending.acts = []
    out = appending.forward(x)
    return np.sum(out ** 2) + np.sum(appending.acts[0] * np.arange(1.0, 5.0))


X = np.array([0.3, -0.7, 1.1, 0.5])


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_dict_kept_on_self_is_refused_at_its_line(mutation):
    line = inspect.getsourcelines(CachingNet.forward)[1] + 4  # self.cache[i] = h
    with pytest.raises(UnsupportedError) as info:
        adgen.grad(caching_loss, mutation=mutation)(X.copy())
    message = str(info.value)
    assert f"test_activations_kept_on_self.py:{line}:" in message
    assert "a dict written in place" in message
    assert "self.acts.append(h)" in message


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_list_kept_on_self_is_differentiated(mutation):
    check_grad(appending_loss, [X.copy()], mutation=mutation)


def test_a_list_kept_on_self_under_jvp():
    check_jvp(appending_loss, [X.copy()], [np.array([1.0, -0.5, 0.25, 2.0])])
