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
negative ``x`` until session 25 (the exponent's term, 0.0 * log of a negative base), and so
was ``x ** float(n)`` (a helper whose result has no derivative gives a constant now). All
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


def exponent_as_a_float(x):
    n = count(x)  # an int made a float: its zero tangent's term 0.0 * log(-0.8) was nan
    return np.sum(x ** float(n))


def mean_of(x):
    return np.sum(x) / len(x)


def scaled_by_a_mean(x):
    # the look-alike: a helper whose result has a derivative keeps it
    m = mean_of(x)
    return np.sum(x ** 2) * float(m)


class Shape:
    def rows(self, x):
        return x.shape[0]


SHAPE = Shape()


def exponent_from_a_method(x):
    n = SHAPE.rows(x)  # a method returning a shape: an int, float(n) its exponent
    return np.sum(x ** float(n))


size_of = lambda v: len(v)  # noqa: E731 - a module-level lambda


def exponent_from_a_lambda(x):
    return np.sum(x ** float(size_of(x)))


def filled(x):
    out = np.zeros_like(x)  # made without a derivative, then written with one
    out[x < 0] = np.sin(x[x < 0])
    return out


def scaled_by_a_filled_buffer(x):
    # the look-alike: a helper writing its zeros_like buffer returns a derivative
    return np.sum(filled(x) * x)


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
    power_from_a_variable: np.diag(6.0 * X), exponent_as_a_float: np.diag(6.0 * X),
    exponent_from_a_method: np.diag(6.0 * X), exponent_from_a_lambda: np.diag(6.0 * X),
    scaled_by_a_filled_buffer: np.diag(np.where(X < 0, 2 * np.cos(X) - X * np.sin(X), 0.0)),
    scaled_by_a_mean: 2.0 * np.mean(X) * np.eye(3) + (np.outer(2 * X, np.ones(3)) +
                                                      np.outer(np.ones(3), 2 * X)) / 3.0,
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


@pytest.mark.parametrize("f", [len_in_a_variable, exponent_from_a_variable, from_a_list,
                               exponent_as_a_float, exponent_from_a_method,
                               exponent_from_a_lambda, scaled_by_a_filled_buffer,
                               scaled_by_a_mean], ids=lambda f: f.__name__)
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_gradients_through_a_builtin_in_a_variable(f, mutation):
    check_grad(f, (X.copy(),), mutation=mutation)
