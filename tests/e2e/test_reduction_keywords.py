"""NumPy's ``where=``, ``initial=`` and ``dtype=`` of ``np.sum``, ``np.prod``, ``np.mean`` and
``np.max``/``np.min``, as losses use them (a masked mean of residuals, a sum from a starting
value, a sum accumulated in float64 of float32 data): the value and its dtype are the plain
call's, the gradient is checked against central differences, under both policies and in
forward mode."""

import numpy as np
import pytest
from gradcheck import check_grad, numerical_grad

import adgen

RNG = np.random.default_rng(7)
X = RNG.standard_normal((3, 4))
COLUMNS = np.array([True, False, True, True])
ROWS = np.array([[True], [False], [True]])


def masked_mean_of_squares(x):
    return np.mean(x ** 2, where=x > 0.1)


def masked_column_means(x):
    m = np.mean(np.sin(x), axis=0, where=ROWS)  # the mask broadcast over the columns
    return np.sum(m ** 2)


def sum_from_a_start(x):
    return np.sum(np.exp(x), axis=1, initial=2.0, keepdims=True).prod()


def masked_row_sums(x):
    return np.sum(np.sum(x * x, axis=1, where=x < 0.5) ** 2)


def product_of_the_positive(x):
    return np.prod(x, where=x > 0, axis=0).sum()


def product_from_a_start(x):
    return np.prod(np.cos(x[0]), initial=3.0)


def largest_with_a_floor(x):
    return np.max(x ** 2, initial=0.25) + np.min(np.sin(x), axis=0, initial=-0.9).sum()


def largest_of_the_masked(x):
    return np.max(x, axis=1, where=COLUMNS, initial=-5.0).sum()


def accumulated_in_float64(x):
    y = x.astype(np.float32)
    return float(np.sum(y * y, dtype=np.float64)) + float(np.mean(y, dtype=np.float64))


def truncated_to_ints(x):
    return np.sum(10 * x, dtype=np.int64) * 1.0 + np.sum(x)


def peak_of_an_empty_window(x):
    # a window that may hold nothing: NumPy gives the initial value (a plain max raises)
    k = 0
    return np.max(x[0, :k] ** 2, initial=0.0) + np.sum(np.min(x[:, :k], axis=1, initial=1.5) * x[:, 0])


def largest_where_none_pass(x):
    # every element masked out in some rows: those rows reduce to the initial value
    return np.sum(np.max(x, axis=1, where=x > 1.0, initial=-1.0) * x[:, 1])


def largest_over_two_axes(x):
    return np.max(x ** 2, axis=(0, 1), initial=0.5) + np.min(np.cos(x), axis=(-1,), initial=0.0).sum()


def floor_of_the_whole_array_kept(x):
    return np.sum(np.max(x[:0], initial=0.7, keepdims=True) * x) + np.min(x[:, :0], initial=2.0)


def floor_with_a_parameter(x):
    # the initial value itself differentiated, and winning where the array is empty
    return np.max(x[1:1] * 3.0, initial=x[2, 2]) * np.max(x[0], initial=x[1, 1] - 5.0)


CASES = [masked_mean_of_squares, masked_column_means, sum_from_a_start, masked_row_sums,
         product_of_the_positive, product_from_a_start, largest_with_a_floor,
         largest_of_the_masked, accumulated_in_float64, truncated_to_ints,
         peak_of_an_empty_window, largest_where_none_pass, largest_over_two_axes,
         floor_of_the_whole_array_kept, floor_with_a_parameter]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_gradient(f, mutation):
    rtol = 1e-3 if f is accumulated_in_float64 else 1e-5
    eps = 1e-3 if f is accumulated_in_float64 else 1e-6
    assert check_grad(f, (X,), mutation=mutation, rtol=rtol, eps=eps) is not None


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_value_is_the_plain_calls(f):
    # to rounding: the masked elements are summed as zeros, the initial value comes last
    value, _ = adgen.value_and_grad(f)(X.copy())
    plain = f(X.copy())
    np.testing.assert_allclose(value, plain, rtol=1e-14)
    assert np.asarray(value).dtype == np.asarray(plain).dtype


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_forward_mode(f):
    direction = RNG.standard_normal(X.shape)
    _, tangent = adgen.jvp(f, (X.copy(),), (direction,))
    eps = 1e-3 if f is accumulated_in_float64 else 1e-6
    want = np.sum(numerical_grad(f, (X,), 0, eps=eps) * direction)
    np.testing.assert_allclose(tangent, want, rtol=1e-3 if eps > 1e-6 else 1e-6, atol=1e-8)


def test_float32_masked_mean_stays_float32():
    def f(v):
        return np.mean(v * v, where=v > 0)

    v = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    value, g = adgen.value_and_grad(f)(v)
    assert value.dtype == np.float32 and value == f(v)
    np.testing.assert_allclose(g, [0.5, 0.0, 2.0], rtol=1e-6)  # 2 v / count where v > 0


def test_max_with_a_mask_and_no_initial_is_numpys_error():
    def f(v):
        return np.max(v, where=v > 0)

    with pytest.raises(ValueError, match="initial"):
        f(X[0].copy())
    with pytest.raises((ValueError, adgen.AdgenError)):
        adgen.grad(f)(X[0].copy())


def test_the_methods_keywords_are_read_as_the_functions():
    # the method form was refused; it is the function's (tests/e2e/test_reduction_method_keywords)
    def f(v):
        return v.sum(where=v > 0)

    x = X[0].copy()
    assert np.allclose(adgen.grad(f)(x), np.where(x > 0, 1.0, 0.0))


def test_an_empty_array_with_initial_on_the_numba_backend():
    # the extremum over every axis of an array that may be empty is a branch on its size
    pytest.importorskip("numba")

    def f(x):
        return np.max(x ** 2, initial=0.25) + np.min(np.sin(x[:0]), initial=-0.9) * x[0, 0]

    x = X.copy()
    want = numerical_grad(f, (x,), 0)
    np.testing.assert_allclose(adgen.grad(f, backend="numba")(x), want, rtol=1e-6, atol=1e-8)
