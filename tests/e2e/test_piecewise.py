"""np.piecewise(x, condlist, funclist) is differentiated (since session 27): adgen compiles
NumPy's loop (rules/composites_callbacks.py) and the functions it calls, each given the values
NumPy gives it. It was refused ('calls a Python function that NumPy runs in a loop adgen cannot
see'). A lambda or a function defined inside a function in funclist, the form everyone writes,
is differentiated too since session 28 (it was refused at the user's line: handed over in a
list, its pullback lost its bindings, a NameError), also one reading the enclosing function's
values. Gradients against central differences under both policies, jvp and hessian against
them, a hand formula."""

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, check_jvp, numerical_hessian

import adgen

X = np.array([0.3, -1.2, 0.8, -0.4, 1.7, 2.6])


def huber_branch(t):
    return 0.5 * t * t


def huber_tail(t):
    return np.abs(t) - 0.5


def huber(x):
    return np.sum(np.piecewise(x, [np.abs(x) <= 1.0], [huber_branch, huber_tail]))


BRANCHES = [np.exp, 0.25, huber_branch]


def three_regimes(x):
    # a constant in the middle, the "otherwise" function for x > 0.5 (scaled afterwards)
    y = np.piecewise(x * 1.5, [x < -1.0, np.abs(x) <= 0.5], BRANCHES)
    return np.sum(np.sin(y) * x)


FUNCTIONS = [huber, three_regimes]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_central_differences(f, mutation):
    check_grad(f, (X.copy(),), mutation=mutation, strict_must_compute=True)


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_jvp_and_hessian(f):
    check_jvp(f, (X.copy(),), (np.linspace(-1.0, 1.0, 6),))
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), numerical_hessian(f, X.copy()),
                               rtol=1e-4, atol=1e-5)


def test_hand_formula():
    # huber'(x) = x inside [-1, 1], sign(x) outside
    assert_grad_close(adgen.grad(huber)(X.copy()), np.where(np.abs(X) <= 1.0, X, np.sign(X)))


def with_a_lambda(x):
    return np.sum(np.piecewise(x, [x < 0], [lambda t: t * t, 1.0]))


def with_lambdas(x):
    return np.sum(np.piecewise(x, [x < 0, x >= 0], [lambda t: t ** 2, lambda t: 2 * t]))


def with_a_closure(x):
    c = np.sum(x ** 2)

    def tail(t):
        return np.sin(t) * c

    return np.sum(np.piecewise(x, [x < 0, x >= 0], [lambda t: c * t ** 2, tail]))


LAMBDAS = [with_a_lambda, with_lambdas, with_a_closure]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", LAMBDAS, ids=lambda f: f.__name__)
def test_lambdas_against_central_differences(f, mutation):
    check_grad(f, (X.copy(),), mutation=mutation, strict_must_compute=True)


@pytest.mark.parametrize("f", LAMBDAS, ids=lambda f: f.__name__)
def test_lambdas_jvp_and_hessian(f):
    check_jvp(f, (X.copy(),), (np.linspace(-1.0, 1.0, 6),))
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), numerical_hessian(f, X.copy()),
                               rtol=1e-4, atol=1e-5)


def test_lambdas_hand_formula():
    # d/dx of x ** 2 where x < 0, 2 x elsewhere
    assert_grad_close(adgen.grad(with_lambdas)(X.copy()), np.where(X < 0, 2 * X, 2.0))
