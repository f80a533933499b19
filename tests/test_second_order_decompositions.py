"""Second derivatives through np.linalg.eigh, eigvalsh, svd, qr, pinv and lstsq (hessian, hvp,
jacfwd / jacrev of grad, grad of grad), checked against central differences of adgen's
gradient and against jax.hessian where jax is installed; repeated eigenvalues and singular
values are refused loudly, naming the user's line."""

from __future__ import annotations

import numpy as np
import pytest

import adgen


def eigh_energy(x):
    m = x.reshape(3, 3)
    s = m + m.T + np.diag(np.array([0.0, 1.0, 2.5]))
    w, v = np.linalg.eigh(s)
    return np.sum(w ** 3) + np.sum(v[:, 0] ** 4) + np.sum(v[1] * v[1] * w)


def eigvalsh_energy(x):
    m = x.reshape(3, 3)
    return np.sum(np.sin(np.linalg.eigvalsh(m @ m.T + np.eye(3))))


def eigh_upper(x):
    m = x.reshape(3, 3)
    w, v = np.linalg.eigh(m + m.T, UPLO="U")
    return np.sum(w * np.abs(w)) + np.sum(v[:, 2] ** 4)


def svd_tall(x):
    m = x.reshape(4, 3)
    u, s, vh = np.linalg.svd(m, full_matrices=False)
    return np.sum(s ** 3) + np.sum(u ** 4) + np.sum(u[:, 0] * vh[0, 1])


def svd_wide(x):
    m = x.reshape(2, 4)
    u, s, vh = np.linalg.svd(m, full_matrices=False)
    return np.sum(np.log(s)) + np.sum(vh ** 4) + np.sum(u[0] * vh[:, 2])


def singular_values(x):
    m = x.reshape(3, 3)
    return np.sum(np.linalg.svd(m, compute_uv=False) ** 2.5)


def qr_tall(x):
    q, r = np.linalg.qr(x.reshape(4, 3))
    return np.sum(q ** 3) + np.sum(r ** 3)


def qr_wide(x):
    q, r = np.linalg.qr(x.reshape(2, 3))
    return np.sum(q[:, 0] * r[:, 2]) + np.sum(r ** 3)


def qr_r_only(x):
    r = np.linalg.qr(x.reshape(3, 3), mode="r")
    return np.sum(np.tanh(r))


def pinv_energy(x):
    return np.sum(np.linalg.pinv(x.reshape(3, 2)) ** 3)


def lstsq_fit(x):
    b = np.array([1.0, 2.0, 0.5, -1.0])
    sol = np.linalg.lstsq(x.reshape(4, 2), b, rcond=None)[0]
    return np.sum(sol ** 3) + sol[0] * sol[1]


def batched_eigh(x):
    m = x.reshape(2, 2, 2)
    w, v = np.linalg.eigh(m + np.swapaxes(m, -1, -2) + np.array([0.0, 3.0]) * np.eye(2))
    return np.sum(w ** 3) + np.sum(v[..., 0] ** 4)


CASES = [(eigh_energy, 9), (eigvalsh_energy, 9), (eigh_upper, 9), (svd_tall, 12),
         (svd_wide, 8), (singular_values, 9), (qr_tall, 12), (qr_wide, 6), (qr_r_only, 9),
         (pinv_energy, 6), (lstsq_fit, 8), (batched_eigh, 8)]


