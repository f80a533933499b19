"""adgen.value_and_grad plugs into scipy.optimize.minimize(..., jac=True) unchanged.

SciPy calls ``fun(x, *args)`` with a 1-d float64 ``x`` and wants ``(value, gradient)``: a
scalar (a float, or a size-1 array) and an array of ``x``'s shape. SciPy keeps earlier
gradients (BFGS's ``gfk``), so each call must return a new array, not a buffer a later call
overwrites. Gradients are compared with ``adgen.grad`` and central differences; the fits with
the known optimum. Skipped without scipy (the "examples" extra).
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

optimize = pytest.importorskip("scipy.optimize")

METHODS = ["BFGS", "L-BFGS-B", "CG", "TNC", "SLSQP", "trust-constr"]


def rosen(x):
    r = np.empty(len(x) - 1)
    for i in range(len(x) - 1):  # allocate-then-fill
        r[i] = 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return np.sum(r)


def logistic(w, X, y):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p)) + 1e-3 * np.sum(w * w)


def zero_d(x):
    return np.array(np.sum((x - 2.0) ** 2))  # a 0-d array, not a float


def size_one(x):
    return (x - 2.0) ** 2  # shape (1,) for a one-element x


@pytest.mark.parametrize("method", METHODS)
def test_minimize_with_value_and_grad(method: str) -> None:
    x0 = np.array([-1.2, 1.0, -0.5, 0.8])
    value, grad = adgen.value_and_grad(rosen)(x0.copy())
    assert isinstance(value, float) and grad.dtype == np.float64 and grad.shape == x0.shape
    assert_grad_close(grad, numerical_grad(rosen, (x0,), 0))
    assert_grad_close(grad, adgen.grad(rosen)(x0.copy()))
    options = {"maxfun": 10000} if method == "TNC" else {"maxiter": 10000}
    result = optimize.minimize(adgen.value_and_grad(rosen), x0, jac=True, method=method,
                               options=options)
    assert result.success, result.message
    assert np.allclose(result.x, 1.0, atol=2e-3)


def test_extra_arguments_go_through_args() -> None:
    rng = np.random.default_rng(0)
    X = np.column_stack([np.ones(300), rng.standard_normal((300, 2))])
    y = (rng.random(300) < 1.0 / (1.0 + np.exp(-(X @ np.array([0.5, -1.0, 2.0]))))) * 1.0
    vg = adgen.value_and_grad(logistic)
    w0 = np.zeros(3)
    assert_grad_close(vg(w0, X, y)[1], numerical_grad(logistic, (w0, X, y), 0))
    result = optimize.minimize(vg, w0, args=(X, y), jac=True, method="L-BFGS-B")
    assert result.success
    # the optimum: the gradient vanishes (central differences, not adgen's own)
    assert np.abs(numerical_grad(logistic, (result.x, X, y), 0)).max() < 1e-4


@pytest.mark.parametrize("fun", [zero_d, size_one])
def test_array_valued_scalar_outputs(fun) -> None:
    value, grad = adgen.value_and_grad(fun)(np.array([0.5]))
    assert np.size(value) == 1 and grad.shape == (1,)
    assert_grad_close(grad, numerical_grad(lambda x: float(np.sum(fun(x))), (np.array([0.5]),),
                                           0))
    result = optimize.minimize(adgen.value_and_grad(fun), np.array([0.5]), jac=True,
                               method="BFGS")
    assert result.success and np.allclose(result.x, 2.0, atol=1e-6)


def test_each_call_returns_new_arrays() -> None:
    vg = adgen.value_and_grad(rosen)
    x = np.array([0.3, -0.2, 0.7])
    _, first = vg(x)
    kept = first.copy()
    x += 1.0  # SciPy updates its iterate in place (L-BFGS-B)
    _, second = vg(x)
    assert np.array_equal(first, kept)  # an earlier gradient is not overwritten
    assert not np.shares_memory(first, second) and not np.shares_memory(second, x)
    assert_grad_close(second, numerical_grad(rosen, (x,), 0))
