"""``@property`` values reaching the loss, as people write them: ``self.scale`` computed from
parameters in a method, a property reading another, a subclass overriding one, a property of
an object built in the loss, a dataclass. Each read is the getter's call
(transforms/properties.py). Gradients against central differences (this file's checker) and
hand formulas, under both policies, in forward mode and at second order."""

from dataclasses import dataclass

import numpy as np
import pytest

import adgen
from adgen.errors import AdgenError, UnsupportedError

W = np.array([0.3, -0.2, 0.5])
X = np.array([1.0, 2.0, -1.5])
B = 0.4


def central(f, args, i, eps=1e-6):
    """The gradient of f in its i-th argument by central differences (float or array)."""
    a = list(args)
    x = np.array(a[i], dtype=float)
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[k] += eps
        down[k] -= eps
        a[i] = up if x.ndim else float(up)
        fu = f(*a)
        a[i] = down if x.ndim else float(down)
        g[k] = (fu - f(*a)) / (2 * eps)
    return g if x.ndim else float(g)


class Model:
    def __init__(self, w, b):
        self.w = w
        self.b = b

    @property
    def scale(self):
        return np.exp(self.b)

    @property
    def penalty(self):
        return self.scale * np.sum(self.w ** 2)  # a property reading another

    def loss(self, x):
        return np.sum((self.w * x) ** 2) * self.scale + 0.1 * self.penalty


class Doubled(Model):
    @property
    def scale(self):  # the subclass's property is the one Python reads in Model.loss
        return 2.0 * np.exp(self.b) + np.sum(self.w)


def plain(w, b, x, sub=False):
    s = (2.0 * np.exp(b) + np.sum(w)) if sub else np.exp(b)
    return np.sum((w * x) ** 2) * s + 0.1 * s * np.sum(w ** 2)


def through_a_built_object(w, b, x):
    m = Model(w, b)
    return m.loss(x)


def reads_the_property_itself(w, b, x):
    m = Model(w, b)
    return m.scale * np.sum(w * x) + m.penalty


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("cls", [Model, Doubled])
def test_a_method_reading_properties(cls, mutation):
    def f(w, b, x):
        return through_a_built_object(w, b, x) if cls is Model else Doubled(w, b).loss(x)

    assert np.isclose(f(W, B, X), plain(W, B, X, cls is Doubled))
    gw, gb = adgen.grad(f, argnums=(0, 1), mutation=mutation)(W, B, X)
    np.testing.assert_allclose(gw, central(f, (W, B, X), 0), rtol=1e-6, atol=1e-8)
    assert np.isclose(gb, central(f, (W, B, X), 1), rtol=1e-6)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_gradient_of_an_object_argument(mutation):
    m = Doubled(W, B)
    g = adgen.grad(lambda m, x: m.loss(x), mutation=mutation)(m, X)  # a user's lambda
    np.testing.assert_allclose(g.w, central(lambda w: Doubled(w, B).loss(X), (W,), 0),
                               rtol=1e-6, atol=1e-8)
    assert np.isclose(g.b, central(lambda b: Doubled(W, b).loss(X), (B,), 0), rtol=1e-6)
    bound = adgen.grad(m.loss)(X)  # the bound method: the gradient in x
    np.testing.assert_allclose(bound, central(m.loss, (X,), 0), rtol=1e-6, atol=1e-8)


def test_a_property_of_an_object_built_in_the_loss():
    f = reads_the_property_itself
    gw, gb = adgen.grad(f, argnums=(0, 1))(W, B, X)
    np.testing.assert_allclose(gw, central(f, (W, B, X), 0), rtol=1e-6, atol=1e-8)
    assert np.isclose(gb, central(f, (W, B, X), 1), rtol=1e-6)


def test_forward_mode_with_the_object_passed_in():
    # forward mode builds no object of the user's class (a loud limitation): pass it in,
    # its float attributes get tangents
    m = Model(W, B)
    t = Model(np.array([0.5, -1.0, 0.25]), 0.3)
    out, dout = adgen.jvp(Model.loss, (m, X), (t, np.zeros(3)))
    assert np.isclose(out, m.loss(X))
    expect = central(lambda w: Model(w, B).loss(X), (W,), 0) @ t.w + \
        central(lambda b: Model(W, b).loss(X), (B,), 0) * t.b
    assert np.isclose(dout, expect, rtol=1e-6)


