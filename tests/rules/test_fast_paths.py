"""The common-case shortcuts of the rule helpers agree with the rules' definitions.

``unbroadcast`` of an array to ``()``, ``sum_vjp``/``mean_vjp`` of a full reduction and
``max_vjp`` with one extremum each take a shortcut for speed (bench/); here each is compared
with the value the adjoint is defined to have, written out independently, including the
cases the shortcut must leave to the general path (ties, NaN, empty arrays, other dtypes).
"""

from __future__ import annotations

import numpy as np
import pytest

from adgen.rules.helpers import filled, max_vjp, mean_vjp, sum_vjp, unbroadcast


def test_unbroadcast_of_an_array_to_a_number_is_its_sum():
    g = np.array([[1.0, 2.0], [3.5, -0.5]])
    r = unbroadcast(g, ())
    assert r == 6.0 and np.ndim(r) == 0
    assert unbroadcast(np.array([]), ()) == 0.0
    assert unbroadcast(2.5, ()) == 2.5


@pytest.mark.parametrize("shape", [(4,), (2, 3), (1,)])
@pytest.mark.parametrize("g", [2.0, np.float64(-1.5), np.float32(0.25)])
def test_full_reduction_adjoints_are_constant_arrays(shape, g):
    s = sum_vjp(g, shape, None, False)
    m = mean_vjp(g, shape, None, False)
    count = int(np.prod(shape))
    assert s.shape == shape and m.shape == shape
    assert np.all(s == g) and np.allclose(m, float(g) / count)
    # the dtype np.full gives: a NumPy scalar keeps its own, a Python float is float64
    want = np.result_type(g) if isinstance(g, np.generic) else np.float64
    assert s.dtype == want


def test_mean_of_an_empty_array_takes_the_general_path():
    with np.errstate(invalid="ignore", divide="ignore"):
        m = mean_vjp(1.0, (0,), None, False)
    assert m.shape == (0,)


def test_filled_is_a_fresh_writable_array():
    a = filled((3,), 1.5)
    a[0] = 0.0
    assert a.tolist() == [0.0, 1.5, 1.5]


@pytest.mark.parametrize("a", [np.array([0.5, 3.0, -1.0]),
                               np.array([[0.5, 3.0], [7.0, -1.0]]),
                               np.array([4.0])])
def test_max_adjoint_with_one_extremum_is_one_hot(a):
    out = np.max(a)
    r = max_vjp(2.0, out, a, None, False)
    want = np.zeros(a.shape)
    want[np.unravel_index(np.argmax(a), a.shape)] = 2.0
    np.testing.assert_array_equal(r, want)
    assert r.dtype == np.float64


def test_max_adjoint_splits_between_ties():
    a = np.array([3.0, 1.0, 3.0])
    np.testing.assert_array_equal(max_vjp(1.0, 3.0, a, None, False), [0.5, 0.0, 0.5])
    np.testing.assert_array_equal(max_vjp(1.0, 1.0, a, None, False), [0.0, 1.0, 0.0])  # min


def test_max_adjoint_of_nan_has_no_finite_share():
    a = np.array([1.0, np.nan])
    with np.errstate(invalid="ignore", divide="ignore"):
        r = max_vjp(np.float64(1.0), np.max(a), a, None, False)
    assert not np.isfinite(r).all()  # NaN, as before the shortcut: not a silent 0
