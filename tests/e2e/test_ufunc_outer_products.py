"""Pairwise terms written with the ufuncs' outer methods, as scientific code writes them: a
squared-exponential kernel from ``np.subtract.outer(x, x)``, an interaction energy from
``np.multiply.outer`` and ``np.divide.outer``, ``np.add.outer`` of two grids, and a survival
curve from ``np.multiply.accumulate``. Each raised MissingRuleError ("np.subtract.outer() has
no derivative rule and adgen cannot read its source"); rules/ufunc_methods.py has their rules
and tangents."""
import numpy as np
import pytest

import adgen
from tests.gradcheck import check_grad, numerical_jvp


def kernel_log_likelihood(x, y, ell):
    d = np.subtract.outer(x, x)
    K = np.exp(-0.5 * d ** 2 / ell ** 2)
    K[np.diag_indices_from(K)] += 0.1
    alpha = np.linalg.solve(K, y)
    return -0.5 * y @ alpha - 0.5 * np.linalg.slogdet(K)[1]


def interaction_energy(q, r):
    E = np.multiply.outer(q, q) * np.divide.outer(1.0, np.abs(np.subtract.outer(r, r)) + 1.0)
    return 0.5 * np.sum(E)


def grid_potential(a, b):
    V = np.add.outer(a ** 2, np.sin(b))
    V *= np.add.outer(a, b)
    return np.sum(V ** 2)


def survival(hazard):
    s = np.multiply.accumulate(1.0 - hazard)
    return np.sum(s) + np.sum(np.multiply.accumulate(hazard.reshape(2, 3), axis=1) ** 2)


X = np.array([0.1, 0.5, 0.9, 1.6])
Y = np.array([0.3, -0.2, 0.8, 0.1])
CASES = [
    (kernel_log_likelihood, (X, Y, 0.7), 0),
    (kernel_log_likelihood, (X, Y, 0.7), 2),
    (interaction_energy, (np.array([1.0, -0.5, 2.0]), np.array([0.0, 0.7, 1.9])), 0),
    (interaction_energy, (np.array([1.0, -0.5, 2.0]), np.array([0.0, 0.7, 1.9])), 1),
    (grid_potential, (np.array([0.2, -0.4, 1.1]), np.array([0.5, 1.5])), 0),
    (grid_potential, (np.array([0.2, -0.4, 1.1]), np.array([0.5, 1.5])), 1),
    (survival, (np.array([0.1, 0.3, 0.05, 0.2, 0.6, 0.4]),), 0),
]
IDS = [f"{f.__name__}-{n}" for f, _, n in CASES]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("fun, args, argnum", CASES, ids=IDS)
def test_gradient_against_central_differences(fun, args, argnum, mutation):
    # strict may refuse the in-place updates (K[...] += 0.1, V *= ...): refused, never wrong
    check_grad(fun, args, argnum, mutation=mutation, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fun, args, argnum", CASES, ids=IDS)
def test_jvp_against_central_differences(fun, args, argnum):
    tangents = [None] * len(args)
    tangents[argnum] = np.cos(np.arange(np.size(args[argnum])) + 1.0).reshape(
        np.shape(args[argnum]))
    if np.ndim(args[argnum]) == 0:
        tangents[argnum] = 0.6
    _, t = adgen.jvp(fun, args, tuple(tangents))
    np.testing.assert_allclose(t, numerical_jvp(fun, args, tuple(tangents)), rtol=1e-6,
                               atol=1e-8)


def test_hessian_of_a_pairwise_energy_by_hand():
    # E = sum_ij q_i q_j w_ij / 2 with w_ij = 1 / (|r_i - r_j| + 1): its Hessian in q is w
    r = np.array([0.0, 0.7, 1.9])
    w = 1.0 / (np.abs(r[:, None] - r[None, :]) + 1.0)
    H = adgen.hessian(interaction_energy)(np.array([1.0, -0.5, 2.0]), r)
    np.testing.assert_allclose(H, w, rtol=1e-12)


def test_survival_curve_gradient_by_hand():
    # d/dh_k of sum_t prod_{i<=t} (1 - h_i) = -sum_{t>=k} s_t / (1 - h_k)
    h = np.array([0.1, 0.3, 0.05, 0.2])
    s = np.cumprod(1.0 - h)
    expected = -np.cumsum(s[::-1])[::-1] / (1.0 - h)
    np.testing.assert_allclose(
        adgen.grad(lambda h: np.sum(np.multiply.accumulate(1.0 - h)))(h), expected, rtol=1e-12)