def _hessian_by_differences(f, x, eps=1e-5):
    g = adgen.grad(f)
    return np.array([(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(x.size)])


def _point(seed, n):
    return np.random.default_rng(seed).standard_normal(n)


@pytest.mark.parametrize("f, n", CASES, ids=[f.__name__ for f, _ in CASES])
def test_hessian_matches_central_differences_of_the_gradient(f, n):
    for seed in (0, 1):
        x = _point(seed, n)
        h = adgen.hessian(f)(x)
        fd = _hessian_by_differences(f, x)
        scale = max(1.0, np.abs(fd).max())
        assert np.abs(h - fd).max() < 1e-6 * scale, f"{f.__name__} at seed {seed}"
        assert np.allclose(h, h.T, rtol=1e-8, atol=1e-8 * scale)


@pytest.mark.parametrize("f, n", [(eigh_energy, 9), (svd_tall, 12), (qr_tall, 12),
                                  (lstsq_fit, 8)], ids=["eigh", "svd", "qr", "lstsq"])
def test_every_second_order_spelling_agrees(f, n):
    x, v = _point(2, n), _point(3, n)
    h = adgen.hessian(f)(x)
    assert np.allclose(adgen.jacfwd(adgen.grad(f))(x), h, rtol=1e-9, atol=1e-9)
    assert np.allclose(adgen.jacrev(adgen.grad(f))(x), h, rtol=1e-9, atol=1e-9)
    assert np.allclose(adgen.hvp(f)(x, v), h @ v, rtol=1e-9, atol=1e-9)


def test_grad_of_grad_of_a_scalar_through_eigh_and_svd():
    def f(t):
        s = np.array([[2.0 + t, np.sin(t)], [np.sin(t), -1.0 + t * t]])
        w, v = np.linalg.eigh(s)
        sv = np.linalg.svd(s + np.array([[0.0, t], [0.0, 0.0]]), compute_uv=False)
        return np.sum(w ** 3) + v[0, 0] ** 2 + np.sum(sv ** 2)

    g = adgen.grad(f)
    t, eps = 0.4, 1e-5
    assert adgen.grad(g)(t) == pytest.approx((g(t + eps) - g(t - eps)) / (2 * eps), rel=1e-7)


class SpectralModel:
    """A user's class: the energy of a symmetric matrix built from parameters."""

    def __init__(self, base):
        self.base = base

    def energy(self, x):
        s = self.base + np.outer(x, x)
        w, v = np.linalg.eigh(s)
        return np.sum(np.exp(-w)) + np.sum(v[:, -1] ** 4)


def test_hessian_of_a_method_and_of_a_lambda():
    rng = np.random.default_rng(8)
    model = SpectralModel(np.diag([1.0, 2.0, 4.0]))
    x = 0.3 * rng.standard_normal(3)
    h = adgen.hessian(model.energy)(x)
    assert np.allclose(h, _hessian_by_differences(model.energy, x), rtol=1e-6, atol=1e-7)
    data = rng.standard_normal((5, 2))
    target = rng.standard_normal(5)
    res = lambda w: np.sum(np.linalg.lstsq(data * w, target, rcond=None)[0] ** 2)  # noqa: E731
    w = np.array([1.2, -0.7])
    assert np.allclose(adgen.hessian(res)(w), _hessian_by_differences(res, w),
                       rtol=1e-6, atol=1e-7)


def repeated_eigenvalues(x):
    m = x.reshape(3, 3)
    w, v = np.linalg.eigh(m + m.T)
    return np.sum(w ** 3) + np.sum(v[:, 0] ** 4)


def repeated_values_only(x):
    m = x.reshape(3, 3)
    return np.sum(np.linalg.eigvalsh(m + m.T) ** 3)


def repeated_singular_values(x):
    return np.sum(np.linalg.svd(x.reshape(2, 2), compute_uv=False) ** 3)


@pytest.mark.parametrize("f, x", [
    (repeated_eigenvalues, np.eye(3).ravel()),
    # the values of m + m.T are smooth functions here (their sum of cubes is trace(S^3)),
    # but their second derivative goes through the vectors, which are not defined
    (repeated_values_only, np.diag([1.0, 1.0, 3.0]).ravel()),
    (repeated_singular_values, np.eye(2).ravel()),
], ids=["eigh", "eigvalsh", "svd"])
def test_repeated_values_are_refused_not_silently_wrong(f, x):
    with pytest.raises(adgen.AdgenError, match="repeat") as got:
        adgen.hessian(f)(x)
    assert "test_second_order_decompositions.py" in str(got.value)
    with pytest.raises(adgen.AdgenError, match="repeat"):
        adgen.jacfwd(adgen.grad(f))(x)


def test_the_first_derivative_at_repeated_eigenvalues_still_works():
    # a cotangent of the values alone is defined where they repeat
    x = np.diag([1.0, 1.0, 3.0]).ravel()
    g = adgen.grad(repeated_values_only)(x)
    eps = 1e-6
    fd = np.array([(repeated_values_only(x + eps * e) - repeated_values_only(x - eps * e)) /
                   (2 * eps) for e in np.eye(9)])
    assert np.allclose(g, fd, atol=1e-6)


JAX_CASES = [(eigh_energy, 9), (eigvalsh_energy, 9), (svd_tall, 12), (singular_values, 9),
             (qr_tall, 12), (pinv_energy, 6), (lstsq_fit, 8)]


@pytest.mark.parametrize("f, n", JAX_CASES, ids=[f.__name__ for f, _ in JAX_CASES])
def test_hessian_agrees_with_jax(f, n):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    # the same source, run with jax.numpy
    namespace = dict(f.__globals__, np=jnp)
    jf = type(f)(f.__code__, namespace)
    x = _point(4, n)
    assert float(jf(jnp.asarray(x))) == pytest.approx(f(x), rel=1e-10)
    expected = np.asarray(jax.hessian(jf)(jnp.asarray(x)))
    assert np.allclose(adgen.hessian(f)(x), expected, rtol=1e-7, atol=1e-8)


def rank_one_qr(x):
    q, r = np.linalg.qr(x.reshape(3, 2))
    return np.sum(q ** 3) + np.sum(r ** 3)


def rank_one_svd(x):
    u, s, vh = np.linalg.svd(x.reshape(3, 2), full_matrices=False)
    return np.sum(u ** 4)


@pytest.mark.parametrize("f", [rank_one_qr, rank_one_svd])
def test_rank_deficient_matrices_are_refused_at_the_users_line(f):
    x = np.array([1.0, 2.0, 2.0, 4.0, 3.0, 6.0])  # rank one
    with pytest.raises(adgen.AdgenError, match="rank-deficient") as got:
        adgen.hessian(f)(x)
    assert "test_second_order_decompositions.py" in str(got.value)
