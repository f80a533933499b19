"""A helper that puts an array into a counter another function updates with ``+= 1``, and
the counter set back to a number before the gradient's forward ends.

``STATS["calls"] += 1`` of a global dict holding an int is compiled as a number's update
(analyses.number_items). A helper adgen compiles into the function (``w = fill(x)`` storing
``STATS["calls"] = np.full(3, 2)`` and returning it) made the next ``+= 1`` change that array
in place under the value ``q = w * x ** 2``'s pullback reads. The check around the whole
forward (adgen.counter_slots, session 19) compares the counter before and after the run, so
a run that set it back to a number (``reset()``, ``STATS["calls"] = 0``) gave a gradient of
``6 x`` where central differences give ``4 x``, silently, under both policies (jvp was right).
The call of the helper that may put the array there is refused now when compiling, naming
the store and the counter's update; helpers that store elsewhere, reset the counter to a
number or only read the dict still run."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_jvp, numerical_grad

import adgen
from adgen.errors import AdgenError

POLICIES = ["save", "strict"]
X = np.array([0.3, -0.7, 1.1])
T = np.array([1.0, -0.5, 2.0])
STATS = {"calls": 0, "last": None}


class Counter:
    def __init__(self):
        self.n = 0


COUNTER = Counter()


def count(y):
    STATS["calls"] += 1
    return y


def fill(y):
    scales = np.full(3, 2)
    STATS["calls"] = scales
    return scales


def fill_by_update(y):
    scales = np.full(3, 2)
    STATS.update(calls=scales)
    return scales


def reset():
    STATS["calls"] = 0


def tick():
    COUNTER.n += 1


def fill_attribute(y):
    COUNTER.n = np.full(3, 2)
    return COUNTER.n


def helper_resets(x):
    w = fill(x)
    q = w * x ** 2
    count(x)  # Python: w += 1 in place, so q's gradient reads 3 where q used 2
    reset()
    return np.sum(q)


def resets_itself(x):
    w = fill(x)
    q = w * x ** 2
    count(x)
    STATS["calls"] = 0
    return np.sum(q)


def filled_by_a_method_of_the_dict(x):
    w = fill_by_update(x)
    q = w * x ** 2
    count(x)
    reset()
    return np.sum(q)


def attribute_counter(x):
    w = fill_attribute(x)
    q = w * x ** 2
    tick()
    COUNTER.n = 0
    return np.sum(q)


def fresh(f):
    def run(x):
        STATS["calls"] = 0
        COUNTER.n = 0
        return f(x)
    return run


FILLED = [helper_resets, resets_itself, filled_by_a_method_of_the_dict, attribute_counter]


@pytest.mark.parametrize("f", FILLED)
def test_python_gives_the_array_s_value_before_the_update(f):
    assert_grad_close(numerical_grad(fresh(f), (X.copy(),), 0), 4.0 * X)  # 2 * 2 x


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", FILLED)
def test_an_array_put_into_a_counter_and_reset_is_refused(f, mutation):
    fresh(lambda x: None)(X)
    with pytest.raises(AdgenError) as err:
        adgen.grad(f, mutation=mutation)(X.copy())
    text = str(err.value)
    assert "fill" in text and "in place" in text and "+= 1" in text  # the helper, the update
    assert ("STATS['calls']" in text) != ("COUNTER.n" in text)
    assert "test_counters_filled_then_reset.py" in text


@pytest.mark.parametrize("f", FILLED)
def test_jvp_is_right(f):
    fresh(lambda x: None)(X)
    value, tangent = adgen.jvp(fresh(f), (X.copy(),), (T,))
    assert value == pytest.approx(2.0 * np.sum(X ** 2))
    assert tangent == pytest.approx(4.0 * X @ T)


def store_elsewhere(y):
    STATS["last"] = y * 2.0
    return y


def report():
    print("calls so far:", len(STATS), STATS.get("calls"))


def other_key_and_reads(x):
    y = store_elsewhere(x)
    count(x)
    report()
    q = np.sin(y) * x
    count(x)
    reset()
    return np.sum(q)


@pytest.mark.parametrize("mutation", POLICIES)
def test_stores_of_other_keys_resets_and_reads_run(mutation):
    fresh(lambda x: None)(X)
    g = adgen.grad(other_key_and_reads, mutation=mutation)(X.copy())
    assert_grad_close(g, numerical_grad(fresh(other_key_and_reads), (X.copy(),), 0))
    assert_grad_close(g, np.cos(X) * X + np.sin(X))  # by hand: y is x
    assert STATS["calls"] == 0
    check_jvp(fresh(other_key_and_reads), (X.copy(),), (T,))
