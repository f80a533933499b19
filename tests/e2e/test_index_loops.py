"""Loops over every index of an array, as NumPy users write them.

- ``for i in np.ndindex(x.shape): ... x[i] ...``: np.ndindex is a class NumPy writes in
  Python, so grad took it for a class of the user's to differentiate and refused it with a
  message about ``builtins.min`` inside NumPy's file. It yields tuples of ints: no derivative
  (activity's NONDIFF_CALLS), and the loop's reads of ``x[i]`` are differentiated.
- ``for i, v in np.ndenumerate(x)``: its values come from NumPy's flat iterator, read by that
  Python class. jvp gave a silently wrong tangent (1.53 where central differences give
  -2.56), grad refused it inside NumPy's file. Now refused at the user's line in both modes,
  with the np.ndindex loop to write instead.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad, check_jvp, numerical_hessian

import adgen

X = np.array([[0.5, -1.0, 0.4], [2.0, 0.3, -0.6]])
V = np.array([[1.0, 0.2, -0.3], [-0.5, 0.7, 0.1]])


def weighted_squares(x):
    s = 0.0
    for i in np.ndindex(x.shape):
        s = s + x[i] * x[i] * (i[0] + 1) + np.sin(x[i]) * i[1]
    return s


def weighted_squares_starred(x):
    s = 0.0
    for i in np.ndindex(*x.shape):
        s = s + x[i] * x[i] * (i[0] + 1)
    return s


def filled_by_index(x):
    y = np.empty_like(x)
    for i in np.ndindex(x.shape):
        y[i] = np.tanh(x[i]) * (i[0] - i[1])
    return np.sum(y ** 2)


def by_ndenumerate(x):
    s = 0.0
    for i, v in np.ndenumerate(x):  # MARK ndenumerate
        s = s + v * v * (i[0] + 1)
    return s


def _hand(x):
    # weighted_squares' gradient: 2 x (i0 + 1) + cos(x) i1
    rows, cols = np.indices(x.shape)
    return 2 * x * (rows + 1) + np.cos(x) * cols


LOOPS = [weighted_squares, weighted_squares_starred, filled_by_index]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", LOOPS)
def test_an_ndindex_loop_differentiates(f, mutation):
    check_grad(f, [X.copy()], mutation=mutation, strict_must_compute=True)
    if f is weighted_squares:
        assert np.allclose(adgen.grad(f, mutation=mutation)(X.copy()), _hand(X))


@pytest.mark.parametrize("f", LOOPS)
def test_an_ndindex_loop_in_forward_mode_and_second_order(f):
    check_jvp(f, [X.copy()], [V])
    flat = lambda z: f(z.reshape(X.shape))  # noqa: E731
    h = adgen.hessian(flat)(X.ravel().copy())
    assert np.allclose(h, numerical_hessian(flat, X.ravel().copy()), atol=1e-5)


def _line(mark: str) -> int:
    with open(__file__) as fh:
        return next(n for n, text in enumerate(fh, 1) if text.rstrip().endswith(mark))


@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_ndenumerate_is_refused_at_the_users_line(mode):
    with pytest.raises(adgen.MissingRuleError, match=r"np.ndenumerate") as info:
        if mode == "grad":
            adgen.grad(by_ndenumerate)(X.copy())
        else:
            adgen.jvp(by_ndenumerate, (X.copy(),), (V,))
    err = info.value
    assert err.location.file == __file__ and err.location.line == _line("# MARK ndenumerate")
    assert "for i in np.ndindex(x.shape): v = x[i]" in str(err)
