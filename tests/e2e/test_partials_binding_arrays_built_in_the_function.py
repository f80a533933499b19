"""``functools.partial`` of a helper binding an array the function builds without a
derivative (``partial(helper, b=np.ones(3))``, a ``np.linspace`` bias, ``np.zeros(n)``):
forward mode (jvp) refused it at compile time ("functools.partial of a value with a
derivative": the analyses give such an array a tangent, since a call through the partial
might write it). The bound values' tangents are now checked when the code runs: zero ones
lose nothing; a value with a derivative (``b=u ** 2``) is still refused, at the user's line.
Reverse mode and hessian took them already."""
import functools

import numpy as np
import pytest

import adgen
from tests.gradcheck import numerical_grad

U = np.array([0.3, -0.7, 1.1])
T = np.array([1.0, -2.0, 0.5])
W = np.array([0.5, -1.0, 2.0])


def layer(x, w=None, b=0.0):
    return np.sum(np.tanh(w * x + b))


def ones_bias(u):
    h = functools.partial(layer, b=np.ones(3))
    return h(u, W)


def spaced_bias(u):
    bias = np.linspace(0.0, 1.0, 3)
    act = functools.partial(layer, w=W, b=bias)
    return act(u) + act(2.0 * u)


def zero_bias_of_the_input_size(u):
    n = u.shape[0]
    h = functools.partial(layer, b=np.zeros(n))
    return h(u, W)


LOSSES = [ones_bias, spaced_bias, zero_bias_of_the_input_size]


@pytest.mark.parametrize("f", LOSSES, ids=lambda f: f.__name__)
def test_jvp(f):
    y, dy = adgen.jvp(f, (U,), (T,))
    assert y == pytest.approx(f(U))
    assert dy == pytest.approx(np.dot(numerical_grad(f, (U,), 0), T), rel=1e-6)


def test_jvp_by_hand():
    # sum tanh(w u + 1): derivative along t is sum (1 - tanh^2) w t
    _, dy = adgen.jvp(ones_bias, (U,), (T,))
    assert dy == pytest.approx(np.sum((1 - np.tanh(W * U + 1) ** 2) * W * T), rel=1e-12)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", LOSSES, ids=lambda f: f.__name__)
def test_gradient(f, mutation):
    np.testing.assert_allclose(adgen.grad(f, mutation=mutation)(U),
                               numerical_grad(f, (U,), 0), rtol=1e-6)


@pytest.mark.parametrize("f", LOSSES, ids=lambda f: f.__name__)
def test_hessian(f):
    n = U.size
    H = np.zeros((n, n))
    h = 1e-4
    for i in range(n):
        for j in range(n):
            ei, ej = np.eye(n)[i] * h, np.eye(n)[j] * h
            H[i, j] = (f(U + ei + ej) - f(U + ei - ej) - f(U - ei + ej) + f(U - ei - ej)) \
                / (4 * h * h)
    np.testing.assert_allclose(adgen.hessian(f)(U), H, rtol=1e-4, atol=1e-5)


def bias_with_a_derivative(u):
    h = functools.partial(layer, b=u ** 2)
    return h(u, W)


def test_a_bound_value_with_a_derivative_is_refused_at_the_line():
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.jvp(bias_with_a_derivative, (U,), (T,))
    assert info.value.location.file == __file__
    assert "functools.partial(layer, b=u ** 2)" in info.value.location.source_line
