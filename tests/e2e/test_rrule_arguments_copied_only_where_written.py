"""A user's ``adgen.rrule`` is handed the caller's arrays themselves; a copy is taken only
where a later in-place write may reach one, at that write:

    y = mysq(x)        # @adgen.rrule(mysq): pullback 2 * x * g, reading x when it runs
    x += 1.0           # guarded: x is copied here, and put back while the pullback runs

Session 28 (15feab2) gave every user's rule copies of all the arrays it does not declare it
writes, at every call, as its pullback is a closure no guard can redirect. The compiler
knows where a later write may reach an argument: it now captures a rule's arguments as it
captures a callee's, the guard at such a write copies the value (under either policy), and
the pullback runs with the copy put back into the array (dispatch.pullback_of). These tests
count the copies: none where nothing writes the arguments, one per guarded write.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

X = np.array([0.7, -1.3, 2.1])
GIVEN: list[np.ndarray] = []  # the arrays the rule was handed, call by call


def mysq(x):
    return x * x


@adgen.rrule(mysq)
def _mysq_rrule(x):
    GIVEN.append(x)
    return x * x, lambda g: (2.0 * x * g,)


def helper(h):
    return np.sum(mysq(h))


def nothing_written(x):
    tot = np.sum(mysq(x)) + helper(x)
    for i in range(3):
        tot = tot + np.sum(mysq(x[i:]))
    return tot


def written_after(x0):
    x = x0.copy()
    y = mysq(x)
    x += 1.0
    return np.sum(y * x)


def written_by_the_caller(x0):
    x = x0.copy()
    s = helper(x)
    x += 1.0
    return s * np.sum(x)


def through_a_variable(x0):
    x = x0.copy()
    f = mysq if x0.shape[0] > 0 else np.sin
    y = f(x)
    x *= 3.0
    return np.sum(y * x)


def argument_written(x):
    y = mysq(x)
    x *= 2.0
    return np.sum(y) + np.sum(x)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_no_copy_where_nothing_writes_the_arguments(mutation):
    GIVEN.clear()
    g = adgen.grad(nothing_written, mutation=mutation)(X)
    j = np.arange(1, 4)
    np.testing.assert_allclose(g, X * (4.0 + 2.0 * j))
    # 5 calls, each handed the caller's array (or a view of it): no copy
    assert len(GIVEN) == 5
    assert sum(not np.shares_memory(a, X) for a in GIVEN) == 0
    assert [a.shape for a in GIVEN] == [(3,), (3,), (3,), (2,), (1,)]
    assert [s.decision for s in adgen.explain(nothing_written, X, mutation=mutation)] == []


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_one_copy_at_the_write(mutation):
    GIVEN.clear()
    g = adgen.grad(written_after, mutation=mutation)(X)
    np.testing.assert_allclose(g, 3 * X ** 2 + 2 * X)
    check_grad(written_after, (X,), mutation=mutation)
    # the rule was handed the function's x itself, which the write then changed
    np.testing.assert_allclose(GIVEN[0], X + 1.0)
    sites = adgen.explain(written_after, X, mutation=mutation)
    assert [(s.line, s.construct, s.decision, s.bytes_saved) for s in sites] == [
        (written_after.__code__.co_firstlineno + 3, "x += 1.0", "guarded-save", X.nbytes)]


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_function_held_in_a_variable(mutation):
    g = adgen.grad(through_a_variable, mutation=mutation)(X)
    np.testing.assert_allclose(g, 9 * X ** 2)
    check_grad(through_a_variable, (X,), mutation=mutation)


def test_written_by_the_caller_of_the_function_calling_the_rule():
    g = adgen.grad(written_by_the_caller)(X)
    np.testing.assert_allclose(g, 2 * X * np.sum(X + 1.0) + np.sum(X ** 2))
    check_grad(written_by_the_caller, (X,))
    # strict: as for a compiled callee reading its parameter, refused at the caller's write
    with pytest.raises(adgen.MutationError, match=r"x \+= 1.0 overwrites x"):
        adgen.grad(written_by_the_caller, mutation="strict")(X)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_argument_keeps_its_new_values_and_the_pullback_runs_again(mutation):
    x = X.copy()
    out, pullback = adgen.vjp(argument_written, x, mutation=mutation)
    assert out == pytest.approx(np.sum(X ** 2) + 2 * np.sum(X))
    np.testing.assert_allclose(x, 2 * X)
    for _ in range(2):  # (the old values are put back only while the rule's pullback runs)
        (g,) = pullback(1.0)
        np.testing.assert_allclose(g, 2 * X + 2.0)
        np.testing.assert_allclose(x, 2 * X)
