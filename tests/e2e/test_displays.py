"""Displays. Starred items in tuple and list displays: ``np.zeros((*x.shape, 2))`` (the
idiom for a new trailing axis) and ``ys = (*xs, y)`` / ``[*xs, y]`` of values with a
gradient; they were refused ("the expression Starred is not supported", at the def's line)
and desugar now writes them as ``tuple(x.shape) + (2,)``. A set of constants (``k in {0,
3}``) runs as written; a set of values and dict unpacking inside an expression are refused
at their line (tests/e2e/test_dict_unpacking_displays.py: bound to a name, it runs).
Reverse mode under both policies and forward mode against central differences."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, numerical_grad, numerical_jvp

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


def test_a_starred_call_argument():
    """Refused until call_starred (tests/e2e/test_starred_calls.py): a draw of a shape
    given by *x.shape[:1] is a constant, as the same call with the shape passed is."""
    check_grad(starred_call, (X.copy(),))


# --- set displays and dict unpacking ------------------------------------------------------

def membership_in_a_set(x):
    s = 0.0
    for k in range(x.shape[0]):
        if k in {0, 3}:
            s = s + x[k] * x[k]
        else:
            s = s + x[k]
    return s


def test_a_set_of_constants():
    x = np.array([0.3, 0.7, 1.2, -0.5])
    np.testing.assert_allclose(adgen.grad(membership_in_a_set)(x.copy()),
                               [0.6, 1.0, 1.0, -1.0])
    _, tangent = adgen.jvp(membership_in_a_set, (x.copy(),), (np.ones(4),))
    assert tangent == pytest.approx(1.6)


def set_of_values(x):
    s = {x[0], x[1]}
    return max(s)


def dict_unpacking(x):
    s = np.sum({**{"a": x}, "b": 2.0}["a"])  # (bound to a name it is differentiated)
    return s


@pytest.mark.parametrize("fn, what", [(set_of_values, "a set display of values"),
                                      (dict_unpacking, r"dict unpacking \(\{\*\*d\}\)")])
def test_refused_at_their_line(fn, what):
    # (they were 'the expression Set / NoneType is not supported' at the def's line)
    with pytest.raises(adgen.UnsupportedError, match=what) as info:
        adgen.grad(fn)(np.array([0.3, 0.7]))
    assert f"test_displays.py:{fn.__code__.co_firstlineno + 1}:" in str(info.value)