@dataclass
class Layer:
    w: np.ndarray
    log_gain: float

    @property
    def gain(self):
        return np.exp(self.log_gain)

    def __call__(self, x):
        return self.gain * np.tanh(self.w * x)


def test_a_dataclass_property_through_call():
    def f(w, g, x):
        return np.sum(Layer(w, g)(x) ** 2)

    gw, gg = adgen.grad(f, argnums=(0, 1))(W, B, X)
    np.testing.assert_allclose(gw, central(f, (W, B, X), 0), rtol=1e-6, atol=1e-8)
    assert np.isclose(gg, central(f, (W, B, X), 1), rtol=1e-6)


def annotated(m: Model, x):
    return m.scale * np.sum(m.w * x) + m.penalty


def test_a_property_of_an_annotated_parameter():
    # def loss(m: Model, x): the annotation names the class (it was refused when it ran)
    for cls in (Model, Doubled):
        m = cls(W, B)
        g = adgen.grad(annotated)(m, X)
        np.testing.assert_allclose(g.w, central(lambda w: annotated(cls(w, B), X), (W,), 0),
                                   rtol=1e-6, atol=1e-8)
        assert np.isclose(g.b, central(lambda b: annotated(cls(W, b), X), (B,), 0), rtol=1e-6)


class Viewed:
    def __init__(self, w):
        self.w = w * 1.0

    @property
    def head(self):
        return self.w[:2]  # a view of w


def written_through(w):
    v = Viewed(w)
    v.head[0] = 5.0 * w[2]
    return np.sum(v.w ** 2 * X)


def written_through_a_name(w):
    v = Viewed(w)
    h = v.head
    h += 1.0
    return np.sum(v.w ** 2 * X)


def test_a_property_written_through_stays_refused_at_the_line():
    # as its getter's call it crashed (UFuncTypeError from the pullback): not rewritten
    for f in (written_through, written_through_a_name):
        with pytest.raises(UnsupportedError, match=r"test_properties\.py.*Viewed\.head is "
                                                   r"computed when it is read"):
            adgen.grad(f)(W)


# a property of the object a call makes, read at once: Model(w, b).scale (it was refused
# when it ran, "computed when it is read"; bound to a name first it worked)


def reads_a_new_object_s_property(w, b, x):
    return Model(w, b).scale * np.sum(w * x) + Doubled(w, b).penalty + Layer(w, b).gain


def through_a_module_level_helper(w, b, x):
    return [Model(w * x, b).penalty for _ in range(2)][1] * Model(w, b).scale


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [reads_a_new_object_s_property, through_a_module_level_helper])
def test_a_property_of_a_call_s_object(f, mutation):
    gw, gb = adgen.grad(f, argnums=(0, 1), mutation=mutation)(W, B, X)
    np.testing.assert_allclose(gw, central(f, (W, B, X), 0), rtol=1e-6, atol=1e-8)
    assert np.isclose(gb, central(f, (W, B, X), 1), rtol=1e-6)


def test_a_property_of_a_call_s_object_hand_formula():
    # exp(b) * sum(w x) + (2 exp(b) + sum(w)) sum(w^2) + exp(b)
    gw, gb = adgen.grad(reads_a_new_object_s_property, argnums=(0, 1))(W, B, X)
    s2 = 2.0 * np.exp(B) + np.sum(W)
    np.testing.assert_allclose(gw, np.exp(B) * X + np.sum(W ** 2) + s2 * 2.0 * W)
    assert np.isclose(gb, np.exp(B) * np.sum(W * X) + 2.0 * np.exp(B) * np.sum(W ** 2)
                      + np.exp(B))


class Made:
    def __new__(cls, w):  # a __new__ of its own: the call may make another class's object
        return Model(w, 0.0)

    @property
    def scale(self):
        return 0.0


def made_by_new(w):
    return Made(w).scale * np.sum(w)


def test_a_call_whose_class_has_its_own_new_stays_refused_at_the_line():
    with pytest.raises(AdgenError, match="test_properties.py:"):
        adgen.grad(made_by_new)(W)
