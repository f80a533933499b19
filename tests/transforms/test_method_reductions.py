"""Reductions with an axis of known arrays are methods in the forward (transforms/
method_reductions.py): ``np.sum(z, axis=1, keepdims=True)`` runs as ``z.sum(axis=1,
keepdims=True)``, the same reduction without NumPy's Python dispatch (1.5-2 us a call).

Gradients against central differences under both policies; the value grad's forward computes
is the primal's to the last bit; calls the rewrite must leave alone keep their form.
"""

from __future__ import annotations

import numpy as np
import pytest
from adgen.transforms import pipeline
from adgen.transforms.analyses.kinds import signature

import adgen
from tests.gradcheck import check_grad


def _forward(f, *args):
    src = pipeline.compile_function(f, wrt=(0,), sig=signature(args)).own_source
    return src.split("_pullback")[0]


def softmax_xent(W, X, Y):
    z = X @ W
    z -= np.max(z, axis=1, keepdims=True)
    np.exp(z, out=z)
    p = z / np.sum(z, axis=1, keepdims=True)
    return -np.sum(Y * np.log(p)) / X.shape[0]


def attention_scores(Wq, X):
    s = X @ Wq @ X.T
    s = s - np.max(s, axis=1, keepdims=True)
    a = np.exp(s)
    a = a / np.sum(a, axis=-1, keepdims=True)
    return np.sum(a * s)


def positional_axes(a):
    m = np.mean(a, 0)
    lo = np.min(a, 1)
    hi = np.amax(a, axis=0)
    return np.sum(m * m) + np.sum(np.sin(lo)) + np.sum(hi ** 3)


def _softmax_args():
    rng = np.random.default_rng(0)
    W = 0.3 * rng.standard_normal((6, 4))
    X = rng.standard_normal((9, 6))
    Y = np.eye(4)[rng.integers(0, 4, 9)]
    return W, X, Y


def test_reductions_with_an_axis_are_methods():
    fwd = _forward(softmax_xent, *_softmax_args())
    assert "np.sum(z_2, axis=1, keepdims=True)" not in fwd
    assert ".sum(axis=1, keepdims=True)" in fwd and ".max(axis=1, keepdims=True)" in fwd
    a = np.random.default_rng(1).standard_normal((5, 3))
    fwd = _forward(positional_axes, a)
    assert "a.mean(0)" in fwd and "a.min(1)" in fwd and "a.max(axis=0)" in fwd


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_softmax_cross_entropy(mutation):
    W, X, Y = _softmax_args()
    g = check_grad(softmax_xent, (W, X, Y), mutation=mutation)
    assert g is not None  # the shift's overwrite is read by no gradient: strict runs it too
    value, _ = adgen.value_and_grad(softmax_xent, mutation=mutation)(W, X, Y)
    assert value == softmax_xent(W, X, Y)  # the same bits as the primal's own np.sum


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_attention_scores_and_positional_axes(mutation):
    rng = np.random.default_rng(2)
    Wq, X = 0.5 * rng.standard_normal((3, 3)), rng.standard_normal((5, 3))
    check_grad(attention_scores, (Wq, X), mutation=mutation)
    value, _ = adgen.value_and_grad(attention_scores, mutation=mutation)(Wq, X)
    assert value == attention_scores(Wq, X)
    a = rng.standard_normal((4, 3))
    check_grad(positional_axes, (a,), mutation=mutation)
    assert adgen.value_and_grad(positional_axes)(a)[0] == positional_axes(a)


def of_a_number_and_a_list(x, s, rows):
    t = np.sum(s, axis=0)  # a Python float: it has no .sum
    u = np.sum(rows, axis=0)  # a list of arrays: np.sum converts it first
    return np.sum(x * t) + np.sum(u * x)


def with_dtype(x):
    return np.sum(np.sum(x, axis=1, dtype=np.float64) ** 2)  # lowered first (reduction_keywords)


def test_other_values_and_keywords_keep_the_function():
    x = np.array([0.5, -1.0, 2.0])
    rows = [np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.25, 4.0])]
    fwd = _forward(of_a_number_and_a_list, x, 1.5, rows)
    assert "np.sum(s, axis=0)" in fwd and "np.sum(rows, axis=0)" in fwd
    g = adgen.grad(of_a_number_and_a_list, argnums=(0, 1))(x, 1.5, rows)
    np.testing.assert_allclose(g[0], 1.5 + rows[0] + rows[1])
    assert g[1] == pytest.approx(np.sum(x))
    m = np.random.default_rng(3).standard_normal((3, 4))
    check_grad(with_dtype, (m,))
