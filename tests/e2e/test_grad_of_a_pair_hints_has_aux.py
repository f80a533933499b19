"""``return loss, predictions`` (a loss and what a training script logs beside it), given to
``adgen.grad``: refused, as ``jax.grad`` refuses it, but the hint said only "reduce it (np.sum,
np.mean), or use adgen.vjp", not the keyword made for this. It now names ``has_aux=True``,
which returns (gradient, aux)."""

from __future__ import annotations

import numpy as np
import pytest

import adgen


def loss_and_predictions(w, x, y):
    pred = np.tanh(x @ w)
    return np.mean((pred - y) ** 2), pred


X = np.array([[0.5, -1.0], [1.5, 0.3], [-0.2, 0.8]])
Y = np.array([0.1, -0.4, 0.6])


def test_the_refusal_names_has_aux():
    w = np.array([0.3, -0.7])
    with pytest.raises(adgen.NonDifferentiableError, match="returned a tuple") as err:
        adgen.grad(loss_and_predictions)(w, X, Y)
    assert "has_aux=True" in err.value.hint


def test_has_aux_as_the_hint_says():
    w = np.array([0.3, -0.7])
    g, pred = adgen.grad(loss_and_predictions, has_aux=True)(w, X, Y)
    t = np.tanh(X @ w)
    np.testing.assert_allclose(pred, t)
    np.testing.assert_allclose(g, X.T @ (2 * (t - Y) * (1 - t ** 2)) / 3, rtol=1e-12)
