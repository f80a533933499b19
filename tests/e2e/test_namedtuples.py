"""Namedtuples as people use them for parameters: an argument whose fields are read
(``p.w``), unpacked or indexed; one built in the loss (``collections.namedtuple`` and
``typing.NamedTuple``, positional, keyword and default fields) and updated with ``_replace``.
The gradient of a namedtuple argument is a namedtuple of the same type, as in JAX. Checked
against central differences, under both policies, in forward mode and at second order."""

from collections import namedtuple
from typing import NamedTuple

import numpy as np
import pytest
from gradcheck import check_grad, numerical_grad

import adgen

Params = namedtuple("Params", "w b")


class Layer(NamedTuple):
    w: np.ndarray
    b: float = 0.5


X = np.array([0.3, -0.7, 1.1])
W = np.array([0.2, 0.4, -0.6])


def by_fields(p, x):
    return np.sum(np.tanh(p.w * x)) + p.b ** 2


def by_unpacking(p, x):
    w, b = p
    return np.sum(w * x) * b + p[1]


def _predict(layer, x):
    return np.tanh(layer.w @ x + layer.b)


def through_a_helper(p, x):
    return _predict(Layer(p.w, p.b), x) ** 2


def built_in_the_loss(x):
    q = Layer(x * 2.0)  # b from its default
    r = Params(b=np.sin(x[0]), w=q.w ** 2)
    return np.sum(r.w * q.b) + r.b * x[1]


def replaced(x):
    q = Layer(w=x, b=2.0)
    q = q._replace(b=3.0 * x[2])
    return np.sum(q.w * q.b) + q[1] ** 2


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [by_fields, by_unpacking, through_a_helper])
@pytest.mark.parametrize("kind", [Params, Layer])
def test_argument(f, kind, mutation):
    p = kind(W.copy(), 1.5)
    g = check_grad(f, (p, X), 0, mutation=mutation)
    assert type(g) is kind


DEFAULTS = Layer(w=W, b=0.5)  # a global namedtuple of settings, updated in the loss


def replaced_from_a_global(x):
    # DEFAULTS._replace(w=x): the method of a global object, which was compiled from
    # collections' source and refused ('**kwargs parameters are not differentiable'), where
    # q._replace of a local namedtuple was lowered
    q = DEFAULTS._replace(w=x * DEFAULTS.b)
    return np.sum(np.tanh(q.w)) + q.b * x[0] ** 2


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [built_in_the_loss, replaced, replaced_from_a_global])
def test_built_in_the_loss(f, mutation):
    check_grad(f, (X,), mutation=mutation)


@pytest.mark.parametrize("f", [built_in_the_loss, replaced, replaced_from_a_global])
def test_forward_mode_and_hessian(f):
    v = np.array([0.5, -1.0, 2.0])
    _, tangent = adgen.jvp(f, (X.copy(),), (v,))
    np.testing.assert_allclose(tangent, numerical_grad(f, (X,), 0) @ v, rtol=1e-6)
    h = adgen.hessian(f)(X.copy())
    cols = [(adgen.grad(f)(X + 1e-5 * e) - adgen.grad(f)(X - 1e-5 * e)) / 2e-5
            for e in np.eye(3)]
    np.testing.assert_allclose(h, np.stack(cols, axis=1), rtol=1e-5, atol=1e-7)


def test_a_field_array_written_in_place():
    def f(p, x):
        w = p.w.copy()
        w[0] = x[0] ** 2  # a copy: the argument's array is left as it was
        q = p._replace(w=w)
        return np.sum(q.w * x) + q.b

    p = Params(W.copy(), 2.0)
    g = check_grad(f, (p, X), (0, 1))
    assert type(g[0]) is Params and g[0].b == 1.0


def test_replace_of_a_class_of_the_users_is_refused():
    class Config:
        def __init__(self, scale):
            self.scale = scale

        def _replace(self, **kw):
            return Config(kw.get("scale", self.scale))

    def f(x):
        c = Config(1.0)._replace(scale=x[0])
        return c.scale * x[1]

    with pytest.raises(adgen.AdgenError, match="namedtuples only"):
        adgen.grad(f)(X.copy())


def _written_through_a_field(x):
    p = Params(x * 2.0, 1.0)
    p.w[0] = 5.0  # the namedtuple holds the array itself: the write is to that array
    q = p._replace(b=3.0)
    q.w[1] = 0.0
    return np.sum(q.w * x) * q.b + np.sum(p.w) * p.b


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_fields_array_written_in_place(mutation):
    # strict refused it while the construction was a dynamic call (its arguments captured)
    assert check_grad(_written_through_a_field, (X,), mutation=mutation) is not None


@pytest.mark.parametrize("f", [by_fields, through_a_helper])
@pytest.mark.parametrize("kind", [Params, Layer])
def test_jvp_with_a_plain_tuple_as_the_tangent(f, kind):
    # the tangent of a named tuple given as a plain tuple (as JAX users write it) is taken as
    # one of its class: the jvp code read t_dot.w, AttributeError 'tuple' object has no
    # attribute 'w' before session 23
    p = kind(W.copy(), 1.5)
    v = (np.array([0.5, -1.0, 2.0]), 0.25)
    _, tangent = adgen.jvp(f, (p, X), (v, None))
    g = numerical_grad(f, (p, X), 0)
    assert tangent == pytest.approx(float(g.w @ v[0] + g.b * v[1]), rel=1e-6)
