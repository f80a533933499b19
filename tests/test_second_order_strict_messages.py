"""Second derivatives under mutation="strict" refuse in-place writes whose forward-mode
code needs a copy, with a message about the user's line and variable, not adgen's tangent
names: for ``np.exp(out, out=out)`` (whose gradient keeps nothing: exp's pullback reads its
output) hessian said 'overwrites out_1_dot, which the gradient of line 14 (np.exp(out,
out=out)) reads' — out_1_dot is the jvp code's name, and line 14 is np.empty. A variable of
the user's named ``q_dot`` keeps grad's message. Values: hand formulas, central differences.
"""

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen


def exp_in_place(x):
    out = np.empty(3)
    np.multiply(x, x, out=out)
    np.exp(out, out=out)
    return np.sum(out)


def velocity(x):
    q_dot = x * 1.0
    y = q_dot * q_dot
    q_dot *= 2.0
    return np.sum(y) + np.sum(q_dot)


X = np.array([0.7, -0.4, 1.3])


def test_hessian_strict_names_the_users_variable():
    with pytest.raises(adgen.MutationError) as err:
        adgen.hessian(exp_in_place, mutation="strict")(X.copy())
    text = str(err.value)
    assert 'second derivatives under mutation="strict"' in text
    assert "np.exp(out, out=out) writes out in place" in text and "out's tangent" in text
    assert "out_1_dot" not in text and err.value.location.line == 19
    assert 'mutation="save"' in text


def test_the_same_function_by_save_and_its_gradient_by_strict():
    # sum(exp(x ** 2)): Hessian diag(exp(x ** 2) (2 + 4 x ** 2))
    np.testing.assert_allclose(adgen.hessian(exp_in_place)(X.copy()),
                               np.diag(np.exp(X ** 2) * (2 + 4 * X ** 2)), rtol=1e-12)
    np.testing.assert_allclose(adgen.grad(exp_in_place, mutation="strict")(X.copy()),
                               numerical_grad(exp_in_place, (X.copy(),), 0), rtol=1e-6)


def test_a_users_variable_named_like_a_tangent_keeps_grads_message():
    with pytest.raises(adgen.MutationError, match="q_dot \\*= 2.0 overwrites q_dot"):
        adgen.grad(velocity, mutation="strict")(X.copy())
