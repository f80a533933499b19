"""Guarded sites on the numba backend whose captured value the rewrite's own type analysis
cannot type (``r = x.reshape(2, 3)``) or typed only now (``np.outer``): the capture is left
to numba's typing (``saved_copy`` under "save", ``strict_capture`` under "strict"), which
takes an array or a number and refuses anything else at the line; before, such a site was
refused as 'not an array or a number' whatever the value was. Gradients against central
differences, the arguments' final contents against a plain call, strict's MutationError
equal to the default backend's. Skipped without numba."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

numba = pytest.importorskip("numba")


def reshaped_then_zeroed(x, w, k):
    r = x.reshape(2, 3)  # a view of x the rewrite does not type
    y = np.sum(r * np.sin(w))  # the gradient of w reads r
    for i in range(k):
        x[i] = 0.0  # guarded: overwrites r once k > 0
    return y


def outer_then_zeroed(x, k):
    A = np.outer(x, x)
    y = np.sum(np.sin(A))
    for i in range(k):
        A[i, i] = 0.0  # guarded: overwrites A, which the gradient of line 30 reads
    return y + np.sum(A)


@pytest.mark.parametrize("k", [0, 2])
def test_an_untyped_view_is_copied_under_save(k):
    x, w = np.linspace(0.5, 1.0, 6), np.linspace(1.0, 2.0, 6).reshape(2, 3)
    mine = x.copy()
    g = adgen.grad(reshaped_then_zeroed, argnums=1, backend="numba")(mine, w, k)
    assert_grad_close(g, numerical_grad(reshaped_then_zeroed, (x.copy(), w, k), 1))
    assert_grad_close(g, np.cos(w) * x.reshape(2, 3), rtol=1e-12)  # r before the writes
    plain = x.copy()
    reshaped_then_zeroed(plain, w, k)
    assert np.array_equal(mine, plain)


def test_an_untyped_view_is_checked_under_strict():
    x, w = np.linspace(0.5, 1.0, 6), np.linspace(1.0, 2.0, 6).reshape(2, 3)
    g = adgen.grad(reshaped_then_zeroed, argnums=1, backend="numba",
                   mutation="strict")(x.copy(), w, 0)
    assert_grad_close(g, numerical_grad(reshaped_then_zeroed, (x.copy(), w, 0), 1))
    errors = []
    for backend in ("default", "numba"):
        with pytest.raises(adgen.MutationError) as err:
            adgen.grad(reshaped_then_zeroed, argnums=1, backend=backend,
                       mutation="strict")(x.copy(), w, 2)
        errors.append(str(err.value))
        assert err.value.location.line == 24 and err.value.captured_at.line == 22
    assert errors[0] == errors[1]


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_an_outer_product_written_in_place(mutation):
    x = np.linspace(0.5, 1.0, 4)
    if mutation == "strict":
        for k, raises in ((0, False), (2, True)):
            grad = adgen.grad(outer_then_zeroed, backend="numba", mutation="strict")
            if raises:
                with pytest.raises(adgen.MutationError) as err:
                    grad(x.copy(), k)
                assert err.value.location.line == 32 and err.value.captured_at.line == 30
            else:
                assert_grad_close(grad(x.copy(), k),
                                  numerical_grad(outer_then_zeroed, (x.copy(), k), 0))
        return
    g = adgen.grad(outer_then_zeroed, backend="numba")(x.copy(), 2)
    assert_grad_close(g, numerical_grad(outer_then_zeroed, (x.copy(), 2), 0))


def test_a_capture_that_is_not_an_array_or_a_number_is_refused_by_name():
    from adgen.numba_runtime import saved_copy, strict_capture, strict_scope

    @numba.njit
    def save(x):
        return saved_copy((x, 2.0))

    @numba.njit
    def strict(x):
        return strict_capture(strict_scope(), (x, 2.0), 0)

    for fn in (save, strict):
        with pytest.raises(numba.core.errors.TypingError) as err:
            fn(np.ones(3))
        assert "keeps the values a guarded site may overwrite where they are arrays or " \
            "numbers, and this value is Tuple(array(float64" in str(err.value)
