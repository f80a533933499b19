"""Second derivatives through a method that appends to a list its object holds, called in a
loop over layers, the loss reading the list afterwards:

    def layer(self, i, h):
        h = np.tanh(self.W[i] @ h)
        self.cache.append(h)
        return h

Problem found by H7: since ff0e226 (which lets reverse mode over jvp code follow methods
setting attributes of their object) the hessian was 0.19 off, silently. The method's jvp code
appends the tangent too (``t_dot = self_dot.cache; t_dot.append(h_dot)``), where SSA's
``self_dot_2`` is the caller's tangent or a zero one made when none is given: the caller's
adjoint of the tangent object was handed over (sh.deposit) but never taken, and the appended
tangent's adjoint started from zero. 2503ad4 refused any method whose code calls a method
named like a list's (``append``, ``pop``, ...): a method appending to a local list beside
setting an attribute was refused too. Since session 29 the pullback takes over the adjoint of
a copy of a parameter whose part it writes (pullback_parameters.taken_over), and the refusal
is gone. Checked against rows of central differences of the gradient and second differences
of the function.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

X = np.array([0.3, -0.7, 1.1])
V = np.array([1.0, 0.5, -2.0])


class Net:
    def __init__(self, n):
        self.cache = []
        self.W = [np.eye(3) * (0.5 + i) for i in range(n)]
        self.n = n

    def layer(self, i, h):
        h = np.tanh(self.W[i] @ h)
        self.cache.append(h)
        return h


def loss(x):
    net = Net(3)
    h = x
    for i in range(net.n):
        h = net.layer(i, h)
    return np.sum(h) + np.sum(net.cache[0] ** 2)


def loss_reading_every_item(x):
    net = Net(3)
    h = x
    for i in range(net.n):
        h = net.layer(i, h)
    return np.sum(h) + np.sum(net.cache[0] ** 2) + np.sum(net.cache[2] * net.cache[1])


class Twice:
    def __init__(self):
        self.cache = []

    def step(self, h):
        self.cache.append(np.sin(h))
        self.cache.append(np.cos(h) * h)
        return h * 1.5


def two_appends_per_call(x):
    t = Twice()
    h = t.step(x)
    h = t.step(h)
    return np.sum(h) + np.sum(t.cache[0] * t.cache[3]) + np.sum(t.cache[1] ** 2)


class Log:
    def __init__(self):
        self.log = []

    def __call__(self, h):
        self.log.append(np.sin(h))
        return h * 2.0


def callable_object(x):
    a = Log()
    y = a(x)
    y = a(y)
    return np.sum(y) + np.sum(a.log[0] * a.log[1])


class Cell:
    """Sets an attribute, and appends to a list of its own (not its object's)."""

    def __init__(self):
        self.w = np.array([0.5, -0.3, 0.8])
        self.h = None

    def step(self, x):
        acc = []
        for k in range(2):
            acc.append(np.sin(self.w * x) * (k + 1))
        self.h = acc[0] + acc[1]
        return self.h * x


def local_list_beside_an_attribute(x):
    c = Cell()
    y = c.step(x)
    y = c.step(y)
    return np.sum(y) + np.sum(c.h ** 2)


CASES = [loss, loss_reading_every_item, two_appends_per_call, callable_object,
         local_list_beside_an_attribute]


def _rows_of_differences(f, x, eps=1e-5):
    g = adgen.grad(f)
    return np.stack([(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(x.size)])


def _second_differences(f, x, h=1e-4):
    e = np.eye(x.size) * h
    return np.array([[(f(x + e[i] + e[j]) - f(x + e[i] - e[j]) - f(x - e[i] + e[j]) +
                       f(x - e[i] - e[j])) / (4 * h * h) for j in range(x.size)]
                     for i in range(x.size)])


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_hessian(f):
    h = adgen.hessian(f)(X)
    np.testing.assert_allclose(h, _rows_of_differences(f, X), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(h, _second_differences(f, X), rtol=1e-4, atol=1e-4)


def test_the_layers_hessian_by_hand():
    # diag: f = sum(tanh(2.5 tanh(1.5 tanh(0.5 x)))) + sum(tanh(0.5 x) ** 2)
    a = np.tanh(0.5 * X)
    b = np.tanh(1.5 * a)
    c = np.tanh(2.5 * b)
    da, db, dc = 0.5 * (1 - a ** 2), 1.5 * (1 - b ** 2), 2.5 * (1 - c ** 2)
    # (each factor's own derivative: d(dc)/db = -5 c dc, d(db)/da = -3 b db, d(da)/dx = -a da)
    first = -5 * c * dc * (db * da) ** 2 - 3 * b * db * dc * da ** 2 - dc * db * a * da
    second = 2 * da ** 2 - 2 * a ** 2 * da
    np.testing.assert_allclose(np.diag(adgen.hessian(loss)(X)),
                               np.diag(_second_differences(loss, X)), rtol=1e-4)
    np.testing.assert_allclose(np.diag(adgen.hessian(loss)(X)), first + second, rtol=1e-10)


@pytest.mark.parametrize("second", ["hvp", "jacfwd", "jacrev"])
def test_other_second_derivatives(second):
    want = _rows_of_differences(loss, X)
    if second == "hvp":
        got = adgen.hvp(loss)(X, V)
        np.testing.assert_allclose(got, want @ V, rtol=1e-6, atol=1e-7)
        return
    got = (adgen.jacfwd if second == "jacfwd" else adgen.jacrev)(adgen.grad(loss))(X)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_gradient_and_jvp(f, mutation):
    check_grad(f, (X,), mutation=mutation)
    _, t = adgen.jvp(f, (X,), (V,))
    g = adgen.grad(f)(X)
    assert np.isclose(t, g @ V)
