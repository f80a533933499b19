"""What ``mutation="strict"`` says for a ReLU or a clamp written in place with ``out=``.

``np.maximum(h, 0, out=h)`` overwrites ``h``, which the maximum's gradient reads: not only
where ``h > 0`` (the output tells that) but where ``h == 0`` exactly, a tie, which gets half
the cotangent (JAX's rule) and which the output cannot tell from ``h < 0``. So strict keeps
the refusal; its hint said "compute the new value into a new array instead of in place".
Since session 24 it names an in-place form whose gradient reads only masks: ``h[h < 0] = 0``
(``np.minimum``: ``h[h > c] = c``; ``np.clip(h, lo, hi, out=h)`` and ``h.clip(lo, hi,
out=h)``: both stores), for bounds written as numbers. Each hinted form, written as the
hint says, gets its gradient under strict (central differences; away from the ties, where
both forms have the same derivative).
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

X = np.array([0.3, -0.5, 0.9, 0.07])


def relu(x):
    h = x * 2.0 - 0.1
    np.maximum(h, 0, out=h)
    return np.sum(h ** 2)


def relu_as_hinted(x):
    h = x * 2.0 - 0.1
    h[h < 0] = 0
    return np.sum(h ** 2)


def capped(x):
    h = x * 2.0
    np.minimum(h, 0.5, out=h)
    return np.sum(h ** 2)


def capped_as_hinted(x):
    h = x * 2.0
    h[h > 0.5] = 0.5
    return np.sum(h ** 2)


def clipped(x):
    h = np.sin(x) * 3
    np.clip(h, -1, 1, out=h)
    return np.sum(h ** 2)


def clipped_by_method(x):
    h = np.sin(x) * 3
    h.clip(-1, 1, out=h)
    return np.sum(h ** 2)


def clipped_as_hinted(x):
    h = np.sin(x) * 3
    h[h < -1] = -1
    h[h > 1] = 1
    return np.sum(h ** 2)


class Layer:
    def __init__(self, n):
        self.h = np.empty(n)

    def forward(self, x):
        np.multiply(x, 2.0, out=self.h)
        np.maximum(self.h, 0.0, out=self.h)
        return self.h


def layer(x):
    lay = Layer(len(x))
    return np.sum(lay.forward(x - 0.1) ** 2)


HINTS = [(relu, "h[h < 0] = 0", relu_as_hinted),
         (capped, "h[h > 0.5] = 0.5", capped_as_hinted),
         (clipped, "h[h < -1] = -1; h[h > 1] = 1", clipped_as_hinted),
         (clipped_by_method, "h[h < -1] = -1; h[h > 1] = 1", clipped_as_hinted),
         (layer, "self.h[self.h < 0.0] = 0.0", None)]


@pytest.mark.parametrize("f, form, hinted", HINTS, ids=[h[0].__name__ for h in HINTS])
def test_the_hint_names_a_masked_store(f, form, hinted):
    check_grad(f, (X,), mutation="save")
    with pytest.raises(adgen.MutationError) as info:
        adgen.grad(f, mutation="strict")(X.copy())
    assert info.value.location.file == __file__
    assert form in info.value.hint and 'mutation="save"' in info.value.hint
    if hinted is not None:
        for policy in ("save", "strict"):
            check_grad(hinted, (X,), mutation=policy, strict_must_compute=True)
            np.testing.assert_allclose(adgen.grad(hinted, mutation=policy)(X.copy()),
                                       adgen.grad(f)(X.copy()), rtol=1e-12)


def test_bounds_held_by_names_keep_the_general_hint():
    # b may be an array: h[h < b] = b would not be the same program
    def f(x, b):
        h = x * 2.0
        np.maximum(h, b, out=h)
        return np.sum(h ** 2)

    with pytest.raises(adgen.MutationError) as info:
        adgen.grad(f, mutation="strict")(X.copy(), 0.2)
    assert "into a new array" in info.value.hint
