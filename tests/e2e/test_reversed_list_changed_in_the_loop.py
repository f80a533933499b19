"""A loop over ``reversed(xs)`` whose list changes while the loop walks it.

adgen reads ``reversed(xs)`` as ``xs[::-1]``, a copy made when the loop starts; Python's
``reversed`` reads the list by index as the loop goes (item ``n - 1 - k`` at step ``k``).
Where the body, or a function it calls, replaces an item the loop has not reached yet
(``WS[0] = ...`` of a global list in a helper), Python reads the new item: adgen gave the
value and gradient of the old one, silently. Each step is now checked: such a loop is
refused at its line; a change the walk does not read (an item already walked, an append)
runs, and its gradient matches central differences.
"""

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_jvp, numerical_grad

import adgen
from adgen.errors import AdgenError

X = np.array([0.3, -0.7, 1.1])
T = np.array([0.5, -1.0, 2.0])
POLICIES = ["save", "strict"]

WS = [1.0, 2.0, 3.0]  # a module's list of scales, walked from the end


def reset_scales():
    WS[:] = [1.0, 2.0, 3.0]


def sharpen_first():
    WS[0] = 10.0  # reversed() reads WS[0] at the last step: it sees 10.0


def add_scale():
    if len(WS) < 5:
        WS.append(7.0)  # reversed() never reads past the length it started with


def helper_replaces_an_item(x):
    s = 0.0
    for w in reversed(WS):
        s = s + w * np.sum(x ** 2)
        sharpen_first()
    return s


def body_replaces_an_item(x):
    s = 0.0
    for w in reversed(WS):
        s = s + w * np.sum(x ** 2)
        WS[0] = 10.0
    return s


def enumerate_while_a_helper_replaces(x):
    s = 0.0
    for i, w in enumerate(reversed(WS)):
        s = s + (i + 1) * w * np.sum(x ** 2)
        sharpen_first()
    return s


def zip_while_a_helper_replaces(x):
    s = 0.0
    for a, w in zip(x, reversed(WS)):
        s = s + a * w
        sharpen_first()
    return s


def comprehension_whose_helper_replaces(x):
    return sum(w * np.sum(x ** 2) + (sharpen_first() or 0.0) for w in reversed(WS))


class Model:
    def __init__(self):
        self.layers = [1.0, 2.0, 3.0]

    def sharpen(self):
        self.layers[0] = 10.0


def list_changed_through_its_owner(x):
    m = Model()
    ws = m.layers
    s = 0.0
    for w in reversed(ws):
        s = s + w * np.sum(x ** 2)
        m.sharpen()
    return s


def helper_appends(x):
    s = 0.0
    for w in reversed(WS):
        s = s + w * np.sum(x ** 2)
        add_scale()
    return s


def rescaled_as_walked(x):
    ws = [x[0], x[1] * 2.0, x[2]]
    s = 0.0
    n = len(ws)
    for k, w in enumerate(reversed(ws)):
        s = s + w * w
        ws[n - 1 - k] = w * 3.0  # the item just walked: reversed() does not read it again
    return s + ws[0] * ws[2]


def appended_while_walked(x):
    ws = [x[0], x[1] * 2.0]
    s = 0.0
    for w in reversed(ws):
        s = s + w * w
        ws.append(w * 3.0)
    return s + ws[-1] * ws[-2]


def with_fresh_scales(f):
    def run(x):
        reset_scales()
        return f(x)
    return run


CHANGED = [helper_replaces_an_item, body_replaces_an_item, enumerate_while_a_helper_replaces,
           zip_while_a_helper_replaces, comprehension_whose_helper_replaces,
           list_changed_through_its_owner]


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", CHANGED)
def test_a_list_changed_before_the_walk_reads_it_is_refused_at_the_loop(f, mutation):
    reset_scales()
    with pytest.raises(AdgenError) as err:
        adgen.grad(f, mutation=mutation)(X.copy())
    text = str(err.value)
    assert "reversed()" in text and "changed during the loop" in text
    assert "test_reversed_list_changed_in_the_loop.py" in text and "reversed(" in text
    assert "range(len(xs))" in text  # what to do instead


@pytest.mark.parametrize("f", CHANGED)
def test_a_list_changed_before_the_walk_reads_it_is_refused_under_jvp(f):
    reset_scales()
    with pytest.raises(AdgenError, match="changed during the loop"):
        adgen.jvp(f, (X.copy(),), (T,))


def test_python_reads_the_new_item():
    # the reason for the refusal: Python's result is that of the changed list
    reset_scales()
    assert helper_replaces_an_item(X.copy()) == pytest.approx((3.0 + 2.0 + 10.0) * np.sum(X ** 2))


@pytest.mark.parametrize("mutation", POLICIES)
def test_an_append_during_the_walk_runs(mutation):
    reset_scales()
    g = adgen.grad(helper_appends, mutation=mutation)(X.copy())
    assert_grad_close(g, numerical_grad(with_fresh_scales(helper_appends), (X.copy(),), 0))
    assert_grad_close(g, 2.0 * (3.0 + 2.0 + 1.0) * X)  # by hand: the three first scales
    assert WS == [1.0, 2.0, 3.0, 7.0, 7.0]  # the helper ran as in Python


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", [rescaled_as_walked, appended_while_walked])
def test_changes_the_walk_does_not_read_run(f, mutation):
    assert_grad_close(adgen.grad(f, mutation=mutation)(X.copy()),
                      numerical_grad(f, (X.copy(),), 0))
    check_jvp(f, (X.copy(),), (T,))
