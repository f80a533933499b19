"""An array of a decomposition's result written in place (``w, V = np.linalg.eigh(A)`` then a
sign fix ``V[:, 0] *= -1``) is refused at the line, naming the result and what to write; the
copy the hint names is differentiated (central differences). Marking the result a tuple so
the write would run gave a zero gradient: the rule's cotangent does not see an adjoint kept
apart for an array written in place, so the refusal stays until it does."""

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

M0 = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 0.5]])
X = np.array([0.3, -0.7, 1.1])


def sign_fixed(x):
    w, V = np.linalg.eigh(M0 + np.diag(x))
    V[:, 0] *= -1.0
    return np.sum(V ** 3) + np.sum(w ** 2)


def sign_fixed_on_a_copy(x):
    w, V = np.linalg.eigh(M0 + np.diag(x))
    V = V.copy()
    V[:, 0] *= -1.0
    return np.sum(V ** 3) + np.sum(w ** 2)


def r_scaled(x):
    Q, R = np.linalg.qr(np.outer(x, x) + np.eye(3))
    R[0] = 2.0 * R[0]
    return np.sum(R ** 2) + np.sum(Q[:, 0] ** 3)


@pytest.mark.parametrize("f, result", [(sign_fixed, "EighResult"), (r_scaled, "QRResult")])
def test_refused_at_the_line_with_the_copy_to_write(f, result):
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(f)(X.copy())
    text = str(err.value)
    assert result in text and "V = V.copy()" in text
    assert "test_decomposition_results_written.py" in text


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_copy_is_differentiated(mutation):
    check_grad(sign_fixed_on_a_copy, (X,), mutation=mutation)
