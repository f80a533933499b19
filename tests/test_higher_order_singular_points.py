"""Second derivatives at singular points: adgen.hessian(np.log)(0.0) was nan where the true
limit (and JAX, whose zero cotangent of the primal output is symbolic) is -inf. Reverse
mode over the jvp code gave the primal output a zero cotangent, and the pullback of
``t = np.log(x)`` added ``0 / x`` = nan at 0; it now differentiates the jvp code returning
the tangent only (transforms/tangent_only.py). Expected values by hand: d2/dx2 log x =
-1/x**2 and d2/dx2 sqrt x = -1/(4 x**1.5), -inf at 0."""

import math

import numpy as np
import pytest

import adgen

POLICIES = ("save", "strict")


def log_loss(x):
    return np.log(x)


def root(x):
    return x ** 0.5


def log_sum(x):
    return np.sum(np.log(x))


def root_sum(x):
    return np.sum(x ** 0.5)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", [log_loss, root, np.log], ids=["log", "pow", "np.log"])
def test_scalar_hessian_at_zero_is_minus_infinity(f, policy):
    with np.errstate(divide="ignore", invalid="ignore"):
        h = adgen.hessian(f, mutation=policy)(0.0)
    assert h == -math.inf


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", [log_sum, root_sum], ids=["log", "pow"])
def test_array_hessian_diagonal(f, policy):
    x = np.array([0.0, 4.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        h = adgen.hessian(f, mutation=policy)(x)
        hv = adgen.hvp(f, mutation=policy)(x, np.array([1.0, 0.0]))
    want = -1.0 / 16.0 if f is log_sum else -1.0 / (4.0 * 4.0 ** 1.5)
    assert h[0, 0] == -math.inf and hv[0] == -math.inf
    assert h[1, 1] == pytest.approx(want)
    assert h[1, 0] == 0.0


def test_regular_points_unchanged():
    x = np.array([0.5, 2.0])
    np.testing.assert_allclose(adgen.hessian(log_sum)(x), np.diag(-1.0 / x ** 2))
    np.testing.assert_allclose(adgen.jacfwd(adgen.grad(root_sum))(x),
                               np.diag(-0.25 * x ** -1.5))


def test_through_a_helper_at_a_regular_point():
    # (at 0 too since session 23: tests/test_higher_order_symbolic_zeros.py)
    def inner(x):
        return np.log(x)

    def outer(x):
        return inner(x) * 2.0

    with np.errstate(divide="ignore", invalid="ignore"):
        h = adgen.hessian(outer)(1.0)
    assert h == pytest.approx(-2.0)
