"""np.apply_along_axis(func1d, axis, arr) is differentiated (since session 27) with a function
of the user's (module-level, a lambda, a closure) or NumPy's: adgen compiles NumPy's loop over
the slices (rules/composites_callbacks.py) and the function it calls on each. It was refused
('calls a Python function that NumPy runs in a loop adgen cannot see'). Gradients against
central differences under both policies, jvp and hessian against them (a closure passed as a
value too, since session 28: it was refused at the user's line), a hand formula."""

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, check_jvp, numerical_hessian

import adgen

X = np.sin(np.arange(12.0) * 0.7).reshape(3, 4)


def soft_norm(row):
    return np.sqrt(np.sum(row ** 2) + 0.1)


def row_norms(x):
    return np.sum(np.apply_along_axis(soft_norm, 1, x) ** 2)


def column_products(x):
    # a vector per column (the result's axis where the column's was), through a lambda
    out = np.apply_along_axis(lambda c: np.cumprod(c + 2.0), 0, x)
    return np.sum(np.tanh(out))


def weighted(x):
    w = x[0, 0]
    return np.sum(np.apply_along_axis(lambda r: np.sum(r ** 3) * w, -1, x))


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [row_norms, column_products, weighted], ids=lambda f: f.__name__)
def test_central_differences(f, mutation):
    check_grad(f, (X.copy(),), mutation=mutation, strict_must_compute=True)


@pytest.mark.parametrize("f", [row_norms, column_products], ids=lambda f: f.__name__)
def test_jvp_and_hessian(f):
    check_jvp(f, (X.copy(),), (np.cos(np.arange(12.0)).reshape(3, 4),))
    flat = X.ravel().copy()

    def g(v):
        return f(np.reshape(v, (3, 4)))

    np.testing.assert_allclose(adgen.hessian(g)(flat), numerical_hessian(g, flat.copy()),
                               rtol=1e-4, atol=1e-5)


def test_a_closure_in_forward_mode():
    # (refused at the line before session 28: the lambda reads w, a value with a derivative)
    check_jvp(weighted, (X.copy(),), (np.cos(np.arange(12.0)).reshape(3, 4),))
    flat = X.ravel().copy()

    def g(v):
        return weighted(np.reshape(v, (3, 4)))

    np.testing.assert_allclose(adgen.hessian(g)(flat), numerical_hessian(g, flat.copy()),
                               rtol=1e-4, atol=1e-5)


def test_hand_formula():
    # d/dx sum_rows soft_norm(row)^2 = 2 x
    assert_grad_close(adgen.grad(row_norms)(X.copy()), 2.0 * X)
