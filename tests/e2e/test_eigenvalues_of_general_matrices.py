"""The eigenvalues of a general (non-symmetric) matrix in a loss, as stability analyses write
them: the spectral abscissa of a damped oscillator's system matrix, the spectral radius of a
propagator, a sum over a complex pair. np.linalg.eigvals raised MissingRuleError ("adgen has
no rule for it yet"); its rule (rules/decompositions.py, helpers_decomp.eigvals_vjp /
eigvals_jvp) is A_bar = V^-T diag(g) V^T, with eig's vectors matched to eigvals' order.
Repeated eigenvalues, where the derivative is not defined, are refused (RuleError)."""
import numpy as np
import pytest

import adgen
from tests.gradcheck import check_grad, numerical_jvp


def spectral_abscissa(k):
    A = np.zeros((2, 2))
    A[0, 1] = 1.0
    A[1, 0] = -k[0]
    A[1, 1] = -k[1]
    return np.max(np.real(np.linalg.eigvals(A)))


def spectral_radius(A):
    return np.max(np.abs(np.linalg.eigvals(A @ A)))


def pair_energy(A):
    w = np.linalg.eigvals(A)
    return np.sum(np.real(w) ** 2 + 0.5 * np.imag(w) ** 2)


K = np.array([2.0, 0.5])  # eigenvalues -0.25 +- 1.39i
M = np.array([[1.0, 0.4, -0.3], [0.2, -1.5, 0.8], [0.5, 0.1, 2.2]])
R = np.array([[0.0, -1.0, 0.3], [1.2, 0.1, 0.0], [0.4, 0.2, -0.6]])  # a complex pair
CASES = [(spectral_abscissa, K), (spectral_radius, M), (pair_energy, R), (pair_energy, M)]
IDS = ["abscissa", "radius", "pair", "real"]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("fun, x", CASES, ids=IDS)
def test_gradient_against_central_differences(fun, x, mutation):
    check_grad(fun, (x,), 0, mutation=mutation, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fun, x", CASES, ids=IDS)
def test_jvp_against_central_differences(fun, x):
    v = np.cos(np.arange(x.size) + 1.0).reshape(x.shape)
    _, t = adgen.jvp(fun, (x.copy(),), (v,))
    np.testing.assert_allclose(t, numerical_jvp(fun, (x,), (v,)), rtol=1e-6, atol=1e-8)


def test_abscissa_by_hand():
    # lambda = (-k1 + sqrt(k1^2 - 4 k0)) / 2 complex: Re = -k1 / 2, so d/dk = (0, -1/2)
    np.testing.assert_allclose(adgen.grad(spectral_abscissa)(K), [0.0, -0.5], atol=1e-12)


def test_repeated_eigenvalues_are_refused():
    with pytest.raises(adgen.RuleError) as err:
        adgen.grad(pair_energy)(np.eye(3))
    assert "repeat" in str(err.value)
