"""Second derivatives through a helper that takes functions as values (``compose(f, g)``
returning ``lambda v: f(g(v))``, ``apply_twice(f, v)``), given a NumPy ufunc, a lambda, or a
closure over a value with a derivative (``scaled(x[0])``). grad and jvp were right; the
hessian was refused by reverse mode over the helper's jvp code ("an object of class ufunc
that may share an array with one written in place through another value ... adgen took it
for an array": the pullback asks for the adjoint of ``g``, a function). A function value
carries no derivative of its own (what a closure reads keeps its adjoint in its own shadow),
so it now gets an adjoint that holds nothing. Checked against second differences, with grad
under both policies and jvp against central differences."""

import numpy as np
import pytest
from gradcheck import central, numerical_hessian

import adgen

X = np.array([0.3, -1.2, 0.8, -0.4])
V = np.array([0.5, 1.0, -2.0, 0.25])


def compose(f, g):
    return lambda v: f(g(v))


def scaled(a):
    return lambda t: a * t


def apply_twice(f, v):
    return f(f(v))


def closure_after_a_ufunc(x):
    return np.sum(compose(scaled(x[0]), np.cos)(x))


def ufunc_after_a_closure(x):
    return np.sum(compose(np.cos, scaled(x[0]))(x))


def closure_over_an_array(x):
    return np.sum(compose(scaled(np.cos(x)), np.exp)(x * 0.5))


def lambda_over_a_number(x):
    a = x[0] ** 2
    return np.sum(compose(lambda t: a * t, np.cos)(x))


def functions_from_a_dict(x):
    fs = {"a": np.sin, "b": scaled(x[1])}
    return np.sum(compose(fs["b"], fs["a"])(x))


def composed_twice(x):
    h = compose(scaled(x[2]), np.cos)
    return np.sum(compose(h, np.sin)(x))


def a_closure_applied_twice(x):
    return np.sum(apply_twice(scaled(np.sin(x)), x))


CASES = [closure_after_a_ufunc, ufunc_after_a_closure, closure_over_an_array,
         lambda_over_a_number, functions_from_a_dict, composed_twice, a_closure_applied_twice]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_hessian(f):
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), numerical_hessian(f, X.copy()),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_gradient_and_jvp(f, mutation):
    ref = central(f, X.copy())
    np.testing.assert_allclose(adgen.grad(f, mutation=mutation)(X.copy()), ref, rtol=1e-6,
                               atol=1e-8)
    _, t = adgen.jvp(f, (X.copy(),), (V,))
    np.testing.assert_allclose(t, ref @ V, rtol=1e-6, atol=1e-8)
