"""A user's module-level function with the name of a runtime helper adgen's passes write
(``ufunc_at`` for np.multiply.at, ``diagonal_index`` for np.fill_diagonal) must not be
called in their place: jvp of the other function raised a TypeError from inside adgen
(``ufunc_at_own_jvp() takes from 1 to 2 positional arguments but 4 were given``)."""
import numpy as np
import pytest

import adgen


def ufunc_at(x):
    """The user's own function of that name (a test of np.add.at, say)."""
    out = np.zeros(4)
    np.add.at(out, [0, 1, 1, 3, 0], x[:5] ** 2)
    return np.sum(out * np.arange(1, 5))


def diagonal_index(x):
    return np.sum(x[:3] ** 3)


def scaled_scatter(x):
    out = x[:4].copy()
    np.multiply.at(out, [0, 1, 1], x[4:7])
    return np.sum(out ** 2)


def running_max(x):
    out = np.zeros(3)
    np.maximum.at(out, [0, 0, 2], x[:3] * x[3:6])
    return np.sum(out ** 2)


def with_diagonal(x):
    a = x[:9].reshape(3, 3).copy()
    np.fill_diagonal(a, x[9:12] ** 2)
    return np.sum(a @ a)


def central(f, x, v, eps=1e-6):
    return (f(x + eps * v) - f(x - eps * v)) / (2 * eps)


X = np.random.default_rng(3).uniform(0.2, 1.0, 12)
V = np.linspace(0.3, 1.1, 12)


@pytest.mark.parametrize("f", [scaled_scatter, running_max, with_diagonal, ufunc_at,
                               diagonal_index])
def test_jvp_calls_the_runtime_helper_not_the_users_function(f):
    value, tangent = adgen.jvp(f, (X.copy(),), (V,))
    assert np.isclose(value, f(X.copy()))
    assert np.isclose(tangent, central(f, X, V), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_grad_beside_a_user_function_named_ufunc_at(mutation):
    # np.add.at is linear: strict has nothing to refuse; grad of x ** 2 scattered
    g = adgen.grad(ufunc_at, mutation=mutation)(X.copy())
    expected = np.zeros(12)
    expected[:5] = 2 * X[:5] * np.array([1.0, 2.0, 2.0, 4.0, 1.0])
    assert np.allclose(g, expected)
    g = adgen.grad(scaled_scatter)(X.copy())
    num = np.array([central(scaled_scatter, X, e) for e in np.eye(12)])
    assert np.allclose(g, num, atol=1e-6)


def test_hessian_beside_users_functions_named_like_helpers():
    # np.fill_diagonal becomes diagonal_index(a); a[d] = v: hessian vs differences of grad
    h = adgen.hessian(with_diagonal)(X.copy())
    g = adgen.grad(with_diagonal)
    num = np.stack([(g(X + 1e-5 * e) - g(X - 1e-5 * e)) / 2e-5 for e in np.eye(12)])
    assert np.allclose(h, num, atol=1e-5)
    # second order through np.multiply.at stays refused at the user's line
    with pytest.raises(adgen.AdgenError, match=r"multiply\.at"):
        adgen.hessian(scaled_scatter)(X.copy())
