"""``functools.reduce`` over a list of constants a function hands to an argument adgen's rule
does not differentiate in (``np.linalg.norm``'s ``ord``): a sum of p-norms
``reduce(lambda a, p: a + np.linalg.norm(x, ord=p), [1.0, 3.0], 0.0)`` was falsely refused
("the argument ord of numpy.linalg.norm() has a derivative") until session 29: adgen's
reference of reduce was compiled for any arguments, so the items it handed to the lambda
were taken to carry a derivative. The caller now compiles the reference for the arguments
its call passes with one (transforms/callee_activity.py). Gradients against central
differences under both policies and by hand, jvp and hessian; an order computed from the
input stays refused at the user's line."""

import functools

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, check_jvp, numerical_hessian

import adgen

X = np.array([1.5, -2.0, 0.7])
V = np.array([0.3, 1.0, -0.4])
ORDERS = [1.0, 3.0]


def summed_norms(x):
    return functools.reduce(lambda a, p: a + np.linalg.norm(x, ord=p), [3.0], 0.0)


def sines_normed(x):
    return functools.reduce(lambda a, p: a + np.linalg.norm(np.sin(x), ord=p), [2.0, 4.0],
                            0.0)


def summed_norms_of_a_global_list(x):
    # the orders a module-level list; no initial value: the first item starts the fold (a
    # fold of values with a derivative in the same function would compile the reference
    # for items with one, and refuse: here in a helper)
    norms = [np.linalg.norm(x * 2.0, ord=p) for p in ORDERS]
    return functools.reduce(lambda a, b: a * b, norms) + sines_normed(x)


def weighted(acc, p, x):
    return acc + np.linalg.norm(x, ord=p) / p


def with_a_function_of_yours(x):
    return functools.reduce(lambda a, p: weighted(a, p, x ** 2), (1.0, 2.0, 3.0), 0.5)


CASES = [summed_norms, summed_norms_of_a_global_list, with_a_function_of_yours]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_central_differences(f, mutation):
    check_grad(f, (X.copy(),), mutation=mutation, strict_must_compute=True)


def test_by_hand():
    # d ||x||_3 / dx = sign(x) |x|^2 / ||x||_3^2
    n3 = np.sum(np.abs(X) ** 3) ** (1 / 3)
    assert_grad_close(adgen.grad(summed_norms)(X.copy()), np.sign(X) * X ** 2 / n3 ** 2)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_jvp(f):
    check_jvp(f, (X.copy(),), (V,))


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_hessian(f):
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), numerical_hessian(f, X.copy()),
                               rtol=1e-4, atol=1e-5)


def order_with_a_derivative(x):
    return functools.reduce(lambda a, p: a + np.linalg.norm(x, ord=p), [x[0] * 0.0 + 3.0],
                            0.0)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_an_order_with_a_derivative_is_refused(mutation):
    with pytest.raises(adgen.UnsupportedError, match="ord") as info:
        adgen.grad(order_with_a_derivative, mutation=mutation)(X.copy())
    assert info.value.location.line == order_with_a_derivative.__code__.co_firstlineno + 1
