"""A product ``a @ b`` a loop's pullback reads only for its shape takes the shape from its
operands when the row keeps them anyway (``Pullback.shapes_of_operands``): Kalman's ``K @ v``
and ``K @ S @ K.T`` leave the row. Gradients against central differences under both
policies: matrices and vectors on either side, transposed operands, a batched product
(rank 3: not handled, kept), a method and a lambda; numba against the default.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

POLICIES = ["save", "strict"]


def filter_steps(A, ys, H, Q, R):
    m = np.zeros(A.shape[0])
    P = np.eye(A.shape[0])
    ll = 0.0
    for t in range(ys.shape[0]):
        m = A @ m
        P = A @ P @ A.T + Q  # the sums' shapes are not known: the products' are read
        S = H @ P @ H.T + R
        K = P @ H.T @ np.linalg.inv(S)
        v = ys[t] - H @ m
        ll = ll - v @ np.linalg.solve(S, v)
        m = m + K @ v
        P = P - K @ S @ K.T
    return ll


def mixed(X, w):
    """A vector times a matrix and a matrix times a vector, each added to a number."""
    s = 0.0
    h = w.copy()
    for t in range(X.shape[0]):
        a = np.tanh(h @ X[t] + 0.1)  # (n,) @ (n, n)
        b = X[t].T @ a + 1.0  # (n, n) @ (n,)
        h = a * b
        s = s + np.sum(h * h)
    return s


def batched(X, w):
    """Look-alike: a stack of matrices (rank 3) times a vector: its shape stays on the row."""
    s = 0.0
    for t in range(2):
        y = np.tanh(X @ w + 0.2 * t)
        s = s + np.sum(y * X[:, :, 0])
    return s


class Filter:
    def __init__(self, scale):
        self.scale = scale

    def __call__(self, A, ys, H, Q, R):
        return self.scale * filter_steps(A, ys, H, Q, R)


def _filter_args(seed=0):
    rng = np.random.default_rng(seed)
    return 0.5 * rng.standard_normal((3, 3)), rng.standard_normal((6, 2)), \
        rng.standard_normal((2, 3)), 0.3 * np.eye(3), np.eye(2)


@pytest.mark.parametrize("mutation", POLICIES)
def test_gradients(mutation):
    check_grad(filter_steps, _filter_args(), (0, 1, 2, 3, 4), mutation=mutation, rtol=1e-5)
    rng = np.random.default_rng(1)
    check_grad(mixed, (0.4 * rng.standard_normal((4, 3, 3)), rng.standard_normal(3)), (0, 1),
               mutation=mutation)
    check_grad(batched, (rng.standard_normal((2, 3, 3)), rng.standard_normal(3)), (0, 1),
               mutation=mutation)


def test_the_products_leave_the_row():
    text = adgen.source(filter_steps, *_filter_args())
    row = [line for line in text.split("_pullback(")[0].splitlines() if ".append(" in line]
    assert len(row) == 1 and "shape" not in row[0] and "len(" not in row[0], text
    assert "_shape1 = (len(K),)" in text.split("_pullback(")[1], text


def test_a_method_and_a_lambda():
    args = _filter_args(2)
    check_grad(Filter(0.5), args, (0, 2), rtol=1e-5)
    check_grad(lambda A, ys, H, Q, R: 2.0 * filter_steps(A, ys, H, Q, R), args, (0,),
               rtol=1e-5)


def test_numba_backend_agrees():
    pytest.importorskip("numba")
    args = _filter_args(3)
    want = adgen.grad(filter_steps, argnums=(0, 2))(*args)
    got = adgen.grad(filter_steps, argnums=(0, 2), backend="auto")(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
