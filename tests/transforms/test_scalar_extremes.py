"""scalar_extremes: ``max(a, b)`` / ``min(a, b)`` of two numbers written as the comparison the
builtin makes (``b if b > a else a``), in the forward and in the numbers a pullback computes
again. The value must be the plain call's — the same object for ties and NaNs (the first
argument) — and the gradient right under both policies against central differences; a
``max`` that is not the builtin is left alone.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

POLICIES = ["save", "strict"]


def clipped_sum(x, c):
    total = 0.0
    for i in range(x.shape[0]):
        hi = max(x[i] * c, 0.25)
        lo = min(x[i], -0.5)
        total = total + hi * hi + lo
    return total


def first_wins(x):
    a = x[0] * 1.0
    b = x[1] * 1.0
    return max(a, b) * 3.0 + min(b, a) * 2.0


def with_an_int(x):
    s = 0.0
    for i in range(x.shape[0]):
        k = max(i - 2, 0)  # an int, as the builtin gives
        s = s + x[i] * k
    return s


def make_shadowed():
    max = lambda a, b: a * b  # noqa: A001, E731 - the user's own max

    def shadowed(x):
        return max(x[0], x[1]) + x[2]
    return shadowed


@pytest.mark.parametrize("mutation", POLICIES)
def test_values_and_gradients(mutation):
    x = np.array([0.9, -1.2, 0.1, 2.0, -0.5])
    check_grad(clipped_sum, (x, 0.7), (0, 1), mutation=mutation)
    source = adgen.source(clipped_sum, x, 0.7, mutation=mutation)
    assert "max(" not in source.split("_pullback")[0].split("# line")[0], source
    value, _ = adgen.value_and_grad(clipped_sum, mutation=mutation)(x, 0.7)
    assert value == clipped_sum(x, 0.7)


@pytest.mark.parametrize("mutation", POLICIES)
def test_ties_and_nans_take_the_first_argument(mutation):
    for x in (np.array([1.5, 1.5]), np.array([np.nan, 1.0]), np.array([1.0, np.nan]),
              np.array([-0.0, 0.0]), np.array([0.0, -0.0])):
        value, _ = adgen.value_and_grad(first_wins, mutation=mutation)(x)
        plain = first_wins(x)
        assert (value == plain or math.isnan(value) and math.isnan(plain)) and \
            math.copysign(1.0, value) == math.copysign(1.0, plain), (x, value, plain)
    check_grad(first_wins, (np.array([1.5, 1.5]),), mutation=mutation)  # shares at the tie
    check_grad(first_wins, (np.array([0.3, 1.5]),), mutation=mutation)


@pytest.mark.parametrize("mutation", POLICIES)
def test_an_int_stays_an_int(mutation):
    x = np.linspace(-1.0, 1.0, 6)
    check_grad(with_an_int, (x,), mutation=mutation)
    value, _ = adgen.value_and_grad(with_an_int, mutation=mutation)(x)
    assert value == with_an_int(x)


def test_a_users_max_is_left_alone():
    f = make_shadowed()
    x = np.array([1.5, -2.0, 0.5])
    check_grad(f, (x,))
    assert "max(" in adgen.source(f, x)


def test_a_lambda_and_a_method():
    class Clip:
        def __init__(self, hi):
            self.hi = hi

        def __call__(self, x):
            return min(x[0] * x[1], self.hi) + max(x[1], x[2])

    x = np.array([0.5, 3.0, 1.0])
    check_grad(Clip(2.0), (x,))
    check_grad(Clip(1.0), (x,))
    check_grad(lambda v: max(v[0], v[1]) * min(v[1], v[2]), (x,))


def test_numba_backend():
    pytest.importorskip("numba")
    x = np.array([0.9, -1.2, 0.1, 2.0, -0.5])
    g = adgen.grad(clipped_sum, argnums=(0, 1), backend="numba")(x, 0.7)
    want = adgen.grad(clipped_sum, argnums=(0, 1))(x, 0.7)
    np.testing.assert_allclose(g[0], want[0])
    assert g[1] == pytest.approx(want[1])
