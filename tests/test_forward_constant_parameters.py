"""Forward mode gives no tangent to a parameter the caller leaves to its default or passes
a constant by keyword-only name: a zero tangent of the exponent of ``x ** p`` added
``p_dot * log(x) * x ** p`` = 0 * nan at a negative ``x``, so jvp, jacfwd and hessian of
``np.sum(x ** p)`` with ``p=3`` a default (or ``power=2`` passed to a keyword-only
parameter, or bound by ``functools.partial``) were NaN, silently; JAX gives the derivative.
Expected values by hand: d/dx sum(x ** p) = p x ** (p - 1)."""

import functools

import numpy as np
import pytest

import adgen

X = np.array([0.4, 0.9, -0.6])
V = np.array([1.0, 0.5, -1.0])


def cubes_by_default(x, p=3):
    return np.sum(x ** p)


def cubes_keyword_only(x, *, p=3):
    return np.sum(x ** p)


def scaled_powers(x, *, scale=2.0, power=3):
    return np.sum(scale * x ** power)


def squares_through_a_helper(x):
    return scaled_powers(x, scale=0.5, power=2)


def squares_through_a_lambda(x):
    return (lambda v: scaled_powers(v, power=2, scale=0.5))(x)


squares_by_partial = functools.partial(scaled_powers, scale=0.5, power=2)


@pytest.mark.parametrize("f", [cubes_by_default, cubes_keyword_only],
                         ids=["default", "keyword-only"])
def test_a_parameter_left_to_its_default(f):
    assert adgen.jvp(f, (X,), (V,))[1] == pytest.approx(np.sum(3 * X ** 2 * V))
    np.testing.assert_allclose(adgen.jacfwd(f)(X), 3 * X ** 2)
    np.testing.assert_allclose(adgen.hessian(f)(X), np.diag(6 * X))


@pytest.mark.parametrize("f", [squares_through_a_helper, squares_through_a_lambda,
                               squares_by_partial], ids=["helper", "lambda", "partial"])
def test_a_constant_passed_by_keyword(f):
    # d/dx sum(0.5 x ** 2) = x
    assert adgen.jvp(f, (X,), (V,))[1] == pytest.approx(np.sum(X * V))
    np.testing.assert_allclose(adgen.jacfwd(f)(X), X)
    np.testing.assert_allclose(adgen.hessian(f)(X), np.eye(3))
    np.testing.assert_allclose(adgen.grad(f)(X), X)
