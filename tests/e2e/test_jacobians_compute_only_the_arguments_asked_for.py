"""jacrev (and jacobian, which takes it for more outputs than inputs) computes the
cotangents of the arguments in ``argnums`` only: no work the user did not ask for, and none
of its warnings.

Before: ``jacrev(g)(x, y)`` of ``g = x * np.sqrt(y)`` with a zero in ``y`` warned "divide by
zero encountered in divide" and "invalid value": the pullback computed ``y``'s cotangent
``1 / (2 sqrt(y))`` though only ``x``'s was asked for (JAX computes none there).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import adgen
from tests.gradcheck import numerical_grad


def scaled_root(x, y):
    return x * np.sqrt(y)


def logged(x, y):
    return np.log(y) * x + x ** 2


X = np.array([1.0, 2.0])
Y = np.array([0.0, 4.0])


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("jac", ["jacrev", "jacobian"])
def test_no_warning_from_an_argument_not_differentiated(jac, mutation):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = getattr(adgen, jac)(scaled_root, mutation=mutation)(X, Y)
    np.testing.assert_allclose(got, np.diag(np.sqrt(Y)))  # d(x sqrt y)/dx by hand
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # log of y < 0: the user's own warns
        y = np.array([0.5, 3.0])
        got = getattr(adgen, jac)(logged, mutation=mutation)(X, y)
    want = np.stack([numerical_grad(lambda a, i=i: logged(a, y)[i], (X,), 0) for i in range(2)])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_both_arguments_when_both_are_asked_for():
    y = np.array([0.5, 4.0])
    jx, jy = adgen.jacrev(scaled_root, argnums=(0, 1))(X, y)
    np.testing.assert_allclose(jx, np.diag(np.sqrt(y)))
    np.testing.assert_allclose(jy, np.diag(X / (2 * np.sqrt(y))))
    jy = adgen.jacrev(scaled_root, argnums=1)(X, y)
    np.testing.assert_allclose(jy, np.diag(X / (2 * np.sqrt(y))))


class Layer:
    def __init__(self, k):
        self.k = k

    def apply(self, x, y):
        return self.k * x * np.sqrt(y)


def test_a_method_and_keywords():
    y = np.array([0.5, 4.0])
    np.testing.assert_allclose(adgen.jacrev(Layer(3.0).apply)(X, y), np.diag(3.0 * np.sqrt(y)))
    np.testing.assert_allclose(adgen.jacrev(scaled_root)(X, y=y), np.diag(np.sqrt(y)))
