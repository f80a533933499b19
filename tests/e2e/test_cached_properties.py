"""``functools.cached_property`` values with a gradient: refused at the line. Once read, the
value is in the object's ``__dict__`` and was taken for a stored attribute, so the gradient
stopped there (zeros, silently): ``adgen.grad(lambda w: Cached(w).loss())(w)`` gave 0 for
2 sum(w)."""

from functools import cached_property

import numpy as np
import pytest

import adgen
from adgen.errors import UnsupportedError

W = np.array([0.3, -0.2, 0.5])


class Cached:
    def __init__(self, w):
        self.w = w

    @cached_property
    def total(self):
        return np.sum(self.w)

    def loss(self):
        return self.total ** 2


def test_a_cached_property_is_a_precise_error_not_a_zero_gradient():
    # its value, once read, is in the object's __dict__: it was taken for a stored attribute
    # and the gradient stopped there (zeros, silently)
    with pytest.raises(UnsupportedError, match=r"test_cached_properties\.py.*Cached\.total is computed"):
        adgen.grad(lambda w: Cached(w).loss())(W)
    m = Cached(W)
    m.total  # cached before the call: its value was computed from m.w all the same
    with pytest.raises(UnsupportedError, match=r"Cached\.total is computed"):
        adgen.grad(lambda m: m.loss())(m)
