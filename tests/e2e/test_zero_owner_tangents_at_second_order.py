"""hessian / jacfwd(grad) / jvp of a function that sets an attribute of an object it was given
and then calls a method of that object reading it (``n.c = x[0] ** 2; n.val(x)`` with
``val`` returning ``np.sum(self.c * x)``). At ``x0 = 0`` the object's tangent is numerically
zero along ``e0`` (``c_dot = 2 x0 v0``), and the method call dropped it as "a zero tangent of
an object the method changes nothing of": reverse mode over that jvp code then lost
``d c_dot / d x0 = 2 v0``, a silently wrong Hessian (H00 = 0 where it is ``2 sum(x) + 4 x0 = 6``).
Only a symbolic zero, the tangent object forward mode made and never set since, is dropped
now (soft-DTW's gamma: tests/test_constant_attributes_forward.py). Checked against second
differences and the hand formula."""

import numpy as np
import pytest

import adgen
from tests.gradcheck import numerical_hessian


class N:
    def __init__(self):
        self.c = 1.0

    def val(self, x):
        return np.sum(self.c * x)


def f(x, n):
    n.c = x[0] ** 2
    return n.val(x)


class Scaled:
    """A layer holding its scale in an array attribute, read by a method that sets nothing."""

    def __init__(self):
        self.w = np.ones(2)
        self.shift = 0.5

    def apply(self, x):
        return np.sum(self.w * x[:2] ** 2) + self.shift


def g(x, m):
    m.w = np.array([x[0] * x[1], x[1] ** 3])
    return m.apply(x) * x[2]


def hand_f(x):
    s = x.sum()
    h = np.zeros((3, 3))
    h[0, 0] = 2 * s + 4 * x[0]  # f = x0^2 (x0 + x1 + x2)
    h[0, 1:] = h[1:, 0] = 2 * x[0]
    return h


@pytest.mark.parametrize("x", [np.array([0.0, 1.0, 2.0]), np.array([0.5, -1.0, 2.0])])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_hessian_of_a_method_reading_an_attribute_set_from_x(x, mutation):
    got = adgen.hessian(f, mutation=mutation)(x, N())
    np.testing.assert_allclose(got, hand_f(x), atol=1e-12)
    np.testing.assert_allclose(got, numerical_hessian(lambda z: f(z, N()), x), atol=1e-4)


def test_jacfwd_of_grad_and_jvp_at_the_zero():
    x = np.array([0.0, 1.0, 2.0])
    np.testing.assert_allclose(adgen.jacfwd(adgen.grad(f))(x, N()), hand_f(x), atol=1e-12)
    _, t = adgen.jvp(lambda z: f(z, N()), (x,), (np.array([1.0, 0.0, 0.0]),))
    assert t == pytest.approx(0.0)  # d/dx0 of x0^2 sum(x) at x0 = 0
    _, t = adgen.jvp(lambda z: f(z, N()), (x,), (np.array([0.0, 1.0, 1.0]),))
    assert t == pytest.approx(0.0)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_hessian_of_a_layer_whose_array_attribute_is_set_from_x(mutation):
    # at x0 = x1 = 0 the tangent of m.w is zero along every direction
    x = np.array([0.0, 0.0, 2.0])
    got = adgen.hessian(g, mutation=mutation)(x, Scaled())
    want = numerical_hessian(lambda z: g(z, Scaled()), x)
    np.testing.assert_allclose(got, want, atol=1e-4)
    x = np.array([0.7, -0.4, 1.5])
    np.testing.assert_allclose(adgen.hessian(g, mutation=mutation)(x, Scaled()),
                               numerical_hessian(lambda z: g(z, Scaled()), x), atol=1e-4)


class Model:
    """A method whose nested def closes over self (grad refuses it where self.w has a
    gradient, naming the nested def; hessian said "an object of class Model that may share an
    array ...", naming nothing the user wrote)."""

    def __init__(self):
        self.w = np.ones(3)

    def loss(self, x):
        def inner(z):
            return np.sum(self.w * z ** 2)
        return inner(x)

    def loss_as_argument(self, x):
        def inner(z, self):
            return np.sum(self.w * z ** 2)
        return inner(x, self)

    def loss_as_method(self, x):
        return self.inner(x)

    def inner(self, z):
        return np.sum(self.w * z ** 2)


def given(w, m, x):
    m.w = w
    return m.loss(x) * np.sum(w)


def built(w, x):
    m = Model()
    m.w = w * 1.0
    return m.loss(x)


X = np.array([0.5, 1.0, 2.0])
W = np.array([1.0, 2.0, 3.0])


@pytest.mark.parametrize("call", [lambda: adgen.hessian(given)(W, Model(), X),
                                  lambda: adgen.hessian(built)(W, X)])
def test_hessian_names_the_nested_def_closing_over_self(call):
    with pytest.raises(adgen.UnsupportedError) as info:
        call()
    text = str(info.value)
    assert "the nested def inner() closes over self (an object of class Model)" in text
    assert "Model.loss" in text and "may share an array" not in text
    assert "def inner(self, z)" in text and "def inner(z, self)" in text


def as_argument(w, m, x):
    m.w = w
    return m.loss_as_argument(x) * np.sum(w)


def as_method(w, m, x):
    m.w = w
    return m.loss_as_method(x) * np.sum(w)


@pytest.mark.parametrize("h", [as_argument, as_method])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_rewrites_the_hint_names_have_second_derivatives(h, mutation):
    got = adgen.hessian(h, mutation=mutation)(W, Model(), X)
    np.testing.assert_allclose(got, numerical_hessian(lambda v: h(v, Model(), X), W),
                               atol=1e-4)
    # by hand: h = (w . x^2) sum(w), H = x^2 1^T + 1 (x^2)^T
    np.testing.assert_allclose(got, np.add.outer(X ** 2, X ** 2), atol=1e-12)
