"""Second derivatives under mutation="strict" refuse in-place writes whose forward-mode
code needs a copy, with a message about the user's line and variable, not adgen's tangent
names: for ``np.exp(out, out=out)`` (whose gradient keeps nothing: exp's pullback reads its
output) hessian said 'overwrites out_1_dot, which the gradient of line 14 (np.exp(out,
out=out)) reads' — out_1_dot is the jvp code's name, and line 14 is np.empty. A variable of
the user's named ``q_dot`` keeps grad's message. A refusal raised when the jvp code runs
(a guard) named that code's line numbers; it names the user's now. Values: hand formulas, central differences.
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


def shifted(w):  # log-softmax of each row, the first column: the shift cancels
    z = np.outer(w, w)
    z -= z.max(axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(logp[:, 0])


X = np.array([0.7, -0.4, 1.3])


def test_hessian_strict_names_the_users_variable():
    with pytest.raises(adgen.MutationError) as err:
        adgen.hessian(exp_in_place, mutation="strict")(X.copy())
    text = str(err.value)
    assert 'second derivatives under mutation="strict"' in text
    assert "np.exp(out, out=out) writes out in place" in text and "out's tangent" in text
    import inspect

    lines, first = inspect.getsourcelines(exp_in_place)
    line = first + next(k for k, t in enumerate(lines) if "np.exp(out" in t)
    assert "out_1_dot" not in text and err.value.location.line == line
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


def test_a_run_time_refusal_in_the_jvp_code_names_the_users_lines():
    # grad by strict takes z -= z.max(...) (a shift the result does not see); the jvp code's
    # tangent of the max reads z, which the in-place shift overwrites, so hessian refuses at
    # run time: it named the jvp code's lines ('the gradient of line 8 reads', 'before line
    # 15' in a 7-line function)
    import inspect

    lines, first = inspect.getsourcelines(shifted)
    shift = first + next(k for k, t in enumerate(lines) if "z -=" in t)
    with pytest.raises(adgen.MutationError) as err:
        adgen.hessian(shifted, mutation="strict")(X.copy())
    text = str(err.value)
    assert f"which the gradient of line {shift} reads" in text, text
    assert err.value.location.line == shift and err.value.captured_at.line == shift
    assert "z = z - z.max(axis=1, keepdims=True)" in text  # the hint for the same line
    np.testing.assert_allclose(adgen.grad(shifted, mutation="strict")(X.copy()),
                               numerical_grad(shifted, (X.copy(),), 0), rtol=1e-6)
