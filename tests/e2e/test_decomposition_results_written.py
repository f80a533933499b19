"""Arrays of a decomposition's result written in place, as people write them (``w, V =
np.linalg.eigh(A)`` then a sign fix ``V[:, 0] *= -1``; R of a QR scaled by rows; the singular
values doubled in place): the tuple's items are arrays of their own, and the adjoint an
array written in place keeps in shadow memory reaches the decomposition's rule
(reverse_ops.apply_rule: with_shadows). Refused before with a message naming the result as
an array; marking the result a tuple without moving the adjoint gave a zero gradient.
Checked against central differences under both policies and in forward mode."""

import numpy as np
import pytest
from gradcheck import check_grad, check_jvp

M0 = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 0.5]])
X = np.array([0.3, -0.7, 1.1])


def sign_fixed(x):
    w, V = np.linalg.eigh(M0 + np.diag(x))
    V[:, 0] *= -1.0
    return np.sum(V ** 3) + np.sum(w ** 2)


def result_indexed(x):
    res = np.linalg.eigh(M0 + np.diag(x))
    V = res[1]
    V[0, 0] = 0.0
    return np.sum(V ** 3) + np.sum(res[0] ** 2)


def r_scaled(x):
    Q, R = np.linalg.qr(np.outer(x, x) + np.eye(3))
    R[0] = 2.0 * R[0]
    return np.sum(R ** 2) + np.sum(Q[:, 0] ** 3)


def values_doubled(x):
    U, s, Vt = np.linalg.svd(np.outer(x, x) + np.diag([3.0, 2.0, 1.0]))
    s *= 2.0
    return np.sum(s ** 2) + np.sum(U[:, 0] * Vt[0])


def values_only(x):
    s = np.linalg.svd(np.outer(x, x) + np.diag([3.0, 2.0, 1.0]), compute_uv=False)
    s[0] = 0.0  # an array, not a tuple
    return np.sum(s ** 2)


CASES = [sign_fixed, result_indexed, r_scaled, values_doubled, values_only]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_gradient(f, mutation):
    check_grad(f, (X,), mutation=mutation)


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_forward_mode(f):
    v = np.array([0.5, -1.0, 2.0])
    check_jvp(f, (X,), (v,), rtol=1e-5, atol=1e-8)
