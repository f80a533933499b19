"""NumPy's ``where=``, ``mean=``, ``correction=`` and ``dtype=`` of ``np.var`` / ``np.std`` (and
their methods), and ``dtype=`` of ``np.cumsum`` / ``np.cumprod``: refused at the line before
session 29 (the rules take none of them), now written out as plain NumPy by
transforms/reduction_keywords.py. Values and dtypes are NumPy's; gradients under both
policies, jvps and hessians match central differences."""

import numpy as np
import pytest

import adgen
from tests.gradcheck import central, numerical_hessian

X = np.array([0.3, 1.2, -0.7, 2.1, 0.45, -1.3])
M = np.array([[1.3, 0.25, -0.4], [0.5, 2.2, 0.1], [-0.3, 0.6, 1.9]])
V = np.linspace(0.3, 1.1, 6)


def masked_std(x):
    return np.std(x, where=x > 0)


def masked_var_rows(x):
    a = x.reshape(2, 3)
    return np.sum(np.var(a, axis=1, ddof=1, where=a > -1.0) * np.array([1.0, 2.0]))


def masked_std_method_keepdims(x):
    a = x.reshape(3, 2)
    return np.sum(a.std(axis=0, keepdims=True, where=a < 2.0) * a)


def corrected(x):
    return np.std(x, correction=1) + np.var(x * x, correction=0.5)


def given_mean(x):
    a = x.reshape(2, 3)
    return np.sum(np.var(a, axis=1, mean=np.mean(a, axis=1, keepdims=True)))


def with_dtype(x):
    return np.var(x, dtype=np.float64) + x.std(dtype=float, ddof=1)


def running(x):
    return np.sum(np.cumsum(x, dtype=np.float64) ** 2) + np.sum(x.reshape(2, 3).cumprod(1, dtype=float))


def complex_masked(x):
    return np.std(x + 1j * x ** 2, where=x > 0)


FUNCTIONS = [masked_std, masked_var_rows, masked_std_method_keepdims, corrected, given_mean,
             with_dtype, running, complex_masked]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", FUNCTIONS)
def test_gradient_and_jvp(f, mutation):
    ref = central(f, X)
    value, g = adgen.value_and_grad(f, mutation=mutation)(X.copy())
    assert value == pytest.approx(f(X), rel=1e-12)
    np.testing.assert_allclose(g, ref, rtol=1e-6, atol=1e-7)
    _, t = adgen.jvp(f, (X.copy(),), (V,))
    assert t == pytest.approx(float(np.dot(ref, V)), rel=1e-6, abs=1e-7)


@pytest.mark.parametrize("f", [masked_std, masked_var_rows, corrected, running])
def test_hessian(f):
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), numerical_hessian(f, X),
                               rtol=1e-4, atol=1e-5)


def test_float32_stays_float32_and_an_int_dtype_has_no_gradient():
    x32 = X.astype(np.float32)

    def f(x):
        return np.var(x, where=x > 0)

    value, _ = adgen.value_and_grad(f)(x32)
    assert np.asarray(value).dtype == np.float32 and value == pytest.approx(f(x32), rel=1e-6)

    def g(x):
        return np.sum(np.cumsum(10 * x, dtype=np.int64) * 1.0) + np.sum(x)

    np.testing.assert_allclose(adgen.grad(g)(X.copy()), np.ones(6))
