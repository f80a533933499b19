"""Forward mode and second derivatives of losses that call NumPy functions adgen compiles from
reference implementations (np.pad, np.convolve, np.split, np.gradient, np.average, np.ptp,
np.linalg.matrix_power): the references call shape and dtype helpers registered without a
derivative (``defnondiff``), which forward mode refused ("dtype_of has a gradient rule but no
jvp"), so jvp, jacfwd, hvp and hessian of these losses failed while grad worked. And a dtype
from ``np.result_type`` carries no derivative: ``np.finfo(np.result_type(x, 1.0)).eps`` was
refused in both modes ("np.finfo() has no derivative rule"). Second derivatives through
np.var, np.std, np.linalg.cholesky, x.astype() and np.nansum stopped at
"var_vjp() / astype_jvp() has no derivative rule" (their jvps called rule helpers; now
NumPy that reverse mode reads again). Checked against central differences (of the loss,
and of its gradient for the second derivatives); np.prod's and norm(x, ord)'s are refused
with the reason."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad, numerical_jvp

import adgen


def padded_smoothness(x):
    p = np.pad(x.reshape(3, 4), ((1, 1), (0, 2)), mode="constant")
    e = np.pad(x, 2, mode="edge")
    return np.sum(p ** 2 * 0.5) + np.sum(e * np.arange(16.0)) + np.sum(np.diff(e) ** 2)


def filtered_energy(x):
    c = np.convolve(x[:5], np.array([1.0, -2.0, 1.0]), mode="valid")
    c2 = np.convolve(x[:5], x[5:8])
    return np.sum(c ** 2) + np.sum(c2 * c2[::-1])


def split_stack(x):
    parts = np.split(x, 3)
    s = np.stack(parts, axis=1)
    return np.sum(s[1] ** 2) + np.sum(np.vstack(parts).T @ np.vstack(parts))


def slopes(x):
    return np.sum(np.gradient(x) ** 2) + np.trapezoid(x ** 2)


def weighted_spread(x):
    m = x.reshape(3, 4)
    return (np.var(m, axis=0).sum() + np.ptp(x) * np.std(m)
            + np.average(x, weights=np.arange(1.0, 13.0)) ** 2)


def cubed_map(x):
    m = x.reshape(3, 4)[:, :3] * 0.3
    return np.sum(np.linalg.matrix_power(m, 3))


def eps_scaled(x):
    t = np.result_type(x, 1.0)
    return np.sum(np.sin(x) * (1.0 + 1e6 * np.finfo(t).eps))


LOSSES = [padded_smoothness, filtered_energy, split_stack, slopes, weighted_spread, cubed_map,
          eps_scaled]


def _point() -> np.ndarray:
    rng = np.random.default_rng(3)
    return rng.standard_normal(12) + 0.1 * np.arange(12)


@pytest.mark.parametrize("loss", LOSSES, ids=lambda f: f.__name__)
def test_jvp_against_central_differences(loss):
    x = _point()
    v = np.random.default_rng(4).standard_normal(12)
    value, jv = adgen.jvp(loss, (x,), (v,))
    assert np.isclose(value, loss(x))
    assert_grad_close(np.atleast_1d(jv), numerical_jvp(loss, (x,), (v,)), rtol=1e-5, atol=1e-6)


def gaussian_log_likelihood(x):
    m = x.reshape(3, 4)[:, :3]
    cov = m @ m.T + np.eye(3)
    chol = np.linalg.cholesky(cov)
    return 2.0 * np.sum(np.log(np.diag(chol))) + np.sum(np.std(x.reshape(3, 4), axis=1))


def norms_and_variances(x):
    m = x.reshape(3, 4)
    return (np.linalg.norm(x) + np.sum(np.linalg.norm(m, axis=1)) + np.var(x, ddof=1)
            + np.sum(np.var(m, axis=(0,), keepdims=True) * m))


def casts_and_nans(x):
    y = np.where(x > 1.0, np.nan, x)
    return np.nansum(y ** 3) + np.sum(x.astype(np.float64) ** 2) + np.sum(x.astype(int))


@pytest.mark.parametrize("loss", LOSSES + [gaussian_log_likelihood, norms_and_variances,
                                           casts_and_nans],
                         ids=lambda f: f.__name__)
def test_grad_and_hvp_against_central_differences(loss):
    x = _point()
    v = np.random.default_rng(5).standard_normal(12)
    g = adgen.grad(loss)
    assert_grad_close(g(x), numerical_grad(loss, (x,), 0), rtol=1e-5, atol=1e-6)
    eps = 1e-5
    expected = (g(x + eps * v) - g(x - eps * v)) / (2 * eps)
    assert_grad_close(adgen.hvp(loss)(x, v), expected, rtol=1e-4, atol=1e-5)


def test_hessian_of_a_padded_loss_is_symmetric_and_matches_differences():
    x = _point()
    h = adgen.hessian(padded_smoothness)(x)
    g = adgen.grad(padded_smoothness)
    fd = np.stack([(g(x + 1e-5 * e) - g(x - 1e-5 * e)) / 2e-5 for e in np.eye(12)])
    assert_grad_close(h, fd, rtol=1e-4, atol=1e-5)
    assert np.allclose(h, h.T)


def test_second_derivatives_through_prod_against_the_hand_formula():
    # refused until session 11 (np.prod's vjp is compiled from its own source since)
    def product_loss(x):
        return np.prod(x[:4]) + np.sum(x)

    x = _point()
    head = x[:4]
    want = np.zeros((12, 12))
    for i in range(4):
        for j in range(4):
            if i != j:  # d2/dxi dxj of the product: the product of the other two
                want[i, j] = np.prod(np.delete(head, [i, j]))
    np.testing.assert_allclose(adgen.hvp(product_loss)(x, np.ones(12)), want @ np.ones(12),
                               rtol=1e-12)


def test_second_derivatives_through_a_norm_with_an_ord_are_the_hand_ones():
    # refused until session 12 (norm_vjp, which the tangent calls, is compiled from its source)
    def l1(x):
        return np.linalg.norm(x, 1) + np.sum(x ** 3)

    x = _point()
    assert np.all(x != 0)  # the 1-norm's second derivative is 0 off its kinks
    np.testing.assert_allclose(adgen.hessian(l1)(x), np.diag(6.0 * x), atol=1e-12)


def test_hvp_through_a_float32_cast_against_the_hand_formula():
    def cube_in_single_precision(x):
        return np.sum(x.astype(np.float32).astype(np.float64) ** 3)

    x = np.array([0.5, -1.25, 2.0])  # exact in float32
    v = np.array([1.0, 2.0, -1.0])
    assert np.allclose(adgen.hvp(cube_in_single_precision)(x, v), 6.0 * x * v)


def test_jvp_of_a_least_squares_fit():
    # lstsq's reference reads np.finfo(dtype_of(a, b)).eps: the dtype helper's result was taken
    # for a view of a and b, so it varied with them, and np.finfo was refused in forward mode
    def fit(x):
        coef, res, rank, sv = np.linalg.lstsq(x.reshape(4, 3), np.arange(4.0), rcond=None)
        return np.sum(coef ** 2)

    x = np.arange(12.0) ** 1.5 / 10.0
    v = np.random.default_rng(6).standard_normal(12)
    _, jv = adgen.jvp(fit, (x,), (v,))
    assert_grad_close(np.atleast_1d(jv), numerical_jvp(fit, (x,), (v,)), rtol=1e-5, atol=1e-6)
