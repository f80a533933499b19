"""Losses written with scipy.special functions that had no rule before session 29 (a
MissingRuleError at the line): a logistic regression with log_expit, a robust fit with huber
and pseudo_huber (the scale differentiated too), a Box-Cox likelihood in its lmbda, and
loggamma, rgamma, exprel, cosm1 and exp1 in one model. Gradients under both policies, jvps
and hessians against central differences."""

import numpy as np
import pytest

sp = pytest.importorskip("scipy.special")

import adgen  # noqa: E402
from tests.gradcheck import central, numerical_hessian  # noqa: E402

X = np.array([[0.3, -1.2], [1.1, 0.4], [-0.7, 0.9], [2.0, -0.3], [0.2, 0.8]])
Y = np.array([1.0, 0.0, 1.0, 0.0, 1.0])
DATA = np.array([0.4, 1.3, 2.2, 0.9, 3.1])
W0 = np.array([0.7, -0.4, 0.3])


def logistic(w):
    z = X @ w[:2] + w[2]
    return -np.sum(Y * sp.log_expit(z) + (1.0 - Y) * sp.log_expit(-z))


def robust(w):
    r = X @ w[:2] - DATA
    return np.sum(sp.huber(0.5, r)) + np.sum(sp.pseudo_huber(np.abs(w[2]) + 0.2, r))


def boxcox_likelihood(w):
    lam = w[0]
    z = sp.boxcox(DATA, lam) + sp.boxcox1p(DATA * w[1] ** 2, 0.3)
    return np.sum((z - np.mean(z)) ** 2) - (lam - 1.0) * np.sum(np.log(DATA))


class Special:
    """The rest, read through a method of an object holding a scale."""

    def __init__(self, scale):
        self.scale = scale

    def value(self, w):
        t = self.scale * w
        return (np.sum(sp.loggamma(t + 2.0)) + np.sum(sp.rgamma(t + 1.5)) +
                np.sum(sp.exprel(t)) + np.sum(sp.cosm1(t)) + np.sum(sp.exp1(np.abs(t) + 0.3)))


FUNCTIONS = [logistic, robust, boxcox_likelihood, Special(1.3).value]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", FUNCTIONS)
def test_gradient_and_jvp(f, mutation):
    ref = central(f, W0)
    np.testing.assert_allclose(adgen.grad(f, mutation=mutation)(W0.copy()), ref,
                               rtol=1e-6, atol=1e-7)
    v = np.array([0.3, -0.8, 1.1])
    _, t = adgen.jvp(f, (W0.copy(),), (v,))
    assert t == pytest.approx(float(np.dot(ref, v)), rel=1e-6, abs=1e-7)


@pytest.mark.parametrize("f", FUNCTIONS)
def test_hessian(f):
    np.testing.assert_allclose(adgen.hessian(f)(W0.copy()), numerical_hessian(f, W0),
                               rtol=1e-4, atol=1e-5)
