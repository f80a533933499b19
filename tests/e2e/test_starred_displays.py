"""Starred items in tuple and list displays: ``np.zeros((*x.shape, 2))`` (the idiom for a
new trailing axis) and ``ys = (*xs, y)`` / ``[*xs, y]`` of values with a gradient. They were
refused ("the expression Starred is not supported", at the def's line); desugar writes them
as ``tuple(x.shape) + (2,)``. Reverse mode under both policies and forward mode against
central differences."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad, numerical_jvp

import adgen


def trailing_axis(x):
    feats = np.zeros((*x.shape, 2))
    feats[..., 0] = x
    feats[..., 1] = x * x
    return np.sum(np.tanh(feats))


def shape_from_a_name(x):
    s = x.shape
    e = np.ones([*s, 3])
    e[..., 1] = np.sin(x)
    return np.sum(e * e * x[..., None])


def tuple_of_arrays(x):
    xs = (x, 2.0 * x)
    ys = (*xs, x * x)
    return np.sum(ys[0] * ys[2] + ys[1])


def list_of_arrays(x):
    xs = [np.cos(x), 2.0 * x]
    ys = [x, *xs, *xs]
    return np.sum(ys[1] * ys[2] + ys[0] * ys[4])


CASES = [trailing_axis, shape_from_a_name, tuple_of_arrays, list_of_arrays]
X = np.array([[0.3, -0.5, 1.1], [0.8, 0.2, -0.9]])


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_reverse(fn, mutation):
    assert_grad_close(adgen.grad(fn, mutation=mutation)(X.copy()),
                      numerical_grad(fn, (X.copy(),), 0))


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_forward(fn):
    v = np.linspace(-1.0, 1.0, X.size).reshape(X.shape)
    _, tangent = adgen.jvp(fn, (X.copy(),), (v,))
    np.testing.assert_allclose(tangent, numerical_jvp(fn, (X.copy(),), (v,))[0], rtol=1e-6)


def starred_call(x):
    return np.sum(np.random.default_rng(0).standard_normal(*x.shape[:1]) * x[:, 0])


def test_a_starred_call_argument_is_still_refused_at_its_line():
    with pytest.raises(adgen.UnsupportedError, match=r"test_starred_displays.py:\d+") as info:
        adgen.grad(starred_call)(X.copy())
    assert "*arguments" in str(info.value)
