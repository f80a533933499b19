"""A callable object whose ``__call__`` changes the object, as a normalisation layer keeps
running statistics (``self.running_mean = 0.9 * self.running_mean + 0.1 * mu`` under ``if
self.training``), called by a local name (``norm(x)``) or held in a model's attribute
(``self.norm(x)``), its statistics read afterwards (an evaluation pass).

SILENT WRONG GRADIENT before, under both policies: a zero gradient through the statistics.
Held in an attribute, the caller handed over the adjoint of the model, not of the layer, and
the layer's pullback started from zero (ShadowMap.withdraw now takes the layer's adjoint out
of the model's). Still silently wrong: such an object called by a local name as a statement
(``norm = RunningNorm(3); norm(x)``), which the activity analysis takes for unchanged.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

POLICIES = ["save", "strict"]
X = np.array([[0.4, -1.1, 0.7], [1.3, 0.2, -0.6]])
W = np.array([0.8, -0.5, 1.2])


class RunningNorm:
    def __init__(self, n):
        self.running_mean = np.zeros(n)
        self.training = True

    def __call__(self, x):
        if self.training:
            mu = x.mean(axis=0)
            self.running_mean = 0.9 * self.running_mean + 0.1 * mu
        else:
            mu = self.running_mean
        return x - mu


class Model:
    def __init__(self):
        self.norm = RunningNorm(3)

    def forward(self, x):
        return self.norm(x)


def model_then_eval(w):
    m = Model()
    m.forward(X * w)
    m.norm.training = False
    return np.sum(m.forward(X) ** 2)


def statistics_read(w):
    m = Model()
    m.forward(X * w)
    m.forward(X * w ** 2)
    return np.sum(m.norm.running_mean ** 2)


def layer_called_directly(w):
    m = Model()
    h = m.norm(X * w)
    return np.sum(m.norm.running_mean * np.sum(h ** 2))


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("loss", [model_then_eval, statistics_read, layer_called_directly])
def test_statistics_kept_by_a_callable_object(loss, policy):
    want = numerical_grad(loss, (W,), 0)
    assert np.max(np.abs(want)) > 0.01
    np.testing.assert_allclose(adgen.grad(loss, mutation=policy)(W), want, rtol=1e-6,
                               atol=1e-9)


def test_by_hand():
    # running_mean = 0.1 * mean(X * w, axis=0) = 0.1 * w * mean(X, axis=0) =: 0.1 * w * c;
    # loss = sum(0.01 * w ** 2 * c ** 2): gradient 0.02 * w * c ** 2
    c = X.mean(axis=0)

    def loss(w):
        m = Model()
        m.forward(X * w)
        return np.sum(m.norm.running_mean ** 2)

    np.testing.assert_allclose(adgen.grad(loss)(W), 0.02 * W * c ** 2, rtol=1e-12)


@pytest.mark.parametrize("policy", POLICIES)
def test_a_model_given_as_argument(policy):
    def loss(w, m):
        m.forward(X * w)
        return np.sum(m.norm.running_mean ** 2)

    want = numerical_grad(lambda w: loss(w, Model()), (W,), 0)
    np.testing.assert_allclose(adgen.grad(loss, mutation=policy)(W, Model()), want,
                               rtol=1e-6, atol=1e-9)
