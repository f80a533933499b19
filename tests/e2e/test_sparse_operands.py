"""A scipy.sparse matrix as a constant operand of ``@`` (a finite-difference Laplacian built
once with ``scipy.sparse.diags``, ``L @ u`` in the time loop) is differentiated.

Its pullback crashed with NumPy's raw ``AxisError: axis1: axis -1 is out of bounds for array
of dimension 0`` (``np.asarray`` of a sparse matrix is a 0-d object array, which
``matmul_vjp_b`` then transposed). The adjoint of ``u`` in ``L @ u`` is ``L.T @ g`` and that of
``v`` in ``v @ L`` is ``g @ L.T``, which sparse matrices compute themselves."""

from __future__ import annotations

import numpy as np
import pytest

from tests.gradcheck import check_grad, check_jvp

sp = pytest.importorskip("scipy.sparse")

N = 6
LAPLACIAN = sp.diags([1.0, -2.0, 1.0], [-1, 0, 1], shape=(N, N), format="csr")
RECT = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0], [4.0, 0.0, 5.0],
                               [0.0, 6.0, 0.0]]))
RECT_ARRAY = sp.csr_array(RECT)


def heat(u0, alpha):
    u = u0.copy()
    for _ in range(8):
        u = u + alpha * (LAPLACIAN @ u)
        u[0] = u[-1] = 0.0
    return np.sum(u ** 2)


def heat_in_place(u, alpha):
    for _ in range(5):
        u += alpha * (LAPLACIAN @ u)
    return np.sum(u ** 3)


def products(v, w, s):
    a = s @ v                   # (4, 3) @ (3,)
    b = w @ s                   # (4,) @ (4, 3)
    c = s @ np.outer(v, v)      # (4, 3) @ (3, 3)
    d = s.T @ w                 # (3, 4) @ (4,)
    return np.sum(a ** 2) + np.sum(np.tanh(b)) + np.sum(c * c) + np.sum(d * v)


def by_method(v):
    return np.sum(RECT.dot(v) ** 2) + np.sum(np.tanh(RECT_ARRAY.transpose().dot(RECT @ v)))


def rows_times_sparse(m):
    return np.sum((m @ RECT_ARRAY) ** 2)  # (2, 4) @ (4, 3)


U0 = np.sin(np.linspace(0.0, np.pi, N)) + 0.1
V = np.array([0.3, -0.2, 0.5])
W = np.array([0.1, 0.4, -0.3, 0.2])


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_laplacian_in_a_time_loop(mutation):
    check_grad(heat, (U0, 0.2), (0, 1), mutation=mutation)
    check_grad(heat_in_place, (U0.copy(), 0.1), (0, 1), mutation=mutation)
    check_grad(by_method, (V,), mutation=mutation)  # S.dot(v): a raw ValueError before


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("s", [RECT, RECT_ARRAY], ids=["csr_matrix", "csr_array"])
def test_sparse_operands_on_either_side(s, mutation):
    check_grad(products, (V, W, s), (0, 1), mutation=mutation)
    check_grad(lambda v: products(v, W, s), (V,), mutation=mutation)
    check_grad(rows_times_sparse, (np.arange(8.0).reshape(2, 4) / 7.0,), mutation=mutation)


def test_forward_mode():
    check_jvp(heat, (U0, 0.2), (np.ones(N), 1.0))
    check_jvp(lambda v, w: products(v, w, RECT), (V, W), (np.ones(3), np.ones(4)))
    # the sparse argument's zero tangent is a sparse zero of its shape (its attributes zeroed
    # one by one gave it the shape (0.0, 0.0): a raw ValueError of scipy's)
    check_jvp(products, (V, W, RECT), (np.ones(3), np.ones(4), None))
