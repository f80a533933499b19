"""Python's own ``sum`` (and ``math.fsum``) over a NumPy array, as scientific scripts write it:
``sum(x ** 2)`` for a vector, ``sum(A)`` for a matrix (the column sums: Python adds the rows),
``sum(w * r, 1.0)`` with a start value.

Problem a new user ran into: the pullback of ``sum(x ** 2)`` raised RuleError "sum() of
something other than a list or tuple (a generator, a dict view) is not differentiable here; sum
a list" though the value was an array (the rule took only lists and tuples). Now the gradient
of an array's sum is the cotangent broadcast over its first axis, as ``np.sum(a, axis=0)``'s.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

POLICIES = ["save", "strict"]


def energy(x):
    return sum(x ** 2) + 0.5 * sum(np.sin(x))


def column_balance(A):
    cols = sum(A)                    # Python adds the rows: A's column sums
    return np.sum(cols ** 2) + cols[0]


def weighted_with_start(w, r):
    return sum(w * r, 1.0) ** 2


def fsum_of_vector(x):
    return math.fsum(x * x) * 3.0


def rows_written_then_summed(x):
    out = np.empty((3, x.size))
    for k in range(3):
        out[k] = (k + 1.0) * x ** 2
    return np.sum(sum(out) * x)


rng = np.random.default_rng(0)


@pytest.mark.parametrize("mutation", POLICIES)
def test_sum_of_a_vector(mutation):
    x = rng.standard_normal(5)
    g = adgen.grad(energy, mutation=mutation)(x)
    np.testing.assert_allclose(g, 2 * x + 0.5 * np.cos(x), rtol=1e-12)
    np.testing.assert_allclose(g, numerical_grad(energy, (x,), 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mutation", POLICIES)
def test_sum_of_a_matrix_adds_its_rows(mutation):
    A = rng.standard_normal((4, 3))
    g = adgen.grad(column_balance, mutation=mutation)(A)
    cols = A.sum(axis=0)
    expected = np.broadcast_to(2 * cols + np.array([1.0, 0.0, 0.0]), A.shape)
    np.testing.assert_allclose(g, expected, rtol=1e-12)
    np.testing.assert_allclose(g, numerical_grad(column_balance, (A,), 0), rtol=1e-6,
                               atol=1e-8)


@pytest.mark.parametrize("mutation", POLICIES)
def test_sum_with_a_start_value(mutation):
    w, r = rng.standard_normal(4), rng.standard_normal(4)
    gw, gr = adgen.grad(weighted_with_start, argnums=(0, 1), mutation=mutation)(w, r)
    total = 1.0 + np.dot(w, r)
    np.testing.assert_allclose(gw, 2 * total * r, rtol=1e-12)
    np.testing.assert_allclose(gr, numerical_grad(weighted_with_start, (w, r), 1), rtol=1e-6,
                               atol=1e-8)


@pytest.mark.parametrize("mutation", POLICIES)
def test_fsum_of_a_vector(mutation):
    x = rng.standard_normal(6)
    g = adgen.grad(fsum_of_vector, mutation=mutation)(x)
    np.testing.assert_allclose(g, 6.0 * x, rtol=1e-12)


@pytest.mark.parametrize("mutation", POLICIES)
def test_sum_of_rows_filled_in_place(mutation):
    x = rng.standard_normal(4)
    g = adgen.grad(rows_written_then_summed, mutation=mutation)(x)
    np.testing.assert_allclose(g, 18.0 * x ** 2, rtol=1e-12)   # d/dx of 6 x^3
    np.testing.assert_allclose(g, numerical_grad(rows_written_then_summed, (x,), 0),
                               rtol=1e-6, atol=1e-8)


def test_jvp_of_a_sum_of_a_vector():
    x, v = rng.standard_normal(5), rng.standard_normal(5)
    _, tangent = adgen.jvp(energy, (x,), (v,))
    np.testing.assert_allclose(tangent, np.dot(2 * x + 0.5 * np.cos(x), v), rtol=1e-12)


def test_hessian_of_a_sum_of_a_vector():
    x = rng.standard_normal(4)
    np.testing.assert_allclose(adgen.hessian(energy)(x), np.diag(2.0 - 0.5 * np.sin(x)),
                               rtol=1e-12, atol=1e-14)
