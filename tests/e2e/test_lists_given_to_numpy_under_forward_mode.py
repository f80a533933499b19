"""A NumPy function given a Python list of values with derivatives, under forward mode (jvp,
jacfwd, and the Hessians that run reverse mode over the jvp code):

    np.add([x[0]], [x[1]]) * w        np.multiply([x[0], x[1]], x[2])
    np.maximum([[x[0], x[1]]], [[x[2]], [x[3]]])        u = [x[0], x[1]]; np.hypot(u, x[2])

NumPy takes the list as an array, but the jvp code applied the rule's template operators to
the lists themselves: ``[a_dot] + [b_dot]`` concatenated (jvp 1.0 where central differences
give 4.0, silently), ``[a_dot, b_dot] * c`` raised TypeError (can't multiply sequence by
non-int), and hessian of np.maximum of nested lists was refused with a message about a +
the user did not write. The jvp code now takes such an operand (a list or tuple display, or
a name bound only to one) and its tangent as arrays. Values against central differences
(jvp, jacfwd) and central differences of adgen-free gradients (hessian, hvp); grad under both
policies.
"""

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

X = np.array([0.3, -0.2, 0.4, 0.7])
V = np.array([1.0, 0.5, -2.0, 0.25])
W = np.array([1.0, 3.0])


def added_singletons(x):
    # shape (1,) + (1,), broadcast against w: the tangent had shape (2,) from the concatenation
    return np.sum(np.add([x[0]], [x[1]]) * W)


def scaled_pair(x):
    return np.sum(np.multiply([x[0], x[1]], x[2]) ** 2 * W)


def pair_then_hypot(x):
    u = [x[0], x[1]]
    return np.sum(np.hypot(u, x[2]) * W)


def larger_of_nested(x):
    return np.sum(np.maximum([[x[0], x[1]]], [[x[2]], [x[3]]]) ** 2)


def squares_and_norm(x):
    pair = (x[1], x[3])
    return np.sum(np.square([x[0], x[1]]) * W) + np.linalg.norm(pair) + np.sum(np.power(pair, 3))


def sum_of_lists(x):
    return np.sum(np.add([x[0], x[1]], [x[2], x[3]]) ** 2 * W)


CASES = [added_singletons, scaled_pair, pair_then_hypot, larger_of_nested, squares_and_norm,
         sum_of_lists]


def numerical_hessian(f, x, h=1e-4):
    return np.stack([(numerical_grad(f, (x + h * e,), 0) - numerical_grad(f, (x - h * e,), 0))
                     / (2 * h) for e in np.eye(x.size)])


@pytest.mark.parametrize("f", CASES)
def test_jvp(f):
    out, tangent = adgen.jvp(f, (X,), (V,))
    np.testing.assert_allclose(out, f(X))
    np.testing.assert_allclose(tangent, numerical_grad(f, (X,), 0) @ V, rtol=1e-6, atol=1e-8)


def test_jvp_by_hand():
    # d/dt sum((x0 + x1) * w) along v = (v0 + v1) * (w0 + w1) = 1.5 * 4
    np.testing.assert_allclose(adgen.jvp(added_singletons, (X,), (V,))[1], 6.0)


@pytest.mark.parametrize("f", CASES)
def test_jacfwd(f):
    np.testing.assert_allclose(adgen.jacfwd(f)(X), numerical_grad(f, (X,), 0), rtol=1e-6,
                               atol=1e-8)


@pytest.mark.parametrize("f", CASES)
def test_hessian(f):
    expected = numerical_hessian(f, X)
    np.testing.assert_allclose(adgen.hessian(f)(X), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(adgen.hvp(f)(X, V), expected @ V, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("f", CASES)
@pytest.mark.parametrize("policy", ["save", "strict"])
def test_gradient(f, policy):
    np.testing.assert_allclose(adgen.grad(f, mutation=policy)(X), numerical_grad(f, (X,), 0),
                               rtol=1e-6, atol=1e-8)
