"""``getattr(obj, "name", default)`` with a constant name, as users write it for optional
settings (``getattr(self, "reg", 0.1)``, ``getattr(layer, "bias", 0.0)``): read as ``obj.name``
when the object has it, else the default (transforms/getattr_constant.py). With a gradient it
was MissingRuleError ("getattr() has no derivative rule")."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import central

import adgen

POLICIES = ("save", "strict")
X = np.array([0.3, -0.7, 1.2])



class Layer:
    def __init__(self, w, bias=None):
        self.w = w
        if bias is not None:
            self.bias = bias


def forward(layer, x):
    return np.sum(np.tanh(layer.w * x + getattr(layer, "bias", 0.0)) ** 2)


@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("policy", POLICIES)
def test_an_optional_attribute_of_an_argument(with_bias, policy):
    w = np.array([0.5, 1.5, -0.4])
    bias = np.array([0.1, -0.2, 0.3]) if with_bias else None
    layer = Layer(w, bias)
    g_layer, g_x = adgen.grad(forward, argnums=(0, 1), mutation=policy)(layer, X)
    assert np.allclose(g_x, central(lambda v: forward(layer, v), X), atol=1e-6)
    assert np.allclose(g_layer.w, central(lambda v: forward(Layer(v, bias), X), w), atol=1e-6)
    if with_bias:
        assert np.allclose(g_layer.bias, central(lambda v: forward(Layer(w, v), X), bias),
                           atol=1e-6)
    else:
        assert not hasattr(g_layer, "bias") or g_layer.bias is None


@pytest.mark.parametrize("policy", POLICIES)
def test_a_default_with_a_gradient(policy):
    def f(x, cfg):
        scale = getattr(cfg, "scale", x)  # the argument itself when cfg has no scale
        return np.sum(scale * x)

    class Empty:
        pass

    class Cfg:
        scale = 3.0

    assert np.allclose(adgen.grad(f, mutation=policy)(X, Empty()), 2 * X)
    assert np.allclose(adgen.grad(f, mutation=policy)(X, Cfg()), 3.0 * np.ones(3))


@pytest.mark.parametrize("policy", POLICIES)
def test_a_method_reading_an_optional_setting_through_a_lambda(policy):
    class Model:
        def __init__(self):
            self.w = np.array([1.0, 2.0, -1.0])

        def loss(self, x):
            reg = getattr(self, "reg", 0.1)
            act = getattr(np, "tanh")
            return np.sum(act(self.w * x) ** 2) + reg * np.sum(self.w ** 2)

    m = Model()
    g = adgen.grad(lambda v: m.loss(v), mutation=policy)(X)
    assert np.allclose(g, central(m.loss, X), atol=1e-6)
    m.reg = 2.0  # a setting the next call reads
    gm = adgen.grad(lambda mm: mm.loss(X), mutation=policy)(m)
    assert np.allclose(gm.w, central(lambda w: _with(m, w).loss(X), m.w), atol=1e-6)


def _with(m, w):
    import copy

    out = copy.copy(m)
    out.w = w
    return out


def test_getattr_in_forward_mode():
    layer = Layer(np.array([0.5, 1.5, -0.4]))
    t = np.array([1.0, -0.5, 0.2])
    out, out_dot = adgen.jvp(lambda v: forward(layer, v), (X,), (t,))
    ref = central(lambda s: forward(layer, X + s * t), 0.0)
    assert np.isclose(out, forward(layer, X)) and np.isclose(out_dot, ref, atol=1e-6)


def test_a_missing_attribute_without_default_raises_as_python_does():
    with pytest.raises(AttributeError):
        adgen.grad(lambda x, o: np.sum(getattr(o, "missing") * x))(X, Layer(X))
