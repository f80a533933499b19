"""A for loop over a list, dict or set whose length something the loop calls changes
(transforms/walked_lengths.py, adgen.walked_lengths).

Python's ``for w in WS`` walks the list as it is at each step: an item a helper appends
during the loop is walked too, a removed one ends the walk early, and a dict that changed
size raises RuntimeError. adgen's loop walked the items the list had when it started: a
global grown by a helper the loop calls (``grow_and_sum``: gradient [6, 12, 18] where
central differences give [24, 48, 72]), a method appending to ``self.items``, a helper
appending through a copy of its parameter (``ws2 = ws``), a list held in a dict
(``cfg["ws"].append``) gave silently wrong values and gradients, under both policies and
under jvp; a helper's ``WS.pop()`` raised IndexError, and ``d["c"] = v`` in a loop over
``d.items()`` ran where Python raises. Each is refused now at the loop's line when the
length changes; a loop whose length stays the same runs, checked against central
differences."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_jvp, numerical_grad

import adgen
from adgen.errors import AdgenError

X = np.array([0.3, -0.7, 1.1])
T = np.array([0.5, 1.0, -2.0])
POLICIES = ["save", "strict"]

WS: list = []
LOG: list = []


def reset():
    WS[:] = [np.ones(3), 2.0 * np.ones(3)]
    LOG.clear()


def grow():
    WS.append(3.0 * np.ones(3))


def grow_and_sum(x):
    s = 0.0
    for w in WS:
        s = s + np.sum(w * x ** 2)
        if len(WS) < 4:
            grow()
    return s


def shrink():
    WS.pop()


def shrink_and_sum(x):
    s = 0.0
    for w in WS:
        s = s + np.sum(w * x ** 2)
        if len(WS) > 1:
            shrink()
    return s


def grow_at_the_last_step(x):
    s = 0.0
    for i, w in enumerate(WS):
        s = s + np.sum(w * np.sin(x))
        if i == 1 and len(WS) == 2:
            grow()
    return s


class Collection:
    def __init__(self, x):
        self.items = [x, 2.0 * x]

    def add(self, v):
        if len(self.items) < 4:
            self.items.append(v)

    def total(self):
        s = 0.0
        for it in self.items:
            s = s + np.sum(it ** 2)
            self.add(0.5 * it)
        return s


def method_grows_its_items(x):
    return Collection(x).total()


def append_through_a_copy(ws, v):
    ws2 = ws
    if len(ws2) < 4:
        ws2.append(v)


def helper_grows_a_local_list(x):
    ws = [x, 2.0 * x]
    s = 0.0
    for w in ws:
        s = s + np.sum(w ** 2)
        append_through_a_copy(ws, 3.0 * w)
    return s


def list_held_in_a_dict(x):
    cfg = {"ws": [x, 2.0 * x]}
    s = 0.0
    for w in cfg["ws"]:
        s = s + np.sum(w ** 2)
        if len(cfg["ws"]) < 4:
            cfg["ws"].append(3.0 * w)
    return s


def dict_grown_over_its_items(x):
    d = {"a": x, "b": 2.0 * x}
    s = 0.0
    for k, v in d.items():
        s = s + np.sum(v ** 2)
        d["c"] = 3.0 * v
    return s


def dict_grown_over_its_keys(x):
    d = {"a": x, "b": 2.0 * x}
    s = 0.0
    for k in d:
        s = s + np.sum(d[k] ** 2)
        if len(d) < 4:
            d[k + "x"] = 3.0 * d[k]
    return s


GROWN = [grow_and_sum, shrink_and_sum, grow_at_the_last_step, method_grows_its_items,
         helper_grows_a_local_list, list_held_in_a_dict]


def test_python_walks_the_new_items():
    # the reason for the refusal: Python's value is that of the grown list
    reset()
    assert grow_and_sum(X) == pytest.approx((1.0 + 2.0 + 3.0 + 3.0) * np.sum(X ** 2))
    with pytest.raises(RuntimeError, match="changed size during iteration"):
        dict_grown_over_its_items(X)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", GROWN)
def test_a_list_whose_length_changes_during_the_walk_is_refused_at_the_loop(f, mutation):
    reset()
    with pytest.raises(AdgenError) as err:
        adgen.grad(f, mutation=mutation)(X.copy())
    text = str(err.value)
    assert "changed its length during the loop" in text
    assert "test_loops_over_lists_changed_by_calls.py" in text and "for " in text
    assert "list(ws)" in text  # what to do instead


@pytest.mark.parametrize("f", [f for f in GROWN if f is not method_grows_its_items])
def test_a_list_whose_length_changes_during_the_walk_is_refused_under_jvp(f):
    # (jvp refuses the method call self.add(...) of method_grows_its_items when compiling)
    reset()
    with pytest.raises(AdgenError, match="changed its length during the loop"):
        adgen.jvp(f, (X.copy(),), (T,))


@pytest.mark.parametrize("f", [dict_grown_over_its_items, dict_grown_over_its_keys])
def test_a_dict_grown_during_the_walk_is_refused_as_python_raises(f):
    with pytest.raises(AdgenError, match="RuntimeError") as err:
        adgen.jvp(f, (X.copy(),), (T,))
    assert "test_loops_over_lists_changed_by_calls.py" in str(err.value)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_dict_grown_over_its_items_is_refused_under_grad(mutation):
    with pytest.raises(AdgenError, match="RuntimeError"):
        adgen.grad(dict_grown_over_its_items, mutation=mutation)(X.copy())


def log_and_scale(w, x):
    LOG.append(w)
    return np.sum(w * np.sin(x))


def push_and_pop(w, x):
    WS.append(np.ones(3))
    y = np.sum(WS[-1] * x ** 3)
    WS.pop()
    return y


def calls_that_keep_the_length(x):
    s = 0.0
    for w in WS:
        s = s + log_and_scale(w, x) + push_and_pop(w, x)
    return s


def grows_then_stops(x):
    s = 0.0
    for w in WS:
        s = s + np.sum(w * x ** 2)
        grow()
        break
    return s


def with_fresh_list(f):
    def run(x):
        reset()
        return f(x)
    return run


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", [calls_that_keep_the_length, grows_then_stops])
def test_a_loop_whose_length_stays_runs(f, mutation):
    reset()
    g = adgen.grad(f, mutation=mutation)(X.copy())
    assert_grad_close(g, numerical_grad(with_fresh_list(f), (X.copy(),), 0))
    reset()
    check_jvp(with_fresh_list(f), (X.copy(),), (T,))


def test_grows_then_stops_by_hand():
    reset()
    assert_grad_close(adgen.grad(grows_then_stops)(X.copy()), 2.0 * X)
    assert len(WS) == 3  # the helper ran once, as in Python


def test_a_loop_whose_length_stays_has_a_right_hessian():
    reset()
    h = adgen.hessian(with_fresh_list(calls_that_keep_the_length))(X.copy())
    reset()
    expected = np.diag(-3.0 * np.sin(X) + 2.0 * 6.0 * X)  # (1 + 2) (-sin x) + 6 x per step
    assert np.allclose(h, expected)


def scaled_and_grown(w, x):
    if len(WS) < 4:
        grow()
    return np.sum(w * x ** 2)


def comprehension_over_a_grown_list(x):
    return sum([scaled_and_grown(w, x) for w in WS])


def generator_over_a_grown_list(x):
    total = sum(scaled_and_grown(w, x) for w in WS)
    return total


def inner_clause_over_a_grown_row(x):
    grid = [[x, 2.0 * x], [3.0 * x]]
    return sum([np.sum(w ** 2) + grow_row(row, w) for row in grid for w in row])


def grow_row(row, w):
    if len(row) < 3:
        row.append(0.5 * w)
    return 0.0


COMPREHENSIONS = [comprehension_over_a_grown_list, generator_over_a_grown_list,
                  inner_clause_over_a_grown_row]


def test_python_s_comprehension_walks_the_new_items():
    reset()
    assert comprehension_over_a_grown_list(X) == pytest.approx(
        (1.0 + 2.0 + 3.0 + 3.0) * np.sum(X ** 2))


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", COMPREHENSIONS)
def test_a_comprehension_over_a_list_it_grows_is_refused(f, mutation):
    reset()
    with pytest.raises(AdgenError, match="changed its length during the loop") as err:
        adgen.grad(f, mutation=mutation)(X.copy())
    assert "test_loops_over_lists_changed_by_calls.py" in str(err.value)
    reset()
    with pytest.raises(AdgenError, match="changed its length during the loop"):
        adgen.jvp(f, (X.copy(),), (T,))


def comprehensions_that_keep_the_length(x, grid):
    first = sum([log_and_scale(w, x) for row in grid for w in row])
    return first + sum(log_and_scale(v, x) ** 2 for v in grid[0]) + sum(
        {k: push_and_pop(v, x) for k, v in enumerate(grid[1])}.values())


def grid_of_weights():
    return [[np.ones(3), 2.0 * np.ones(3)], [np.arange(3.0)]]


@pytest.mark.parametrize("mutation", POLICIES)
def test_comprehensions_whose_calls_keep_the_length_run(mutation):
    reset()
    f = comprehensions_that_keep_the_length
    g = adgen.grad(f, mutation=mutation)(X.copy(), grid_of_weights())
    expected = numerical_grad(lambda x: f(x, grid_of_weights()), (X.copy(),), 0)
    assert_grad_close(g, expected)
    check_jvp(lambda x: f(x, grid_of_weights()), (X.copy(),), (T,))
    h = adgen.hessian(lambda x: f(x, grid_of_weights()))(X.copy())
    gx = lambda x: numerical_grad(lambda z: f(z, grid_of_weights()), (x,), 0)  # noqa: E731
    assert np.allclose(h, np.array([numerical_grad(lambda x: gx(x)[i], (X.copy(),), 0)
                                    for i in range(3)]), atol=1e-3)
