"""Assigning to a slice of a list of arrays (``l[a:b] = [...]``), as users write it.

The store may change the list's length, which moves every later item, so the adjoints of the
items before it would be read at the wrong positions. adgen's pullback failed with a raw
``TypeError: can only assign an iterable`` from inside its runtime; it now raises an
``UnsupportedError`` naming the user's file and line, and the suggested rewrite (a new list
built by concatenation) differentiates right (checked against central differences).
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen


def same_length(x):
    parts = [x, x * 2.0, x * 3.0]
    parts[0:2] = [np.sin(x), x ** 2]
    return np.sum(parts[0]) + np.sum(parts[1] * parts[2])


def shrinks(x):
    parts = [x, x * 2.0, x * 3.0]
    parts[0:2] = [np.sin(x)]
    return np.sum(parts[0]) + np.sum(parts[1] * x)


def extended_slice_in_a_loop(x):
    parts = [x, x * 2.0, x * 3.0]
    for _ in range(2):
        parts[::2] = (parts[2] * x, parts[0])
    return np.sum(parts[0] * parts[2])


def rebuilt_by_concatenation(x):
    parts = [x, x * 2.0, x * 3.0]
    parts = parts[:1] + [np.sin(x)] + parts[2:]
    return np.sum(parts[0]) + np.sum(parts[1] * parts[2])


X = np.array([0.5, -1.0, 0.7])


@pytest.mark.parametrize("f", [same_length, shrinks, extended_slice_in_a_loop])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_slice_store_is_refused_at_its_line(f, mutation):
    with pytest.raises(adgen.UnsupportedError, match=r"slice of a list") as err:
        adgen.grad(f, mutation=mutation)(X.copy())
    assert "test_list_slice_assignment.py" in str(err.value)
    assert "parts[" in str(err.value)  # the user's source line


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_suggested_rewrite_differentiates(mutation):
    want = numerical_grad(rebuilt_by_concatenation, (X.copy(),), 0)
    assert_grad_close(adgen.grad(rebuilt_by_concatenation, mutation=mutation)(X.copy()), want)
