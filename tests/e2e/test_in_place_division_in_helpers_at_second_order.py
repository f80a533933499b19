"""The hessian through a helper or a method that normalises in place (``P /= P.sum()``,
``P /= P.sum(axis=1, keepdims=True)``: softmax, attention weights), and a ``try`` whose body
ends by rebinding the name its except arm reads (``y /= d`` / ``except ZeroDivisionError``).

Before: the hessian was refused naming adgen's generated code, "the except arm reads
'P_1_dot' (line 21), which the try body rebinds": forward mode runs a helper's tangent
division in ``try: P_dot /= t except ArithmeticError: ...`` (IEEE results where Python's
floats raise, transforms/ieee_tangents.py), which the SSA pass refused as it refuses the
user's ``try`` of that form. A statement binding a name last in a try body has not bound it
when anything in the body raises, so the except arm reads the name from before the try
(transforms/ssa.py). Now: hessian vs second differences; the user's try differentiates on
its normal path, and a body that raised after a statement ran is still refused at run time.
"""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from tests.gradcheck import numerical_grad, numerical_hessian

W = np.array([[0.3, -0.2], [0.5, 0.1]])
X0 = np.array([[0.2, 0.4], [-0.3, 0.8]])


def normalised(v):
    p = np.exp(v)
    p /= p.sum()
    return p


def row_softmax(X):
    P = np.exp(X @ W)
    P /= P.sum(axis=1, keepdims=True)
    return P


class Attention:
    def __init__(self, W):
        self.W = W
        self.weights = None

    def __call__(self, X):
        S = X @ self.W
        S -= S.max(axis=1, keepdims=True)
        P = np.exp(S)
        P /= P.sum(axis=1, keepdims=True)
        self.weights = P
        return P @ X


def through_a_helper(x):
    return np.sum(normalised(x) ** 2) + normalised(x)[0]


def through_row_softmax(x):
    return np.sum(row_softmax(X0 * x[0] + x[1]) ** 3)


def through_a_method(x):
    a = Attention(W)
    out = a(X0 * x[0] + x[1])
    return np.sum(out ** 2) + np.sum(a.weights[0] ** 2)


@pytest.mark.parametrize("fn, x", [(through_a_helper, np.array([0.3, -0.2, 0.9])),
                                   (through_row_softmax, np.array([0.8, 0.1])),
                                   (through_a_method, np.array([0.8, 0.1]))],
                         ids=["helper", "row_softmax", "method"])
def test_hessian(fn, x):
    np.testing.assert_allclose(adgen.hessian(fn)(x.copy()), numerical_hessian(fn, x),
                               rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(adgen.grad(fn)(x.copy()), numerical_grad(fn, (x,), 0),
                               rtol=1e-6, atol=1e-9)


def guarded_ratio(x):
    s = x[0] * 2.0
    y = float(x[1])
    try:
        y /= float(x[2]) - 1.0
    except ZeroDivisionError:
        y = y * 1e3 + s
    return s * y


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_try_ending_in_an_augmented_assignment(mutation):
    x = np.array([0.3, 0.7, 2.5])
    np.testing.assert_allclose(adgen.grad(guarded_ratio, mutation=mutation)(x.copy()),
                               numerical_grad(guarded_ratio, (x,), 0), rtol=1e-6, atol=1e-9)
    v = np.array([1.0, -0.5, 0.25])
    _, t = adgen.jvp(guarded_ratio, (x.copy(),), (v,))
    assert t == pytest.approx(numerical_grad(guarded_ratio, (x,), 0) @ v, rel=1e-6)
    np.testing.assert_allclose(adgen.hessian(guarded_ratio)(x.copy()),
                               numerical_hessian(guarded_ratio, x), rtol=1e-4, atol=1e-6)


def test_the_except_path_after_a_statement_ran_is_refused():
    """x[2] == 1: the division raises after the body's first statements ran."""
    with pytest.raises(adgen.UnsupportedError, match="raised after some of its statements"):
        adgen.grad(guarded_ratio)(np.array([0.3, 0.7, 1.0]))
