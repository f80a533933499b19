"""jvp, jacfwd, hessian and hvp of a bound method that sets an attribute of its object and
reads another one, a constant (``self.h = np.sqrt(self.data) * w ** 3``). Storing ``self.h``
made the object varied, so ``self.data`` took the zero tangent of the object's and the tangent
of the square root was ``0 / (2 * 0)``: NaN where ``data`` holds a 0 (jax gives the finite
answer). The attribute the method never stores is now a constant of the jvp code (no
tangent). Checked against the hand formula and central differences; what the method leaves
on its object is the plain call's."""

import numpy as np
import pytest

import adgen

DATA = np.array([0.0, 1.0, 4.0])
X = np.array([0.3, -0.7, 1.1])
V = np.array([1.0, -0.5, 2.0])


class Model:
    def __init__(self, data):
        self.data = data

    def keeps(self, w):
        self.h = np.sqrt(self.data) * w ** 3
        return np.sum(self.h)

    def keeps_view(self, w):
        d = self.data
        part = d[1:]  # a view of the constant, read after the store
        self.h = np.log(self.data + 1.0) * w
        self.count = 2
        return np.sum(self.h) + np.sum(np.sqrt(part) * w[1:] ** 2) + np.sum(np.arcsin(d / 4.0) * w)


def keeps_grad(w):
    return 3 * np.sqrt(DATA) * w ** 2


def keeps_view_grad(w):
    g = np.log(DATA + 1.0) + np.arcsin(DATA / 4.0)
    g[1:] += 2 * np.sqrt(DATA[1:]) * w[1:]
    return g


def central(f, x, v, eps=1e-6):
    return (f(x + eps * v) - f(x - eps * v)) / (2 * eps)


@pytest.mark.parametrize("method, grad", [("keeps", keeps_grad), ("keeps_view", keeps_view_grad)])
def test_jvp_and_jacfwd(method, grad):
    m = Model(DATA.copy())
    f = getattr(m, method)
    with np.errstate(divide="ignore", invalid="ignore"):
        out, dot = adgen.jvp(f, (X,), (V,))
        J = adgen.jacfwd(f)(X)
    assert np.isclose(dot, grad(X) @ V)
    assert np.allclose(J, grad(X))
    assert np.isclose(dot, central(getattr(Model(DATA.copy()), method), X, V))
    plain = Model(DATA.copy())
    assert np.isclose(out, getattr(plain, method)(X))
    assert np.array_equal(m.h, plain.h) and np.array_equal(m.data, DATA)


def test_hessian_and_hvp():
    m = Model(DATA.copy())
    with np.errstate(divide="ignore", invalid="ignore"):
        H = adgen.hessian(m.keeps)(X)
        hv = adgen.hvp(m.keeps)(X, V)
    want = np.diag(6 * np.sqrt(DATA) * X)
    assert np.allclose(H, want)
    assert np.allclose(hv, want @ V)
    # central differences of the gradient (hand formula above)
    fd = np.array([central(keeps_grad, X, e) for e in np.eye(3)])
    assert np.allclose(H, fd, atol=1e-6)


class Stored:
    """A property's setter stores another attribute, which the method reads."""

    def __init__(self, data):
        self.data = data

    @property
    def h(self):
        return self._h

    @h.setter
    def h(self, v):
        self._h = 2.0 * v

    def keeps(self, w):
        self.h = np.sqrt(self.data + 1.0) * w ** 3
        return np.sum(self._h)


def test_a_setter_storing_another_attribute_is_its_call():
    # refused until session 28 (its tangent would have been read as a constant's); the
    # store is now the setter's call (property_setters.py): 6 sqrt(data + 1) w^2
    m = Stored(DATA.copy())
    _, dot = adgen.jvp(m.keeps, (X,), (V,))
    np.testing.assert_allclose(dot, (6 * np.sqrt(DATA + 1.0) * X ** 2) @ V, rtol=1e-12)
    np.testing.assert_allclose(m._h, 2.0 * np.sqrt(DATA + 1.0) * X ** 3, rtol=1e-12)


class Node:
    def __init__(self, data):
        self.data = data
        self.me = self

    def keeps(self, w):
        self.h = w ** 3
        return np.sum(self.me.h * self.data)


def test_an_attribute_holding_the_object_itself_is_refused():
    # self.me.h reads what the store set: not a constant
    with pytest.raises(adgen.AdgenError, match="holds the object itself"):
        adgen.jvp(Node(DATA.copy()).keeps, (X,), (V,))


def test_an_object_given_a_tangent_keeps_its_attributes_tangents():
    # the method as a function of its object and w: data's tangent is followed
    m = Model(DATA + 1.0)
    t = Model(np.array([0.5, -1.0, 2.0]))
    _, dot = adgen.jvp(Model.keeps, (m, X), (t, V))
    want = np.sum(t.data / (2 * np.sqrt(DATA + 1.0)) * X ** 3 + 3 * np.sqrt(DATA + 1.0) * X ** 2 * V)
    assert np.isclose(dot, want)
