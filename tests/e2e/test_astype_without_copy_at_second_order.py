"""``np.astype(z, np.float64, copy=False)`` of a float64
array is ``z`` itself, written after through the result. hessian (and hvp, jacfwd of grad)
raised NumPy's own casting error ('Cannot cast ufunc add output from dtype O') in the jvp
code's pullback: the write varied every name the result may share memory with, the dtype
``np.float64`` among them, whose zero tangent's adjoint was an object array. A name bound to
a number type or a dtype holds no derivative now (analyses.activity.dtype_names). Against
the hand formula and central differences, under both mutation policies."""

import numpy as np
import pytest
from gradcheck import check_grad, numerical_hessian, numerical_jvp

import adgen

X = np.array([0.3, -0.7, 1.1])
V = np.array([1.0, -0.5, 2.0])


def overwrite_then_read(x):
    z = x * 2.0
    y = np.astype(z, np.float64, copy=False)  # z itself
    y[0] = x[1] ** 2
    return np.sum(z ** 3)


def fill_through_the_cast(x):
    z = np.zeros(3)
    y = np.astype(z, np.float64, copy=False)
    y[1:] = x[:2] * 3.0
    return np.sum(z * x)


DTYPE = np.float64


def cast_to_a_global_dtype(x):
    z = np.sin(x)
    y = np.astype(z, DTYPE, copy=False)
    y[2] = 0.5 * x[0]
    return np.sum(z * z)


def hessians(x):
    a = np.zeros((3, 3))
    a[1, 1], a[2, 2] = 30 * x[1] ** 4 + 48 * x[1], 48 * x[2]
    b = np.array([[0.0, 3.0, 0.0], [3.0, 0.0, 3.0], [0.0, 3.0, 0.0]])
    c = np.diag([2 * np.cos(2 * X[0]) + 0.5, 2 * np.cos(2 * X[1]), 0.0])
    return {overwrite_then_read: a, fill_through_the_cast: b, cast_to_a_global_dtype: c}


FUNCTIONS = [overwrite_then_read, fill_through_the_cast, cast_to_a_global_dtype]


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_hessian_and_hvp(f):
    H = adgen.hessian(f)(X.copy())
    np.testing.assert_allclose(H, hessians(X)[f], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(H, numerical_hessian(f, X.copy()), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(adgen.hvp(f)(X.copy(), V), H @ V, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(adgen.jacfwd(adgen.grad(f))(X.copy()), H, rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_grad_and_jvp(f, mutation):
    check_grad(f, (X.copy(),), mutation=mutation)
    _, dot = adgen.jvp(f, (X.copy(),), (V,))
    np.testing.assert_allclose(dot, numerical_jvp(f, (X.copy(),), (V,))[0], rtol=1e-6)
