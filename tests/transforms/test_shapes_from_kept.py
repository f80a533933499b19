"""reverse_forward.kept: a shape the pullback needs is read at the forward's return from an
array the forward keeps (or takes) anyway where analyses.shapes proves the shapes equal, so
the array it is the shape of is folded into its reader instead of living until the return.

Gradients against central differences under both policies; the look-alikes (an operand that
broadcasts, a shape known only at run time) keep their own shape and stay right.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

POLICIES = ["save", "strict"]
RNG = np.random.default_rng(11)
X = RNG.standard_normal((40, 6))
W = 0.1 * RNG.standard_normal(6)
Y = (RNG.random(40) < 0.5).astype(float)


def logreg(w, X, y):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def broadcast_row(w, X, y):
    """``np.log(p)`` times a row that broadcasts: the product's shape is not ``p``'s."""
    p = 1.0 / (1.0 + np.exp(-(X * w)))
    return np.sum(y[:6] * np.log(p))


class Model:
    def __init__(self, X, y):
        self.X, self.y = X, y

    def loss(self, w):
        p = 1.0 / (1.0 + np.exp(-(self.X @ w)))
        return -np.mean(self.y * np.log(p))


def _forward(f, *args):
    """The forward ``grad(f)`` (argument 0) compiles for these arguments."""
    from adgen.transforms import pipeline
    from adgen.transforms.analyses.kinds import signature

    return pipeline.compile_function(f, wrt=(0,), sig=signature(args)).own_source.split(
        "_pullback")[0]


@pytest.mark.parametrize("policy", POLICIES)
def test_the_log_is_not_kept_for_its_shape(policy):
    check_grad(logreg, (W, X, Y), argnums=0, mutation=policy)
    fwd = _forward(logreg, W, X, Y)
    assert "np.log(p)" in fwd and "p.shape" in fwd, fwd  # folded, p's shape stands for it


@pytest.mark.parametrize("policy", POLICIES)
def test_look_alikes_keep_their_own_shape(policy):
    check_grad(broadcast_row, (W, X, Y), argnums=0, mutation=policy)
    check_grad(logreg, (W[:1], X[:, :1], Y), argnums=0, mutation=policy)
    # the broadcast product's shape is not p's: it keeps its own
    assert re.search(r"\bt\d+\.shape, w\)\)", _forward(broadcast_row, W, X, Y))


@pytest.mark.parametrize("policy", POLICIES)
def test_a_method(policy):
    m = Model(X, Y)
    g = adgen.grad(m.loss, mutation=policy)(W.copy())
    expected = check_grad(lambda w: Model(X, Y).loss(w), (W,), mutation=policy)
    np.testing.assert_allclose(g, expected, rtol=1e-12, atol=1e-15)
