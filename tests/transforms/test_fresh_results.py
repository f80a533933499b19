"""A user function that returns only arrays it made (``Compiled.returns_fresh``, from its own
effects) gives its caller a result that views none of the arguments: the result's adjoint
is a value, not shadow memory taken out with ``sh.pop``. Callees that return a view of an
argument, the argument itself, or a container keep the conservative summary; each case is
checked against central differences, with the result written in place where a wrong summary
would lose the write's effect on the argument. A result written in place that the callee's
pullback reads (tanh's output) is guarded like any capture: it was silently read overwritten
before (``through_made``, ``through_a_variable``), and strict refuses it."""

from __future__ import annotations

import numpy as np
import pytest
from adgen.transforms import pipeline
from adgen.transforms.analyses.kinds import signature
from gradcheck import check_grad

import adgen


def made(v):
    return np.tanh(v[:2] * 2.0)


def head(v):
    return v[:2]  # a view of the argument


def same(v):
    return v


def pair(v):
    return [v, v * 2.0]


def through_made(x, w):
    y = x * 1.0
    h = made(y)
    h *= w  # h is new: y is unchanged
    y *= 3.0
    return np.sum(y * y) + np.sum(h * h)


def through_head(x, w):
    y = x * 1.0
    h = head(y)
    h *= w  # writes y[:2] through the view
    return np.sum(y * y)


def through_same(x, w):
    y = x * 1.0
    h = same(y)
    h *= w  # writes y
    return np.sum(y * y)


def through_pair(x, w):
    y = x * 1.0
    p = pair(y)
    p[0][1:] *= w  # writes y through the list's item
    return np.sum(y * y) + np.sum(p[1])


def through_a_variable(x, w):
    fn = made  # known at run time only
    h = fn(x)
    h *= w
    return np.sum(h * h)


def through_a_lambda(x, w):
    sq = lambda v: np.tanh(v * 2.0)  # noqa: E731 - a lambda is what is tested
    h = sq(x)
    h *= w
    return np.sum(h * h)


def head_through_a_variable(x, w):
    fn = head
    y = x * 1.0
    h = fn(y)
    h *= w  # writes y[:2]
    return np.sum(y * y)


DYNAMIC = [through_a_variable, through_a_lambda, head_through_a_variable]


@pytest.mark.parametrize("f", DYNAMIC, ids=lambda f: f.__name__)
def test_callees_known_at_run_time(f):
    check_grad(f, (np.array([0.3, -0.8, 0.5, 1.1]), 0.7), argnums=(0, 1))


def test_summaries():
    assert pipeline.compile_function(made).returns_fresh
    assert not pipeline.compile_function(head).returns_fresh
    assert not pipeline.compile_function(same).returns_fresh
    assert not pipeline.compile_function(pair).returns_fresh


@pytest.mark.parametrize("f", [through_made, through_head, through_same, through_pair],
                         ids=lambda f: f.__name__)
def test_gradients(f):
    x = np.array([0.3, -0.8, 0.5, 1.1])
    check_grad(f, (x, 0.7), argnums=(0, 1))


@pytest.mark.parametrize("f", [through_made, through_head, through_same, through_pair],
                         ids=lambda f: f.__name__)
def test_strict_refuses_the_write(f):
    # the write overwrites what the gradient reads (the callee's output, or y's values read
    # by y * y's pullback): strict names it
    with pytest.raises(adgen.MutationError):
        adgen.grad(f, argnums=(0, 1), mutation="strict")(np.array([0.3, -0.8, 0.5, 1.1]), 0.7)


def stored_rows(x, w):
    """rk4's form: the result stored into a row of a buffer, the argument updated in place."""
    y = x * 1.0
    k = np.empty((2, 2))
    for i in range(2):
        k[i] = made(y)
        y *= w
    return np.sum(k * k) + np.sum(y * y)


def test_stored_rows():
    x = np.array([0.3, -0.8, 0.5, 1.1])
    check_grad(stored_rows, (x, 0.7), argnums=(0, 1))


def test_a_made_result_is_no_shadow():
    x = np.array([0.3, -0.8, 0.5, 1.1])
    src = pipeline.compile_function(stored_rows, wrt=(0, 1),
                                    sig=signature((x, 0.7))).own_source
    assert "sh.pop(" not in src
    src = pipeline.compile_function(through_head, wrt=(0, 1),
                                    sig=signature((x, 0.7))).own_source
    assert "sh." in src  # h views y: its adjoint lives in y's shadow
