"""The named fields of a decomposition's result (``r.eigenvalues``, ``r.eigenvectors``,
``res.U`` / ``res.S`` / ``res.Vh``, ``q.Q`` / ``q.R``, ``s.sign`` / ``s.logabsdet``) in
forward mode and second derivatives: jvp, jacfwd, hessian, hvp, jacfwd / jacrev of grad,
where the result is read in the function, handed to a callee that reads its fields, unpacked,
indexed, in a loop, in a lambda. The tangent of such a result is a named tuple of the same
class (``runtime.named_like``): a callee reading ``r.eigenvectors`` failed with
AttributeError ('tuple' object has no attribute 'eigenvectors') in every forward-mode
derivative. Checked against central differences (of the function, and of its gradient for
the Hessians) and against jax.hessian where jax is installed."""

from __future__ import annotations

import numpy as np
import pytest

import adgen

M0 = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 0.5]])
B0 = np.array([[1.5, -0.4, 0.3], [0.2, 0.9, -0.7], [0.6, 0.1, 2.2]])  # distinct values
X = np.array([0.3, -0.7, 1.1])
V = np.array([0.5, -1.0, 2.0])


def top_pair(r):
    """A callee given the whole result, as a helper of a user's would be."""
    return r.eigenvectors[:, -1] * r.eigenvalues[-1]


def eigh_to_a_callee(x):
    r = np.linalg.eigh(M0 + np.diag(x))
    return np.sum(top_pair(r) ** 2) + np.sum(r.eigenvalues ** 3)


def leading(res):
    return res.U[:, 0] * res.S[0] + res.Vh[0] * res.S[-1]


def svd_to_a_callee(x):
    res = np.linalg.svd(B0 + np.diag(x))
    return np.sum(leading(res) ** 3)


def qr_fields(q):
    return np.sum(q.Q[:, 0] ** 3) + np.sum(q.R ** 2)


def qr_to_a_callee(x):
    return qr_fields(np.linalg.qr(B0 + np.outer(x, x)))


def slogdet_to_a_callee(x):
    def signed(s):
        return s.sign * s.logabsdet ** 2
    return signed(np.linalg.slogdet(M0 + np.diag(x ** 2)))


def fields_read_directly(x):
    w = np.linalg.eigh(M0 + np.diag(x)).eigenvalues
    return np.sum(w ** 3) + np.linalg.svd(B0 + np.diag(x)).S[0] ** 2


def unpacked_and_indexed(x):
    res = np.linalg.eigh(M0 + np.diag(x))
    w, v = res
    return np.sum(w ** 3) + np.sum(v[:, 0] ** 4) + np.sum(res[0] * x)


def in_a_loop(x):
    m = M0 + np.diag(x)
    total = 0.0
    for k in range(3):
        r = np.linalg.eigh(m)
        total = total + r.eigenvalues[k] ** 2
        m = m + 0.1 * np.outer(r.eigenvectors[:, k], r.eigenvectors[:, k])
    return total


in_a_lambda = lambda x: np.linalg.slogdet(M0 + np.diag(x)).logabsdet ** 2  # noqa: E731

CASES = [eigh_to_a_callee, svd_to_a_callee, qr_to_a_callee, slogdet_to_a_callee,
         fields_read_directly, unpacked_and_indexed, in_a_loop, in_a_lambda]
IDS = ["eigh callee", "svd callee", "qr callee", "slogdet nested def", "direct", "unpacked",
       "loop", "lambda"]


def _differences(f, x, eps=1e-6):
    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(x.size)])


def _hessian_by_differences(f, x, eps=1e-5):
    g = adgen.grad(f)
    return np.array([(g(x + eps * e) - g(x - eps * e)) / (2 * eps)
                     for e in np.eye(x.size)]).T


@pytest.mark.parametrize("f", CASES, ids=IDS)
def test_jvp_and_jacfwd(f):
    _, dot = adgen.jvp(f, (X.copy(),), (V,))
    eps = 1e-6
    assert dot == pytest.approx((f(X + eps * V) - f(X - eps * V)) / (2 * eps), rel=1e-6,
                                abs=1e-8)
    np.testing.assert_allclose(adgen.jacfwd(f)(X.copy()), _differences(f, X), rtol=1e-6,
                               atol=1e-8)


@pytest.mark.parametrize("f", CASES, ids=IDS)
def test_second_derivatives(f):
    want = _hessian_by_differences(f, X)
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), want, atol=1e-6)
    np.testing.assert_allclose(adgen.hvp(f)(X.copy(), V), want @ V, atol=1e-6)
    np.testing.assert_allclose(adgen.jacfwd(adgen.grad(f))(X.copy()), want, atol=1e-6)
    np.testing.assert_allclose(adgen.jacrev(adgen.grad(f))(X.copy()), want, atol=1e-6)


def test_the_tangent_of_a_decomposition_is_its_named_tuple():
    a = M0 + np.diag(X)
    out, dot = adgen.jvp(np.linalg.eigh, (a,), (np.diag(V),))
    assert type(dot) is type(out)
    # first-order perturbation theory: the eigenvalues move by v_i^T dA v_i
    want = np.array([out.eigenvectors[:, i] @ np.diag(V) @ out.eigenvectors[:, i]
                     for i in range(3)])
    np.testing.assert_allclose(dot.eigenvalues, want, atol=1e-12)


def test_against_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    jax.config.update("jax_enable_x64", True)

    def fj(x):
        r = jnp.linalg.eigh(jnp.asarray(M0) + jnp.diag(x))
        pair = r.eigenvectors[:, -1] * r.eigenvalues[-1]
        return jnp.sum(pair ** 2) + jnp.sum(r.eigenvalues ** 3)

    np.testing.assert_allclose(adgen.hessian(eigh_to_a_callee)(X.copy()),
                               np.asarray(jax.hessian(fj)(X)), atol=1e-9)
