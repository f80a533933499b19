"""What a user met on the numba backend in session 19 (H7), each a loud failure that named
no line or said it unclearly, checked against central differences and the default backend
under both policies. Skipped without numba.

- ``for v in reversed(x)``: adgen reads it as ``x[::-1]`` after a check that ``x`` is a
  list, tuple or array (``adgen.reversed_items.reversible``); the nopython module had no
  such function: "NameError: name 'reversible' is not defined", at no line. nopython code
  holds only numbers, arrays and tuples, so the numba rewrite drops the check
  (``numba_call_forms.reversed_checks``).
- ``m.astype(float)``: numba's ``astype`` takes NumPy's scalar types, not Python's
  ("Invalid use of BoundFunction(array.astype ...)"); it is written ``np.float64``
  (``numba_value_types.builtin_dtypes``).
- ``np.isfinite(x).astype(np.float64)``, refused (adgen runs it as it is): the message said
  ``(np.isfinite(x)).astype((np.float64))``.
- ``grad(f, argnums=(0, 1))`` where argument 1 is a float read only by a comparison: the
  one compiled call's fast path raised AttributeError ("'float' object has no attribute
  'dtype'") instead of giving its gradient, 0.0.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

numba = pytest.importorskip("numba")

POLICIES = ["save", "strict"]


def discounted_from_the_end(x, r):
    s = 0.0
    for v in reversed(x):
        s = s * r + v * v
    return s


def rows_from_the_end(X, w):
    s = 0.0
    for row in reversed(X):
        s = 0.9 * s + np.sum(row * w)
    return s


def masked_square(x, lo):
    m = (np.abs(x) > lo).astype(float)
    s = 0.0
    for i in range(x.shape[0]):
        s += m[i] * x[i] * x[i] + x[i]
    return s


def finite_sum(x):
    w = np.isfinite(x).astype(np.float64)
    return np.sum(x * w)


def first_crossing(x, thr):
    s = 0.0
    k = 0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
        k += 1
        if s > thr:
            break
    return s * k + x[k - 1]


def _both(f, args, argnum, mutation):
    got = adgen.grad(f, argnums=argnum, backend="numba", mutation=mutation)(*args)
    assert_grad_close(got, numerical_grad(f, args, argnum))
    assert_grad_close(got, adgen.grad(f, argnums=argnum, mutation=mutation)(*args),
                      rtol=1e-12)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_loop_over_reversed_of_an_array(mutation):
    x = np.linspace(0.2, 1.3, 6)
    _both(discounted_from_the_end, (x, 0.7), 0, mutation)
    _both(discounted_from_the_end, (x, 0.7), 1, mutation)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_loop_over_reversed_rows_of_a_matrix(mutation):
    X = np.random.default_rng(4).standard_normal((5, 3))
    w = np.array([0.5, -1.0, 2.0])
    _both(rows_from_the_end, (X, w), 0, mutation)
    _both(rows_from_the_end, (X, w), 1, mutation)


@pytest.mark.parametrize("mutation", POLICIES)
def test_astype_of_a_python_type(mutation):
    x = np.array([0.3, -1.2, 0.8, 2.0, -0.1])
    _both(masked_square, (x, 0.5), 0, mutation)
    text = adgen.source(masked_square, x, 0.5, backend="numba")
    assert ".astype(np.float64)" in text and "astype(float)" not in text


def test_a_mask_cast_to_floats():
    # refused until session 20 ("cannot run np.isfinite(x).astype(np.float64) here"); the
    # kinds analysis now knows a bool-valued ufunc's result as an array (4eb371f)
    x = np.array([0.1, np.inf, 0.4, -np.inf, 1.0])
    g = adgen.grad(finite_sum, backend="numba")(x)
    # by hand: the mask where x is finite (the mask itself has no derivative)
    np.testing.assert_array_equal(g, [1.0, 0.0, 1.0, 0.0, 1.0])
    assert_grad_close(adgen.grad(finite_sum, backend="numba")(x[[0, 2, 4]]),
                      numerical_grad(finite_sum, (x[[0, 2, 4]],), 0))


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_float_argument_read_only_by_a_comparison(mutation):
    x = np.random.default_rng(0).random(8)
    g = adgen.grad(first_crossing, argnums=(0, 1), backend="numba", mutation=mutation)
    for _ in range(2):  # the first call, then the fast path it made
        gx, gthr = g(x, 1.5)
        assert_grad_close(gx, numerical_grad(first_crossing, (x, 1.5), 0))
        assert type(gthr) is float and gthr == 0.0 == numerical_grad(first_crossing,
                                                                       (x, 1.5), 1)


def test_a_name_numba_cannot_find_is_reported_at_the_line_reading_it():
    # numba's NameError names no line (it was reported at none): the module's first line
    # reading the name gives the user's
    from adgen.transforms.numba_module import NumbaCode

    from adgen.numba_errors import located

    source = "def f_forward(x):\n    s = 0.0\n    helper_of_ours(x)\n    return s\n"
    code = NumbaCode(source, "f_forward", "f_pullback", lines={2: 11, 3: 12, 4: 13})
    err = located(NameError("name 'helper_of_ours' is not defined"), code, "<m>", __file__)
    assert err.location is not None and err.location.line == 12
    assert "helper_of_ours" in str(err)
