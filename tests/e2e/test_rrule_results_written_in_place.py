"""A custom rule's dict or list result, written in place by the caller, as users write it.

``d = make(x); d["a"][0] = 5.0; return np.sum(d["a"] * x)`` with an ``adgen.rrule`` for
``make``: the adjoints of the arrays in ``d`` live in shadow memory once the caller writes them
in place, and the rule's pullback was handed the dict's name-following adjoint alone, so the
path through ``make`` got nothing: silently wrong (``x`` for ``2x``). The rule's pullback now
gets the shadows too (``runtime.with_shadows``, as a user function's pullback already did).
Checked against central differences under both policies.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen


def make(x):
    return {"a": x * 2.0, "s": float(np.sum(x))}


@adgen.rrule(make)
def _(x):
    return make(x), lambda g: (2.0 * g["a"] + g["s"],)


def pair(x):
    return [x * 3.0, x + 1.0]


@adgen.rrule(pair)
def _(x):
    return pair(x), lambda g: (3.0 * g[0] + g[1],)


def item_stored_into(x):
    d = make(x)
    d["a"][0] = 5.0
    return np.sum(d["a"] * x) + d["s"] * d["s"]


def item_named_and_scaled(x):
    d = make(x)
    a = d["a"]
    a *= 3.0
    return np.sum(d["a"] * x) + d["s"]


def list_item_stored_into(x):
    p = pair(x)
    p[0][1] = 0.0
    return np.sum(p[0] * x) + np.sum(p[1])


def read_only(x):
    d = make(x)
    return np.sum(d["a"] * d["a"]) + 2.0 * d["s"]


CASES = [item_stored_into, item_named_and_scaled, list_item_stored_into, read_only]
X = np.array([0.5, -1.0, 0.7])


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_against_central_differences(f, mutation):
    want = numerical_grad(f, (X.copy(),), 0)
    assert_grad_close(adgen.grad(f, mutation=mutation)(X.copy()), want)
