"""``np.place`` and ``np.put_along_axis`` write their first argument in place, as NumPy does,
and adgen differentiates them (rules/composites_writes.py: the indexed assignment NumPy
makes, compiled as a helper of the user's that writes its argument). Both were refused ("an
in-place write is not supported yet"). As users write them: on a copy, on the argument itself,
in a module-level helper, in a loop, with a value the gradient reads overwritten (kept under
the default policy, refused under strict). Gradients against central differences
(tests/gradcheck.py) and hand formulas, jvp and hessian too; NumPy's errors where NumPy
raises them."""

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, check_jvp, numerical_hessian

import adgen

POLICIES = ["save", "strict"]
X = np.array([0.3, -0.9, 0.7, 1.2, -0.4, 0.5])


def clipped_with_place(x):
    y = x * 2.0
    np.place(y, y > 0.0, np.sin(x[:2]))  # the positive entries cycle through two values
    return np.sum(y ** 2) + y[0] * x[5]


def place_into_the_argument(x):
    np.place(x, x < 0.0, [0.1, x[0] ** 2])
    return np.sum(np.exp(x))


def scatter_rows(m, v):
    # a module-level helper: the largest entry of each row replaced by v's
    idx = np.argmax(m, axis=1)[:, None]
    np.put_along_axis(m, idx, v[:, None] * 3.0, axis=1)


def row_max_replaced(x):
    m = np.reshape(x, (2, 3)) * 1.0
    scatter_rows(m, np.cos(x[:2]))
    return np.sum(m ** 3)


def put_along_in_a_loop(x):
    m = np.zeros((3, 2))
    for k in range(3):
        np.put_along_axis(m, np.array([[k % 2], [1], [0]]), x[k] * x[k + 1], axis=1)
    return np.sum(m * np.arange(1.0, 7.0).reshape(3, 2))


def cap_large(m, v):
    np.place(m, m > 1.0, v * 3.0)  # writes the caller's array


def capped_through_a_helper(x):
    m = np.reshape(x, (2, 3)) * 1.0
    cap_large(m, np.cos(x[:1]))
    return np.sum(m ** 3)


def overwritten_value_read_later(x):
    y = x * 1.0
    z = y ** 2  # the gradient of this line reads y ...
    np.place(y, y > 0.6, 0.0)  # ... which this overwrites
    return np.sum(z) + np.sum(y * x)


def flat_positions(x):
    m = np.reshape(x * 1.0, (3, 2))
    np.put_along_axis(m, np.array([0, -1]), x[1] * 10.0, None)
    return np.sum(np.tanh(m))


def through_a_view(x):
    y = x * 2.0
    v = y[1:]
    np.place(v, v > 0.0, x[:1] ** 2)  # writes y through its view
    return np.sum(y ** 2) + np.sum(v)


def through_a_transposed_view(x):
    m = np.reshape(x * 1.0, (2, 3))
    t = m.T
    np.put_along_axis(t, np.array([[1, 0]]), np.sin(x[:2])[None, :], axis=0)
    return np.sum(m ** 2 * np.arange(6.0).reshape(2, 3))


def put_along_the_argument(x):
    np.put_along_axis(x, np.array([2]), x[0] * 5.0, axis=0)
    return np.sum(x ** 2)


FUNCTIONS = [through_a_view, through_a_transposed_view, put_along_the_argument,
             clipped_with_place, place_into_the_argument, row_max_replaced,
             capped_through_a_helper,
             put_along_in_a_loop, overwritten_value_read_later, flat_positions]


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", FUNCTIONS)
def test_central_differences(f, mutation):
    check_grad(f, (X.copy(),), mutation=mutation,
               strict_must_compute=f is not overwritten_value_read_later)


def test_strict_refuses_the_overwrite_naming_both_lines():
    with pytest.raises(adgen.MutationError, match="np.place"):
        adgen.grad(overwritten_value_read_later, mutation="strict")(X.copy())


@pytest.mark.parametrize("f", FUNCTIONS)
def test_jvp(f):
    check_jvp(f, (X.copy(),), (np.array([0.5, -1.0, 2.0, 0.25, 1.5, -0.75]),))


@pytest.mark.parametrize("f", [clipped_with_place, put_along_in_a_loop, row_max_replaced,
                               capped_through_a_helper])
def test_hessian(f):
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), numerical_hessian(f, X.copy()),
                               rtol=1e-4, atol=1e-5)


def test_hand_formula():
    # y = 2x with its positive entries 2x0, 2x2, 2x3, 2x5 replaced by sin x0, sin x1, sin x0,
    # sin x1 (in turn): sum y^2 = 2 sin^2 x0 + 2 sin^2 x1 + 4 x1^2 + 4 x4^2, plus y0 x5
    x = X.copy()
    s0, s1 = np.sin(x[:2])
    expected = np.array([4 * s0 * np.cos(x[0]) + np.cos(x[0]) * x[5],
                         4 * s1 * np.cos(x[1]) + 8 * x[1], 0.0, 0.0, 8 * x[4], s0])
    assert_grad_close(adgen.grad(clipped_with_place)(x), expected)


def wrong_mask(x):
    y = x * 1.0
    np.place(y, np.array([True, False]), x[:1])
    return np.sum(y)


def no_values(x):
    y = x * 1.0
    np.place(y, y > 0.0, x[:0])
    return np.sum(y)


def indices_of_another_rank(x):
    m = np.reshape(x * 1.0, (2, 3))
    np.put_along_axis(m, np.array([0, 1]), 1.0, axis=1)
    return np.sum(m)


@pytest.mark.parametrize("f, message", [(wrong_mask, "same size"), (no_values, "empty"),
                                        (indices_of_another_rank, "dimensions")])
def test_numpy_s_errors_as_the_plain_call_raises_them(f, message):
    with pytest.raises(ValueError, match=message):
        f(X.copy())
    with pytest.raises(ValueError, match=message):
        adgen.grad(f)(X.copy())
