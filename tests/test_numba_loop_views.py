"""A name a loop binds to a fresh array before the loop and to a view of a buffer in it
(Deriche's ym1 = y1[:, j]): the numba backend's static adjoint buffers have no form for it,
so it is refused at the line that needs its adjoint, naming the user's variable and saying
what to write; the same loop with a copy of the view compiles, with the default backend's
gradient and central differences'. Skipped without numba."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

numba = pytest.importorskip("numba")


def smooth_columns(img):
    h, w = img.shape
    y = np.empty((h, w))
    prev = np.zeros(h)
    for j in range(w):
        y[:, j] = 0.5 * img[:, j] + 0.4 * prev
        prev = y[:, j]  # a view of y from the second iteration on
    return np.sum(y ** 2)


def smooth_columns_copied(img):
    h, w = img.shape
    y = np.empty((h, w))
    prev = np.zeros(h)
    for j in range(w):
        y[:, j] = 0.5 * img[:, j] + 0.4 * prev
        prev = y[:, j].copy()
    return np.sum(y ** 2)


def test_a_loop_carried_view_is_refused_naming_the_variable():
    img = np.random.default_rng(0).random((5, 4))
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(smooth_columns, backend="numba")(img)
    text = str(err.value)
    assert "prev is not always the same buffer" in text
    assert "prev = y[i, :].copy()" in text or "bind prev to a copy" in text
    assert err.value.location.line == 23  # y[:, j] = 0.5 * img[:, j] + 0.4 * prev
    with pytest.warns(adgen.backends.NumbaFallbackWarning):
        g = adgen.grad(smooth_columns, backend="auto")(img)
    assert_grad_close(g, numerical_grad(smooth_columns, (img,), 0))


def test_the_same_loop_with_a_copy_compiles():
    img = np.random.default_rng(1).random((5, 4))
    g = adgen.grad(smooth_columns_copied, backend="numba")(img)
    assert_grad_close(g, numerical_grad(smooth_columns_copied, (img,), 0))
    assert_grad_close(g, adgen.grad(smooth_columns)(img), rtol=1e-12)
