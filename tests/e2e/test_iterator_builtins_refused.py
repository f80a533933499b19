"""``itertools.accumulate`` on values with a gradient is refused at the user's line with what
to write instead (before: "has no derivative rule and adgen cannot read its source"); the
rewrite it suggests is differentiated. ``reversed(x)`` of a list, tuple or array, refused
too until session 18, is differentiated as ``x[::-1]`` (tests/e2e/test_reversed_items.py),
and ``reversed(range(n))``, which carries no gradient, is unaffected. ``functools.reduce``,
refused too until session 18, is differentiated (tests/e2e/test_functools_reduce.py)."""

from __future__ import annotations

import functools
import itertools
import operator

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

X = np.array([0.3, -1.2, 2.0, 0.7])


def backwards(x):
    s = 0.0
    for v in reversed(x):
        s = s * 0.5 + v ** 2
    return s


def backwards_sliced(x):  # what the hint says
    s = 0.0
    for v in x[::-1]:
        s = s * 0.5 + v ** 2
    return s


def layers_backwards(x):
    layers = [x[:2], x[2:]]
    s = 0.0
    for layer in layers[::-1]:
        s = s * 0.3 + np.sum(np.sin(layer))
    return s


def counted_down(x):
    s = 0.0
    for i in reversed(range(x.shape[0])):
        s = s * 0.5 + x[i]
    return s


def product_by_reduce(x):
    return functools.reduce(operator.mul, [x[0], x[1], x[2]])


def running_sums(x):
    return sum(itertools.accumulate(x))


@pytest.mark.parametrize("f, what", [(running_sums, "np.cumsum")])
def test_refused_at_the_line_with_what_to_write(f, what):
    with pytest.raises(adgen.MissingRuleError) as info:
        adgen.grad(f)(X.copy())
    assert info.value.location.file == __file__
    assert what in info.value.message


@pytest.mark.parametrize("f", [backwards, backwards_sliced, layers_backwards, counted_down,
                               product_by_reduce])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_rewrites_are_differentiated(f, mutation):
    check_grad(f, (X,), mutation=mutation)
