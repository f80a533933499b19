"""A for loop over a list that its own body changes (transforms/walked_lists.py).

Python's ``for w in ws`` reads the list live: an item stored ahead of the loop is walked
changed, an appended one is walked too. adgen's gradient of a store into an item a later step
reads was silently wrong (``ws[i + 1] = ws[i + 1] * w``: [0.6, -0.42, -0.462] for central
differences' [1.25, -0.278, 0.097]), and ``ws.append(v)`` in the loop walked only the items
the list had at the start (value and gradient wrong, in every mode). Both are refused at the
line now; what stays right is checked against central differences."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

X = np.array([0.3, -0.7, 1.1])
POLICIES = ["save", "strict"]


def pass_it_on(x):
    ws = [x[0], x[1], x[2]]
    s = 0.0
    for i, w in enumerate(ws):
        s = s + w * w
        if i + 1 < len(ws):
            ws[i + 1] = ws[i + 1] * w
    return s


def last_takes_the_step(x):
    ws = [x[0], x[1], x[2]]
    s = 0.0
    for a, w in zip(x, ws):
        s = s + w * w * a
        ws[-1] = w * 3.0
    return s


def pass_it_on_by_index(x):
    ws = [x[0], x[1], x[2]]
    s = 0.0
    for i in range(len(ws)):
        w = ws[i]
        s = s + w * w
        if i + 1 < len(ws):
            ws[i + 1] = ws[i + 1] * w
    return s


def square_in_place(x):
    ws = [x[0], x[1], x[2]]
    for i, w in enumerate(ws):
        ws[i] = w * w
    return ws[0] + ws[1] * ws[2]


def grow_while_walking(x):
    ws = [x[0], x[1], x[2]]
    s = 0.0
    for w in ws:
        s = s + w * w
        if len(ws) < 5:
            ws.append(w * 3.0)
    return s


def grow_a_copy(x):
    ws = [x[0], x[1], x[2]]
    s = 0.0
    for w in list(ws):
        s = s + w * w
        ws.append(w * 3.0)
    return s + ws[-1] * ws[3]


def grow_by_index(x):
    ws = [x[0], x[1], x[2]]
    s = 0.0
    i = 0
    while i < len(ws):
        w = ws[i]
        s = s + w * w
        if len(ws) < 5:
            ws.append(w * 3.0)
        i += 1
    return s


class Queue:
    def __init__(self, x):
        self.items = [x[0], x[1]]


def drain_queue(x):
    q = Queue(x)
    s = 0.0
    for w in q.items:
        s = s + np.sin(w)
        q.items.append(w * 2.0)
    return s


def stacked_rows(x):
    A = np.stack([x, x * 2.0, x * 3.0])
    s = 0.0
    for row in A:
        s = s + np.sum(row ** 2)
        A[-1] = row * 3.0
    return s


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", [pass_it_on, last_takes_the_step])
def test_a_store_into_an_item_a_later_step_walks_is_refused(f, mutation):
    with pytest.raises(adgen.UnsupportedError, match="at an item other than the one this "
                                                     "step walks") as info:
        adgen.grad(f, mutation=mutation)(X.copy())
    assert info.value.location.line > f.__code__.co_firstlineno
    assert "for i in range(len(ws))" in str(info.value)


def test_forward_mode_of_the_store_ahead_is_right():
    value, tangent = adgen.jvp(pass_it_on, (X.copy(),), (np.ones(3),))
    assert value == pytest.approx(pass_it_on(X.copy()))
    assert tangent == pytest.approx(np.ones(3) @ numerical_grad(pass_it_on, (X.copy(),), 0))


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", [pass_it_on_by_index, square_in_place, grow_a_copy,
                               grow_by_index])
def test_what_the_hints_suggest_is_right(f, mutation):
    assert_grad_close(adgen.grad(f, mutation=mutation)(X.copy()),
                      numerical_grad(f, (X.copy(),), 0))
    value, tangent = adgen.jvp(f, (X.copy(),), (np.ones(3),))
    assert value == pytest.approx(f(X.copy()))
    assert tangent == pytest.approx(np.ones(3) @ numerical_grad(f, (X.copy(),), 0))


@pytest.mark.parametrize("f, line", [(grow_while_walking, "ws.append"),
                                     (drain_queue, "q.items.append")])
def test_a_loop_changing_the_length_of_its_list_is_refused_in_every_mode(f, line):
    for run in (lambda: adgen.grad(f)(X.copy()),
                lambda: adgen.grad(f, mutation="strict")(X.copy()),
                lambda: adgen.jvp(f, (X.copy(),), (np.ones(3),))):
        with pytest.raises(adgen.UnsupportedError, match="changes the length of") as info:
            run()
        assert line in str(info.value)
        assert "list(" in str(info.value)


def test_an_array_whose_rows_a_loop_walks_and_stores():
    assert_grad_close(adgen.grad(stacked_rows)(X.copy()),
                      numerical_grad(stacked_rows, (X.copy(),), 0))
