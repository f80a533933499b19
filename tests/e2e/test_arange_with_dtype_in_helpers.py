"""``np.arange(n, dtype=float)`` in a helper (an ``lru_cache``'d table of weights, a grid of
positions from a start and a spacing): compiled without the caller's signature, the helper's
arguments may carry a derivative, and arange's rule did not take ``dtype=``: adgen refused
the call ("adgen's rule for numpy.arange takes (start, stop, step)"). The rule takes it now:
a float dtype passes start's and step's gradients through, an integer one truncates the
values (no gradient)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from gradcheck import check_grad, check_jvp

import adgen


@functools.lru_cache(maxsize=8)
def weights(k):
    return np.arange(k, dtype=float) + 1.0


def grid(start, n, spacing):
    return np.arange(start, start + n * spacing, spacing, dtype=np.float64)


def integer_grid(start, n, spacing):
    return np.arange(start, start + n * spacing, spacing, dtype=int) * 1.0


def weighted(w):
    return np.sum(w * weights(4) ** 2)


def on_grid(w, start, spacing):
    return np.sum(w * grid(start, 4, spacing) ** 2)


def on_integer_grid(w, start, spacing):
    return np.sum(w * integer_grid(start, 4, spacing) ** 2)


W = np.array([0.3, 1.1, -0.4, 0.9])


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_weights_from_a_cached_helper(mutation):
    check_grad(weighted, [W.copy()], mutation=mutation, strict_must_compute=True)
    # by hand: (1, 2, 3, 4) squared
    np.testing.assert_allclose(adgen.grad(weighted, mutation=mutation)(W.copy()),
                               [1.0, 4.0, 9.0, 16.0])


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_grid_of_a_start_and_a_spacing(mutation):
    check_grad(on_grid, [W.copy(), 0.5, 0.7], argnums=(0, 1, 2), mutation=mutation,
               strict_must_compute=True)
    # by hand: x_i = start + i * spacing; d/dstart = sum 2 w_i x_i, d/dspacing = sum 2 w_i x_i i
    x = 0.5 + np.arange(4) * 0.7
    _, g_start, g_spacing = adgen.grad(on_grid, argnums=(0, 1, 2), mutation=mutation)(
        W.copy(), 0.5, 0.7)
    assert g_start == pytest.approx(np.sum(2 * W * x))
    assert g_spacing == pytest.approx(np.sum(2 * W * x * np.arange(4)))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_an_integer_dtype_has_no_gradient(mutation):
    check_grad(on_integer_grid, [W.copy(), 0.5, 1.3], argnums=(0, 1, 2), mutation=mutation,
               strict_must_compute=True)
    _, g_start, g_spacing = adgen.grad(on_integer_grid, argnums=(0, 1, 2),
                                       mutation=mutation)(W.copy(), 0.5, 1.3)
    assert g_start == 0.0 and g_spacing == 0.0


def test_forward_mode():
    tangents = [np.array([0.5, -1.0, 0.2, 0.1]), 1.0, 2.0]
    check_jvp(on_grid, [W.copy(), 0.5, 0.7], tangents)
    check_jvp(on_integer_grid, [W.copy(), 0.5, 1.3], tangents)
