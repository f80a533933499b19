"""A callee's saved values that its caller overwrites after the call, on the numba backend:
the default pullback redirects them to the copy the caller's guard took (runtime.remap_saved);
the nopython pullback does the same with ``remap_tree`` (adgen.numba_runtime), for the array
itself and for views of a C-contiguous one, and refuses at the call's line a view of a
strided array. Gradients against central differences of the plain function (on copies) and
hand formulas, the arguments' final contents against a plain call, under both policies.
Skipped without numba."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

numba = pytest.importorskip("numba")


def sq(v):
    return v * v


def overwrite_after_call(x, k):
    y = sq(x)  # sq saves x itself
    for i in range(k):
        x[i] = 0.0  # guarded: overwrites what sq saved once k > 0
    return np.sum(y) + np.sum(x)


def row_energy(M, r):
    return np.sum(np.sin(M[r]) * M[r])


def overwrite_row(M):
    s = row_energy(M, 1)  # row_energy saves views of row 1
    M[1, 2] = 5.0 * M[0, 0]  # overwrites one of them
    return s + np.sum(M ** 2)


def test_an_argument_overwritten_after_the_call_is_read_from_its_copy():
    x = np.linspace(0.5, 1.0, 5)
    text = adgen.source(overwrite_after_call, x.copy(), 2, backend="numba")
    # sq's saved values, (x,), built again by the caller (transforms/callee_saved.py)
    assert "sq_pullback(remap_tree((x,), x, saved_x_1," in text
    # the call's site by its file's name: no directory in the module, whose source names
    # its numba cache (a checkout elsewhere loads it)
    assert "'test_numba_remap_saved.py:" in text and __file__ not in text
    mine = x.copy()
    g = adgen.grad(overwrite_after_call, backend="numba")(mine, 2)
    # d/dx of sum(x0^2) + sum of the entries not zeroed
    assert_grad_close(g, 2.0 * x + np.r_[0.0, 0.0, 1.0, 1.0, 1.0], rtol=1e-12)
    assert_grad_close(g, numerical_grad(overwrite_after_call, (x.copy(), 2), 0))
    plain = x.copy()
    overwrite_after_call(plain, 2)
    assert np.array_equal(mine, plain)


def test_strict_raises_the_default_backends_error_and_runs_where_nothing_is_overwritten():
    x = np.linspace(0.5, 1.0, 5)
    errors = []
    for backend in ("default", "numba"):
        with pytest.raises(adgen.MutationError) as err:
            adgen.grad(overwrite_after_call, backend=backend, mutation="strict")(x.copy(), 2)
        errors.append(str(err.value))
    assert errors[0] == errors[1]
    assert "overwrites x, which the gradient of line 25 reads" in errors[1]
    g = adgen.grad(overwrite_after_call, backend="numba", mutation="strict")(x.copy(), 0)
    assert_grad_close(g, 2.0 * x + 1.0, rtol=1e-12)


def test_views_a_callee_saved_point_at_the_same_elements_of_the_copy():
    M = np.random.default_rng(0).random((3, 4))
    mine = M.copy()
    g = adgen.grad(overwrite_row, backend="numba")(mine)
    assert_grad_close(g, numerical_grad(overwrite_row, (M.copy(),), 0))
    assert_grad_close(g, adgen.grad(overwrite_row)(M.copy()), rtol=1e-12)
    plain = M.copy()
    overwrite_row(plain)
    assert np.array_equal(mine, plain)


def test_a_view_of_a_strided_argument_is_refused_at_the_call():
    M = np.random.default_rng(1).random((3, 8))[:, ::2]  # not C-contiguous
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(overwrite_row, backend="numba")(M)
    assert err.value.location.line == 36  # s = row_energy(M, 1)
    assert err.value.location.file == __file__
    assert "not C-contiguous" in str(err.value)
    g = adgen.grad(overwrite_row, backend="numba")(np.ascontiguousarray(M))
    assert_grad_close(g, numerical_grad(overwrite_row, (np.ascontiguousarray(M),), 0))


def test_views_a_callee_saved_under_strict_raise_the_default_backends_error():
    M = np.random.default_rng(2).random((3, 4))
    errors = []
    for backend in ("default", "numba"):
        mine = M.copy()
        with pytest.raises(adgen.MutationError) as err:
            adgen.grad(overwrite_row, backend=backend, mutation="strict")(mine)
        errors.append(str(err.value))
        assert err.value.location.line == 37  # M[1, 2] = 5.0 * M[0, 0]
    assert errors[0] == errors[1]
