"""Second derivatives and forward mode through ``np.add.at`` / ``np.subtract.at`` as users
write them: a finite-element assembly, a scatter in a helper, into a view, and with a
``slice(None)`` in the index (``np.add.at(out, (rows, slice(None)), v)``).

The last raised MissingRuleError ('slice() has no derivative rule') under jvp and hessian,
though grad took it: forward mode looked for a rule of the builtin ``slice``, which has no
derivative (activity.NONDIFF_CALLS now lists it). Hessians against central differences of
adgen.grad, jvps against central differences of the function, under both policies.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

POLICIES = ["save", "strict"]
ROWS = np.array([0, 1, 1, 2])
X = np.array([0.3, 0.7, 1.1, 0.5])


def scatter(out, v):
    np.add.at(out, ROWS, v)


def through_a_helper(x):
    out = np.zeros(3)
    scatter(out, x ** 2)
    return np.sum(out ** 2)


def into_a_view(x):
    out = np.zeros(5)
    np.add.at(out[1:], ROWS, np.sin(x))
    return np.sum(out ** 3)


def rows_of_a_matrix(x):
    out = np.zeros((3, 4))
    np.add.at(out, (ROWS, slice(None)), np.outer(x, x))
    return np.sum(np.tanh(out))


def stiffness_assembly(x):
    K = np.zeros((3, 3))
    elems = np.array([[0, 1], [1, 2]])
    for e in range(2):
        ke = x[e] * np.array([[1.0, -1.0], [-1.0, 1.0]])
        np.add.at(K, (elems[e][:, None], elems[e][None, :]), ke)
    return np.sum(K @ x[:3] * x[:3]) + np.linalg.det(K + np.eye(3))


def subtracted_products(x):
    out = np.zeros(3)
    np.subtract.at(out, [0, 2, 2], x[:3] * x[1:])
    return np.dot(out, out)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", [through_a_helper, into_a_view, rows_of_a_matrix,
                               stiffness_assembly, subtracted_products])
def test_hessian_and_jvp_through_scatter_adds(f, mutation):
    g = adgen.grad(f, mutation=mutation)
    rows = [numerical_grad(lambda z, k=k: g(z.copy())[k], (X.copy(),), 0)
            for k in range(X.size)]
    np.testing.assert_allclose(adgen.hessian(f, mutation=mutation)(X.copy()), np.array(rows),
                               rtol=1e-6, atol=1e-7)
    v = np.array([1.0, -0.5, 0.25, 2.0])
    out, tangent = adgen.jvp(f, (X.copy(),), (v,))
    assert out == pytest.approx(f(X.copy()))
    assert tangent == pytest.approx(numerical_grad(f, (X.copy(),), 0) @ v, rel=1e-6)
