"""A method of ndarrays called on an attribute path of a global that holds an array:
``W.T.dot(v)``, ``model.W.dot(v)``, ``R.T.dot(v)`` for a scipy.sparse ``R``.

``W.dot(v)`` on a global name was NumPy's ``np.dot(W, v)``, but on a path the call was taken
whole as the callee: ``W.T.dot`` (a NumPy builtin method) raised "W.T.dot() has no derivative
rule", and ``R.T.dot`` (scipy's Python method ``_spbase.dot``) was compiled from scipy's
source, whose pullback then crashed with a raw ``AttributeError: 'numpy.ndarray' object has
no attribute 'items'``. The path is now an atom of its own (anf: ``t = R.T; t.dot(v)``), so
the method reads as NumPy's function of it. Checked against central differences, both
policies, forward mode and second order.
"""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from tests.gradcheck import check_grad, check_jvp

sp = pytest.importorskip("scipy.sparse")

W = np.arange(12.0).reshape(4, 3) / 10.0
R = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0], [4.0, 0.0, 5.0],
                            [0.0, 6.0, 0.0]]))


class Model:
    """A model object kept at module level, as a script or a notebook keeps one."""

    def __init__(self) -> None:
        self.W = W * 0.5
        self.R = sp.csr_array(R)


model = Model()


def dense_paths(v):
    return np.sum(np.tanh(W.T.dot(v))) + np.sum(model.W.T.sum(axis=1) * v[:3]) + \
        np.sum(model.W.dot(v[:3]) ** 2)


def sparse_paths(v):
    a = R.T.dot(v)                     # (3, 4) @ (4,)
    b = model.R.T.dot(np.outer(v, v))  # (3, 4) @ (4, 4)
    return np.sum(a ** 2) + np.sum(np.sin(b)) + np.sum(model.R.dot(a) * v)


def sparse_in_a_loop(v):
    u = v.copy()
    for _ in range(3):
        u = u - 0.1 * R.dot(R.T.dot(u))
    return np.sum(u ** 2)


V = np.array([0.3, -0.2, 0.5, 0.8])
CASES = [dense_paths, sparse_paths, sparse_in_a_loop]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_gradient(f, mutation):
    check_grad(f, (V,), mutation=mutation)


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_forward_mode(f):
    check_jvp(f, (V,), (np.array([1.0, -0.5, 0.25, 2.0]),))


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_hessian(f):
    grad = adgen.grad(f)
    h = 1e-5
    ref = np.stack([(grad(V + h * e) - grad(V - h * e)) / (2 * h) for e in np.eye(4)], axis=1)
    np.testing.assert_allclose(adgen.hessian(f)(V), ref, rtol=1e-5, atol=1e-6)


def test_a_lambda_reads_the_global_when_called():
    f = lambda v: np.sum(W.T.dot(v) ** 2)  # noqa: E731
    check_grad(f, (V,))
    global W
    old = W
    try:
        W = old * 2.0  # rebound: the next gradient sees the new array
        check_grad(f, (V,))
        np.testing.assert_allclose(adgen.grad(f)(V), 2 * (W @ (W.T @ V)))
    finally:
        W = old


class Scaler:
    def __init__(self, c: float) -> None:
        self.c = c

    def dot(self, v):  # a method of the user's named like an ndarray's
        return self.c * np.sum(v ** 3)


model.scaler = Scaler(1.5)


def test_other_paths_keep_their_callee():
    # np.linalg.norm is a function of a module; model.scaler.dot the user's method
    f = lambda v: np.linalg.norm(v) + model.scaler.dot(v)  # noqa: E731
    check_grad(f, (V,))
    np.testing.assert_allclose(adgen.grad(f)(V), V / np.linalg.norm(V) + 4.5 * V ** 2)


def test_a_sparse_method_without_a_rule_says_what_to_write():
    def scaled(v):
        return np.sum(np.asarray(R.multiply(v[:3])) ** 2)

    with pytest.raises(adgen.AdgenError) as err:
        adgen.grad(scaled)(V)
    text = str(err.value)
    assert "return np.sum(np.asarray(R.multiply(v[:3])) ** 2)" in text
    assert "R.toarray() * v" in text
    check_grad(lambda v: np.sum((R.toarray() * v[:3]) ** 2), (V,))
