"""Losses with assert statements, for tests/e2e/test_asserts_running_calls.py: kept out of
the test module, whose asserts pytest rewrites (the function's code is then not its source,
which adgen refuses)."""

from __future__ import annotations

import numpy as np


class Tracker:
    def __init__(self):
        self.last = 0.0


def record(tracker, v):
    tracker.last = 2.0 * v


def recorded_in_an_assert(x):
    t = Tracker()
    assert record(t, x ** 2) is None, "record returns nothing"
    return np.sum(t.last * np.sin(x))


def checked_by_reading_asserts(x):
    y = np.tanh(x)
    assert y.shape == x.shape
    assert np.all(np.abs(y) <= 1.0), "tanh is bounded"
    return np.sum(y ** 2)


def failing(x):
    assert np.sum(x) > 100.0, "the sum is too small"
    return np.sum(x ** 2)
