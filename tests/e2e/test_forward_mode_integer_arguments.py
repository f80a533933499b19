"""Forward mode and Jacobians of a function of integers, as a user calls them.

``adgen.grad`` refuses an int or bool argument; ``jvp`` took one with a tangent and returned a
zero derivative (``jvp(lambda x: np.sum(x ** 3), (np.arange(3),), (np.ones(3),))`` gave
0.0 where the derivative is 15), and ``jacfwd`` / ``jacrev`` / ``jacobian`` of
``x ** 2`` at ``np.arange(3)`` a zero matrix: silently wrong. They now refuse, as grad does
(and as jax.jvp / jax.jacfwd do); a zero or None tangent of an int is still accepted (it has
nothing to drop), and the same calls with floats give the derivative.
"""

from __future__ import annotations

import numpy as np
import pytest

import adgen


def cubes(x):
    return np.sum(x ** 3)


def squares(x):
    return x ** 2


def scaled(x, n):
    return np.sum(x * n)


@pytest.mark.parametrize("primal", [np.arange(3), np.array([True, False, True]), 2])
def test_jvp_refuses_a_tangent_for_an_integer(primal) -> None:
    with pytest.raises(adgen.NonDifferentiableError, match="integers and bools"):
        adgen.jvp(cubes, (primal,), (np.ones(np.shape(primal)),))


def test_jvp_with_floats_and_an_integer_without_tangent() -> None:
    x = np.arange(3.0)
    _, t = adgen.jvp(cubes, (x,), (np.ones(3),))
    assert np.isclose(t, np.sum(3 * x ** 2))  # 15
    _, t = adgen.jvp(scaled, (x, 4), (np.ones(3), None))
    assert np.isclose(t, 12.0)
    _, t = adgen.jvp(scaled, (x, 4), (np.ones(3), 0))
    assert np.isclose(t, 12.0)


@pytest.mark.parametrize("jac", [adgen.jacfwd, adgen.jacrev, adgen.jacobian])
def test_jacobians_refuse_integer_arguments(jac) -> None:
    with pytest.raises(adgen.NonDifferentiableError, match="dtype int64"):
        jac(squares)(np.arange(3))
    assert np.allclose(jac(squares)(np.arange(3.0)), np.diag([0.0, 2.0, 4.0]))
    # an int argument outside argnums is fine
    assert np.allclose(jac(scaled)(np.arange(3.0), 2), [2.0, 2.0, 2.0])
