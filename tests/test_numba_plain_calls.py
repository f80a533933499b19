"""Helpers called for an index or a count on the numba backend (session 20's list, H5).

``j = argmin_row(a, i)`` then ``a[i, j]``; ``n = count_pos(x)`` then ``x[n - 1]``: the
default pipeline keeps a call no derivative goes through as the user wrote it, and the
nopython module had no such function ("the numba backend cannot call argmin_row here",
from numba's NameError; ``backend="auto"`` fell back). The call now runs the helper's
compiled forward (``numba_plain_calls``), also inside an expression, and a helper whose
result numba types as optional (an early ``return i`` in a loop, ``retval1 = None``) returns
it through ``present`` so the caller can index with it. Expected values: central
differences, and the default backend. Skipped without numba.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

numba = pytest.importorskip("numba")

POLICIES = ["save", "strict"]


def argmin_row(a, i):
    j = 0
    best = a[i, 0]
    for k in range(1, a.shape[1]):
        if a[i, k] < best:
            best = a[i, k]
            j = k
    return j


def nearest(a):
    s = 0.0
    for i in range(a.shape[0]):
        j = argmin_row(a, i)
        s += a[i, j] ** 2 + a[i, (j + 1) % a.shape[1]]
    return s


def count_pos(x):
    c = 0
    for v in x:
        if v > 0.0:
            c += 1
    return c


def last_counted(x):
    return x[count_pos(x) - 1] * 3.0 + x[0] * x[1]


def first_above(x, t):
    for i in range(len(x)):
        if x[i] > t:
            return i
    return len(x) - 1


def up_to_first(x, t):
    k = first_above(x, t)
    s = 0.0
    for i in range(k + 1):
        s += x[i] * x[k]
    return s


@numba.njit
def argmax_jit(x):
    j = 0
    for i in range(len(x)):
        if x[i] > x[j]:
            j = i
    return j


def scaled_peak(x):
    j = argmax_jit(x)
    return x[j] * np.sum(x)


def in_place_at_min(a):
    b = a.copy()
    for i in range(b.shape[0]):
        j = argmin_row(b, i)
        b[i, j] = b[i, j] * b[i, 0]
    return np.sum(b ** 2)


X = np.array([0.3, -0.2, 0.9, 0.1, -0.5, 0.7])
A = np.random.default_rng(1).random((4, 5))


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f, args", [
    (nearest, (A,)), (last_counted, (X,)), (up_to_first, (X, 0.5)), (scaled_peak, (X,)),
    (in_place_at_min, (A,)),
])
def test_a_helper_called_for_an_index_runs_on_numba(f, args, policy):
    g = adgen.grad(f, backend="numba", mutation=policy)(*args)
    assert_grad_close(g, numerical_grad(f, args, 0))
    assert_grad_close(g, adgen.grad(f, mutation=policy)(*args), rtol=1e-12)


def test_the_source_calls_the_helpers_forward():
    text = adgen.source(nearest, A, backend="numba")
    assert "j, argmin_row_record = argmin_row_forward(a, i)" in text
    text = adgen.source(up_to_first, X, 0.5, backend="numba")
    assert "return (present(" in text
