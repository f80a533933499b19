"""A user's ``adgen.rrule`` whose pullback reads its argument, the argument then written in
place by the caller:

    y = mysq(x)        # @adgen.rrule(mysq): pullback 2 * x * g, reading x when it runs
    x += 1.0

Problem found by the lead's hunt: the pullback read the new x, so the gradient was wrong under
both policies ([6.27 1.87 23.63] for [2.87 2.47 17.43]): a rule's pullback is a closure, which
no guard can redirect to a saved copy. A user's rule is now given copies of the arrays it does
not declare it writes (``mutates``); a rule returning its argument still returns the caller's
array, as Python does.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

X = np.array([0.7, -1.3, 2.1])


def mysq(x):
    return x * x


@adgen.rrule(mysq)
def _mysq_rrule(x):
    def pullback(g):
        return (2.0 * x * g,)
    return x * x, pullback


def same(x):
    return x


@adgen.rrule(same)
def _same_rrule(x):
    return x, lambda g: (g,)


def written_after(x0):
    x = x0.copy()
    y = mysq(x)
    x += 1.0
    return np.sum(y * x)


def written_in_a_loop(x0):
    x = x0.copy()
    tot = 0.0
    for _ in range(3):
        tot = tot + np.sum(mysq(x))
        x *= 0.5
    return tot


def aliased_result(x0):
    x = x0.copy()
    y = same(x)  # y is x, as Python gives it
    x += 1.0
    return np.sum(y ** 2)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_gradient(mutation):
    np.testing.assert_allclose(adgen.grad(written_after, mutation=mutation)(X),
                               3 * X ** 2 + 2 * X)
    check_grad(written_in_a_loop, (X,), mutation=mutation)
    np.testing.assert_allclose(adgen.grad(written_in_a_loop, mutation=mutation)(X),
                               2 * X * (1 + 0.25 + 0.0625))


def test_a_rule_returning_its_argument_keeps_the_alias():
    assert aliased_result(X) == pytest.approx(np.sum((X + 1.0) ** 2))
    assert adgen.value_and_grad(aliased_result)(X)[0] == pytest.approx(np.sum((X + 1.0) ** 2))
    g = adgen.grad(aliased_result)(X)
    np.testing.assert_allclose(g, 2 * (X + 1.0))
