"""``vs = n * [x]`` (a list repeated ``n`` times, ``n`` an int parameter) under forward mode.

Reverse mode differentiates the repetition (rule ``adgen.sequence_product``, 9392a77). Forward
mode applied the product's rule to both operands and wrote the tangent ``n_dot * [x] + n *
[x_dot]`` with ``n_dot = 0.0`` (an int's zero tangent): Python's ``TypeError: can't multiply
sequence by non-int of type 'float'`` from generated code. An int operand now repeats the
sequence and has no tangent term; a list of numbers times an array is NumPy's product, whose
two terms stay. Values against central differences (``check_jvp``) and by hand.
"""

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_jvp, numerical_grad

import adgen

X = np.array([0.3, -0.7, 1.1])
T = np.array([1.0, 0.5, -2.0])


def repeated(x, n):
    vs = n * [x]
    return sum(np.sum(v ** 2) for v in vs)


def repeated_on_the_right(x, n):
    vs = [np.sin(x), x] * n
    return sum(np.sum(v * (k + 1)) for k, v in enumerate(vs))


def repeated_tuple(x, n):
    vs = (x * 2.0,) * n
    return np.sum(vs[0] * vs[-1])


def through_a_helper(x):
    return repeated(x, 3) + repeated_on_the_right(x, 2)


def weights_times_an_array(x):
    return np.sum([1.0, 2.0, 3.0] * x ** 2)


@pytest.mark.parametrize("f", [repeated, repeated_on_the_right, repeated_tuple])
@pytest.mark.parametrize("n", [1, 3, np.int64(2)])
def test_an_int_parameter_repeats_the_list_under_jvp(f, n):
    check_jvp(lambda x: f(x, n), (X.copy(),), (T,))
    value, tangent = adgen.jvp(f, (X.copy(), n), (T, None))
    assert value == pytest.approx(f(X.copy(), n))
    assert tangent == pytest.approx(numerical_grad(lambda x: f(x, n), (X.copy(),), 0) @ T)


def test_by_hand():
    # n * sum(x ** 2): tangent 2 n x . t
    _, tangent = adgen.jvp(repeated, (X.copy(), 3), (T, None))
    assert tangent == pytest.approx(6.0 * X @ T)


@pytest.mark.parametrize("f", [through_a_helper, weights_times_an_array])
def test_helpers_and_numpy_products(f):
    check_jvp(f, (X.copy(),), (T,))


def test_second_derivatives_of_a_repetition():
    H = adgen.hessian(lambda x: repeated(x, 3))(X.copy())
    np.testing.assert_allclose(H, 6.0 * np.eye(3), atol=1e-8)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_reverse_mode_agrees(mutation):
    assert_grad_close(adgen.grad(repeated, mutation=mutation)(X.copy(), 3), 6.0 * X)
