"""A layer whose ``__call__`` updates its running statistics in place, called as ``bn(x)``:

    class BatchNorm:
        def __call__(self, x, train=True):
            if train:
                self.mean *= 0.9; self.mean += 0.1 * x.mean(axis=0) ...

the way a NumPy batch norm is written. ``bn.forward(x)`` was followed (bound_callees writes a
method call on an object the loss builds or is given as a call of the class's function), but
``bn(x)`` went through the run-time dispatch, which refused the write ('called through a
variable, a method or a closure'). The object called is now read as ``bn.__call__(x)``.
Gradients against central differences under both policies; the evaluation call reads the
statistics the training call updated, so the gradient flows through the in-place update.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad, check_jvp

import adgen

POLICIES = ["save", "strict"]


class BatchNorm:
    def __init__(self, n):
        self.mean = np.zeros(n)
        self.var = np.ones(n)

    def __call__(self, x, train=True):
        if train:
            m = x.mean(axis=0)
            v = x.var(axis=0)
            self.mean *= 0.9
            self.mean += 0.1 * m
            self.var *= 0.9
            self.var += 0.1 * v
        else:
            m, v = self.mean, self.var
        out = x - m
        out /= np.sqrt(v + 1e-5)
        return out


def built_in_the_loss(x):
    bn = BatchNorm(x.shape[1])
    h = bn(x)
    h2 = bn(x * 2, train=False)
    return np.sum(h ** 3) + np.sum(h2 ** 2)


def given_to_the_loss(x, bn):
    h = bn(x)
    h2 = bn(x * 2, train=False)
    return np.sum(h ** 3) + np.sum(h2 ** 2) + np.sum(bn.mean)


def stepped(x, bn):
    for _ in range(3):
        x = np.tanh(bn(x))
    return np.sum(bn(x, train=False) ** 2)


X = np.random.default_rng(0).normal(size=(6, 3))


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_batch_norm_built_in_the_loss(mutation):
    check_grad(built_in_the_loss, (X,), mutation=mutation, strict_must_compute=True)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_batch_norm_given_to_the_loss_updates_its_statistics_as_python_does(mutation):
    bn = BatchNorm(3)
    check_grad(given_to_the_loss, (X, bn), mutation=mutation, strict_must_compute=True)
    expected = BatchNorm(3)
    given_to_the_loss(X, expected)
    adgen.grad(given_to_the_loss, mutation=mutation)(X, bn)
    assert np.allclose(bn.mean, expected.mean) and np.allclose(bn.var, expected.var)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_batch_norm_called_in_a_loop(mutation):
    check_grad(stepped, (X, BatchNorm(3)), argnums=0, mutation=mutation,
               strict_must_compute=True)


def test_jvp_of_the_loss_building_it():
    check_jvp(built_in_the_loss, (X,), (np.random.default_rng(1).normal(size=X.shape),))
