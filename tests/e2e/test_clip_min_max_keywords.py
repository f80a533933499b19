"""np.clip's bounds by NumPy's other names: ``x.clip(min=lo)``, ``x.clip(max=hi)`` (ndarray
.clip's own keywords) and ``np.clip(x, min=lo, max=hi)`` (NumPy >= 2.1). adgen's rule names
them a_min and a_max, and the call was refused ('numpy.clip() got unexpected keyword
'min''). Gradients (of the bounds too) under both policies, in place with out=, jvp and
hessian against central differences or a hand formula.
"""

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

X = np.array([0.3, -0.7, 1.1, 0.05])
POLICIES = ["save", "strict"]


def floor_method(x):
    return np.sum(x.clip(min=-0.2) ** 2 * x)


def ceiling_method(x, hi):
    return np.sum(np.sin(x.clip(max=hi)) * x)


def both_bounds(x, lo, hi):
    return np.sum(np.clip(x * 2.0, min=lo, max=hi) ** 3)


def in_place(x):
    y = x * 1.5
    y.clip(min=-0.5, max=1.0, out=y)
    return np.sum(y ** 2 * x)


@pytest.mark.parametrize("policy", POLICIES)
def test_gradients(policy):
    np.testing.assert_allclose(adgen.grad(floor_method, mutation=policy)(X),
                               numerical_grad(floor_method, (X,), 0), rtol=1e-6, atol=1e-9)
    for k in (0, 1):
        np.testing.assert_allclose(
            adgen.grad(ceiling_method, argnums=k, mutation=policy)(X, 0.5),
            numerical_grad(ceiling_method, (X, 0.5), k), rtol=1e-6, atol=1e-9)
    for k in (0, 1, 2):
        np.testing.assert_allclose(
            adgen.grad(both_bounds, argnums=k, mutation=policy)(X, -0.4, 1.2),
            numerical_grad(both_bounds, (X, -0.4, 1.2), k), rtol=1e-6, atol=1e-9)


def test_in_place_with_out():
    np.testing.assert_allclose(adgen.grad(in_place)(X), numerical_grad(in_place, (X,), 0),
                               rtol=1e-6, atol=1e-9)
    with pytest.raises(adgen.MutationError):  # out=y overwrites y, which its gradient reads
        adgen.grad(in_place, mutation="strict")(X)


def test_forward_mode_and_hessian():
    v = np.array([1.0, -0.5, 0.25, 2.0])
    _, slope = adgen.jvp(floor_method, (X,), (v,))
    assert slope == pytest.approx(numerical_grad(floor_method, (X,), 0) @ v, rel=1e-6)
    # d2/dx2 of c(x)^2 x with c = max(x, -0.2): 6x where x > -0.2, 0 below (c constant)
    h = adgen.hessian(floor_method)(X)
    np.testing.assert_allclose(h, np.diag(np.where(X > -0.2, 6 * X, 0.0)), atol=1e-12)
