"""A loss that puts the parameter it is differentiated by into a model object, then calls the
model: ``net.enc.W = W; return net(x)``, the way code wraps a class-based model for
``scipy.optimize`` or a parameter sweep.

- One level inside the model (``net.enc.W = W`` then ``net(x)``) was refused ("cannot
  follow it back to net"), while ``net.forward(x)`` and ``Net.__call__(net, x)`` worked:
  calling the object counted as another use of ``net``. Its ``__call__`` is handed ``net``
  as a method is; it is differentiated now.
- Two levels inside (``model.layers[0].W = W``) stays refused, but the hint said "change it
  through model directly on the line (model[k]... = v)", which is what the line does. It
  now names the part to store anew (``model.layers``) and the forms that work, which are
  checked here too. ``model.layers[0] = Layer(W, b)`` is refused when it runs (the list's
  kind is unknown when compiling); its hint now gives the same form as well.

Gradients against central differences under both mutation policies.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen


class Encoder:
    def __init__(self, W):
        self.W = W


class Net:
    def __init__(self, enc):
        self.enc = enc

    def forward(self, x):
        return np.sum(np.tanh(x @ self.enc.W) ** 2)

    def __call__(self, x):
        return self.forward(x)


class Layer:
    def __init__(self, W, b):
        self.W = W
        self.b = b

    def __call__(self, h):
        return np.tanh(h @ self.W + self.b)


class Stack:
    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x, y):
        h = x
        for layer in self.layers:
            h = layer(h)
        return np.mean((h[:, 0] - y) ** 2)


def loss_calling_the_model(W, net, x):
    net.enc.W = W
    return net(x)


def loss_two_levels_down(W, model, x, y):
    model.layers[0].W = W
    return model(x, y)


def loss_item_replaced(W, model, x, y):
    b = model.layers[0].b
    model.layers[0] = Layer(W, b)
    return model(x, y)


def loss_new_list_stored(W, model, x, y):          # the hint's form for a list
    new = list(model.layers)
    new[0] = Layer(W, model.layers[0].b)
    model.layers = new
    return model(x, y)


def loss_new_object_stored(W, net, x):             # the hint's form for an object
    new = copy.copy(net.enc)
    new.W = W
    net.enc = new
    return net(x)


RNG = np.random.default_rng(5)
X = RNG.standard_normal((7, 2))
Y = RNG.standard_normal(7)
NET = Net(Encoder(RNG.standard_normal((2, 3))))
STACK = Stack([Layer(RNG.standard_normal((2, 4)), np.zeros(4)),
               Layer(RNG.standard_normal((4, 1)), np.zeros(1))])


def expected(f, W, model, *data):
    return numerical_grad(lambda w: f(w, copy.deepcopy(model), *data), (W,), 0)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_calling_the_model_after_setting_its_parameter(mutation):
    W = NET.enc.W.copy()
    g = adgen.grad(loss_calling_the_model, mutation=mutation)(W, copy.deepcopy(NET), X)
    assert_grad_close(g, expected(loss_calling_the_model, W, NET, X))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_two_levels_down_is_refused_with_the_forms_that_work(mutation):
    W = STACK.layers[0].W.copy()
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(loss_two_levels_down, mutation=mutation)(W, copy.deepcopy(STACK), X, Y)
    text = str(info.value)
    assert "model.layers[0].W = W" in text
    assert "directly on the line" not in text
    assert "store a new model.layers on model instead" in text
    assert "new = list(model.layers)" in text


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_an_item_of_an_attribute_replaced_is_refused_with_the_form_that_works(mutation):
    W = STACK.layers[0].W.copy()
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(loss_item_replaced, mutation=mutation)(W, copy.deepcopy(STACK), X, Y)
    assert "an attribute of an object such as model.layers" in str(info.value)
    assert "new = list(model.layers); new[0] = v; model.layers = new" in str(info.value)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_hinted_list_form(mutation):
    W = STACK.layers[0].W.copy()
    g = adgen.grad(loss_new_list_stored, mutation=mutation)(W, copy.deepcopy(STACK), X, Y)
    assert_grad_close(g, expected(loss_new_list_stored, W, STACK, X, Y))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_hinted_object_form(mutation):
    W = NET.enc.W.copy()
    g = adgen.grad(loss_new_object_stored, mutation=mutation)(W, copy.deepcopy(NET), X)
    assert_grad_close(g, expected(loss_new_object_stored, W, NET, X))
