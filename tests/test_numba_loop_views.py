"""A name a loop binds to a fresh array before the loop and to a view of a buffer in it
(Deriche's ym1 = y1[:, j]): the default backend's shadow memory finds the adjoint of
whichever array the name holds at run time; the numba backend's forward records, beside
the name, which buffer it holds and the index of the view (transforms/numba_live_bindings.py),
and its pullback takes the adjoint of that buffer or the same view of it. Checked against
the default backend and central differences, under both policies; a name whose view is of
another view is still refused at the line, naming the variable. Skipped without numba."""

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


def two_lags_backwards(img):
    """Anti-causal, two lags (Deriche's yp2 = yp1; yp1 = y2[:, j]), and the input's
    columns carried too (xp1 = img[:, j]: a view of an argument)."""
    h, w = img.shape
    y = np.empty((h, w))
    xp1 = np.zeros(h)
    yp1 = np.zeros(h)
    yp2 = np.zeros(h)
    for j in range(w - 1, -1, -1):
        y[:, j] = 0.3 * xp1 + 0.5 * yp1 - 0.25 * yp2 + img[:, j] ** 2
        xp1 = img[:, j]
        yp2 = yp1
        yp1 = y[:, j]
    return np.sum(y ** 3)


def rows_and_a_branch(A, s):
    """Rows (contiguous views), and a branch choosing between a row and a fresh array."""
    n, m = A.shape
    out = np.empty((n, m))
    last = s * np.ones(m)
    fresh = np.zeros(m)
    for i in range(n):
        out[i, :] = np.sin(A[i, :]) + 0.7 * last
        if i % 3 == 1:
            last = fresh
        else:
            last = out[i]
    return np.sum(out * out) + np.sum(last)


def nested_view(img):
    h, w = img.shape
    y = np.empty((h, w))
    prev = np.zeros(h - 1)
    for j in range(w):
        y[:, j] = 0.5 * img[:, j]
        y[1:, j] += 0.4 * prev
        col = y[:, j]
        prev = col[1:]  # a view of a view
    return np.sum(y ** 2)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_loop_carried_view_compiles(mutation):
    img = np.random.default_rng(0).random((5, 4))
    g = adgen.grad(smooth_columns, backend="numba", mutation=mutation)
    for _ in range(2):  # the generic call, then the fast one
        got = g(img)
        assert_grad_close(got, numerical_grad(smooth_columns, (img,), 0))
        assert_grad_close(got, adgen.grad(smooth_columns, mutation=mutation)(img), rtol=1e-12)
    text = adgen.source(smooth_columns, img, backend="numba")
    # the forward records which buffer prev holds, and the pullback chooses its adjoint
    assert "_live == 0 else y_shadow[:, " in text


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_two_lags_backwards_and_an_arguments_columns(mutation):
    img = np.random.default_rng(1).random((4, 6)) + 0.5
    got = adgen.grad(two_lags_backwards, backend="numba", mutation=mutation)(img)
    assert_grad_close(got, numerical_grad(two_lags_backwards, (img,), 0))
    assert_grad_close(got, adgen.grad(two_lags_backwards, mutation=mutation)(img),
                      rtol=1e-12)


def test_rows_and_a_branch():
    A = np.random.default_rng(2).standard_normal((7, 3))
    g = adgen.grad(rows_and_a_branch, argnums=(0, 1), backend="numba")
    gA, gs = g(A, 0.3)
    nA = numerical_grad(rows_and_a_branch, (A, 0.3), 0)
    ns = numerical_grad(rows_and_a_branch, (A, 0.3), 1)
    assert_grad_close(gA, nA)
    assert_grad_close(gs, ns)
    dA, ds = adgen.grad(rows_and_a_branch, argnums=(0, 1))(A, 0.3)
    assert_grad_close(gA, dA, rtol=1e-12)
    assert_grad_close(gs, ds, rtol=1e-12)
    value, (vA, _) = adgen.value_and_grad(rows_and_a_branch, argnums=(0, 1),
                                          backend="numba")(A, 0.3)
    assert value == pytest.approx(rows_and_a_branch(A, 0.3), rel=1e-14)
    assert_grad_close(vA, dA, rtol=1e-12)


def test_a_view_of_a_view_is_refused_naming_the_variable():
    img = np.random.default_rng(3).random((5, 4))
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(nested_view, backend="numba")(img)
    text = str(err.value)
    assert "prev is not always the same buffer" in text
    assert "bind prev to a copy" in text
    with pytest.warns(adgen.backends.NumbaFallbackWarning):
        g = adgen.grad(nested_view, backend="auto")(img)
    assert_grad_close(g, numerical_grad(nested_view, (img,), 0))


def test_polybench_deriche():
    """Deriche's recursive filter (bench/workloads/polybench_stencils.py): four passes, each
    carrying two or three columns or rows of its output and input from one iteration to the
    next, fresh zeros before the first."""
    from bench.workloads.polybench_stencils import deriche

    img = np.random.default_rng(4).random((6, 5))
    got = adgen.grad(deriche, backend="numba")(img)
    assert_grad_close(got, numerical_grad(deriche, (img,), 0))
    assert_grad_close(got, adgen.grad(deriche)(img), rtol=1e-12)
