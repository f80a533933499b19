"""A helper called twice on an array and a strided view of it (reversed, every other row, a
transpose): the first call's saved views are redirected to the copy the second call's guard
took of the strided view, laid out as that view lies in memory (guards._laid_out). Against
central differences under "save"; "strict" raises naming the helper's line or is right."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen


def h_sin(dst, src):
    dst[:] = np.sin(src)
    return dst


def h_mul(dst, src):
    dst *= src
    return dst


def reversed_twice(x):
    v = x[::-1]
    h_sin(x, v)
    h_sin(x, v)
    return np.sum(np.sin(x) * np.arange(1.0, 7.0))


def every_other_twice(x):
    v = x[::2]
    h_mul(x[1::2], v)
    h_sin(x[::2], x[1::2])
    h_mul(x[1::2], v)
    return np.sum(x * x)


def transposed_twice(a):
    t = a.T
    h_mul(a, t)
    h_mul(a, t)
    return np.sum(a * np.arange(1.0, 10.0).reshape(3, 3))


CASES = [(reversed_twice, lambda: np.random.default_rng(1).uniform(-1, 1, 6)),
         (every_other_twice, lambda: np.random.default_rng(2).uniform(0.5, 1.0, 6)),
         (transposed_twice, lambda: np.random.default_rng(3).uniform(0.5, 1.0, (3, 3)))]


@pytest.mark.parametrize("f, make", CASES, ids=[c[0].__name__ for c in CASES])
def test_save_is_right(f, make):
    x = make()
    expected = numerical_grad(f, (x.copy(),), 0)
    got = adgen.grad(f)(x.copy())
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-9)
    # a pullback from vjp gives the same twice
    _, pullback = adgen.vjp(f, x.copy())
    np.testing.assert_array_equal(pullback(1.0)[0], pullback(1.0)[0])


@pytest.mark.parametrize("f, make", CASES, ids=[c[0].__name__ for c in CASES])
def test_strict_is_right_or_raises(f, make):
    x = make()
    try:
        got = adgen.grad(f, mutation="strict")(x.copy())
    except adgen.MutationError as err:
        assert "dst" in str(err) or "h_" in str(err)
    else:
        np.testing.assert_allclose(got, numerical_grad(f, (x.copy(),), 0), rtol=1e-6,
                                   atol=1e-9)
