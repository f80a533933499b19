"""``np.multiply.at``, ``np.maximum.at`` and ``np.minimum.at`` (they raised "np.maximum.at is
not supported (np.add.at and np.subtract.at are)"). A position named several times is updated
once per value, and the gradient follows each update: the product of the other factors at that
position (exact with a zero factor), the share of the extreme among ties. The pullback reads
the array before the update, so mutation="save" keeps it and mutation="strict" refuses the
write, naming the line. Against central differences, with the arguments' final state as a
plain call leaves them, and in forward mode."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad, check_jvp, numerical_grad

import adgen

X = np.array([0.3, -0.7, 1.1, 2.0, -1.4])
M = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [-2.0, 1.0, 0.5]])


def multiply_repeated(x):
    y = x.copy()
    np.multiply.at(y, [0, 0, 1, 3], x[1:5])  # y[0] *= x[1] * x[2]
    return np.sum(y ** 2)


def multiply_by_a_zero(x):
    y = x.copy()
    v = x[:3] * np.array([1.0, 0.0, 2.0])  # one factor is 0 (its derivative is not)
    np.multiply.at(y, [2, 2, 2], v)
    return np.sum(np.sin(y))


def maximum_repeated(x):
    y = np.zeros(3)
    np.maximum.at(y, [0, 0, 1, 2, 2], x)
    return np.sum(y * np.array([1.0, 2.0, 3.0]))


def minimum_repeated(x):
    y = x[:3] + 0.5
    np.minimum.at(y, [1, 1, 0], x[2:] * 1.5)
    return np.sum(y ** 3)


def rows_of_a_matrix(m):
    y = m.copy()
    np.multiply.at(y, [0, 2, 0], m[1])  # rows 0 (twice) and 2 times row 1, broadcast
    np.maximum.at(y, (slice(None), 1), m[:, 2])  # a column, by a tuple index
    return np.sum(np.tanh(y))


def written_argument(x, v):
    np.maximum.at(x, [0, 0, 2], v)  # the caller's x changes, as in a plain call
    return np.sum(x ** 2) + np.sum(v)


CASES = [multiply_repeated, multiply_by_a_zero, maximum_repeated, minimum_repeated]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_gradient_against_central_differences(f):
    check_grad(f, (X.copy(),), mutation="save")


def test_a_matrix_indexed_by_rows_and_by_a_tuple():
    check_grad(rows_of_a_matrix, (M.copy(),), mutation="save")


@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_an_argument_written_in_place(argnums):
    v = np.array([0.5, 2.5, -3.0])
    check_grad(written_argument, (X[:3].copy(), v), argnums, mutation="save")


@pytest.mark.parametrize("f", CASES + [rows_of_a_matrix], ids=lambda f: f.__name__)
def test_strict_refuses_the_write_naming_the_line(f):
    arg = M.copy() if f is rows_of_a_matrix else X.copy()
    with pytest.raises(adgen.MutationError) as err:
        adgen.grad(f, mutation="strict")(arg)
    assert ".at(" in str(err.value) and "test_ufunc_at_updates.py" in str(err.value)


def test_values_as_a_python_float():
    def f(x, s):
        y = x * 1.0
        np.multiply.at(y, [1, 1], s)  # y[1] *= s * s
        return np.sum(y ** 2)

    g = adgen.grad(f, argnums=1)(X.copy(), 1.5)
    assert isinstance(g, float)
    assert g == pytest.approx(numerical_grad(f, (X.copy(), 1.5), 1), rel=1e-6)
    assert g == pytest.approx(4.0 * X[1] ** 2 * 1.5 ** 3)  # d/ds (x1 s^2)^2


def test_ties_share_the_gradient():
    def f(x, v):
        y = x.copy()
        np.maximum.at(y, [0, 0], v)
        return y[0] * 3.0

    gx, gv = adgen.grad(f, argnums=(0, 1))(np.array([1.0]), np.array([1.0, 0.5]))
    # hand formula: x[0] and v[0] tie at the maximum, each gets half (as np.maximum's rule)
    np.testing.assert_allclose(gx, [1.5])
    np.testing.assert_allclose(gv, [1.5, 0.0])


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_forward_mode(f):
    check_jvp(f, (X.copy(),), (np.array([1.0, -0.5, 0.25, 2.0, 0.75]),))


def test_other_ufuncs_are_refused_at_the_line():
    def f(x):
        y = x.copy()
        np.divide.at(y, [0, 1], 2.0 + x[:2])
        return np.sum(y)

    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(f)(X.copy())
    text = str(err.value)
    assert "np.divide.at(y, [0, 1], 2.0 + x[:2])" in text and "np.maximum.at" in text


def maximum_in_a_loop(x, idx):
    y = x.copy()
    v = x[:3] * 2.0
    for k in range(3):
        y[idx[k]] = max(y[idx[k]], v[k])  # the form the numba refusal suggests
    return np.sum(y ** 2)


def test_the_numba_backend_names_the_update_and_the_form_it_takes():
    pytest.importorskip("numba")

    def f(x):
        y = x.copy()
        np.maximum.at(y, [0, 0, 1], x[:3] * 2.0)
        return np.sum(y ** 2)

    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(f, backend="numba")(X.copy())
    # it said "no nopython form of adgen's ufunc_at", a name the user never wrote
    assert "np.maximum.at" in err.value.message and "ufunc_at" not in err.value.message
    idx = np.array([0, 0, 1])
    np.testing.assert_allclose(adgen.grad(maximum_in_a_loop, backend="numba")(X.copy(), idx),
                               numerical_grad(maximum_in_a_loop, (X.copy(), idx), 0),
                               atol=1e-6)


def test_second_derivatives_are_refused_at_the_line():
    with pytest.raises(adgen.MissingRuleError) as err:
        adgen.hessian(multiply_repeated)(X.copy())
    assert "np.multiply.at" in err.value.message and "second derivatives" in err.value.message
    assert err.value.location.line == multiply_repeated.__code__.co_firstlineno + 2
