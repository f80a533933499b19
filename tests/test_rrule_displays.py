"""A tuple or list display passed to a function with an ``adgen.rrule`` gets its cotangent,
spread over its items. It was dropped (``combine((x, 2 * x), c)`` gave x a zero gradient,
silently, under both policies); the rule's own cotangent for the display is a tuple or list
of the items' cotangents. Checked against central differences and hand formulas."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

POLICIES = ["save", "strict"]


def combine(pair, c):
    return pair[0] * pair[1] * c


@adgen.rrule(combine)
def _combine_rule(pair, c):
    out = combine(pair, c)
    return out, lambda g: ((g * pair[1] * c, g * pair[0] * c), np.sum(g * pair[0] * pair[1]))


def weighted_sum(parts, weights):
    return sum(w * p for w, p in zip(weights, parts))


@adgen.rrule(weighted_sum)
def _weighted_sum_rule(parts, weights):
    out = weighted_sum(parts, weights)
    return out, lambda g: ([w * g for w in weights],
                           [float(np.sum(g * p)) for p in parts])


def tuple_display(x, c):
    return np.sum(combine((x, 2.0 * x), c))


def list_display(x, y):
    return np.sum(weighted_sum([np.sin(x), x * y, y], [0.5, 2.0, -1.0]) ** 2)


def display_by_keyword(x, c):
    return np.sum(combine(pair=(np.tanh(x), x), c=c))


X = np.array([0.5, 1.5, -0.3])
Y = np.array([0.2, -0.7, 1.1])


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_tuple_display(mutation):
    gx, gc = adgen.grad(tuple_display, argnums=(0, 1), mutation=mutation)(X.copy(), 1.5)
    np.testing.assert_allclose(gx, 4.0 * X * 1.5)  # d/dx sum(2 x^2 c)
    assert gc == pytest.approx(np.sum(2.0 * X * X))


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_list_display(mutation):
    g = adgen.grad(list_display, argnums=(0, 1), mutation=mutation)(X.copy(), Y.copy())
    for k in range(2):
        assert_grad_close(g[k], numerical_grad(list_display, (X.copy(), Y.copy()), k))


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_display_passed_by_keyword(mutation):
    g = adgen.grad(display_by_keyword, mutation=mutation)(X.copy(), 0.7)
    assert_grad_close(g, numerical_grad(display_by_keyword, (X.copy(), 0.7), 0))
