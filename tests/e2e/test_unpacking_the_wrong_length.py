"""``a, b = seq`` with a ``seq`` of another length raises ValueError, as the plain call does.
adgen indexed the items one by one, so ``w, b = params`` with three parameters silently used
the first two: the value and the gradient of a call that Python refuses."""

from __future__ import annotations

import numpy as np
import pytest

import adgen


def affine_loss(params, x):
    W, b = params
    return np.sum(np.tanh(x @ W + b))


def pairs_loss(pairs):
    s = 0.0
    for p in pairs:
        a, b = p
        s = s + a * b
    return s


PARAMS3 = (np.ones((2, 3)), np.ones(3), np.ones(3))
X = np.ones((4, 2))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_grad_raises_what_the_plain_call_raises(mutation):
    with pytest.raises(ValueError):
        affine_loss(PARAMS3, X)
    with pytest.raises(ValueError, match="values to unpack"):
        adgen.grad(affine_loss, mutation=mutation)(PARAMS3, X)
    with pytest.raises(ValueError, match="values to unpack"):
        adgen.grad(pairs_loss, mutation=mutation)([np.array([1.0, 2.0]), np.array([1.0, 2.0, 3.0])])


def test_forward_mode_raises_too():
    with pytest.raises(ValueError, match="values to unpack"):
        adgen.jvp(lambda W: affine_loss((W, np.ones(3), np.ones(3)), X), (np.ones((2, 3)),),
                  (np.ones((2, 3)),))


def test_the_right_length_is_differentiated():
    params = (np.full((2, 3), 0.1), np.full(3, 0.2))
    g = adgen.grad(affine_loss)(params, X)
    t = np.tanh(X @ params[0] + params[1])
    np.testing.assert_allclose(g[1], np.sum(1 - t ** 2, axis=0))
    np.testing.assert_allclose(adgen.grad(pairs_loss)([np.array([1.0, 2.0]), np.array([3.0, 4.0])]),
                               [np.array([2.0, 1.0]), np.array([4.0, 3.0])])
