"""A callable whose in-place write runs through a decorator's functools.wraps wrapper: the
refusal names the function that writes, the decorator's wrapper and what to do instead.

Before: "Act.__call__ (file:8) writes an array argument ... and is called through a
variable, a method or a closure", naming the wrapper's line as the method's and a variable
or method the user did not use. A decorated function that returns a new array is
differentiated (vs central differences), under both policies.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import adgen
from tests.gradcheck import numerical_grad


def timed(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        result = fn(*args, **kwargs)
        return result
    return wrapper


class InPlace:
    @timed
    def __call__(self, h):
        np.tanh(h, out=h)  # WRITES
        return h


class Fresh:
    @timed
    def __call__(self, h):
        return np.tanh(h)


ACT = InPlace()
FRESH = Fresh()
W = np.array([[0.5, -1.0, 0.2], [0.3, 0.8, -0.6], [1.1, 0.0, 0.4]])
X = np.array([0.3, -0.7, 1.2])


def through_writer(x, w):
    h = w @ x
    h = ACT(h)
    return np.sum(h ** 2)


def through_fresh(x, w):
    h = w @ x
    h = FRESH(h)
    return np.sum(h ** 2)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_refusal_names_the_writer_and_the_decorator(mutation):
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(through_writer, mutation=mutation)(X, W)
    text = str(info.value)
    assert "InPlace.__call__" in text and "functools.wraps" in text
    assert "called through a variable" not in text
    assert "return a new array from InPlace.__call__" in text
    assert "h = ACT(h)" in text  # the user's call


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_decorated_callable_returning_a_new_array(mutation):
    g = adgen.grad(through_fresh, mutation=mutation)(X, W)
    np.testing.assert_allclose(g, numerical_grad(through_fresh, (X, W), 0), rtol=1e-6,
                               atol=1e-8)
