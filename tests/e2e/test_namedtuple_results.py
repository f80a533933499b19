"""The named results of NumPy's decompositions read by field, as people write them
(``res = np.linalg.svd(M); res.S``, ``r.eigenvalues``, ``qr.Q`` and ``qr.R``,
``s.sign * s.logabsdet``), and a field written in place (``res.S[0] = 0.0``).

Two silent wrong gradients before: a result read by field twice got two tuple adjoints, which
the pullback added with ``+`` (tuple concatenation: the rule read the first one only;
reverse_plan took any NumPy call's result for a number or an array), and a field written in
place left the result with no adjoint of its own, so the decomposition's pullback never ran
(a zero gradient through it; Pullback._rev_assign now runs the rule on zeros, into which
apply_rule moves the shadows). Forward mode failed
(``res_dot.S`` of the rule's plain tuple). Checked against central differences under both
policies, with value_and_grad, in a method and in forward mode."""

import numpy as np
import pytest
from gradcheck import check_grad, check_jvp, numerical_grad

import adgen

M0 = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 0.5]])
X = np.array([0.3, -0.7, 1.1])


def svd_fields(x):
    res = np.linalg.svd(np.outer(x, x) + np.diag([3.0, 2.0, 1.0]))
    return np.sum(res.S ** 2) + np.sum(res.S * x) + np.sum(res.U[:, 0] * res.Vh[0])


def eigh_fields(x):
    r = np.linalg.eigh(M0 + np.diag(x))
    return np.sum(r.eigenvalues * x) + np.sum(r.eigenvectors[:, 0] ** 3) + \
        np.sum(r.eigenvalues ** 2)


def qr_fields(x):
    qr = np.linalg.qr(np.outer(x, x) + np.eye(3))
    return np.sum(qr.Q[:, 0] * x) + np.sum(qr.R ** 2)


def slogdet_fields(x):
    s = np.linalg.slogdet(M0 + np.diag(x))
    return s.sign * s.logabsdet + 0.5 * s.logabsdet


def svd_field_written(x):
    res = np.linalg.svd(np.outer(x, x) + np.diag([3.0, 2.0, 1.0]))
    res.S[0] = 0.0
    return np.sum(res.S ** 2) + np.sum(res.S * x)


def eigh_field_scaled(x):
    r = np.linalg.eigh(M0 + np.diag(x))
    r.eigenvalues[0] *= 3.0
    r.eigenvectors[:, 1] *= -1.0
    return np.sum(r.eigenvalues * x) + np.sum(r.eigenvectors[:, 1] * x)


def qr_field_written_once(x):
    qr = np.linalg.qr(np.outer(x, x) + np.eye(3))
    qr.R[1] *= 2.0
    return np.sum(qr.R * x)


def items_of(r):
    return r[0] ** 2 + r[1][0]


def result_to_a_helper_twice(x):
    r = np.linalg.eigh(M0 + np.diag(x))
    return np.sum(items_of(r)) + np.sum(items_of(r) * x)


def qr_modes_written(x):
    Q, R = np.linalg.qr(np.outer(x, x) + np.eye(3), mode="reduced")
    R *= 2.0
    Q2, R2 = np.linalg.qr(np.outer(x, x) + 2.0 * np.eye(3), mode="complete")
    R2[0] *= 3.0
    r = np.linalg.qr(np.outer(x, x) + np.eye(3), mode="r")  # R alone: an array
    r[1] = 0.0
    return np.sum(R ** 2) + np.sum(Q[:, 0] * x) + np.sum(R2 * x) + np.sum(r ** 2)


def svd_compute_uv_written(x):
    U, s, Vt = np.linalg.svd(np.outer(x, x) + np.diag([3.0, 2.0, 1.0]), compute_uv=True)
    s *= x
    v = np.linalg.svd(np.outer(x, x) + np.diag([3.0, 2.0, 1.0]), compute_uv=False)
    v[0] = 1.0
    return np.sum(s ** 2) + np.sum(U[:, 0] * Vt[0]) + np.sum(v * x)


CASES = [svd_fields, eigh_fields, qr_fields, slogdet_fields, svd_field_written,
         eigh_field_scaled, qr_field_written_once, result_to_a_helper_twice, qr_modes_written,
         svd_compute_uv_written]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_gradient(f, mutation):
    check_grad(f, (X,), mutation=mutation)


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_value_and_grad(f):
    value, g = adgen.value_and_grad(f)(X.copy())
    assert value == pytest.approx(f(X.copy()))
    np.testing.assert_allclose(g, numerical_grad(f, (X,), 0), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_forward_mode(f):
    check_jvp(f, (X,), (np.array([0.5, -1.0, 2.0]),), rtol=1e-5, atol=1e-8)


class Spectrum:
    """A method reading the fields of eigh's result, as a model class would."""

    def __init__(self, base):
        self.base = base

    def energy(self, x):
        r = np.linalg.eigh(self.base + np.diag(x))
        return np.sum(r.eigenvalues ** 2) + np.sum(r.eigenvalues * x)


def test_method():
    model = Spectrum(M0)
    g = adgen.grad(model.energy)(X.copy())
    np.testing.assert_allclose(g, numerical_grad(model.energy, (X,), 0), rtol=1e-5,
                               atol=1e-6)
