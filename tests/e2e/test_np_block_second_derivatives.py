"""np.block of a nested list, ``np.block([[A, B], [C, D]])`` as users assemble a matrix, under
second derivatives. The jvp code passes the nested displays ``[[A, B], [C, D]]`` and their
tangents to np.block's compiled jvp; reverse mode over that code (hessian, jacfwd(grad),
jacrev(grad), hvp) bound the whole nested display to one name, whose inner lists got no
adjoint: the Hessian of ``np.sum(np.block([[M, np.eye(2)]]) ** 2)`` was 0 where it is 2 I (a
silently wrong Hessian; grad and jvp were right). Now every display inside is bound first, as
A-normal form binds a nested display. Values against central differences of adgen-free
gradients or a hand formula; first derivatives under both policies.
"""

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

X = np.array([0.3, -0.2, 0.5, 0.7])
POLICIES = ["save", "strict"]


def augmented(x):
    # a 2 x 4 matrix [M | I] from a flat parameter vector
    M = np.reshape(x, (2, 2))
    return np.sum(np.block([[M, np.eye(2)]]) ** 2)


def two_by_two(x):
    M = np.reshape(x, (2, 2))
    K = np.block([[M, M.T], [np.eye(2), M @ M]])
    return np.sum(np.sin(K) * K)


def stacked_rows(x):
    return np.sum(np.block([[x], [x ** 2]]) ** 2)


def numerical_hessian(f, x, h=1e-4):
    cols = [(numerical_grad(f, (x + h * e,), 0) - numerical_grad(f, (x - h * e,), 0)) / (2 * h)
            for e in np.eye(x.size)]
    return np.stack(cols)


CASES = [augmented, two_by_two, stacked_rows]


@pytest.mark.parametrize("f", CASES)
@pytest.mark.parametrize("policy", POLICIES)
def test_gradient(f, policy):
    np.testing.assert_allclose(adgen.grad(f, mutation=policy)(X), numerical_grad(f, (X,), 0),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", CASES)
def test_hessian(f):
    expected = numerical_hessian(f, X)
    np.testing.assert_allclose(adgen.hessian(f)(X), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(adgen.jacfwd(adgen.grad(f))(X), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(adgen.jacrev(adgen.grad(f))(X), expected, rtol=1e-4, atol=1e-5)


def test_hessian_by_hand():
    # sum over [M | I] squared is |x|^2 + 2: the Hessian is 2 I
    np.testing.assert_allclose(adgen.hessian(augmented)(X), 2 * np.eye(4), atol=1e-12)
    # rows x and x**2: sum x^2 + x^4, the Hessian diag(2 + 12 x^2)
    np.testing.assert_allclose(adgen.hessian(stacked_rows)(X), np.diag(2 + 12 * X ** 2),
                               atol=1e-12)


@pytest.mark.parametrize("f", CASES)
def test_hvp_and_jvp_of_grad(f):
    v = np.array([0.4, -1.0, 0.25, 0.6])
    expected = numerical_hessian(f, X) @ v
    np.testing.assert_allclose(adgen.hvp(f)(X, v), expected, rtol=1e-4, atol=1e-5)
    _, hv = adgen.jvp(adgen.grad(f), (X,), (v,))
    np.testing.assert_allclose(hv, expected, rtol=1e-4, atol=1e-5)
