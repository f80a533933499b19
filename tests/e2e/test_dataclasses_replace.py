"""``dataclasses.replace(p, w=v)`` inside a differentiated function: the functional update of
parameters held in a (frozen) dataclass, as JAX users write it (``p = replace(p, w=p.w - lr *
g)`` in a loop, in a method returning the new object, imported by name).

It was refused at the line ("dataclasses.replace is not differentiated"). The call is now a
call of a function adgen writes for the object's class when it runs (adgen.dataclass_replace:
``def replace_Params_w(obj, w): return Params(w, obj.b)``), differentiated as a function of
the user's, with the class's ``__init__`` and ``__post_init__``. Checked against central
differences and second differences, under both mutation policies.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, replace

import numpy as np
import pytest
from gradcheck import check_grad, check_jvp, numerical_hessian

import adgen

X = np.array([[0.5, -1.0, 0.3], [1.2, 0.4, -0.7]])
W = np.array([0.3, -0.2, 0.7])
V = np.array([1.0, -0.4, 0.3])


@dataclass(frozen=True)
class Params:
    w: np.ndarray
    b: float = 0.5

    def step(self, g):
        return dataclasses.replace(self, w=self.w - 0.1 * g)


def loss(p):
    return np.sum(np.tanh(X @ p.w + p.b) ** 2)


def update_loop(w):
    p = Params(w * 1.0, 0.3)
    for _ in range(3):
        g = 2.0 * p.w * p.b + np.sin(p.w)
        p = dataclasses.replace(p, w=p.w - 0.1 * g)
    return loss(p)


def replaced_by_a_method(w):
    p = Params(w * 1.0, 0.3)
    for _ in range(2):
        p = p.step(np.sin(p.w) * p.b)
    return loss(p)


def imported_by_name(w):
    p = Params(w, 0.2)
    q = replace(p, b=np.sum(w ** 2))  # the other field carried over
    return loss(q) * q.b


def two_fields(w):
    p = Params(w, 0.2)
    q = dataclasses.replace(p, b=p.b * np.sum(w), w=np.cos(p.w))
    return loss(q) + loss(p)


@dataclass
class Derived:
    w: np.ndarray
    b: float = 0.5
    n: float = field(init=False, default=0.0)

    def __post_init__(self):
        self.n = np.sum(self.w ** 3)


def through_post_init(w):
    p = Derived(w * 2.0)
    q = dataclasses.replace(p, w=np.sin(p.w))  # n is computed again from the new w
    return q.n * q.b + np.sum(q.w)


@dataclass(init=False)
class OwnInit:
    w: np.ndarray
    b: float

    def __init__(self, w, b=1.0):  # replace calls it with every field by keyword
        self.w = w * 2.0
        self.b = b


def own_init(w):
    p = OwnInit(w, 0.5)
    q = dataclasses.replace(p, b=np.sum(w))  # q.w is 4 w: __init__ doubles p.w again
    return np.sum(q.w ** 2) * q.b


FUNCTIONS = [update_loop, replaced_by_a_method, imported_by_name, two_fields,
             through_post_init, own_init]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_gradient(f, mutation):
    check_grad(f, [W.copy()], mutation=mutation, strict_must_compute=True)


def test_gradient_by_hand():
    # own_init: q.w = 4 w, q.b = sum(w): f = 16 sum(w^2) sum(w)
    g = adgen.grad(own_init)(W.copy())
    np.testing.assert_allclose(g, 32 * W * np.sum(W) + 16 * np.sum(W ** 2), rtol=1e-12)


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_forward_mode(f):
    check_jvp(f, [W.copy()], [V])


@pytest.mark.parametrize("f", [update_loop, replaced_by_a_method, imported_by_name,
                               two_fields, own_init, through_post_init],
                         ids=lambda f: f.__name__)
def test_hessian(f):
    h = adgen.hessian(f)(W.copy())
    np.testing.assert_allclose(h, numerical_hessian(f, W.copy()), rtol=1e-4, atol=1e-5)


@dataclass
class Counted:
    w: np.ndarray
    n: float = field(init=False, default=1.0)


def names_an_init_false_field(w):
    p = Counted(w)
    q = dataclasses.replace(p, n=2.0)
    return np.sum(q.w)


def not_a_dataclass(w):
    q = dataclasses.replace(w, n=2.0)
    return np.sum(q)


@pytest.mark.parametrize("f, error", [(names_an_init_false_field, ValueError),
                                      (not_a_dataclass, TypeError)],
                         ids=["init_false", "not_a_dataclass"])
def test_the_errors_python_raises(f, error):
    with pytest.raises(error) as plain:
        f(W.copy())
    for run in (lambda: adgen.grad(f)(W.copy()),
                lambda: adgen.jvp(f, (W.copy(),), (V,))):
        with pytest.raises(error) as info:
            run()
        assert str(info.value) == str(plain.value)
