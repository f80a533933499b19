"""hvp and hessian called the way a user calls them: the direction after the data
arguments, and strict refusals named in the user's code (not the generated tangent code's
x_1_dot, nor its line numbers)."""
import numpy as np
import pytest

import adgen


def nll(theta, X, y):
    r = np.tanh(X @ theta) - y
    return 0.5 * r @ r


def clip(x):
    y = np.sin(x)
    x *= y                    # overwrites x, which the gradient of line 16 reads
    return np.sum(x ** 3)


X = np.array([[0.5, -1.0], [2.0, 0.3], [-0.7, 0.9]])
Y = np.array([0.1, -0.2, 0.4])


def test_direction_after_the_data():
    theta, v, eps = np.array([0.3, -0.4]), np.array([1.0, 0.5]), 1e-6
    hv = adgen.hvp(nll)(theta, X, Y, v)
    g = adgen.grad(nll)
    assert np.allclose(hv, (g(theta + eps * v, X, Y) - g(theta - eps * v, X, Y)) / (2 * eps),
                       rtol=1e-6)


def test_direction_given_before_the_data_is_refused_by_name():
    with pytest.raises(adgen.ArgnumsError, match="direction comes after"):
        adgen.hvp(nll)(np.zeros(2), np.ones(2), X, Y)


@pytest.mark.parametrize("second", [
    lambda x: adgen.hessian(clip, mutation="strict")(x),
    lambda x: adgen.hvp(clip, mutation="strict")(x, np.ones(3)),
    lambda x: adgen.jacfwd(adgen.grad(clip, mutation="strict"))(x),
])
def test_strict_refusal_names_the_users_code(second):
    with pytest.raises(adgen.MutationError) as info:
        second(np.array([0.3, -0.7, 1.1]))
    message = str(info.value)
    assert "x *= y overwrites x" in message and "_dot" not in message
    assert "line 16" in message and "line 17" in message   # y = np.sin(x); x *= y


def test_save_policy_hessian_is_right():
    x, eps = np.array([0.3, -0.7, 1.1]), 1e-6
    H = adgen.hessian(clip)(x.copy())
    g = adgen.grad(clip)
    fd = np.array([(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(3)])
    assert np.allclose(H, fd, rtol=1e-6, atol=1e-8)
