"""``sorted()`` in a loss, the ways users write it: ``for k in sorted(params)`` over a dict of
parameters, the two smallest of a list, ``sorted(xs, key=abs, reverse=True)`` with a lambda
or a builtin key, ``sorted(p.items())``. It was refused ("sorted() has no derivative rule and
adgen cannot read its source"). Reverse mode, forward mode and Hessian-vector products
against central differences."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad, numerical_jvp

import adgen


def weighted_by_name(p):
    total = 0.0
    for i, k in enumerate(sorted(p)):
        total = total + (i + 1.0) * np.sum(p[k] ** 2)
    return total


def by_items(p):
    return sum(np.sum(np.tanh(v)) * len(k) for k, v in sorted(p.items()))


def two_smallest(x):
    ys = sorted(list(x))
    return ys[0] + 2.0 * ys[1] ** 2


def largest_magnitudes(x):
    ys = sorted(x, key=lambda v: abs(v), reverse=True)
    return ys[0] * 3.0 + ys[1] * ys[2] ** 2 + sum(sorted([x[0] * 2.0, x[3], x[1] ** 2]))


def rows_by_sum(m):
    rows = sorted(m, key=np.sum)
    return np.sum(rows[0] ** 2) - np.sum(rows[-1] * rows[0])


X = np.array([3.0, 1.0, 2.0, -0.5])
P = {"w": np.array([0.5, -1.0]), "b": np.array([0.2]), "gain": np.array([[1.5, -0.3]])}


@pytest.mark.parametrize("loss", [weighted_by_name, by_items], ids=lambda f: f.__name__)
def test_a_dict_of_parameters_in_sorted_order(loss):
    g = adgen.grad(loss)(P)
    assert set(g) == set(P)
    assert_grad_close(g, numerical_grad(loss, (P,), 0))


@pytest.mark.parametrize("loss, x", [(two_smallest, X), (largest_magnitudes, X),
                                     (rows_by_sum, np.array([[0.5, 1.0], [-2.0, 3.0],
                                                             [0.1, -0.2]]))],
                         ids=["two_smallest", "largest_magnitudes", "rows_by_sum"])
def test_sorted_values_in_all_modes(loss, x):
    assert_grad_close(adgen.grad(loss)(x.copy()), numerical_grad(loss, (x,), 0))
    v = np.linspace(-1.0, 1.0, x.size).reshape(x.shape)
    _, jv = adgen.jvp(loss, (x.copy(),), (v,))
    assert_grad_close(np.atleast_1d(jv), numerical_jvp(loss, (x,), (v,)))
    g = adgen.grad(loss)
    expected = (g(x + 1e-5 * v) - g(x - 1e-5 * v)) / 2e-5
    assert_grad_close(adgen.hvp(loss)(x.copy(), v), expected, rtol=1e-4, atol=1e-6)
