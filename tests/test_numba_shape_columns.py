"""The shapes a loop's pullback reads back (for unbroadcast, of values it keeps only for their
shape) are recorded on the numba backend as int64 columns, one per axis, and the tuple is
built again where the pullback reads them (transforms/numba_tapes.py, recorded_shapes): no
typed list of tuples, which numba takes about half a second to compile per tuple length.
Gradients against central differences, both policies, through a lambda. Skipped
without numba."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

numba = pytest.importorskip("numba")


def predict(A, ys):
    m = np.zeros(A.shape[0])
    P = np.eye(A.shape[0])
    ll = 0.0
    for t in range(ys.shape[0]):
        m = A @ m
        P = A @ P @ A.T + 0.1
        k = t % A.shape[0] + 1
        W = P[:k, :k] + 0.1  # a window of P and a number: the sum's shapes (k by k) are kept
        v = ys[t] - m
        ll = ll + v @ v + np.sum(W)
    return ll


def predict_fixed(A, ys):
    """The shapes of P, m and ys[t] are the same in every step: kept once, outside the loop
    (analyses.loop_shapes), not in the rows."""
    m = np.zeros(A.shape[0])
    P = np.eye(A.shape[0])
    ll = 0.0
    for t in range(ys.shape[0]):
        m = A @ m
        P = A @ P @ A.T + 0.1
        v = ys[t] - m
        ll = ll + v @ v + np.sum(P)
    return ll


def _data():
    rng = np.random.default_rng(4)
    return 0.5 * rng.standard_normal((3, 3)), rng.standard_normal((6, 3))


@pytest.mark.parametrize("policy", ["save", "strict"])
def test_shapes_are_int_columns_and_the_gradient_is_right(policy):
    A, ys = _data()
    text = adgen.source(predict, A, ys, backend="numba", mutation=policy)
    assert "_shape1_0_recorded = np.empty(0, np.int64)" in text
    assert "_shape1_1_recorded = np.empty(0, np.int64)" in text  # a matrix: two lengths
    assert "_shape1_recorded = List()" not in text
    gA, gys = adgen.grad(predict, argnums=(0, 1), backend="numba", mutation=policy)(A, ys)
    assert_grad_close(gA, numerical_grad(predict, (A, ys), 0))
    assert_grad_close(gys, numerical_grad(predict, (A, ys), 1))
    expected = adgen.grad(predict, argnums=(0, 1), mutation=policy)(A, ys)
    assert_grad_close(gA, expected[0], rtol=1e-12)
    assert_grad_close(gys, expected[1], rtol=1e-12)


def test_through_a_lambda():
    A, ys = _data()
    g = adgen.grad(lambda a, y: 2.0 * predict_fixed(a, y), backend="numba")(A, ys)
    assert_grad_close(g, 2.0 * numerical_grad(predict_fixed, (A, ys), 0))
    g = adgen.grad(predict_fixed, backend="numba")(A, ys)
    assert_grad_close(g, numerical_grad(predict_fixed, (A, ys), 0))
