"""A model whose layers are callable objects held in its attributes, as PyTorch users write
it (``self.fc = Dense(w)``, then ``self.fc(x)`` in a method), and a method of another object
held in an attribute (``h.fn = m.loss``; ``h.fn(x)``), and a container of layers whose
``__init__`` takes them as ``*layers`` (``Sequential(Dense(w1, b1), Dense(w2, b2))``).

Found by the lead: the pullback of ``self.fc(x)`` gave the layer's cotangent to ``self`` as if
it were the model's own (a call ``obj.f(x)`` was taken for a method of ``obj`` whenever its
pullback returned a cotangent for a receiver), so the layer's weights got a ZERO gradient,
silently, under both policies: for a model built inside the function and for a model passed
as the argument differentiated (``grad(loss)(net, x).fc.w`` was zeros). The receiver's
cotangent now goes to ``obj`` through the attribute. A method delegated by a proxy's
``__getattr__`` is refused at the call's line (a zero gradient before). Building an object
whose ``__init__`` takes ``*args`` raised TypeError ("__init___forward() takes 2 positional
arguments but 3 were given"): the compiled ``__init__`` takes them as one tuple. A lambda
closing over a local of ``__init__`` stored in an attribute (``sc = s; self.act = lambda z: z
* sc``) raised NameError: name 'lambda_9' is not defined from the generated pullback.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

POLICIES = ["save", "strict"]


class Dense:
    def __init__(self, w, b):
        self.w = w
        self.b = b

    def __call__(self, x):
        return np.tanh(x @ self.w + self.b)


class TwoLayerNet:
    def __init__(self, w1, b1, w2, b2):
        self.fc1 = Dense(w1, b1)
        self.fc2 = Dense(w2, b2)

    def loss(self, x, y):
        h = self.fc1(x)
        out = self.fc2(h)
        return np.mean((out[:, 0] - y) ** 2)


def built_inside(w1, b1, w2, b2, x, y):
    net = TwoLayerNet(w1, b1, w2, b2)
    return net.loss(x, y)


class Head:
    def __init__(self, fc):
        self.fc = fc

    def score(self, x):
        return np.sum(self.fc(x) ** 2)


def given_layers(layer, x):
    # a layer handed to a model, the model's method calling it
    return Head(layer).score(x)


class Model:
    def __init__(self, w):
        self.w = w

    def loss(self, x):
        return np.sum(np.tanh(x @ self.w) ** 2)


class Holder:
    def __init__(self, fn):
        self.fn = fn


class Proxy:
    def __init__(self, m):
        self.m = m

    def __getattr__(self, name):
        return getattr(self.m, name)


def held_method(w, x):
    m = Model(w)
    h = Holder(m.loss)
    return h.fn(x)


def through_a_proxy(w, x):
    m = Model(w)
    return Proxy(m).loss(x)


rng = np.random.default_rng(7)
x = rng.normal(size=(5, 3))
y = rng.normal(size=5)
w1, b1 = rng.normal(size=(3, 4)), rng.normal(size=4)
w2, b2 = rng.normal(size=(4, 2)), rng.normal(size=2)
PARAMS = (w1, b1, w2, b2)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_model_built_inside(mutation):
    grads = adgen.grad(built_inside, argnums=(0, 1, 2, 3), mutation=mutation)(*PARAMS, x, y)
    for k in range(4):
        np.testing.assert_allclose(grads[k], numerical_grad(built_inside, (*PARAMS, x, y), k),
                                   rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_model_passed_in(mutation):
    net = TwoLayerNet(*PARAMS)
    g = adgen.grad(lambda net: net.loss(x, y), mutation=mutation)(net)

    def with_w(k):
        def f(v):
            params = list(PARAMS)
            params[k] = v
            return TwoLayerNet(*params).loss(x, y)
        return f

    for k, got in enumerate([g.fc1.w, g.fc1.b, g.fc2.w, g.fc2.b]):
        np.testing.assert_allclose(got, numerical_grad(with_w(k), (PARAMS[k],), 0),
                                   rtol=1e-5, atol=1e-8)


def test_a_layer_handed_to_a_model():
    layer = Dense(w1, b1)
    g = adgen.grad(given_layers)(layer, x)
    np.testing.assert_allclose(
        g.w, numerical_grad(lambda w: given_layers(Dense(w, b1), x), (w1,), 0), rtol=1e-5,
        atol=1e-8)


@pytest.mark.parametrize("mutation", POLICIES)
def test_another_objects_method_held_in_an_attribute(mutation):
    w = rng.normal(size=(3, 2))
    np.testing.assert_allclose(adgen.grad(held_method, mutation=mutation)(w, x),
                               numerical_grad(held_method, (w, x), 0), rtol=1e-5, atol=1e-8)


def test_a_method_delegated_by_a_proxy_is_refused_at_the_call():
    w = rng.normal(size=(3, 2))
    with pytest.raises(adgen.UnsupportedError, match="Proxy.__getattr__") as info:
        adgen.grad(through_a_proxy)(w, x)
    assert "return Proxy(m).loss(x)" in str(info.value)


class Sequential:
    def __init__(self, *layers):
        self.layers = list(layers)

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class Classifier:
    def __init__(self, w1, b1, w2, b2):
        self.body = Sequential(Dense(w1, b1), Dense(w2, b2))

    def loss(self, x, y):
        return np.mean((self.body(x)[:, 1] - y) ** 2)


def sequential_inside(w1, b1, w2, b2, x, y):
    return Classifier(w1, b1, w2, b2).loss(x, y)


def no_layers_at_all(x):
    return np.sum(Sequential()(x) ** 2)


@pytest.mark.parametrize("mutation", POLICIES)
def test_layers_given_to_a_constructor_as_star_args(mutation):
    grads = adgen.grad(sequential_inside, argnums=(0, 1, 2, 3), mutation=mutation)(
        *PARAMS, x, y)
    for k in range(4):
        np.testing.assert_allclose(
            grads[k], numerical_grad(sequential_inside, (*PARAMS, x, y), k), rtol=1e-5,
            atol=1e-8)
    model = Classifier(*PARAMS)
    g = adgen.grad(lambda m: m.loss(x, y), mutation=mutation)(model)
    np.testing.assert_allclose(g.body.layers[1].w, grads[2], rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(adgen.grad(no_layers_at_all, mutation=mutation)(x), 2 * x)


class Scaled:
    def __init__(self, w, s):
        self.w = w
        sc = s * 1.0
        self.act = lambda z: np.tanh(z * sc)

    def loss(self, x):
        return np.sum(self.act(x @ self.w) ** 2)


class ScaledBySelf:
    def __init__(self, w, s):
        self.w = w
        self.s = s
        self.act = lambda z: np.tanh(z * self.s)

    def loss(self, x):
        return np.sum(self.act(x @ self.w) ** 2)


def scaled(w, s, x):
    return Scaled(w, s).loss(x)


def scaled_by_self(w, s, x):
    return ScaledBySelf(w, s).loss(x)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_lambda_closing_over_a_local_held_in_an_attribute(mutation):
    w, s = rng.normal(size=(3, 2)), 0.7
    gw, gs = adgen.grad(scaled, argnums=(0, 1), mutation=mutation)(w, s, x)
    np.testing.assert_allclose(gw, numerical_grad(scaled, (w, s, x), 0), rtol=1e-5, atol=1e-8)
    assert gs == pytest.approx(numerical_grad(scaled, (w, s, x), 1), rel=1e-5)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_lambda_closing_over_self_held_in_an_attribute(mutation):
    # refused until session 22 ('a lambda reads a ScaledBySelf of the enclosing function');
    # the lambda's cotangent of self goes to the method calling self.act
    w, s = rng.normal(size=(3, 2)), 0.7
    gw, gs = adgen.grad(scaled_by_self, argnums=(0, 1), mutation=mutation)(w, s, x)
    np.testing.assert_allclose(gw, numerical_grad(scaled_by_self, (w, s, x), 0), rtol=1e-5,
                               atol=1e-8)
    assert gs == pytest.approx(numerical_grad(scaled_by_self, (w, s, x), 1), rel=1e-5)
