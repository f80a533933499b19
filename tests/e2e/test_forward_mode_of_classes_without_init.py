"""Forward mode (jvp, jacfwd, hessian) of a function building an object of a class with no
``__init__`` of its own, a callable layer (``class Tanh(Layer): def forward(self, h): ...``;
``act = Tanh(); act(x)``): grad built it, forward mode refused it as a call without a rule
("Tanh() has no derivative rule", hint "register one with adgen.rrule"). Such an object has no
attributes: its tangent is a zero. Checked against central and second differences. A class
built through a name holding it when the code runs (``cls(a * 3)`` in a classmethod) stays
refused in forward mode, now naming the class and what to write instead."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad, numerical_hessian

import adgen

X = np.array([0.3, -0.2, 0.9])
V = np.array([1.0, 0.5, -2.0])


class Layer:
    def __call__(self, h):
        return self.forward(h)


class Tanh(Layer):
    def forward(self, h):
        return np.tanh(h)


class Square:
    def __call__(self, x):
        return x ** 2


ACT = Tanh()


def built_inside(x):
    act = Tanh()
    return np.sum(act(x) ** 2)


def two_layers(x):
    return np.sum(Square()(Tanh()(x)) * x)


FUNCTIONS = {
    "module_function": built_inside,
    "two_layers": two_layers,
    "lambda_with_a_global_layer": lambda x: np.sum(ACT(x) * Square()(x)),
}


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_jvp_jacfwd_and_hessian(name):
    f = FUNCTIONS[name]
    g = numerical_grad(f, (X,), 0)
    value, tangent = adgen.jvp(f, (X,), (V,))
    assert np.isclose(value, f(X))
    assert np.isclose(tangent, g @ V, rtol=1e-6)
    assert np.allclose(adgen.jacfwd(f)(X), g, rtol=1e-6)
    assert np.allclose(adgen.hessian(f)(X), numerical_hessian(f, X), atol=1e-5)
    for mutation in ("strict", None):
        kw = {} if mutation is None else {"mutation": mutation}
        assert np.allclose(adgen.grad(f, **kw)(X), g, rtol=1e-6)


def test_by_hand():
    t = np.tanh(X)
    h = adgen.hessian(built_inside)(X)
    assert np.allclose(h, np.diag(2 * (1 - t ** 2) ** 2 - 4 * t ** 2 * (1 - t ** 2)))


class Params:
    def __init__(self, a):
        self.a = a

    @classmethod
    def make(cls, a):
        return cls(a * 3)


def through_a_classmethod(x):
    p = Params.make(x)
    return np.sum(np.sin(p.a))


def test_a_class_built_through_cls_is_refused_by_name():
    assert np.allclose(adgen.grad(through_a_classmethod)(X), 3 * np.cos(3 * X))
    with pytest.raises(adgen.UnsupportedError) as e:
        adgen.jvp(through_a_classmethod, (X,), (V,))
    assert "building an object of the class Params" in str(e.value)
    assert "Params(...)" in str(e.value)
