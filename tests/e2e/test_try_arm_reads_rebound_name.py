"""A loop accumulating through ``try`` / ``except`` (``acc = acc + math.sqrt(xi)`` in the body,
``acc = acc - xi`` in the handler) is refused; the message named neither line and told the
user to "assign it before the try statement", which the code already did. It names both
lines now and gives the rewriting adgen differentiates, checked here against central
differences."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import central

import adgen

X = np.array([0.1, -0.2, 0.3])


def accumulate(x):
    acc = 0.0
    for xi in x:
        try:
            acc = acc + math.sqrt(xi)
        except ValueError:
            acc = acc - xi
    return acc


def rewritten(x):
    acc = 0.0
    for xi in x:
        try:
            t = math.sqrt(xi)
        except ValueError:
            t = -xi
        acc = acc + t
    return acc


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_refusal_names_both_lines_and_the_rewriting(mutation):
    first = accumulate.__code__.co_firstlineno
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(accumulate, mutation=mutation)(X.copy())
    message = info.value.message
    assert f"'acc' (line {first + 6})" in message and f"(line {first + 4})" in message
    assert "before the try statement" not in info.value.hint
    assert "after the try statement" in info.value.hint


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_rewriting_is_differentiated(mutation):
    g = adgen.grad(rewritten, mutation=mutation)(X.copy())
    np.testing.assert_allclose(g, central(rewritten, X.copy()), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g, [0.5 / math.sqrt(0.1), -1.0, 0.5 / math.sqrt(0.3)])
