"""A ufunc's ``where=``, as scientific code guards a division or a logarithm:

    ratio = np.divide(flux, area, out=np.zeros_like(flux), where=area != 0)
    plogp = p * np.log(p, out=np.zeros_like(p), where=p > 0)

Problem a new user ran into: refused at the line ('adgen's rule for numpy.divide takes (x1,
x2)'), though NumPy's meaning is a selection: the function where the mask holds, ``out``'s own
values elsewhere. Now the call is written as ``np.where(m, f(np.where(m, x, 1), ...), out)``
stored into ``out`` (transforms/ufunc_where.py): the entries the mask skips take their gradient
from ``out``, and the stand-in 1 keeps a zero divisor's NaN out of the gradient.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad, numerical_grad

import adgen

POLICIES = ["save", "strict"]


def mean_ratio(flux, area):
    ratio = np.divide(flux, area, out=np.zeros_like(flux), where=area != 0)
    return np.sum(ratio ** 2)


def entropy(p):
    logp = np.log(p, out=np.zeros_like(p), where=p > 0)
    return -np.sum(p * logp)


def floor_log(p, floor):
    out = np.full_like(p, floor)
    np.log(p, out, where=p > 1e-3)           # out by position, the call as a statement
    return np.sum(out * p)


FLUX = np.array([1.0, 2.0, 3.0, 4.0, -1.5])
AREA = np.array([0.5, 0.0, 2.0, -1.0, 0.0])


@pytest.mark.parametrize("mutation", POLICIES)
def test_safe_division(mutation):
    gf, ga = adgen.grad(mean_ratio, argnums=(0, 1), mutation=mutation)(FLUX, AREA)
    nz = AREA != 0
    safe = np.where(nz, AREA, 1.0)
    np.testing.assert_allclose(gf, np.where(nz, 2 * FLUX / safe ** 2, 0.0), rtol=1e-12)
    np.testing.assert_allclose(ga, np.where(nz, -2 * FLUX ** 2 / safe ** 3, 0.0), rtol=1e-12)
    assert np.all(np.isfinite(ga))
    np.testing.assert_allclose(gf, numerical_grad(mean_ratio, (FLUX, AREA), 0), rtol=1e-6,
                               atol=1e-8)


@pytest.mark.parametrize("mutation", POLICIES)
def test_entropy_with_empty_bins(mutation):
    p = np.array([0.2, 0.0, 0.5, 0.3])
    g = adgen.grad(entropy, mutation=mutation)(p)
    # -(log p + 1) where p > 0; where p == 0 only the factor p is differentiated: -log 1 -> 0
    expected = np.where(p > 0, -(np.log(np.where(p > 0, p, 1.0)) + 1.0), 0.0)
    np.testing.assert_allclose(g, expected, rtol=1e-12)


@pytest.mark.parametrize("mutation", POLICIES)
def test_positional_out_and_a_floor(mutation):
    p = np.array([0.4, 1e-4, 2.0, -0.5])
    args = (p, -7.0)
    check_grad(floor_log, args, (0, 1), mutation=mutation, strict_must_compute=True,
               rtol=1e-6, atol=1e-8)
    # the floor reaches the sum through the entries the mask skips
    np.testing.assert_allclose(adgen.grad(floor_log, argnums=1, mutation=mutation)(*args),
                               1e-4 - 0.5, rtol=1e-12)


def test_forward_mode_and_second_order():
    _, tangent = adgen.jvp(mean_ratio, (FLUX, AREA), (np.ones(5), np.zeros(5)))
    nz = AREA != 0
    np.testing.assert_allclose(tangent, np.sum(np.where(nz, 2 * FLUX / np.where(nz, AREA, 1)
                                                         ** 2, 0.0)), rtol=1e-12)
    h = adgen.hessian(mean_ratio)(FLUX, AREA)
    np.testing.assert_allclose(h, np.diag(np.where(nz, 2 / np.where(nz, AREA, 1) ** 2, 0.0)),
                               rtol=1e-12)
