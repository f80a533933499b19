"""A slice of a writeable ``as_strided`` view whose elements share memory, written in place
and read by the gradient (session 16).

``W = as_strided(buf, shape=(4, 3), strides=(8, 8))`` holds overlapping windows of ``buf``;
``V = W[1:]`` is a view of ``W`` (NumPy keeps ``W`` as its base: W owns no memory and its
own base is not an array). Shadow memory gave ``V`` the same view of ``buf``'s adjoint, so
two elements of ``V`` that are one element of ``buf`` shared one adjoint cell: the write's
pullback zeroed it for both and the read's cotangents landed once, a silently wrong
gradient under both policies (half the central differences'). ShadowMap.of now checks such
views too, as it checked ``W`` itself: an adgen error naming the user's file and line.
A slice of an as_strided view whose elements do not overlap is differentiated as before."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad
from numpy.lib.stride_tricks import as_strided

import adgen

POLICIES = ["save", "strict"]


def write_then_read(V, x):
    V[0, 1] = x[0] * x[1]
    return np.sum(V * V) + x[2] * V[1, 1]


def _windows():
    buf = np.linspace(0.3, 1.3, 6)
    return as_strided(buf, shape=(4, 3), strides=(buf.strides[0],) * 2)


def _tiles():
    # rows of 3 with a gap of one element: no element is shared
    buf = np.linspace(0.3, 1.6, 8)
    return as_strided(buf, shape=(2, 3), strides=(4 * buf.strides[0], buf.strides[0]))


@pytest.mark.parametrize("mutation", POLICIES)
def test_slice_of_overlapping_windows_written_is_refused(mutation):
    x = np.array([0.7, 1.1, 0.4])
    with pytest.raises(adgen.AdgenError) as err:
        adgen.grad(write_then_read, argnums=1, mutation=mutation)(_windows()[1:], x)
    assert "share memory" in str(err.value)
    assert err.value.location.file.endswith("test_strided_window_slices.py")
    # at the read, where the pullback first takes the view's adjoint
    assert err.value.location.line == write_then_read.__code__.co_firstlineno + 2


@pytest.mark.parametrize("mutation", POLICIES)
def test_slice_of_tiles_that_do_not_overlap(mutation):
    x = np.array([0.7, 1.1, 0.4])

    def loss(x_):
        return write_then_read(_tiles()[:, 1:], x_)

    got = adgen.grad(write_then_read, argnums=1, mutation=mutation)(_tiles()[:, 1:], x)
    assert_grad_close(got, numerical_grad(loss, (x,), 0))
    V = _tiles()[:, 1:]
    adgen.grad(write_then_read, argnums=1, mutation=mutation)(V, x.copy())
    assert V[0, 1] == pytest.approx(x[0] * x[1])  # the write happened, as in a plain call
