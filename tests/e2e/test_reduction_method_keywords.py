"""The method form of a reduction with ``where=``, ``initial=`` or ``dtype=``: ``x.sum(where=m)``,
``x.mean(where=m)``, ``x.prod(where=m)``, ``x.max(where=m, initial=v)``. The function form
worked (transforms/reduction_keywords.py); the method form was refused ("numpy.sum() got
unexpected keyword 'where'")."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import central

import adgen

POLICIES = ("save", "strict")
MASK = np.array([[True, False, True], [False, True, True]])
X = np.array([[0.4, -1.1, 2.3], [1.5, 0.7, -0.2]])


def masked_losses():
    return [
        lambda x: x.sum(where=MASK),
        lambda x: (x ** 2).mean(where=MASK),
        lambda x: np.sum(x.mean(axis=0, where=MASK) ** 2),
        lambda x: np.sum(np.sin(x).sum(axis=1, keepdims=True, where=MASK) ** 2),
        lambda x: x.prod(where=MASK),
        lambda x: x.max(where=MASK, initial=-10.0) + x.min(where=MASK, initial=10.0),
        lambda x: x.sum(initial=2.0) * x.prod(axis=1, initial=0.5).sum(),
        lambda x: x.sum(dtype=np.float64, where=MASK),
    ]


@pytest.mark.parametrize("k", range(8))
@pytest.mark.parametrize("policy", POLICIES)
def test_method_form_against_central_differences(k, policy):
    f = masked_losses()[k]
    g = adgen.grad(f, mutation=policy)(X)
    assert np.allclose(g, central(f, X), atol=1e-5)


@pytest.mark.parametrize("k", range(8))
def test_method_form_in_forward_mode(k):
    f = masked_losses()[k]
    t = np.array([[1.0, 0.5, -0.3], [0.2, -1.0, 0.7]])
    out, out_dot = adgen.jvp(f, (X,), (t,))
    ref = (f(X + 1e-6 * t) - f(X - 1e-6 * t)) / 2e-6
    assert np.isclose(out, f(X)) and np.isclose(out_dot, ref, atol=1e-5)


@pytest.mark.parametrize("policy", POLICIES)
def test_a_model_with_a_mask_attribute(policy):
    class MaskedMSE:
        def __init__(self, y, mask):
            self.y = y
            self.mask = mask

        def __call__(self, pred):
            r = (pred - self.y) ** 2
            return r.mean(where=self.mask)

    loss = MaskedMSE(np.ones((2, 3)), MASK)
    g = adgen.grad(loss, mutation=policy)(X)
    assert np.allclose(g, central(loss, X), atol=1e-5)
    g2 = adgen.grad(lambda p: 2.0 * loss(p), mutation=policy)(X)
    assert np.allclose(g2, 2.0 * central(loss, X), atol=1e-5)


def test_a_mask_the_gradient_runs_with_is_the_one_the_call_passes():
    def loss(x, m):
        return (x * x).sum(where=m)

    for m in (MASK, ~MASK):
        assert np.allclose(adgen.grad(loss)(X, m), np.where(m, 2 * X, 0.0))
