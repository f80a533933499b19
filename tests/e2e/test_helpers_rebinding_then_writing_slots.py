"""A helper given a container that rebinds one of its slots and writes another's array in
place (``h.a = h.a * c; h.b[1:] = h.a[:2]``; ``lst.append(...); lst[0][:] = ...``), the
caller reading the container afterwards.

The caller hands the helper's pullback the adjoint of the container's slots as the helper
left them; the helper keeps the adjoints of the arrays it writes in place in shadow memory,
where the pullback of the write kills what the write overwrote. The caller's adjoint of
those arrays stayed in the container's adjoint instead, never killed: the overwritten
elements passed their gradient on to the array before the write (b got a gradient in the
elements the helper overwrote, a a gradient though the helper overwrote all of a's copy),
silently, under both policies. The helper's pullback now moves it into shadow memory first,
by the slots as the helper returned (the forward keeps them).
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

POLICIES = ["save", "strict"]


class Pair:
    def __init__(self, a, b):
        self.a = a
        self.b = b


def spread(h, c):
    h.a = h.a * c
    h.b[1:] = h.a[:2]
    return np.sum(h.b)


def pair_after_a_helper(a, b):
    h = Pair(a * 1.0, b * 1.0)
    s = spread(h, 2.0)
    return s + np.sum(h.a * h.b)


def spread_dict(d, c):
    d["a"] = d["a"] * c
    d["b"][:2] = d["a"][1:]
    return np.sum(d["b"] ** 2)


def dict_after_a_helper(a, b):
    d = {"a": a * 1.0, "b": b * 1.0}
    s = spread_dict(d, 3.0)
    return s + np.sum(d["a"] * d["b"])


def grow_and_reset(xs):
    xs.append(xs[-1] * 2.0)
    xs[0][:] = xs[1] + 1.0
    return np.sum(xs[0])


def list_after_a_helper(a, b):
    xs = [a.copy(), b * 1.0]
    s = grow_and_reset(xs)
    return s + np.sum(xs[2] * xs[0])


PROGRAMS = [pair_after_a_helper, dict_after_a_helper, list_after_a_helper]


def _data():
    rng = np.random.default_rng(5)
    return rng.normal(size=3), rng.normal(size=3)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_gradient_matches_central_differences(f, policy):
    a, b = _data()
    check_grad(f, (a, b), (0, 1), mutation=policy, strict_must_compute=True, rtol=1e-6,
               atol=1e-8)


def test_list_overwritten_copy_has_no_gradient():
    # xs[0] (a's copy) is overwritten whole before anything reads it: no gradient for a;
    # s + sum(2b * (b + 1)) with s = sum(b + 1): d/db = 1 + 4b + 2
    a, b = _data()
    ga, gb = adgen.grad(list_after_a_helper, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga, np.zeros(3))
    np.testing.assert_allclose(gb, 3.0 + 4.0 * b)
