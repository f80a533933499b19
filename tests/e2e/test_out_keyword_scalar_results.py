"""A NumPy function given ``out=`` that returns a new scalar instead of its ``out`` array.

``np.dot(a, b, out=r)`` with a 0-d ``r`` (a view of an element of an array the result reads)
returns a NumPy scalar, not ``r``; so do ``ndarray.dot``, ``np.round``, ``np.clip``,
``np.sum`` and the other non-ufunc functions of a NumPy scalar operand. adgen bound ``r`` to the
call's result, a fresh scalar, and the write into the array had no gradient: silently wrong
(grad gave [0.46, -0.8, 1.8, 0] for [0.414, -0.754, 1.938, -0.184], both mutation policies).
The call's result is now stored into ``out`` (``r[...] = result``)."""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from tests.gradcheck import central, check_grad, numerical_hessian

X = np.array([0.3, -0.4, 0.9, 0.1])


def into_first(x, y):
    """A helper writing x[:2] . x[2:] over y[0] through a 0-d view."""
    r = y[0:1].reshape(())
    np.dot(x[:2], x[2:], out=r)
    return y


def with_dot(x):
    y = np.zeros(3)
    y[:] = x[:3]
    into_first(x, y)
    return np.sum(y ** 2) + y[0] * x[1]


def with_method_dot(x):
    y = x[:3] * 1.0
    r = y[0:1].reshape(())
    x[:2].dot(x[2:], out=r)
    return np.sum(y ** 2) + y[0] * x[1]


def with_round(x):
    y = x[:3] * 1.0
    r = y[1:2].reshape(())
    np.round(np.sum(x) * x[1] + 3.0 * x[0], 0, out=r)  # a NumPy scalar operand
    return np.sum(y ** 2) * x[3]


def with_clip(x):
    y = x[:3] * 1.0
    r = y[0:1].reshape(())
    np.clip(x[1] * x[3], -0.5, 0.5, out=r)
    return np.sum(np.sin(y) * y) + y[0] * x[1]


def with_scalar_sum(x):
    y = np.zeros(2)
    y[:] = x[:2]
    r = y[1:].reshape(())
    np.sum(x[0] * x[3], out=r)  # the sum of a NumPy scalar is a new scalar
    return np.sum(y ** 3)


class Accumulator:
    def __init__(self, scale):
        self.scale = scale

    def step(self, x):
        buf = x[1:] * self.scale
        r = buf[2:].reshape(())
        np.dot(x[:3], x[1:], out=r)
        return np.sum(buf * x[:3])


def with_class(x):
    return Accumulator(1.5).step(x)


with_lambda = lambda x: with_dot(x * x)  # noqa: E731


CASES = [with_dot, with_method_dot, with_round, with_clip, with_scalar_sum, with_class,
         with_lambda]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("mutation", ["strict", None])
def test_grad_matches_central_differences(f, mutation):
    got = check_grad(f, (X.copy(),), mutation=mutation, strict_must_compute=True)
    np.testing.assert_allclose(got, central(f, X.copy()), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_jvp_matches_central_differences(f):
    v = np.array([0.2, -1.0, 0.5, 0.7])
    _, t = adgen.jvp(f, (X.copy(),), (v,))
    want = (f(X + 1e-6 * v) - f(X - 1e-6 * v)) / 2e-6
    assert np.isclose(t, want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", [with_dot, with_method_dot, with_class, with_lambda],
                         ids=lambda f: f.__name__)
def test_hessian_matches_second_differences(f):
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), numerical_hessian(f, X.copy()),
                               rtol=1e-4, atol=1e-5)

