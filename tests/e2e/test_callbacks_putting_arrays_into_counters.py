"""A callback that puts an array into a counter another function updates with ``+= 1``.

``STATS["calls"] += 1`` of a global dict holding an int is compiled as a number's update (no
in-place write: analyses.number_items), checked by a guard when the gradient is called. A
callback the function runs (``cb(x)`` of a parameter) could put an array there during the
run, which the function reads (``w = STATS["calls"]``) or the callback returns: the next
``+= 1`` then changed that array in place, under the value the pullback reads. The gradient
was ``6 x`` where Python's (central differences, and by hand) is ``4 x``, silently, under
both policies. It is now refused, at the counter's update, when the callback returns.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen
from adgen.errors import AdgenError

POLICIES = ["save", "strict"]
X = np.array([0.3, -0.7, 1.1])
STATS = {"calls": 0}


def count(y):
    STATS["calls"] += 1
    return y


def fill(y):
    STATS["calls"] = np.full(3, 2)  # an int array where the counter was
    return y


def fill_and_return(y):
    scales = np.full(3, 2)
    STATS["calls"] = scales
    return scales


def fill_nothing_given():
    STATS["calls"] = np.full(3, 2)


def reads_the_counter_after_a_callback(x, cb):
    cb(x)
    w = STATS["calls"]
    q = w * x ** 2
    count(x)  # STATS["calls"] += 1 on the array: w changes in place
    return np.sum(q)


def uses_what_the_callback_returns(x, cb):
    w = cb(x)
    q = w * x ** 2
    count(x)
    return np.sum(q)


def plain_callback_then_reads(x, cb):
    cb()
    w = STATS["calls"]
    q = w * x ** 2
    count(x)
    return np.sum(q)


def fill_by_name(x):
    w = fill_and_return(x)  # a helper adgen compiles into the function, not a callback
    q = w * x ** 2
    count(x)
    return np.sum(q)


def counts_only(x, cb):
    y = cb(x)
    count(x)
    return np.sum(y ** 2)


def fresh(f, cb):
    def run(x):
        STATS["calls"] = 0
        return f(x, cb)
    return run


CASES = [(reads_the_counter_after_a_callback, fill),
         (uses_what_the_callback_returns, fill_and_return),
         (plain_callback_then_reads, fill_nothing_given)]


@pytest.mark.parametrize("f, cb", CASES)
def test_python_gives_the_array_s_value_before_the_update(f, cb):
    STATS["calls"] = 0
    assert_grad_close(numerical_grad(fresh(f, cb), (X.copy(),), 0), 4.0 * X)  # 2 * 2 x


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f, cb", CASES)
def test_an_array_put_into_a_counter_by_a_callback_is_refused(f, cb, mutation):
    STATS["calls"] = 0
    with pytest.raises(AdgenError) as err:
        adgen.grad(f, mutation=mutation)(X.copy(), cb)
    text = str(err.value)
    assert "STATS['calls']" in text and cb.__name__ in text and "in place" in text
    assert 'STATS["calls"] += 1' in text  # the counter's update, the line shown
    assert "test_callbacks_putting_arrays_into_counters.py" in text


@pytest.mark.parametrize("f, cb", CASES)
def test_jvp_is_right_or_refused(f, cb):
    # forward mode uses each value as it is made (no pullback reads it later): right, or
    # refused where the check runs (as forward mode refuses the update once an array is
    # there when it is called)
    STATS["calls"] = 0
    t = np.array([1.0, -0.5, 2.0])
    try:
        value, tangent = adgen.jvp(lambda x: f(x, cb), (X.copy(),), (t,))
    except AdgenError as err:
        assert "STATS['calls']" in str(err)
        return
    assert value == pytest.approx(2.0 * np.sum(X ** 2))
    assert tangent == pytest.approx(4.0 * X @ t)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_callback_that_leaves_the_counter_a_number_runs(mutation):
    STATS["calls"] = 0
    g = adgen.grad(counts_only, mutation=mutation)(X.copy(), np.sin)
    assert STATS["calls"] == 1
    assert_grad_close(g, numerical_grad(fresh(counts_only, np.sin), (X.copy(),), 0))
    assert_grad_close(g, 2.0 * np.sin(X) * np.cos(X))  # by hand


@pytest.mark.parametrize("mutation", POLICIES)
def test_an_array_put_into_a_counter_by_a_helper_is_refused(mutation):
    STATS["calls"] = 0
    assert_grad_close(numerical_grad(fresh(lambda x, _: fill_by_name(x), None),
                                     (X.copy(),), 0), 4.0 * X)
    STATS["calls"] = 0
    with pytest.raises(AdgenError) as err:
        adgen.grad(fill_by_name, mutation=mutation)(X.copy())
    text = str(err.value)
    # refused when compiling, at the call of the helper that stores it (w =
    # fill_and_return(x) in fill_by_name), or when the forward ends
    assert ("fill_by_name" in text or "fill_and_return" in text) and \
        "STATS['calls']" in text and "in place" in text
    assert 'STATS["calls"] += 1' in text
