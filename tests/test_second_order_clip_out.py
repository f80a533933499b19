"""Second derivatives through np.clip(m, lo, hi, out=m): the jvp code computes clip's masks
(rules.helpers.clip_inside, clip_below, clip_above) before m is overwritten, and reverse mode
over it asked for their rule ('clip_inside() has no derivative rule', H6's report). They are
booleans: rules without a derivative now. Expected values: the hand formula (inside the
bounds the value is x, outside a constant) and central differences of adgen.grad's hand
counterpart."""

import numpy as np
import pytest

import adgen


def clipped_in_place(x):
    m = x * 1.0
    np.clip(m, -0.5, 0.5, out=m)
    return np.sum(m ** 2 * x)


def clipped_below_in_place(x):
    m = x * 2.0
    np.clip(m, -0.5, None, out=m)
    return np.sum(np.sin(m) * x)


X = np.array([0.2, -0.9, 0.7, -0.3])


def test_hessian_through_clip_out():
    # inside: x ** 3 -> 6 x; outside: 0.25 x -> 0
    want = np.diag(np.where(np.abs(X) < 0.5, 6 * X, 0.0))
    np.testing.assert_allclose(adgen.hessian(clipped_in_place)(X.copy()), want, atol=1e-12)
    np.testing.assert_allclose(adgen.jacfwd(adgen.grad(clipped_in_place))(X.copy()), want,
                               atol=1e-12)


def test_hessian_through_clip_out_with_one_bound():
    # m = 2x where 2x >= -0.5, else -0.5: sin(2x) x -> 4 cos(2x) - 4 x sin(2x); else 0
    inside = 2 * X >= -0.5
    want = np.diag(np.where(inside, 4 * np.cos(2 * X) - 4 * X * np.sin(2 * X), 0.0))
    np.testing.assert_allclose(adgen.hessian(clipped_below_in_place)(X.copy()), want,
                               atol=1e-12)


def test_strict_refuses_as_grad_does():
    # clip's pullback reads a, which out=m overwrites: grad refuses under strict too
    with pytest.raises(adgen.MutationError):
        adgen.grad(clipped_in_place, mutation="strict")(X.copy())
    with pytest.raises(adgen.MutationError):
        adgen.hessian(clipped_in_place, mutation="strict")(X.copy())
