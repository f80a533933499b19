"""Lists of arrays reordered (``sorted(xs, key=...)``, ``xs[::-1]``) whose items are then
written in place, and lists whose items are rebound after a rule read them.

``ys = sorted(xs, key=np.sum); ys[0][0] = v`` was refused with a message about a list adgen
could not tell from an array (analyses.effects now knows sorted() and a slice of a list give
lists). ``ys = sorted(xs); xs[0], xs[2] = xs[2], xs[0]`` and ``m = max(xs); xs[0], xs[1] = ...``
gave silently wrong gradients under both policies: the rule's pullback read the list as it
was at the end (reverse_captures now counts a store into a list a rule reads as a write of
that value). Checked against central differences (tests/gradcheck.py) under both policies,
with the arguments' final state."""

import numpy as np
import pytest
from gradcheck import central, check_grad

import adgen

X = np.array([0.3, 0.8, -0.5, 0.2, 1.5, 0.1])


def item_written_by_index(x):
    xs = [x[0:2] * 1.0, x[2:4] * 2.0, x[4:6] * 0.5]
    ys = sorted(xs, key=lambda v: float(np.sum(v)))
    ys[0][0] = 3.0 * ys[0][1]
    return sum(np.sum(v ** 2) for v in ys)


def item_scaled_in_place(x):
    xs = [x[0:2] * 1.0, x[2:4] * 2.0]
    ys = sorted(xs, key=np.sum)
    y = ys[1]
    y *= 3.0
    return np.sum(ys[0] * ys[1])


def written_through_the_sorted_list(x):
    xs = [x[0:2] * 1.0, x[2:4] * 2.0, x[4:6] * 0.5]
    ys = sorted(xs, key=lambda v: v[0], reverse=True)
    ys[0] *= 2.0
    ys[1][1:] += ys[2][:1] ** 2
    return sum(np.sum(np.sin(v)) for v in xs)  # the same arrays, through xs


def reversed_by_a_slice(x):
    xs = [x[0:2] * 1.0, x[2:4] * 2.0, x[4:6] * 0.5]
    ys = xs[::-1]
    ys[0][0] = 3.0 * ys[0][1]
    return sum(np.sum(v ** 2) for v in ys)


def sorted_list_argument(xs):
    ys = sorted(xs, key=np.sum)
    ys[-1][0] = ys[0][1] * 3.0
    return sum(np.sum(v ** 2) for v in xs)


class Bank:
    def __init__(self):
        self.scale = 1.5

    def loss(self, x):
        acts = [np.tanh(x[i:i + 2]) for i in range(0, 6, 2)]
        order = sorted(acts, key=lambda a: float(a.sum()))
        for a in order[:2]:
            a *= self.scale
        return sum(np.sum(a ** 2) for a in acts)


def item_rebound_after_sorted(x):
    xs = [x[0] * 1.0, x[1] * 2.0, x[2] * 0.5]
    ys = sorted(xs)
    ys[0] = ys[0] * 5.0
    return ys[0] + sum(xs) * ys[2]


def swapped_after_sorted(x):
    xs = [x[0] * 1.0, x[1] * 2.0, x[2] * 0.5]
    ys = sorted(xs)
    xs[0], xs[2] = xs[2], xs[0]
    return ys[0] * 3.0 + ys[1] * 7.0 + xs[0] * ys[2]


def sorted_result_swapped(x):
    xs = [x[0] * 1.0, x[1] * 2.0, x[2] * 0.5]
    ys = sorted(xs)
    ys[0], ys[2] = ys[2], ys[0]
    return ys[0] * 3.0 + ys[1] * 7.0 + xs[0] * ys[2]


def swapped_after_max(x):
    xs = [x[0] * 1.0, x[1] * 2.0, x[2] * 0.5]
    m = max(xs)
    xs[0], xs[1] = xs[1], xs[0]
    return m * 3.0 + xs[0]


CASES = [item_written_by_index, item_scaled_in_place, written_through_the_sorted_list,
         reversed_by_a_slice, Bank().loss, item_rebound_after_sorted, swapped_after_sorted,
         sorted_result_swapped, swapped_after_max,
         lambda x: item_written_by_index(x) * swapped_after_sorted(x)]
IDS = ["by_index", "scaled", "through_sorted", "slice", "method", "rebound", "swapped",
       "result_swapped", "max_swapped", "lambda"]


@pytest.mark.parametrize("f", CASES, ids=IDS)
def test_save(f):
    assert check_grad(f, (X.copy(),), mutation="save") is not None


@pytest.mark.parametrize("f", CASES, ids=IDS)
def test_strict_right_or_refused(f):
    check_grad(f, (X.copy(),), mutation="strict")  # a MutationError is accepted, not a wrong one


@pytest.mark.parametrize("f", [item_written_by_index, item_scaled_in_place, reversed_by_a_slice],
                         ids=["by_index", "scaled", "slice"])
def test_strict_needs_no_copy(f):
    assert check_grad(f, (X.copy(),), mutation="strict") is not None


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_list_argument(mutation):
    xs = [np.array([0.3, 0.8]), np.array([-0.5, 0.2]), np.array([1.5, 0.1])]
    check_grad(sorted_list_argument, (xs,), mutation=mutation)


def test_strict_names_both_lines():
    with pytest.raises(adgen.MutationError) as info:
        adgen.grad(swapped_after_sorted, mutation="strict")(X.copy())
    text = str(info.value)
    assert "test_sorted_lists_written.py:79:" in text and "line 78 (ys = sorted(xs)) reads" in text
    assert "xs = xs.copy() before line 79" in text


@pytest.mark.parametrize("f", CASES, ids=IDS)
def test_forward_mode(f):
    d = np.linspace(-1.0, 1.0, 6)
    _, tangent = adgen.jvp(f, (X.copy(),), (d,))
    assert tangent == pytest.approx(float(central(f, X.copy()) @ d), rel=1e-6)
