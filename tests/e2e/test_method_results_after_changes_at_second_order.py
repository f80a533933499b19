"""A plain accumulator built inside the loss (``a.add(v)`` setting ``self.total += v`` and
counting ``self.n += 1``, then ``return a.mean()``): grad and jvp differentiate it; hessian
refused it with a message about "an object of class method that may share an array" (the
method ``a.mean``, given to the call in adgen's jvp code, reached shadow memory as a value
taken for an array), then (session 27) with a message naming the method.

Since session 28 the method form has its second derivatives: reverse mode over the jvp code
gives the function value of ``call_jvp(a.mean, (), (), {}, a, a_dot)`` no adjoint (the call's
rule gives it none: the object's cotangent goes to ``a``, the owner), where it took the bound
method's adjoint into ``a``'s as an attribute read. The same read of a NamedTuple's method
after ``_replace`` (``Pt(x, 2.0)._replace(b=3.0).e()``) raised a raw ValueError from
ObjectAdjoint. Checked against second differences and hand formulas, as grad under both
policies and jvp against central differences.
"""

from typing import NamedTuple

import numpy as np
import pytest
from gradcheck import check_grad, numerical_hessian, numerical_jvp

import adgen

X0 = np.array([0.3, -0.7, 1.1, 0.5])


class Acc:
    def __init__(self):
        self.total = 0.0
        self.n = 0

    def add(self, v):
        self.total += v
        self.n += 1

    def mean(self):
        return self.total / self.n


def mean_of_squares(x):
    a = Acc()
    for i in range(4):
        a.add(x[i] ** 2 * x[0])
    return a.mean()


def attributes_read(x):
    a = Acc()
    for i in range(4):
        a.add(x[i] ** 2 * x[0])
    return a.total / a.n


def _mean_of_squares_hessian(x):
    # f = x0 (x0^2 + x1^2 + x2^2 + x3^2) / 4
    h = np.zeros((4, 4))
    h[0, 0] = 6 * x[0] / 4
    for i in range(1, 4):
        h[0, i] = h[i, 0] = 2 * x[i] / 4
        h[i, i] = 2 * x[0] / 4
    return h


@pytest.mark.parametrize("how", ["hessian", "jacfwd of grad"])
def test_second_derivatives_of_the_method(how):
    run = adgen.hessian(mean_of_squares) if how == "hessian" else \
        adgen.jacfwd(adgen.grad(mean_of_squares))
    h = run(X0)
    np.testing.assert_allclose(h, _mean_of_squares_hessian(X0), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(h, numerical_hessian(mean_of_squares, X0), rtol=1e-4,
                               atol=1e-5)


class Pt(NamedTuple):
    a: np.ndarray
    b: float

    def energy(self):
        return np.sum(self.a ** 2) * self.b


def replaced_then_method(x):
    return Pt(x, 2.0)._replace(b=3.0).energy()


def replaced_in_a_loop_then_method(x):
    p = Pt(x * 1.0, np.sum(x))
    for _ in range(2):
        p = p._replace(a=p.a - 0.1 * p.b * p.a)
    return p.energy()


@pytest.mark.parametrize("f", [replaced_then_method, replaced_in_a_loop_then_method])
def test_second_derivatives_of_a_namedtuples_method_after_replace(f):
    h = adgen.hessian(f)(X0)
    np.testing.assert_allclose(h, numerical_hessian(f, X0), rtol=1e-4, atol=1e-5)
    if f is replaced_then_method:
        np.testing.assert_allclose(h, 6 * np.eye(4), rtol=1e-12)
    check_grad(f, (X0,))
    v = np.array([1.0, -0.5, 0.25, 2.0])
    _, t = adgen.jvp(f, (X0,), (v,))
    np.testing.assert_allclose(t, numerical_jvp(f, (X0,), (v,)), rtol=1e-6, atol=1e-9)


def test_the_hints_rewrite_has_its_hessian():
    np.testing.assert_allclose(adgen.hessian(attributes_read)(X0),
                               numerical_hessian(attributes_read, X0), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("f", [mean_of_squares, attributes_read])
@pytest.mark.parametrize("policy", ["save", "strict"])
def test_gradient(f, policy):
    check_grad(f, (X0,), mutation=policy, strict_must_compute=True)


@pytest.mark.parametrize("f", [mean_of_squares, attributes_read])
def test_jvp(f):
    v = np.array([1.0, -0.5, 0.25, 2.0])
    _, t = adgen.jvp(f, (X0,), (v,))
    np.testing.assert_allclose(t, numerical_jvp(f, (X0,), (v,)), rtol=1e-6, atol=1e-9)
