"""``a, *rest = seq``, ``first, *mid, last = seq``, ``*hidden, out = layers`` and ``for a,
*b in rows``: the starred name gets a list of the items between, as in Python; a sequence too
short raises ValueError. Before, any starred assignment was refused. Gradients against
central differences under both policies, and forward mode against a hand formula."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen


def head_and_rest(x):
    a, *rest = x
    return a * np.sum(np.array(rest) ** 2)


def ends_and_middle(x):
    first, *mid, last = x
    return first * last + sum(v ** 3 for v in mid)


def network(layers, x):
    *hidden, out = layers
    h = x
    for W in hidden:
        h = np.tanh(h @ W)
    return np.sum(h @ out)


def by_rows(rows):
    s = 0.0
    for a, *b in rows:
        s = s + a * np.sum(np.array(b))
    return s


X = np.array([0.3, -1.2, 2.0, 0.7])
LAYERS = [np.full((2, 3), 0.1), np.full((3, 3), 0.2), np.full((3, 1), 0.3)]
CASES = [(head_and_rest, (X,), 0), (ends_and_middle, (X,), 0),
         (network, (LAYERS, np.ones((4, 2))), (0, 1)),
         (by_rows, (np.arange(1.0, 10.0).reshape(3, 3),), 0)]


@pytest.mark.parametrize("f, args, argnums", CASES, ids=[c[0].__name__ for c in CASES])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_against_central_differences(f, args, argnums, mutation):
    check_grad(f, args, argnums, mutation=mutation)


def test_forward_mode():
    _, d = adgen.jvp(ends_and_middle, (X,), (np.ones(4),))
    assert d == pytest.approx(X[3] + X[0] + 3 * (X[1] ** 2 + X[2] ** 2))


def test_too_short_raises_as_python_does():
    with pytest.raises(ValueError):
        ends_and_middle(np.ones(1))
    with pytest.raises(ValueError, match="not enough values to unpack"):
        adgen.grad(ends_and_middle)(np.ones(1))




def nested(x):
    (a, *b), c = x[:2], x[2]
    return a * c + b[0] ** 2


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_starred_name_in_a_nested_target(mutation):
    check_grad(nested, (X,), mutation=mutation)
