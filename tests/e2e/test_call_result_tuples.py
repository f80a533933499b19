"""A helper's result updated in place in the caller, next to a tuple the same call returned.

``t, s = pair(x); t -= 0.5`` makes every item of ``pair``'s result a value that may share
``t``'s memory, so the pullback keeps their adjoints in shadow memory; where such an item is a
tuple (``s``, put into another container or passed on), the shadow map had no shadow for it
and the gradient raised "a tuple written in place by index" when it ran. Reverse over reverse
hit the same thing in the generated code for ``t = helper(x); t -= v`` (the helper's saved
values are such a tuple). Checked against central differences (tests/gradcheck.py) and the
hand-derived derivative.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import adgen
from tests.gradcheck import central, check_grad


def pair(x):
    return x * x, (x, 2.0)


def shared(x):
    y = x * x
    return y, (y, 2.0)  # the tuple holds the array the caller writes


def into_tuple(x):
    t, s = pair(x)
    t -= 0.5
    both = (s, t)
    return np.sum(both[1] ** 3) + np.sum(both[0][0] * both[0][1])


def into_list(x):
    t, s = pair(x)
    t -= 0.5
    both = [s, t]
    return np.sum(both[1] ** 3) + np.sum(both[0][0] * both[0][1])


def reads(both):
    return np.sum(both[1] ** 3) + np.sum(both[0][0] * both[0][1])


def passed_on(x):
    t, s = pair(x)
    t -= 0.5
    return reads((s, t))


def written_item(x):
    t, s = shared(x)
    t -= 0.5  # s[0] is t: it changes too
    both = (s, t)
    return np.sum(both[1] ** 3) + np.sum(both[0][0] * both[0][1])


class Layer:
    def __init__(self, c):
        self.c = c

    def loss(self, x):
        t, s = pair(x * self.c)
        t -= 0.5
        both = (s, t)
        return np.sum(both[1] ** 3) + np.sum(both[0][0] * both[0][1])


X = np.array([0.3, 0.9, -0.6])


@pytest.mark.parametrize("f", [into_tuple, into_list, passed_on, written_item],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_first_order(f, mutation):
    g = check_grad(f, (X,), mutation=mutation)
    if g is not None and f is not written_item:
        assert np.allclose(g, 6 * X * (X * X - 0.5) ** 2 + 2.0)


def test_method_and_lambda():
    layer = Layer(1.5)
    x = X.copy()
    g = adgen.grad(layer.loss)(x)
    assert np.allclose(g, central(layer.loss, X.copy()), atol=1e-6)
    lam = lambda x: into_tuple(x) * 2.0  # noqa: E731
    assert np.allclose(adgen.grad(lam)(X.copy()), central(lam, X.copy()), atol=1e-6)


def helper(a):
    return a * a


def cubed(x):
    t = helper(x)
    t -= 0.5
    return t ** 3


def test_grad_of_grad_of_a_number():
    # the form: reverse over reverse, which raised at run time
    route = adgen.explain(adgen.grad(cubed), 0.7, file=None).route
    assert route.startswith("second derivatives: reverse over reverse")
    x = 0.7
    d2 = adgen.grad(adgen.grad(cubed))(x)
    assert math.isclose(d2, 6 * (x * x - 0.5) ** 2 + 24 * x * x * (x * x - 0.5),
                        rel_tol=1e-12, abs_tol=1e-12)
    assert math.isclose(d2, central(adgen.grad(cubed), x), rel_tol=1e-6, abs_tol=1e-8)


def vector_cubed(a, v):
    t = helper(a)
    t -= v
    return np.sum(t ** 3)


@pytest.mark.parametrize("second", ["hessian", "jacrev_grad", "jacfwd_grad"])
def test_second_derivatives_of_an_array(second):
    a, v = np.array([0.3, -0.5, 0.8]), np.array([0.1, 0.2, -0.3])
    f = adgen.grad(vector_cubed)
    H = {"hessian": adgen.hessian(vector_cubed),
         "jacrev_grad": adgen.jacrev(f), "jacfwd_grad": adgen.jacfwd(f)}[second](a, v)
    fd = np.array([central(lambda s: f(a + s * e, v), 0.0) for e in np.eye(3)]).T
    assert np.allclose(H, fd, atol=1e-6)
    t = a * a - v
    assert np.allclose(H, np.diag(6 * t * 4 * a * a + 3 * t * t * 2))


def test_grad_of_grad_with_the_tuple_passed_on():
    def loss(x):
        t, s = pair(x)
        t -= 0.5
        return reads((s, t))

    x = 0.4
    d2 = adgen.grad(adgen.grad(loss))(x)
    assert math.isclose(d2, central(adgen.grad(loss), x), rel_tol=1e-6, abs_tol=1e-8)
    assert math.isclose(d2, 6 * (x * x - 0.5) ** 2 + 24 * x * x * (x * x - 0.5),
                        rel_tol=1e-10, abs_tol=1e-12)
