"""Ints from calls with no derivative inside a function differentiated in forward mode:
``len(*(x,))`` (a starred call), ``f = len; f(x)`` and ``fs[0](x)`` (a builtin found when the
call runs), added to, multiplied into or used as the exponent of a value with a derivative.

``jvp``, ``jacfwd`` and ``hessian`` raised a plain ``TypeError`` (``float + None``) in the
jvp code: the call's result got the tangent None, which the caller's tangent code computes
with. The starred call of a function without a derivative is now one, as its plain call is
(analyses.activity), and a builtin run as it is gives an int the zero tangent a user
function's jvp gives it. ``grad`` of the variable forms refused ('len() has no derivative
rule, and its result has a gradient here'): an int's cotangent is dropped now, as for
``len(x)`` by name. ``np.power(x, n)`` of such an int was NaN in jvp, jacfwd and hessian at a
negative ``x`` until session 25 (the exponent's term, 0.0 * log of a negative base). All
against central differences (and the Hessian by hand).
"""

import numpy as np
import pytest
from gradcheck import check_grad, numerical_grad, numerical_hessian, numerical_jvp

import adgen


def prints_and_counts(x):
    xs = (np.sum(x), 2.0)
    print(*xs, sep=", ")
    return np.sum(x * x) + len(*(x,))


def scaled_by_a_count(x):
    return np.sum(x * x) * len(*(x,))


def count_as_exponent(x):
    n = len(*[x])
    return np.sum(x ** n)


def count_as_a_float(x):
    return float(len(*(x,))) * np.sum(x * x)


def len_in_a_variable(x):
    f = len
    return np.sum(x * x) + f(x)


def exponent_from_a_variable(x):
    count = len
    return np.sum(x ** count(x))


def count(x):
    return len(x)


def exponent_from_a_helper(x):
    n = count(x)  # an int: 0.0 * log(-0.8) made the jvp nan, and the Hessian's first row
    return np.sum(x ** n)


def power_from_a_helper(x):
    n = count(x)  # np.power's jvp, read from its vjp, took xlogy for the exponent: nan
    return np.sum(np.power(x, n))


def power_from_a_variable(x):
    count_ = len
    return np.sum(np.power(x, count_(x)))


FUNCTIONS = [len, np.sum]


def from_a_list(x):
    fs = FUNCTIONS
    return fs[0](x) * fs[1](x * x)


def only_the_count(x):
    return len(*(x,))


X = np.array([0.3, -0.8, 1.1])
V = np.array([1.0, -0.5, 2.0])
# the Hessians by hand (n = 3 elements)
HESSIANS = {
    prints_and_counts: 2.0 * np.eye(3), scaled_by_a_count: 6.0 * np.eye(3),
    count_as_exponent: np.diag(6.0 * X), count_as_a_float: 6.0 * np.eye(3),
    len_in_a_variable: 2.0 * np.eye(3), exponent_from_a_variable: np.diag(6.0 * X),
    from_a_list: 6.0 * np.eye(3), only_the_count: np.zeros((3, 3)),
    exponent_from_a_helper: np.diag(6.0 * X), power_from_a_helper: np.diag(6.0 * X),
    power_from_a_variable: np.diag(6.0 * X),
}


@pytest.mark.parametrize("f", list(HESSIANS), ids=lambda f: f.__name__)
def test_forward_mode(f):
    out, dot = adgen.jvp(f, (X.copy(),), (V.copy(),))
    assert out == f(X.copy())
    if f is only_the_count:  # an int: a zero tangent (central differences see no float)
        assert dot == 0.0
        np.testing.assert_array_equal(adgen.jacfwd(f)(X.copy()), np.zeros(3))
        return
    np.testing.assert_allclose(dot, numerical_jvp(f, (X.copy(),), (V.copy(),))[0],
                               rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(adgen.jacfwd(f)(X.copy()), numerical_grad(f, (X.copy(),), 0),
                               rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("f", list(HESSIANS), ids=lambda f: f.__name__)
def test_hessians(f):
    h = adgen.hessian(f)(X.copy())
    np.testing.assert_allclose(h, HESSIANS[f], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h, numerical_hessian(f, X.copy()), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("f", [len_in_a_variable, exponent_from_a_variable, from_a_list],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_gradients_through_a_builtin_in_a_variable(f, mutation):
    check_grad(f, (X.copy(),), mutation=mutation)
