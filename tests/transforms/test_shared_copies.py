"""shared_copies: under mutation="save", a part of an array copied where the pullback reads it
(a later write overwrites it) and read again further indexed (Durbin's ``y[:k]`` and
``y[:k][::-1]``) is copied once: the second is a view of the first copy (issue 15: Durbin
kept two copies of the same elements per step).

Each function is differentiated under both policies and compared with central differences of
the plain function, with the arguments' final contents checked against a plain call. The near
misses (a write of the array between the two reads, a write of another row between them, the
two parts at different rows) must keep two copies or stay right whatever the compiler chose.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.workloads.polybench_linalg import durbin  # noqa: E402

POLICIES = ["save", "strict"]


def reversed_update(r):
    # the same shape of recursion as Durbin's: y[:k] read twice, then overwritten
    n = r.shape[0]
    y = np.zeros(n)
    y[0] = r[0]
    for k in range(1, n):
        s = y[:k] @ r[:k]
        a = np.sin(s) + r[k]
        z = y[:k] * a + np.tanh(y[:k][::-1])
        y[:k] = z
        y[k] = a
    return np.sum(y ** 2)


def one_statement(x):
    y = x.copy()
    for k in range(1, y.shape[0]):
        z = y[:k] * y[:k][::-1]  # both parts read by one statement
        y[:k] = z
    return np.sum(y ** 2)


def written_between(x):
    y = x.copy()
    for k in range(2, y.shape[0]):
        s = np.sum(y[:k] ** 2)
        y[0] = s * 0.1  # changes y[:k] between the two reads: two copies
        z = y[:k] * y[:k][::-1]
        y[:k] = z / (1.0 + s)
    return np.sum(y ** 2)


def other_rows(x):
    y = x.copy()
    for k in range(2, y.shape[0]):
        s = np.sum(y[:k] ** 2)
        z = y[1:k + 1][::-1] * s  # not a part of y[:k]
        y[1:k + 1] = z * 0.5
    return np.sum(y ** 2)


class Recursion:
    """A user's class: Durbin's recursion as a method."""

    def __init__(self, scale):
        self.scale = scale

    def __call__(self, r):
        n = r.shape[0]
        y = np.zeros(n)
        y[0] = -r[0]
        for k in range(1, n):
            s = r[:k][::-1] @ y[:k]
            alpha = -(r[k] + s) * self.scale
            z = y[:k] + alpha * y[:k][::-1]
            y[:k] = z
            y[k] = alpha
        return np.sum(y ** 2)


def _copies(fn, args):
    forward = adgen.source(fn, *args).split("_pullback(")[0]
    return len(re.findall(r"copy_when_read\(", forward)), forward


def test_durbin_copies_y_once():
    r = 0.3 * np.random.default_rng(1).standard_normal(6)
    for mutation in POLICIES:
        assert check_grad(durbin, (r,), 0, mutation=mutation) is not None or \
            mutation == "strict"
    count, forward = _copies(durbin, (r,))
    assert count == 1, forward
    # the reversed view of the copy: taken again by the pullback (views_of_copies)
    text = adgen.source(durbin, r)
    assert re.search(r"saved_t\w+ = saved_t\w+\[::-1\]", text.split("_pullback(")[1]), text


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", [reversed_update, one_statement, written_between, other_rows])
def test_gradients(fn, mutation):
    x = 0.4 * np.random.default_rng(2).standard_normal(6)
    check_grad(fn, (x,), 0, mutation=mutation)  # strict may refuse, never be wrong


def test_one_copy_where_nothing_writes_between():
    x = 0.4 * np.random.default_rng(3).standard_normal(6)
    for fn in (reversed_update, one_statement):
        count, forward = _copies(fn, (x,))
        assert count == 1, forward


def test_a_write_between_keeps_two_copies():
    x = 0.4 * np.random.default_rng(4).standard_normal(6)
    count, forward = _copies(written_between, (x,))
    # y[:k] before the write and y[:k] after it: two copies (y[:k][::-1], read with the
    # second, is a view of the second)
    first = re.search(r"(saved_t\w+) = copy_when_read", forward).group(1)
    assert count == 2 and not re.search(rf"= {first}\[", forward), forward


def test_a_method_and_a_lambda():
    r = 0.3 * np.random.default_rng(5).standard_normal(7)
    rec = Recursion(0.9)
    assert check_grad(rec, (r,), 0) is not None
    assert check_grad(lambda r: rec(r) + np.sum(r), (r,), 0) is not None
