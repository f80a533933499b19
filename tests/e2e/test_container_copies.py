"""Shallow copies of lists and dicts of arrays (``lst.copy()``, ``d.copy()``), written through.

A shallow copy is a new container holding the *same* arrays: ``m = l.copy(); m[0] *= 3``
scales the array ``l[0]`` too. adgen took ``l.copy()`` for a new array with no tie to ``l``
(the ``copy`` of an ndarray), so a write through an item of the copy was invisible to the
gradient of what is read through the original: silently wrong (``np.sum(l[0] * x)`` after
``m[0] *= 3`` got ``2x`` for ``6x``). The copy now holds the original's items (as ``dict(d)``
and ``list(l)`` already did). Checked against central differences under both policies, and the
argument's final state against a plain call.

``copy.copy`` had no rule (adgen compiled the copy module's source and failed inside it with
a MissingRuleError about ``getattr``); it now has one, and its result is followed the same way
(forward mode too).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen


def copy_scaled_in_place(x):
    items = [x * 1.0, x * 2.0]
    m = items.copy()
    m[0] *= 3.0
    return np.sum(items[0] * x)


def copy_item_written_by_index(x):
    items = [x * 1.0]
    m = items.copy()
    m[0][1] = x[0] * x[1]
    return np.sum(items[0] * x)


def copy_item_named_then_scaled(x):
    items = [x * 1.0]
    m = items.copy()
    a = m[0]
    a *= 4.0
    return np.sum(items[0] * items[0])


def dict_copy_scaled_in_place(x):
    d = {"a": x * 1.0, "b": x * 2.0}
    e = d.copy()
    e["a"] *= 5.0
    return np.sum(d["a"] * x) + np.sum(e["b"])


def copy_rebound_item(x):
    items = [x * 1.0, x * 2.0]
    m = items.copy()
    m[0] = np.sin(x)
    return np.sum(items[0]) + np.sum(m[0]) + np.sum(m[1])


def copy_module_list_scaled(x):
    items = [x * 1.0, np.sin(x)]
    trial = copy.copy(items)
    trial[0] *= 3.0
    trial[1] = np.cos(x)
    return np.sum(items[0] * x) + np.sum(items[1] * trial[1])


def copy_module_dict_item_written(x):
    params = {"w": x * 1.0, "b": np.cos(x)}
    trial = copy.copy(params)
    w = trial["w"]
    w[1] = x[0] * x[2]
    return np.sum(params["w"] * x) + np.sum(trial["b"] * params["b"])


def copy_module_array(x):
    y = x * 2.0
    z = copy.copy(y)
    z[0] = 7.0
    return np.sum(y * z)


class Layers:
    """The way a user keeps state: a list of weights copied, then updated in place."""

    def __init__(self, n):
        self.n = n

    def loss(self, x):
        ws = [x * float(k + 1) for k in range(self.n)]
        trial = ws.copy()
        for k in range(self.n):
            trial[k] *= np.cos(x[0])
        return sum(np.sum(w * x) for w in ws)


def method_on_an_object(x):
    return Layers(2).loss(x)


CASES = [copy_scaled_in_place, copy_item_written_by_index, copy_item_named_then_scaled,
         dict_copy_scaled_in_place, copy_rebound_item, method_on_an_object,
         copy_module_list_scaled, copy_module_dict_item_written, copy_module_array]
X = np.array([0.5, -1.0, 0.7])


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_against_central_differences(f, mutation):
    want = numerical_grad(f, (X.copy(),), 0)
    x = X.copy()
    if f is method_on_an_object and mutation == "strict":
        # trial[k] *= np.cos(x[0]) overwrites the array whose old value the gradient of
        # np.cos(x[0]) reads: strict copies nothing, so it refuses, as grad(Layers(2).loss,
        # mutation="strict") does (through Layers(2).loss(x) the method compiled under save
        # until session 19, and copied)
        with pytest.raises(adgen.MutationError, match=r"trial\[k\] \*= np.cos"):
            adgen.grad(f, mutation=mutation)(x)
        return
    got = adgen.grad(f, mutation=mutation)(x)
    assert_grad_close(got, want)
    np.testing.assert_array_equal(x, X)


@pytest.mark.parametrize("f", [copy_module_list_scaled, copy_module_dict_item_written])
def test_forward_mode_against_central_differences(f):
    v = np.array([0.3, -0.2, 0.9])
    want = numerical_grad(f, (X.copy(),), 0) @ v
    _, tangent = adgen.jvp(f, (X.copy(),), (v,))
    np.testing.assert_allclose(tangent, want, rtol=1e-6, atol=1e-8)
