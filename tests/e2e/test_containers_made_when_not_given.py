"""A helper that makes its container when none is given (``def push(v, d=None): if d is
None: d = {...}``) and writes an array in it by a counter it also updates (``d["data"][d["i"]]
= v; d["i"] += 1``): SSA joins the given dict and the new one into one name, whose adjoint the
pullback takes over from the caller (sh.withdraw) but whose arrays' adjoints it did not move
to their shadows, where the write's pullback reads them. grad was silently wrong (err 6.6 on
a 4-vector), both policies.

The same in the jvp code hessian differentiates: a method counting on its object beside a
write through the count (``self.data[self.i] = v; self.i += 1``) has ``self_dot`` joined with
a new zero tangent: the hessian was all zeros.
"""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from tests.gradcheck import check_grad, check_jvp, numerical_hessian

WEIGHTS = np.arange(1.0, 5.0)


def push(v, d=None):
    if d is None:
        d = {"data": np.zeros(4), "i": 0}
    d["data"][d["i"]] = v
    d["i"] += 1


def filled_by_a_helper(x):
    d = {"data": np.zeros(4), "i": 0}
    for k in range(4):
        push(x[k] ** 2, d)
    return np.sum(d["data"] * WEIGHTS)


class Buffer:
    def __init__(self, n):
        self.data = np.zeros(n)
        self.i = 0

    def push(self, v):
        self.data[self.i] = v
        self.i += 1


def filled_by_a_method(x):
    b = Buffer(4)
    for k in range(4):
        b.push(x[k] ** 2)
    return np.sum(b.data * WEIGHTS)


X = np.array([0.3, -0.7, 1.1, 0.5])


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_grad_of_a_helper_making_its_dict(mutation):
    check_grad(filled_by_a_helper, [X.copy()], mutation=mutation)
    np.testing.assert_allclose(adgen.grad(filled_by_a_helper, mutation=mutation)(X.copy()),
                               2 * X * WEIGHTS, rtol=1e-12)


def test_jvp_of_a_helper_making_its_dict():
    check_jvp(filled_by_a_helper, [X.copy()], [np.array([1.0, -0.5, 0.25, 2.0])])


def test_hessian_of_a_method_counting_on_its_object():
    h = adgen.hessian(filled_by_a_method)(X.copy())
    np.testing.assert_allclose(h, np.diag(2 * WEIGHTS), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h, numerical_hessian(filled_by_a_method, X.copy()), atol=1e-5)


def test_grad_and_jvp_of_a_method_counting_on_its_object():
    check_grad(filled_by_a_method, [X.copy()])
    check_jvp(filled_by_a_method, [X.copy()], [np.array([1.0, -0.5, 0.25, 2.0])])
