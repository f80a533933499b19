"""The softmax adjoint the default pipeline writes since e020745 (``out * (g -
sum_keepdims(g * out, 1))``, where nothing else reads the exponential or its row sums) runs
on the numba backend through numba_runtime.sum_keepdims; without it the suite's attention
and softmax-xent, which compiled before, were refused ('no nopython form of adgen's
sum_keepdims'). A softmax cross-entropy and an attention-like row softmax as users write
them, against central differences under both policies. Skipped without numba."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grads

import adgen

numba = pytest.importorskip("numba")


def softmax_xent(W, X, Y):
    z = X @ W
    z = z - np.max(z, axis=1, keepdims=True)
    e = np.exp(z)
    p = e / np.sum(e, axis=1, keepdims=True)
    return -np.sum(Y * np.log(p))


def row_softmax_mix(Q, K, V):
    s = Q @ K.T
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    a = e / np.sum(e, axis=-1, keepdims=True)
    return np.sum((a @ V) ** 2)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_softmax_cross_entropy(mutation):
    rng = np.random.default_rng(0)
    W, X = rng.standard_normal((4, 3)), rng.standard_normal((6, 4))
    Y = np.eye(3)[rng.integers(0, 3, 6)]
    g = adgen.grad(softmax_xent, argnums=(0, 1), mutation=mutation, backend="numba")
    assert_grad_close(g(W, X, Y), numerical_grads(softmax_xent, (W, X, Y), (0, 1)))
    assert "sum_keepdims(" in adgen.source(softmax_xent, W, X, Y, backend="numba")


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_row_softmax_mix(mutation):
    rng = np.random.default_rng(1)
    Q, K, V = (rng.standard_normal((5, 3)) for _ in range(3))
    g = adgen.grad(row_softmax_mix, argnums=(0, 1, 2), mutation=mutation, backend="numba")
    assert_grad_close(g(Q, K, V), numerical_grads(row_softmax_mix, (Q, K, V), (0, 1, 2)))
    assert "sum_keepdims(" in adgen.source(row_softmax_mix, Q, K, V, backend="numba")
