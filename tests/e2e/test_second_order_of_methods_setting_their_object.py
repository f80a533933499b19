"""Second derivatives of a function calling a method that sets attributes of its object, the
way models and dataclasses are written: an ``__init__`` calling ``self.setup()``, a
dataclass's ``__post_init__`` computing a derived field (frozen too), a recurrent cell whose
``step`` keeps its state in ``self.h``, read after the call, a method called twice.

hessian, hvp and jacfwd/jacrev of grad refused all of them at the user's line ("second
derivatives ... through Cell.step, which sets an attribute of its object ... are not
supported yet"): reverse mode over the jvp code called the method's jvp (``call_jvp``) with
the cotangent of its result only. Since session 28 the adjoints of the object and of its
tangent after the call are handed to the method's pullback (``sh.deposit``, as reverse mode
does for a first-order call of such a method) and the call's pullback runs where nothing
reads its result (``self.setup()``). Checked against hand formulas and second differences;
first order under both mutation policies.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest
from gradcheck import check_grad, check_jvp, numerical_hessian

import adgen

X = np.array([[0.5, -1.0, 0.3], [1.2, 0.4, -0.7]])
W = np.array([0.3, -0.2, 0.7])
V = np.array([1.0, -0.4, 0.3])


class Cubes:
    def __init__(self, w):
        self.w = w
        self.setup()  # result unused: called for what it sets

    def setup(self):
        self.n = np.sum(self.w ** 3)


def set_up_in_init(w):
    c = Cubes(w * 2.0)
    return c.n + np.sum(c.w)  # 8 sum(w^3) + 2 sum(w): Hessian diag(48 w)


@dataclass
class Gauss:
    mu: np.ndarray
    scale: float = 1.5
    sigma: np.ndarray = field(init=False)

    def __post_init__(self):
        self.sigma = np.exp(self.mu) * self.scale


def post_init(w):
    g = Gauss(w * 1.0)
    return np.sum(g.sigma ** 2) + np.sum(g.mu * g.sigma)


@dataclass(frozen=True)
class Frozen:
    w: np.ndarray
    c: float = 2.0

    def __post_init__(self):
        object.__setattr__(self, "n", np.sum(self.w ** 2) * self.c)

    def predict(self, x):
        return np.tanh(x @ self.w) + self.n


def frozen_post_init(w):
    p = Frozen(w * 2.0, 0.5)
    return np.sum(p.predict(X) ** 2)


class Cell:
    def __init__(self, w):
        self.w = w
        self.h = np.zeros(2)

    def step(self, x):
        self.h = np.tanh(X @ self.w * x + self.h)
        return np.sum(self.h)


def recurrent(w):
    c = Cell(w * 1.0)
    s = 0.0
    for k in range(3):
        s = s + c.step(0.5 + k) * c.h[0]
    return s + np.sum(c.h ** 2)


class Holder:
    def __init__(self, w):
        self.cell = Cell(w)

    def run(self, x):
        return self.cell.step(x)


def held_cell(w):
    h = Holder(w * 1.0)
    return h.run(0.5) + np.sum(h.cell.h ** 2)


class Stats:
    def __init__(self):
        self.w = None
        self.n = 0.0

    def fit(self, w):
        self.w = w
        self.n = np.sum(w ** 3)


def fitted_twice(w):
    s = Stats()
    s.fit(w * 2.0)
    first = s.n
    s.fit(np.sin(w))
    return first * s.n + np.sum(s.w)


FUNCTIONS = [set_up_in_init, post_init, frozen_post_init, recurrent, held_cell, fitted_twice]


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_hessian(f):
    h = adgen.hessian(f)(W.copy())
    want = numerical_hessian(f, W.copy())
    np.testing.assert_allclose(h, want, rtol=1e-4, atol=1e-4 * (1 + np.abs(want).max()))


def test_hessian_by_hand():
    np.testing.assert_allclose(adgen.hessian(set_up_in_init)(W.copy()), np.diag(48 * W),
                               rtol=1e-12, atol=1e-14)
    # post_init: f = 2.25 sum(exp(2 w)) + 1.5 sum(w exp(w))
    want = np.diag(9 * np.exp(2 * W) + 1.5 * (2 + W) * np.exp(W))
    np.testing.assert_allclose(adgen.hessian(post_init)(W.copy()), want, rtol=1e-12)


@pytest.mark.parametrize("f", [recurrent, post_init], ids=lambda f: f.__name__)
def test_other_second_derivatives(f):
    g = adgen.grad(f)
    want = np.stack([(g(W + 1e-6 * e) - g(W - 1e-6 * e)) / 2e-6 for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(adgen.hvp(f)(W.copy(), V), want @ V, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(adgen.jacfwd(adgen.grad(f))(W.copy()), want, rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(adgen.jacrev(adgen.grad(f))(W.copy()), want, rtol=1e-6,
                               atol=1e-8)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_first_order(f, mutation):
    check_grad(f, [W.copy()], mutation=mutation, strict_must_compute=True)
    check_jvp(f, [W.copy()], [V])
