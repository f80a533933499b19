"""Forward mode of a method that calls methods of the objects its object holds (``for layer
in self.layers: layer.shrink(c)``, ``self.w = self.w * c`` in ``shrink``): the method changes
no parameter of its own, so forward mode took its object for a value it only reads and ran the
inner calls without tangents; the layers' weights changed and their tangents did not (a jvp
1/0.9 of the right one, silently, until session 21). grad was right."""

import numpy as np
import pytest

import adgen
from tests.gradcheck import numerical_grad


class Layer:
    def __init__(self, w):
        self.w = w * 1.0

    def shrink(self, c):
        self.w = self.w * c

    def __call__(self, x):
        return np.tanh(self.w * x)


class Model:
    def __init__(self, w1, w2):
        self.layers = [Layer(w1), Layer(w2)]

    def decay(self, c):
        for layer in self.layers:
            layer.shrink(c)

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def decayed(w):
    m = Model(w, w * 2.0)
    m.decay(0.9)
    return np.sum(m(np.ones(3)) ** 2)


def decayed_twice(w):
    m = Model(w, w * 2.0)
    m.decay(0.9)
    y = m(np.ones(3))
    m.decay(0.5)
    return np.sum(m(y) ** 2)


W = np.array([0.5, 0.8, 1.1])
T = np.array([0.3, -0.2, 0.7])


@pytest.mark.parametrize("f", [decayed, decayed_twice])
def test_jvp_matches_central_differences(f):
    _, tangent = adgen.jvp(f, (W,), (T,))
    assert tangent == pytest.approx(numerical_grad(f, (W,), 0) @ T, rel=1e-6)


@pytest.mark.parametrize("f", [decayed, decayed_twice])
def test_jacfwd_equals_grad(f):
    np.testing.assert_allclose(adgen.jacfwd(f)(W), adgen.grad(f)(W), rtol=1e-10)
