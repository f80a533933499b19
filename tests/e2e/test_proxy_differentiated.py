"""A proxy object (a wrapper whose ``__getattr__`` hands every other name on to the object it
holds, ``getattr(self.m, name)``) differentiated as an argument: building its gradient raised
RecursionError (``copy.copy`` makes an instance without ``__init__`` and asks it for
``__setstate__``, which ``__getattr__`` looks up in ``self.m``, which it looks up again...).
The gradient is now a copy made by ``__new__``, holding the gradients of its attributes."""

from __future__ import annotations

import numpy as np
import pytest

import adgen


class Model:
    def __init__(self, w):
        self.w = w

    def score(self, x):
        return np.sum(np.sin(self.w) * x)


class Wrapped:
    def __init__(self, m, scale):
        self.m = m
        self.scale = scale

    def __getattr__(self, name):
        return getattr(self.m, name)


def loss(p, x):
    return p.scale * p.m.score(x) + np.sum(p.m.w ** 2)


@pytest.mark.parametrize("policy", ["save", "strict"])
def test_gradient_of_a_proxy(policy):
    w = np.array([0.3, -1.2, 2.0])
    x = np.array([1.0, 2.0, -0.5])
    p = Wrapped(Model(w), 1.5)
    g = adgen.grad(loss, mutation=policy)(p, x)
    assert type(g) is Wrapped
    # by hand: d/dw = scale cos(w) x + 2 w; d/dscale = sum(sin(w) x)
    np.testing.assert_allclose(g.m.w, 1.5 * np.cos(w) * x + 2 * w, atol=1e-12)
    assert g.scale == pytest.approx(np.sum(np.sin(w) * x))
    assert p.m.w is w  # the argument is left as it was
