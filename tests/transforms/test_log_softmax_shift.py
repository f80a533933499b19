"""analyses.shift_invariance, the log-softmax: ``q = s1 - np.log(np.sum(np.exp(s1), axis=k,
keepdims=True))`` with ``s1 = s - m`` (or ``s -= m``) does not depend on ``m``, so the row
maximum gets no pullback (no ``max_vjp``, no copy of the logits the shift overwrites).

Gradients against central differences of the plain function under both policies (check_grad
also compares the arguments' final contents). The look-alikes (the exponential written over
the logits with ``out=``, the log or the row sums read again, logsumexp adding ``m`` back, a
shift along another axis) keep the maximum's derivative and stay right.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

POLICIES = ["save", "strict"]
RNG = np.random.default_rng(3)
W = 0.5 * RNG.standard_normal((4, 3))
X = RNG.standard_normal((6, 4))
Y = np.eye(3)[RNG.integers(0, 3, 6)]


def nll(W, X, Y):
    """A classifier's negative log-likelihood, written as in docs/numba.md."""
    z = X @ W
    z -= z.max(axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


def functional(W, X, Y):
    z = X @ W
    s = z - np.max(z, axis=-1, keepdims=True)
    return -np.sum(Y * (s - np.log(np.exp(s).sum(axis=1, keepdims=True))))


class Classifier:
    def __init__(self, X, Y):
        self.X, self.Y = X, Y

    def loss(self, W):
        logits = self.X @ W
        logits = logits - logits.max(axis=1, keepdims=True)
        log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        return -np.sum(self.Y * log_probs)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", [nll, functional])
def test_the_shift_has_no_pullback(f, policy):
    check_grad(f, (W, X, Y), argnums=0, mutation=policy)
    code = adgen.source(f, W, X, Y, mutation=policy)
    assert "max_vjp" not in code and "copy_when_read" not in code, code


@pytest.mark.parametrize("policy", POLICIES)
def test_a_method(policy):
    g = adgen.grad(Classifier(X, Y).loss, mutation=policy)(W.copy())
    expected = check_grad(lambda w: Classifier(X, Y).loss(w), (W,), mutation=policy)
    np.testing.assert_allclose(g, expected, rtol=1e-12, atol=1e-15)


def exp_over_the_logits(W, X, Y):
    """The exponential written over the shifted logits: the subtraction reads exp(s1)."""
    z = X @ W
    z -= z.max(axis=1, keepdims=True)
    t = np.sum(np.exp(z, out=z), axis=1, keepdims=True)
    return -np.sum(Y * (z - np.log(t)))


def log_read_again(W, X, Y):
    z = X @ W
    s = z - z.max(axis=1, keepdims=True)
    lg = np.log(np.sum(np.exp(s), axis=1, keepdims=True))
    return -np.sum(Y * (s - lg)) + np.sum(lg)


def sums_read_again(W, X, Y):
    z = X @ W
    s = z - z.max(axis=1, keepdims=True)
    t = np.sum(np.exp(s), axis=1, keepdims=True)
    return -np.sum(Y * (s - np.log(t))) + np.sum(t)


def logsumexp(W, X, Y):
    z = X @ W
    m = z.max(axis=1, keepdims=True)
    s = z - m
    return np.sum(m + np.log(np.sum(np.exp(s), axis=1, keepdims=True)))


def other_axis(W, X, Y):
    z = X @ W
    s = z - z.max(axis=0, keepdims=True)
    return -np.sum(Y * (s - np.log(np.sum(np.exp(s), axis=1, keepdims=True))))


NEAR = [exp_over_the_logits, log_read_again, sums_read_again, logsumexp, other_axis]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", NEAR, ids=[f.__name__ for f in NEAR])
def test_look_alikes_keep_the_maximum(f, policy):
    check_grad(f, (W, X, Y), argnums=0, mutation=policy)
    if policy == "save":
        assert "max_vjp" in adgen.source(f, W, X, Y, mutation=policy)
