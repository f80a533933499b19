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


def _max_adjoint_by_slices(g, a, axis):
    """The definition, slice by slice: each slice's cotangent split evenly between the
    entries equal to its maximum (none when the maximum is NaN: NaN everywhere)."""
    a = np.moveaxis(a, axis, -1)
    g = np.moveaxis(np.asarray(g), axis, -1)
    out = np.zeros(a.shape)
    for idx in np.ndindex(a.shape[:-1]):
        row = a[idx]
        m = np.max(row)
        hits = row == m
        out[idx] = np.nan if not hits.any() else hits * (g[idx][0] / hits.sum())
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("case", ["distinct", "tie", "nan", "tie and nan"])
def test_max_adjoint_along_an_axis(axis, case):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((4, 5))
    if "tie" in case:  # two maxima in one slice
        a[2, 1] = a[3, 1] = a[1, 4] = a[1, 3] = 9.0
    if "nan" in case:  # a NaN in another slice: the count of hits no longer says "one each"
        a[0, 0] = np.nan
    out = np.max(a, axis=axis, keepdims=True)
    g = rng.standard_normal(out.shape)
    with np.errstate(invalid="ignore"):
        got = max_vjp(g, out, a, axis, True)
        squeezed = max_vjp(np.squeeze(g, axis), np.squeeze(out, axis), a, axis, False)
    want = _max_adjoint_by_slices(g, a, axis)
    np.testing.assert_allclose(got, want, equal_nan=True)
    np.testing.assert_allclose(squeezed, want, equal_nan=True)


@pytest.mark.parametrize("shape, target", [((3, 4), (3, 1)), ((3, 4), (1, 4)),
                                           ((2, 3, 4), (3, 1)), ((3, 1), (3, 4)), ((4,), (3, 4))])
def test_unbroadcast_and_sum_adjoint_along_axes(shape, target):
    g = np.random.default_rng(1).standard_normal(shape)
    got = unbroadcast(g, target)
    if len(shape) >= len(target) and all(t in (1, s) for s, t in
                                          zip(shape[len(shape) - len(target):], target)):
        lead = tuple(range(len(shape) - len(target)))
        want = g.sum(axis=lead) if lead else g
        want = want.sum(axis=tuple(i for i, t in enumerate(target) if t == 1 and
                                   want.shape[i] != 1), keepdims=True)
    else:  # a smaller cotangent stands for its broadcast
        want = np.broadcast_to(g, target)
    np.testing.assert_allclose(got, want)
    assert got.shape == target and got.flags.writeable
    s = sum_vjp(np.ones((3, 1)), (3, 4), 1, True)
    assert s.shape == (3, 4) and s.flags.writeable and np.all(s == 1.0)
    s[0, 0] = 5.0  # a fresh array: writing it changes nothing else
    assert s.sum() == 16.0


def test_max_adjoint_with_infinite_extrema_along_an_axis():
    """Rows whose maxima are +inf and -inf (their sum is NaN, which sends the keepdims
    shortcut to the general path) and a row of finite values: each row's cotangent goes
    to its maximum."""
    a = np.array([[np.inf, 1.0, 2.0], [-np.inf, -np.inf, -np.inf], [0.5, 3.0, -1.0]])
    out = np.max(a, axis=1, keepdims=True)
    g = np.array([[2.0], [3.0], [-1.0]])
    got = max_vjp(g, out, a, 1, True)
    np.testing.assert_array_equal(got, _max_adjoint_by_slices(g, a, 1))
    np.testing.assert_array_equal(got, [[2.0, 0, 0], [1.0, 1.0, 1.0], [0, -1.0, 0]])


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_rows_sums_of_unbroadcast_keep_the_dtype(dtype):
    g = (np.arange(12.0).reshape(3, 4) - 5.5).astype(dtype)
    got = unbroadcast(g, (3, 1))
    assert got.dtype == dtype and got.shape == (3, 1) and got.flags.writeable
    np.testing.assert_allclose(got, g.sum(axis=1, keepdims=True))
    empty = unbroadcast(np.zeros((3, 0)), (3, 1))
    np.testing.assert_array_equal(empty, np.zeros((3, 1)))


def _layouts(m: np.ndarray) -> list[np.ndarray]:
    """``m`` as a C array, a Fortran array, a strided view and a transposed view."""
    wide = np.zeros((m.shape[0], 2 * m.shape[1]))
    wide[:, ::2] = m
    return [m, np.asfortranarray(m), wide[:, ::2], np.ascontiguousarray(m.T).T]


@pytest.mark.parametrize("shape", [(5, 3), (1, 7), (4, 1), (3, 0), (0, 4)])
def test_row_sums_as_a_product_in_any_layout(shape):
    """sum_keepdims(a, 1) and unbroadcast(g, (n, 1)) of a float64 matrix take the row sums
    as a matrix-vector product: each row's sum, whatever the matrix's memory layout
    (sum_keepdims: a new (n, 1) array)."""
    from adgen.rules.helpers import sum_keepdims

    m = np.random.default_rng(4).standard_normal(shape)
    want = np.array([[sum(float(v) for v in row)] for row in m]).reshape(shape[0], 1)
    for a in _layouts(m):
        for got in (sum_keepdims(a, 1), sum_keepdims(a, -1), unbroadcast(a, (shape[0], 1))):
            assert got.shape == (shape[0], 1) and got.dtype == np.float64
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
        assert not np.shares_memory(sum_keepdims(a, 1), a)  # (unbroadcast to a's own shape is a)
    with np.errstate(invalid="ignore"):
        bad = sum_keepdims(np.array([[1.0, np.inf], [np.nan, 2.0], [np.inf, -np.inf]]), 1)
    np.testing.assert_array_equal(bad, [[np.inf], [np.nan], [np.nan]])
