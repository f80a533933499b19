"""A helper of the user's that calls a function it is given (``def apply(f, a, b): return
f(a, b)``), called as a statement for what that function changes (``apply(append_to, hist,
x ** 2)``). The helper writes nothing itself, so its call was taken for one that changes
nothing and left out of the pullback: the plain helper ran, and what the function it was
given stored into a list or an object lost its derivative, silently, under both policies
(``functools.reduce(step, items, acc)`` as a statement too: its reference is such a helper).
Such a call now runs the helper's forward and pullback, so adgen's dispatch follows the list
or object the function changes, and refuses an array it writes in place, as it does where
the helper's result is used."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

X = np.array([0.3, -0.7, 1.1])


def apply(f, a, b):
    return f(a, b)


def apply_through_another(f, a, b):
    return apply(f, a, b)


def append_to(history, v):
    history.append(v)
    return history


class Tracker:
    def __init__(self):
        self.last = 0.0


def record(tracker, v):
    tracker.last = 2.0 * v
    return tracker


def add_into(acc, v):
    acc += v  # an array written in place
    return acc


def product(a, b):
    return a * b


def history_filled_by_a_callback(x):
    history = [x]
    apply(append_to, history, x ** 2)
    return np.sum(history[-1] * x)


def tracker_set_by_a_callback(x):
    t = Tracker()
    apply(record, t, np.sin(x))
    return np.sum(t.last * x)


def tracker_set_two_helpers_down(x):
    t = Tracker()
    apply_through_another(record, t, x ** 3)
    return np.sum(t.last * x)


def callback_that_changes_nothing(x):
    y = x * 1.0
    apply(product, y, x ** 2)
    return np.sum(y * x)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [history_filled_by_a_callback, tracker_set_by_a_callback,
                               tracker_set_two_helpers_down, callback_that_changes_nothing])
def test_gradient_against_central_differences(f, mutation):
    check_grad(f, [X.copy()], mutation=mutation, strict_must_compute=True)


def test_by_hand():
    # d/dx sum(2 sin(x) * x) = 2 cos(x) x + 2 sin(x); the helper's write was lost: 2 sin(x) only
    hand = 2.0 * np.cos(X) * X + 2.0 * np.sin(X)
    np.testing.assert_allclose(adgen.grad(tracker_set_by_a_callback)(X.copy()), hand)


def array_written_by_a_callback(x):
    acc = np.zeros(3)
    apply(add_into, acc, x ** 2)
    return np.sum(acc * x)


def array_written_by_reduce(x):
    acc = np.zeros(3)
    functools.reduce(add_into, [x, x ** 2], acc)
    return np.sum(acc * x)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [array_written_by_a_callback, array_written_by_reduce])
def test_an_array_written_by_the_callback_is_refused(f, mutation):
    # as where the helper's result is used: an array written in place by a function held
    # in a variable is refused when the call runs (it gave x ** 2 for 3 x ** 2)
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(f, mutation=mutation)(X.copy())
    assert "add_into" in str(info.value) and info.value.location.file == __file__
