"""Second derivatives (and jvp) of the ways people write the function: keyword-only
parameters, keyword arguments given at the call, ``functools.partial`` (of a function, of a
callable object, of a partial), lambdas, callable objects (``__call__``), static and class
methods. Checked against central differences of the gradient (``jvp`` against central
differences of the function).

Two of them failed: ``jacrev(grad(f))(x, scale=3.0)`` was refused ("a derivative of a
gradient passes no keyword arguments") where ``jacfwd(grad(f))`` took them, and
``grad(grad(f))(0.7, c=2.0)`` raised a raw TypeError from the generated code; keyword
arguments are bound now, and get no derivative, as in JAX.
"""

import functools
import math

import numpy as np
import pytest
from gradcheck import central

import adgen

X = np.array([0.3, -0.7, 1.1])
W = np.array([0.5, 1.5, -0.7])


def kwonly(x, *, scale=2.0, shift=0.5):
    return np.sum(np.sin(x * scale) ** 2) + shift * np.sum(x ** 3)


def two(x, w, /, c=1.0):
    return np.sum(np.tanh(x * w) ** 2) * c


def calls_with_keywords(x):
    # a value with a derivative passed by keyword to a keyword-only parameter
    return kwonly(x, scale=x[0] + 1.0, shift=np.sum(x))


class Model:
    def __init__(self, w):
        self.w = w

    def __call__(self, x, *, temp=1.5):
        return np.sum(np.exp(-x * self.w / temp)) + np.sum(x ** 4)

    def energy(self, x, *, t=1.0):
        return np.sum(np.exp(-x * self.w / t))

    @staticmethod
    def quartic(x, *, k=2.0):
        return np.sum(x ** 4) * k

    @classmethod
    def waves(cls, x, *, k=2.0):
        return np.sum(np.cos(x) ** 3) * k


FORMS = {
    "kwonly": kwonly,
    "partial_keywords": functools.partial(kwonly, scale=3.0, shift=0.1),
    "partial_of_partial": functools.partial(functools.partial(kwonly, scale=3.0), shift=0.2),
    "partial_first_argument": functools.partial(lambda w, x: two(x, w), W),
    "lambda_with_default": lambda x, c=2.0: kwonly(x) * c,
    "keywords_with_a_derivative": calls_with_keywords,
    "callable_object": Model(W),
    "partial_of_callable": functools.partial(Model(W), temp=0.7),
    "bound_call": Model(W).__call__,
    "method_partial": functools.partial(Model(W).energy, t=0.3),
    "staticmethod": Model.quartic,
    "classmethod": Model.waves,
}
SECOND = {
    "hessian": lambda f, x: adgen.hessian(f)(x),
    "hvp": lambda f, x: np.array([adgen.hvp(f)(x, e) for e in np.eye(x.size)]).T,
    "jacfwd_grad": lambda f, x: adgen.jacfwd(adgen.grad(f))(x),
    "jacrev_grad": lambda f, x: adgen.jacrev(adgen.grad(f))(x),
}


def hessian_by_differences(f, x):
    g = adgen.grad(f)
    return np.array([central(lambda s: g(x + s * e), 0.0) for e in np.eye(x.size)]).T


@pytest.mark.parametrize("second", list(SECOND))
@pytest.mark.parametrize("form", list(FORMS))
def test_second_derivatives(form, second):
    f = FORMS[form]
    np.testing.assert_allclose(SECOND[second](f, X.copy()), hessian_by_differences(f, X),
                               rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("form", list(FORMS))
def test_jvp(form):
    f = FORMS[form]
    v = np.array([1.0, -0.5, 0.25])
    _, slope = adgen.jvp(f, (X.copy(),), (v,))
    assert np.isclose(slope, central(lambda s: f(X + s * v), 0.0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("second", list(SECOND))
def test_keyword_arguments_at_the_call(second):
    expected = hessian_by_differences(lambda z: kwonly(z, scale=3.0), X)
    f = kwonly
    got = {"hessian": lambda: adgen.hessian(f)(X.copy(), scale=3.0),
           "hvp": lambda: np.array([adgen.hvp(f)(X.copy(), e, scale=3.0)
                                    for e in np.eye(3)]).T,
           "jacfwd_grad": lambda: adgen.jacfwd(adgen.grad(f))(X.copy(), scale=3.0),
           "jacrev_grad": lambda: adgen.jacrev(adgen.grad(f))(X.copy(), scale=3.0)}[second]()
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


def test_keyword_arguments_of_derivatives_of_a_number():
    def s(t, *, c=1.0):
        return t ** 3 * math.sin(c * t)

    t, c = 0.7, 2.0
    d2 = 6 * t * math.sin(c * t) + 6 * c * t * t * math.cos(c * t) - c * c * t ** 3 * \
        math.sin(c * t)
    assert math.isclose(adgen.grad(adgen.grad(s))(t, c=c), d2, rel_tol=1e-12)
    third = adgen.grad(adgen.grad(adgen.grad(s)))(t, c=c)
    assert math.isclose(third, central(lambda u: adgen.grad(adgen.grad(s))(u, c=c), t),
                        rel_tol=1e-6)


def test_third_derivatives_with_keywords():
    h = adgen.hessian(functools.partial(kwonly, scale=3.0))
    expected = np.stack([central(lambda s: h(X + s * e), 0.0, eps=1e-4) for e in np.eye(3)],
                        axis=-1)
    np.testing.assert_allclose(adgen.jacfwd(adgen.hessian(kwonly))(X.copy(), scale=3.0),
                               expected, atol=1e-5)
