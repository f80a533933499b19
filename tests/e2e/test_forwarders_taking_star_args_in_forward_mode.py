"""A forwarder taking ``*args, **kwargs`` called with a constant keyword in forward mode:
``def wrapped(x): return forwarding(x, s=3.0)`` with ``def forwarding(*args, **kwargs):
return scaled(*args, **kwargs)``. jvp, jacfwd and hessian refused it ('passing values with
a derivative by keyword to scaled with **kwargs') although ``s`` is a constant and grad
took it: the jvp of a function with ``*args`` was compiled with every parameter given a
tangent. It is now compiled for the arguments that carry one, ``*args`` counted as one.
Against the hand formula and central differences; a keyword that does carry a derivative
(refused until session 28) against central differences."""

import numpy as np
import pytest
from gradcheck import numerical_grad, numerical_hessian, numerical_jvp

import adgen

X = np.array([0.3, -0.7, 1.1])
V = np.array([1.0, -0.5, 2.0])


def scaled(x, s=1.0):
    return np.sum(s * x ** 2 + np.sin(x))


def forwarding(*args, **kwargs):
    return scaled(*args, **kwargs)


def wrapped(x):
    return forwarding(x, s=3.0)


def scaled_power(x, p=2):
    return np.sum(x ** p)


def power_forwarding(*args, **kwargs):
    return scaled_power(*args, **kwargs)


def wrapped_power(x):
    # a constant exponent: a zero tangent of p gave p_dot * log(x) * x ** p = nan at x < 0
    return power_forwarding(x, p=3.0)


def carries_one(x):
    return forwarding(x, s=np.sum(x))


CASES = {wrapped: (lambda x: 6.0 * x + np.cos(x), lambda x: np.diag(6.0 - np.sin(x))),
         wrapped_power: (lambda x: 3.0 * x ** 2, lambda x: np.diag(6.0 * x))}


@pytest.mark.parametrize("f", list(CASES), ids=lambda f: f.__name__)
def test_jvp_jacfwd_hessian(f):
    grad, hess = CASES[f]
    out, dot = adgen.jvp(f, (X,), (V,))
    assert out == f(X)
    np.testing.assert_allclose(dot, grad(X) @ V, rtol=1e-12)
    np.testing.assert_allclose(dot, numerical_jvp(f, (X,), (V,))[0], rtol=1e-6)
    np.testing.assert_allclose(adgen.jacfwd(f)(X), grad(X), rtol=1e-12)
    np.testing.assert_allclose(adgen.jacfwd(f)(X), numerical_grad(f, (X,), 0), rtol=1e-6)
    H = adgen.hessian(f)(X)
    np.testing.assert_allclose(H, hess(X), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(H, numerical_hessian(f, X), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(adgen.grad(f)(X), grad(X), rtol=1e-12)


def test_a_keyword_with_a_derivative():
    # refused before session 28 ("by keyword"): the keyword's tangent follows the
    # positional ones (tests/e2e/test_keyword_dicts_with_derivatives_in_forward_mode.py)
    out, dot = adgen.jvp(carries_one, (X,), (V,))
    assert out == carries_one(X)
    np.testing.assert_allclose(dot, numerical_jvp(carries_one, (X,), (V,))[0], rtol=1e-6)
    np.testing.assert_allclose(adgen.hessian(carries_one)(X),
                               numerical_hessian(carries_one, X), rtol=1e-4, atol=1e-5)
