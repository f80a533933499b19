"""``s[()]`` and ``s[...]`` of a value that is a NumPy scalar or a 0-d array, as code turning a
reduction into a scalar writes it (``np.sum(r ** 2)[()]``, ``np.array(v)[()]``): the pullback
added the cotangent into ``s_bar[()]``, but the adjoint of a NumPy scalar (and of a 0-d array
made in the function, rebuilt from its shape) is a Python float, so the gradient raised
TypeError: 'float' object is not subscriptable (grad, and the hessian of such code). The
whole index of such a value is the value itself: its adjoint is now added as it is."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

X = np.array([0.3, -0.7, 1.1, 0.5])
POLICIES = ["save", "strict"]


def sum_of_squares(x):
    return np.sum(x ** 2)[()]


def ellipsis_and_empty(x):
    s = np.sum(x * x)
    t = s[...] + s[()]
    return t * np.max(x)[()]


def zero_d_made_here(x):
    a = np.array(np.sum(np.sin(x)))
    return a[()] * 2.0 + np.dot(x, x)[()]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("fn", [sum_of_squares, ellipsis_and_empty, zero_d_made_here])
def test_grad(fn, policy):
    got = adgen.grad(fn, mutation=policy)(X.copy())
    assert_grad_close(got, numerical_grad(fn, (X.copy(),), 0))


def test_by_hand_and_hessian():
    assert_grad_close(adgen.grad(sum_of_squares)(X.copy()), 2.0 * X)
    assert_grad_close(adgen.hessian(sum_of_squares)(X.copy()), 2.0 * np.eye(4))
    want = 2.0 * np.diag(-np.sin(X)) + 2.0 * np.eye(4)
    assert_grad_close(adgen.hessian(zero_d_made_here)(X.copy()), want)


def scaled(a, x):
    return a[()] * np.sum(x) + a[...] ** 2


@pytest.mark.parametrize("policy", POLICIES)
def test_a_zero_d_argument_keeps_its_shape(policy):
    a = np.array(1.5)
    ga, gx = adgen.grad(scaled, argnums=(0, 1), mutation=policy)(a, X.copy())
    assert isinstance(ga, np.ndarray) and ga.shape == ()
    assert_grad_close(ga, np.array(np.sum(X) + 3.0))
    assert_grad_close(gx, np.full(4, 1.5))
