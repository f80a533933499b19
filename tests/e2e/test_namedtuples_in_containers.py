"""A namedtuple inside a list or dict argument gets a gradient of its own type.

``sum(l1(p) for p in params)`` over a list of ``P(w, b)`` returned plain tuples for the items:
the arguments' received copy (for a function that iterates or rebinds a container) rebuilt
every tuple as a plain one, so ``g[0].w`` raised AttributeError in the user's update loop
(``p._replace(w=p.w - lr * g.w)``). Values were right."""

from __future__ import annotations

import collections
from typing import NamedTuple

import numpy as np
import pytest

from tests.gradcheck import check_grad


class P(NamedTuple):
    w: np.ndarray
    b: float


Q = collections.namedtuple("Q", "w b")

X = np.array([[0.3, -0.2, 0.5], [1.0, 0.4, -0.7], [0.1, 0.9, 0.2], [-0.5, 0.3, 0.8]])
Y = np.array([0.2, -0.1, 0.4, 0.3])


def l1(p, x, y):
    return np.mean((x @ p.w + p.b - y) ** 2)


def summed(ps, x, y):
    return sum(l1(p, x, y) for p in ps)


def by_key(d, x, y):
    total = 0.0
    for k in d:
        total = total + l1(d[k], x, y)
    return total


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("kind", [P, Q])
def test_items_keep_their_type(kind, mutation):
    ps = [kind(np.array([0.1, -0.3, 0.2]), 0.1), kind(np.array([0.5, 0.2, -0.4]), -0.2)]
    g = check_grad(summed, (ps, X, Y), mutation=mutation)  # checks the type of each item
    assert all(type(item) is kind for item in g)
    check_grad(by_key, ({"a": ps[0], "b": ps[1]}, X, Y), mutation=mutation)
    check_grad(lambda ps: summed(ps, X, Y), (ps,), mutation=mutation)
