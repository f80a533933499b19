"""A list of pairs, lists or objects rejoined from its slices (``qs = ps[1:] + ps[:1]``, a
rotation) or shortened by ``pop()`` (which adgen lowers to ``xs[:k] + xs[k + 1:]``).

The pullback took the joined list for a number or an array (a ``+`` of two names) and added
the adjoint of an item read from it with ``qs_bar[0] += g``: for a tuple's or a list's adjoint
that joins the two sequences (refused with a message about a list read from its end, then
grown, which the program never does), for an object's a TypeError from the pullback.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

POLICIES = ["save", "strict"]


def rotated_pairs(a, b):
    ps = [(a * 1.0, b * 2.0), (b * 1.0, a * 3.0)]
    qs = ps[1:] + ps[:1]
    u, v = qs[0]
    return np.sum(u * v) + np.sum(qs[1][0] ** 2)


def rotated_rows(a, b):
    rows = [[a * 1.0, b * 2.0], [b * 1.0, a * 3.0]]
    both = rows[1:] + rows[:1]
    return np.sum(both[0][0] * both[1][1])


def popped_pair(a, b):
    pairs = [(a * 1.0, b * 2.0), (b * 1.0, a * 3.0)]
    last = pairs.pop()
    return np.sum(pairs[0][0] * pairs[0][1]) + np.sum(last[0] * last[1])


class Body:
    def __init__(self, x):
        self.x = x

    def push(self, c):
        self.x = self.x * c
        return np.sum(self.x ** 2)


def popped_bodies(a, b):
    bodies = [Body(a * 1.0), Body(b * 1.0)]
    e = bodies[1].push(3.0)
    last = bodies.pop()
    bodies.append(Body(last.x * 2.0))
    return e + np.sum(bodies[0].x * bodies[1].x)


PROGRAMS = [rotated_pairs, rotated_rows, popped_pair, popped_bodies]


def _data():
    rng = np.random.default_rng(7)
    return rng.normal(size=3), rng.normal(size=3)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_gradient_matches_central_differences(f, policy):
    a, b = _data()
    check_grad(f, (a, b), (0, 1), mutation=policy, strict_must_compute=True, rtol=1e-6,
               atol=1e-8)


def test_rotated_pairs_by_hand():
    # u, v = b * 1, a * 3; qs[1][0] = a: d/da = 3b + 2a, d/db = 3a
    a, b = _data()
    ga, gb = adgen.grad(rotated_pairs, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga, 3.0 * b + 2.0 * a)
    np.testing.assert_allclose(gb, 3.0 * a)
