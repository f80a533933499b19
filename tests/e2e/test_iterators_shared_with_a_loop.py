"""A for loop over an iterator that the function reads again: ``next(it)`` in the body to
skip an item, or the rest taken after a ``break``, as Python code walks pairs or skips lines:

    it = iter(range(4))
    for i in it:
        y[i] *= 2
        next(it, None)

Problem a user met: adgen walks a list of the items made when the loop starts, so the loop
walked every item and ``next`` found the iterator used up: the gradient was 8x where Python's
function doubles y[0] and y[2] only (2x for y[1], y[3]), silently, in grad and jvp. Now refused
at the read, with the rewrite; reads before the loop (skipping a header) still work.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

X = np.array([0.7, -1.3, 2.1, 0.4])


def every_other(x):
    y = x.copy()
    it = iter(range(4))
    for i in it:
        y[i] *= 2
        next(it, None)
    return np.sum(y ** 2)


def rest_after_break(x):
    it = iter(x)
    tot = 0.0
    for v in it:
        if v < 0:
            break
        tot = tot + v
    return tot + 3.0 * sum(list(it))


def header_skipped(x):
    it = iter(range(4))
    next(it)
    tot = 0.0
    for i in it:
        tot = tot + x[i] ** 2
    return tot


def pairs_walked_once(x):
    it = iter(range(3))
    tot = 0.0
    for i in it:
        tot = tot + x[i] * x[i + 1]
    return tot


def every_other_by_index(x):
    y = x.copy()
    for i in range(0, 4, 2):
        y[i] *= 2
    return np.sum(y ** 2)


@pytest.mark.parametrize("f, line", [(every_other, "next(it, None)"),
                                     (rest_after_break, "return tot + 3.0 * sum(list(it))")])
@pytest.mark.parametrize("mode", ["grad", "strict", "jvp", "hessian"])
def test_a_second_reader_of_the_walked_iterator_is_refused(f, line, mode):
    with pytest.raises(adgen.UnsupportedError, match="reading the iterator it again") as err:
        if mode == "jvp":
            adgen.jvp(f, (X,), (X,))
        elif mode == "hessian":
            adgen.hessian(f)(X)
        else:
            adgen.grad(f, mutation="strict" if mode == "strict" else "save")(X)
    assert err.value.location.file == __file__
    assert err.value.location.source_line.strip() == line
    assert "list(it)" in str(err.value)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_iterators_read_before_the_loop_or_only_by_it(mutation):
    check_grad(header_skipped, (X,), mutation=mutation)
    check_grad(pairs_walked_once, (X,), mutation=mutation)
    check_grad(every_other_by_index, (X,), mutation=mutation)
    g = adgen.grad(header_skipped, mutation=mutation)(X)
    np.testing.assert_allclose(g, [0.0, *(2 * X[1:])])
    _, t = adgen.jvp(pairs_walked_once, (X,), (np.ones(4),))
    assert np.isclose(t, X[1] + (X[0] + X[2]) + (X[1] + X[3]) + X[2])
    np.testing.assert_allclose(adgen.grad(every_other_by_index)(X),
                               np.array([8.0, 2.0, 8.0, 2.0]) * X)
