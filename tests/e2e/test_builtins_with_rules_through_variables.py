"""Python builtins with a derivative rule (max, min, abs, sum, pow) called through a variable
(``f = max``, a list of them, a parameter ``f`` of a helper): forward mode ran them as they
are, as it runs ``print``, and gave their result no tangent: jvp returned None (a silent zero)
and hessian raised unrelated errors. They now go through their rules' jvps; reverse mode was
right already."""
import numpy as np
import pytest

import adgen
from tests.gradcheck import numerical_grad, numerical_hessian

U = np.array([0.3, -0.7, 1.1])
T = np.array([1.0, -2.0, 0.5])


def apply(f, a, b):
    return f(a, b)


def larger_through_a_parameter(u):
    return apply(max, np.sum(u), np.sum(u ** 2))


def absolute_value_held_by_a_name(u):
    f = abs
    return f(np.sum(u ** 3))


def builtin_sum_held_by_a_name(u):
    total = sum
    return total([np.sum(u), np.sum(u ** 2)])


def power_held_by_a_name(u):
    p = pow
    return np.sum(p(u, 3))


def extremes_from_a_list(u):
    ops = [min, max]
    return ops[0](np.sum(u), np.sum(u ** 2)) + 2.0 * ops[1](np.sum(u), np.sum(u ** 2))


LOSSES = [larger_through_a_parameter, absolute_value_held_by_a_name,
          builtin_sum_held_by_a_name, power_held_by_a_name, extremes_from_a_list]


@pytest.mark.parametrize("f", LOSSES, ids=lambda f: f.__name__)
def test_jvp(f):
    y, dy = adgen.jvp(f, (U,), (T,))
    assert y == pytest.approx(f(U))
    assert dy == pytest.approx(np.dot(numerical_grad(f, (U,), 0), T), rel=1e-6)


def test_jvp_by_hand():
    # max(sum(u), |u|^2) is |u|^2 here (0.7 < 1.79): its derivative along t is 2 u . t
    _, dy = adgen.jvp(larger_through_a_parameter, (U,), (T,))
    assert dy == pytest.approx(2.0 * np.dot(U, T), rel=1e-12)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", LOSSES, ids=lambda f: f.__name__)
def test_gradient(f, mutation):
    np.testing.assert_allclose(adgen.grad(f, mutation=mutation)(U),
                               numerical_grad(f, (U,), 0), rtol=1e-6)


@pytest.mark.parametrize("f", LOSSES, ids=lambda f: f.__name__)
def test_hessian(f):
    np.testing.assert_allclose(adgen.hessian(f)(U), numerical_hessian(f, U),
                               rtol=1e-4, atol=1e-5)
