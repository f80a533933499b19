"""An RNN cell built inside the function, its state set to None in ``__init__`` and to an
array by a ``reset()`` method that reads no value with a derivative, then stepped:

    c = RNNCell(); c.reset()
    y = c.step(x)            # self.h = np.tanh(self.W @ self.h + x)

Problem a user met: jvp and hessian raised NumPy's "matmul: Input operand 1 does not have
enough dimensions" from adgen's code. ``reset`` is compiled for a constant object (its
tangent a symbolic zero), whose tangent store of ``self.h`` was left out, so the tangent of
``h`` stayed the float zero made for None. A store into such a parameter's attribute now
sets the tangent object's attribute to a zero of the value stored.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

X = np.array([0.7, -1.3, 2.1, 0.4])
W0 = np.random.default_rng(1).normal(size=(4, 4)) * 0.3


class RNNCell:
    def __init__(self):
        self.W = W0
        self.h = None

    def reset(self):
        self.h = np.zeros(4)

    def step(self, x):
        self.h = np.tanh(self.W @ self.h + x)
        return self.h


def one_step(x):
    c = RNNCell()
    c.reset()
    return np.sum(c.step(x) ** 2)


def three_steps(x):
    c = RNNCell()
    c.reset()
    outs = [c.step(x * (t + 1)) for t in range(3)]
    return np.sum(np.stack(outs) ** 2)


def reset_between(x):
    c = RNNCell()
    c.reset()
    a = np.sum(c.step(x))
    c.reset()
    return a * np.sum(c.step(2.0 * x) ** 2)


FUNCTIONS = [one_step, three_steps, reset_between]


def numerical(f, x, eps=1e-6):
    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(x.size)])


@pytest.mark.parametrize("f", FUNCTIONS)
def test_jvp(f):
    v = np.array([1.0, -0.5, 0.25, 2.0])
    _, t = adgen.jvp(f, (X,), (v,))
    assert np.isclose(t, numerical(f, X) @ v, rtol=1e-6)


@pytest.mark.parametrize("f", FUNCTIONS)
def test_hessian(f):
    g = adgen.grad(f)
    want = np.array([(g(X + 1e-5 * e) - g(X - 1e-5 * e)) / 2e-5 for e in np.eye(4)])
    np.testing.assert_allclose(adgen.hessian(f)(X), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", FUNCTIONS)
def test_gradient(f, mutation):
    check_grad(f, (X,), mutation=mutation)
