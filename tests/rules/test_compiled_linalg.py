"""The decomposition rules and the ndarray methods through compiled code, as a user writes
them: tuple outputs unpacked (w, v = np.linalg.eigh(a)), some outputs unused, methods.

tests/rules/test_rules.py calls each vjp directly; here the compiler assembles the cotangent
of a tuple output from the parts the loss uses. Gradients against central differences.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

_RNG = np.random.default_rng(5)
_Q, _ = np.linalg.qr(_RNG.standard_normal((4, 4)))
SYM = (_Q * np.arange(1.0, 5.0)) @ _Q.T  # eigenvalues 1, 2, 3, 4
TALL = _RNG.standard_normal((5, 3))
W = _RNG.standard_normal((5, 3))


def eigh_loss(a):
    w, v = np.linalg.eigh(a)
    return np.sum(w ** 2) + np.sum(np.abs(v[:, 0]) * np.arange(4.0))


def eigvalsh_loss(a):
    return np.sum(np.linalg.eigvalsh(a) ** 3)


def svd_loss(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(s) + np.sum((u[:, 0] * u[:, 0]) * np.arange(5.0)) + np.sum(vh[1] ** 3)


def svd_values(a):
    return np.sum(np.linalg.svd(a, compute_uv=False) ** 2)


def qr_loss(a):
    q, r = np.linalg.qr(a)
    return np.sum(q * W) + np.sum(np.triu(r) ** 2)


def pinv_loss(a):
    return np.sum(np.linalg.pinv(a) ** 2)


def lstsq_loss(a):
    x, res, _rank, s = np.linalg.lstsq(a, np.arange(5.0), rcond=None)
    return np.sum(x ** 2) + np.sum(res) + 0.1 * np.sum(s)


def cond_loss(a):
    return np.linalg.cond(a)


def norms(a):
    return (np.linalg.norm(a, 2) + np.linalg.norm(a, "nuc") + np.linalg.norm(a, -np.inf)
            + np.linalg.norm(a, 1) + np.linalg.norm(a, -2))


def cholesky_loss(a):
    return np.sum(np.linalg.cholesky(a @ a.T + np.eye(5)))


def slogdet_loss(a):
    _sign, logdet = np.linalg.slogdet(a[:3] @ a[:3].T + np.eye(3))
    return logdet


def matrix_power_loss(a):
    return np.sum(np.linalg.matrix_power(a[:3], 3))


def methods(a):
    return (np.sum(a.cumsum() + a.cumprod() * 0.1) + np.sum(a.clip(-0.5, 0.5))
            + np.sum(a.repeat(2) ** 2) + np.sum(a.ravel() * a.astype(float).ravel())
            + np.sum(a.round() * a))


@pytest.mark.parametrize("loss, x", [
    (eigh_loss, SYM), (eigvalsh_loss, SYM), (svd_loss, TALL), (svd_values, TALL),
    (qr_loss, TALL), (pinv_loss, TALL), (lstsq_loss, TALL), (cond_loss, TALL), (norms, TALL),
    (cholesky_loss, TALL), (slogdet_loss, TALL), (matrix_power_loss, TALL), (methods, TALL),
], ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_gradient(loss, x, mutation) -> None:
    got = adgen.grad(loss, mutation=mutation)(x.copy())
    np.testing.assert_allclose(got, numerical_grad(loss, [x.copy()], 0), rtol=1e-5, atol=1e-6)


def test_repeated_eigenvalues_refuse_the_vectors_not_the_values() -> None:
    a = np.diag([2.0, 2.0, 5.0])

    def vectors(a):
        _w, v = np.linalg.eigh(a)
        return np.sum(v[:, 0] ** 3)

    def values(a):
        return np.sum(np.linalg.eigvalsh(a))  # the trace: smooth at a repeated eigenvalue

    with pytest.raises(adgen.RuleError, match="repeat"):
        adgen.grad(vectors)(a)
    np.testing.assert_allclose(adgen.grad(values)(a), np.eye(3), atol=1e-12)


def test_full_svd_of_a_non_square_matrix_refuses_the_completion() -> None:
    def loss(a):
        u, _s, _vh = np.linalg.svd(a)  # full_matrices=True: u is 5 x 5
        return np.sum(u[:, 4])

    with pytest.raises(adgen.RuleError, match="full_matrices=False"):
        adgen.grad(loss)(TALL)
