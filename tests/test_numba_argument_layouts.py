"""One gradient function of the numba backend called with arrays of one dtype and rank but
another memory layout or writeability (contiguous, a strided view, read-only, Fortran order):
the forward compiles again for each, and the pullback must be compiled for each compilation's
saved values (numba_function.NumbaFunction._typed_pullback; tests/test_numba_remap_saved.py
has the case that failed: a strided argument refused, then a contiguous one). Gradients against central
differences. Skipped without numba."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

numba = pytest.importorskip("numba")


def weighted_waves(x, k):
    s = 0.0
    for i in range(x.shape[0]):
        s += np.sin(x[i]) * x[i] ** 2
    return s * k


def row_norms(A):
    s = 0.0
    for i in range(A.shape[0]):
        s += np.sqrt(np.sum(A[i] ** 2))
    return s


def _read_only(a):
    a = a.copy()
    a.flags.writeable = False
    return a


def test_one_gradient_function_for_every_layout():
    base = np.linspace(0.2, 2.0, 12)
    grad = adgen.grad(weighted_waves, backend="numba")
    for x in (base.copy(), base[::2], _read_only(base), base.copy()[::-1]):
        assert_grad_close(grad(x, 1.5), numerical_grad(weighted_waves, (x.copy(), 1.5), 0))


def test_matrices_in_c_and_fortran_order_and_strided():
    A = np.random.default_rng(3).random((4, 6)) + 0.1
    grad = adgen.grad(row_norms, backend="numba")
    for M in (A.copy(), np.asfortranarray(A), A[:, ::2], A.T.copy().T):
        assert_grad_close(grad(M), numerical_grad(row_norms, (np.array(M),), 0))
