"""np.linalg.pinv(a, hermitian=True) and np.linalg.svd(a, hermitian=True) read only the lower
triangle of ``a`` (numpy computes them with eigh), but their rules took the general formulas:
a silently wrong gradient, jvp and hessian for a matrix whose triangles differ (a model's
matrix updated on one side, a covariance estimate filled by rows): the gradient of
np.sum(pinv(a, hermitian=True) ** 2) was off by 7.8 against central differences. The
adjoints now live on the lower triangle (as eigh's do), and the vectors of svd(...,
hermitian=True), which eigh gives with other signs than the general SVD, are refused at the
user's line. A symmetric matrix built from the argument was right before and stays so."""

import numpy as np
import pytest

import adgen
from adgen.errors import AdgenError
from tests.gradcheck import central, numerical_hessian

A = np.array([[2.0, 0.5, -0.4], [0.3, -1.0, 0.9], [-0.5, 0.4, 0.6]])
W = np.array([[1.0, -0.2, 0.3], [0.4, 0.8, -0.6], [0.1, 0.5, 1.2]])
V = np.linspace(0.3, 1.1, 9).reshape(3, 3)


def pinv_energy(a):
    return np.sum(np.linalg.pinv(a, hermitian=True) ** 2)


def singular_values(a):
    return np.sum(np.linalg.svd(a, compute_uv=False, hermitian=True) ** 3 * np.arange(1.0, 4.0))


class Precision:
    """A pseudo-inverse of the matrix the model holds, read by a method."""

    def __init__(self, weights):
        self.weights = weights

    def loss(self, a):
        return np.sum(np.linalg.pinv(a + 0.1 * self.weights, hermitian=True) * self.weights)


def symmetric_built(b):
    return np.sum(np.linalg.pinv(b + b.T, hermitian=True) * W)


FUNCTIONS = [pinv_energy, singular_values, Precision(W).loss, symmetric_built]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", FUNCTIONS)
def test_gradient_and_jvp_match_central_differences(f, mutation):
    g = adgen.grad(f, mutation=mutation)(A.copy())
    np.testing.assert_allclose(g, central(f, A), rtol=1e-6, atol=1e-7)
    _, t = adgen.jvp(f, (A.copy(),), (V,))
    np.testing.assert_allclose(t, np.sum(central(f, A) * V), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("f", [pinv_energy, singular_values])
def test_hessian_matches_second_differences(f):
    h = adgen.hessian(lambda x: f(x.reshape(3, 3)))(A.ravel())
    np.testing.assert_allclose(h, numerical_hessian(lambda x: f(x.reshape(3, 3)), A.ravel()),
                               rtol=1e-4, atol=1e-5)


def vectors(a):
    u, s, vh = np.linalg.svd(a, hermitian=True)
    return np.sum(u * W)


def test_the_vectors_are_refused_at_the_users_line():
    with pytest.raises(AdgenError, match="eigh") as info:
        adgen.grad(vectors)(A.copy())
    assert "test_hermitian_pinv_and_svd.py" in str(info.value)
    with pytest.raises(AdgenError, match="eigh"):
        adgen.jvp(vectors, (A.copy(),), (V,))
