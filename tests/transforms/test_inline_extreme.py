"""reverse_ops / specialize.inline_extreme: the cotangents of ``max(a, b)`` and ``min(a, b)``
of float64 numbers and ints are written inline (``g * ((0.5 if b == out else 1.0) if a ==
out else 0.0)``), the helper ``extreme_vjp``'s branch for those types without its calls (a
soft-DTW cell made four). Numbers of other types (a float32 number) keep the helper, whose
other branch gives another dtype.

Gradients against central differences under both policies, ties included (a tie shares the
cotangent: central differences of max(a, a) give 0.5 to each).
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

POLICIES = ["save", "strict"]


def running_max(x):
    acc = 0.0
    best = x[0]
    for i in range(x.shape[0]):
        best = max(best, x[i])
        low = min(x[i], 0.5 * best)
        acc = acc + best * low
    return acc


def clipped(x, c):
    total = 0.0
    for i in range(x.shape[0]):
        total = total + max(x[i] * c, 0.0) + min(0.0, x[i] - c)
    return total


def int_or_float(x, c):
    total = 0.0
    for i in range(x.shape[0]):
        total = total + max(x[i] * c, 0)  # an int or a float: the helper stays
    return total


def float32_numbers(x):
    y = x.astype(np.float32)
    return max(y[0], y[1]) * x[2]


class Soft:
    def __init__(self, scale):
        self.scale = scale

    def __call__(self, x):
        s = 0.0
        for i in range(1, x.shape[0]):
            s = s + self.scale * max(x[i - 1], x[i]) ** 2
        return s


@pytest.mark.parametrize("mutation", POLICIES)
def test_running_max_and_ties(mutation):
    x = np.array([0.3, 1.2, -0.4, 1.2, 0.9, 2.0, 2.0])  # ties of the maximum
    check_grad(running_max, (x,), mutation=mutation)
    x = np.random.default_rng(0).standard_normal(9)
    check_grad(running_max, (x,), mutation=mutation)
    assert "extreme_vjp" not in adgen.source(running_max, x, mutation=mutation)


@pytest.mark.parametrize("mutation", POLICIES)
def test_int_and_float_literals(mutation):
    x = np.array([0.7, -1.3, 0.2, 2.5])
    check_grad(clipped, (x, 0.8), mutation=mutation)
    check_grad(clipped, (x, 0.8), argnums=1, mutation=mutation)
    assert "extreme_vjp" not in adgen.source(clipped, x, 0.8, mutation=mutation)
    check_grad(int_or_float, (x, 0.8), mutation=mutation)
    check_grad(int_or_float, (x, 0.8), argnums=1, mutation=mutation)


def test_float32_keeps_the_helper():
    x = np.array([0.4, 1.1, 2.0])
    check_grad(float32_numbers, (x,), rtol=1e-3, atol=1e-4, eps=1e-2)
    assert "extreme_vjp" in adgen.source(float32_numbers, x)


@pytest.mark.parametrize("mutation", POLICIES)
def test_method_and_lambda(mutation):
    x = np.array([0.5, -0.2, 0.5, 1.4, 1.4])
    check_grad(Soft(1.5), (x,), mutation=mutation)
    f = lambda v: max(v[0] * v[1], v[2]) - min(v[1], v[2])  # noqa: E731
    check_grad(f, (np.array([1.5, 2.0, 3.0]),), mutation=mutation)
    check_grad(f, (np.array([1.5, 2.0, 4.0]),), mutation=mutation)


def test_second_derivatives_through_the_inline_form():
    f = lambda v: max(v[0] * v[1], v[2] ** 2) * v[0]  # noqa: E731
    x = np.array([1.5, 2.0, 1.1])
    h = adgen.hessian(f)(x)
    g = adgen.grad(f)
    eps = 1e-6
    cols = [(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(h, np.stack(cols, axis=1), rtol=1e-5, atol=1e-6)
