"""Fancy-index writes have regions: the rows they touch (design §2.7).

``np.add.at(x, [0, 0, 4], v)`` and ``x[[0, 4]] = x[[4, 0]]`` write rows 0 and 4 only, so a
captured view of other rows (``v1 = x[1:4]``, read by the pullback of ``v1 * v1``) is not
overwritten: the write is free under both policies (no guard, no copy, no MutationError).
Where the rows overlap the view, where the index is not known from the text (an argument, a
list written after it is made, a negative or boolean index) or where the array's name holds
another view each loop iteration, the write keeps its guard: "save" copies and "strict"
raises, naming both lines, when the rows the index names at run time (runtime.write_region)
overlap what the gradient reads. Every gradient is checked against central differences of the plain
function (harness.run_case), with the arguments' final state.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad
from harness import Case, run_case

import adgen


def _vec(seed: int, n: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.5, 1.5, n)


# --- apart: free ------------------------------------------------------------------------------

def add_at_apart(x, v):
    v1 = x[1:4]
    y = v1 * v1
    np.add.at(x, [0, 0, 4], v)
    return np.sum(y) + np.sum(x * x)


def swap_apart(x):
    v1 = x[1:4]
    y = v1 * v1
    x[[0, 4]] = x[[4, 0]]
    return np.sum(y) + np.sum(np.sin(x) * np.arange(1.0, 6.0))


def named_index_array_apart(x):
    v1 = x[1:4]
    y = np.exp(v1)
    idx = np.array([0, 4])
    x[idx] = 2.0 * x[idx]
    return np.sum(y) + np.sum(x * x)


def rows_of_a_matrix_apart(a):
    m = a[1:3]
    y = np.tanh(m)
    a[[0, 3], 1] = 0.25
    return np.sum(y * y) + np.sum(a * a)


def add_at_in_a_loop_apart(x, v):
    tail = x[2:]
    y = tail * tail
    for k in range(3):
        np.add.at(x, [0, 1, 1], v[k])
    return np.sum(y) + np.sum(x * x)


def subtract_at_named_list_apart(x, v):
    rows = [3, 4, 4]
    head = x[:3]
    y = np.sin(head)
    np.subtract.at(x, rows, v)
    return np.sum(y * head) + np.sum(x ** 3)


def scale_rows_by_weights(x, w):
    t = np.sin(x)
    t[[0, 2]] *= w[[1, 3]]       # NumPy updates a copy of t[[0, 2]]: w's gradient reads it
    return np.sum(t * t)


def gather_then_write_rows(x):
    t = np.sin(x)
    g = t[[1, 3]]                # a copy: the write below cannot change it
    u = g * g
    t[[1, 3]] = 0.5
    t[1:3] = 0.25
    return np.sum(u) + np.sum(t * x)


# --- overlapping or unknown: guarded ---------------------------------------------------------

def add_at_overlap(x, v):
    v1 = x[1:4]
    y = v1 * v1
    np.add.at(x, [0, 2, 2], v)
    return np.sum(y) + np.sum(x * x)


def swap_overlap(x):
    v1 = x[1:4]
    y = v1 * v1
    x[[1, 4]] = x[[4, 1]]
    return np.sum(y) + np.sum(np.sin(x) * np.arange(1.0, 6.0))


def index_argument(x, idx):
    v1 = x[1:4]
    y = v1 * v1
    x[idx] = 0.5 * x[idx]
    return np.sum(y) + np.sum(x * x)


def index_list_changed(x):
    v1 = x[1:4]
    y = v1 * v1
    idx = [0, 4]
    idx[1] = 2
    x[idx] = 0.5
    return np.sum(y) + np.sum(x * x)


def negative_row(x):
    v1 = x[1:4]
    y = v1 * v1
    x[[0, -2]] = 0.5
    return np.sum(y) + np.sum(x * x)


def boolean_index(x):
    v1 = x[2:4]
    y = v1 * v1
    x[True] = 0.5
    return np.sum(y) + np.sum(x * x)


def window_rebound_in_loop(a):
    s = 0.0
    for k in range(2):
        x = a[k:k + 5]
        v1 = x[1:4]
        s = s + np.sum(v1 * v1)
        x[0] = 0.75
    return s + np.sum(a * a)


def window_rebound_fancy(a, v):
    s = 0.0
    for k in range(2):
        x = a[k:k + 5]
        v1 = x[1:4]
        s = s + np.sum(v1 * v1)
        np.add.at(x, [0, 4], v)
    return s + np.sum(a * a)


CASES = [
    Case("add_at_apart", add_at_apart, lambda: (_vec(1), _vec(2, 3)), argnums=(0, 1),
         sites=("np.add.at(x, [0, 0, 4], v)",)),
    Case("swap_apart", swap_apart, lambda: (_vec(3),), sites=("x[[0, 4]] = x[[4, 0]]",)),
    Case("named_index_array_apart", named_index_array_apart, lambda: (_vec(4),),
         sites=("x[idx] = 2.0 * x[idx]",)),
    Case("rows_of_a_matrix_apart", rows_of_a_matrix_apart,
         lambda: (_vec(5, 12).reshape(4, 3),), sites=("a[[0, 3], 1] = 0.25",)),
    Case("add_at_in_a_loop_apart", add_at_in_a_loop_apart,
         lambda: (_vec(6), _vec(7, 9).reshape(3, 3)), argnums=(0, 1),
         sites=("np.add.at(x, [0, 1, 1], v[k])",)),
    Case("subtract_at_named_list_apart", subtract_at_named_list_apart,
         lambda: (_vec(8), _vec(9, 3)), argnums=(0, 1), sites=("np.subtract.at(x",)),
    Case("scale_rows_by_weights", scale_rows_by_weights, lambda: (_vec(24), _vec(25)),
         argnums=(0, 1), sites=("t[[0, 2]] *= w[[1, 3]]",)),
    Case("gather_then_write_rows", gather_then_write_rows, lambda: (_vec(26),),
         sites=("t[[1, 3]] = 0.5", "t[1:3] = 0.25")),
    Case("add_at_overlap", add_at_overlap, lambda: (_vec(10), _vec(11, 3)), argnums=(0, 1),
         needed=True, conflicts=(("y = v1 * v1", "np.add.at(x, [0, 2, 2], v)"),),
         guarded=(("np.add.at(x, [0, 2, 2], v)",),)),
    Case("swap_overlap", swap_overlap, lambda: (_vec(12),), needed=True,
         conflicts=(("y = v1 * v1", "x[[1, 4]] = x[[4, 1]]"),),
         guarded=(("x[[1, 4]] = x[[4, 1]]",),)),
    Case("index_argument", index_argument, lambda: (_vec(13), np.array([0, 2])), needed=True,
         conflicts=(("y = v1 * v1", "x[idx] = 0.5 * x[idx]"),),
         guarded=(("x[idx] = 0.5 * x[idx]",),)),
    Case("index_list_changed", index_list_changed, lambda: (_vec(14),), needed=True,
         conflicts=(("y = v1 * v1", "x[idx] = 0.5"),), guarded=(("x[idx] = 0.5",),)),
    Case("negative_row", negative_row, lambda: (_vec(15),), needed=True,
         conflicts=(("y = v1 * v1", "x[[0, -2]] = 0.5"),), guarded=(("x[[0, -2]] = 0.5",),)),
    Case("boolean_index", boolean_index, lambda: (_vec(16),), needed=True,
         conflicts=(("y = v1 * v1", "x[True] = 0.5"),), guarded=(("x[True] = 0.5",),)),
    Case("window_rebound_in_loop", window_rebound_in_loop, lambda: (_vec(17, 7),), needed=True,
         conflicts=(("s = s + np.sum(v1 * v1)", "x[0] = 0.75"),), guarded=(("x[0] = 0.75",),)),
    Case("window_rebound_fancy", window_rebound_fancy, lambda: (_vec(18, 7), _vec(19, 2)),
         argnums=(0, 1), needed=True,
         conflicts=(("s = s + np.sum(v1 * v1)", "np.add.at(x, [0, 4], v)"),),
         guarded=(("np.add.at(x, [0, 4], v)",),)),
]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fancy_index_region(case: Case, mutation: str) -> None:
    run_case(case, mutation)


@pytest.mark.parametrize("idx", [np.array([0, 4, 4]), np.array([-1, 0]),
                                 np.array([True, False, False, False, True]),
                                 [0, 4], (np.array([4, 0]),)])
def test_an_index_argument_apart_is_checked_by_its_rows(idx):
    """An index the text does not give (an argument) keeps its guard, which compares the
    rows it names with the captures when the write runs: apart, "strict" gives the gradient
    and "save" copies nothing."""

    def f(x, idx, v):
        v1 = x[1:4]
        y = v1 * v1
        np.add.at(x, idx, v)
        x[idx] = 0.5 * x[idx]
        return np.sum(y) + np.sum(x * x)

    x, v = _vec(30), 0.75
    expected = numerical_grad(lambda x: f(x, idx, v), (x.copy(),), 0)
    for mutation in ("save", "strict"):
        np.testing.assert_allclose(adgen.grad(f, mutation=mutation)(x.copy(), idx, v), expected,
                                   rtol=1e-6)
    sites = adgen.explain(f, x.copy(), idx, v, file=None)
    assert [s.decision for s in sites] == ["guarded-save", "guarded-save"]
    assert [s.bytes_saved for s in sites] == [0, 0]


@pytest.mark.parametrize("idx", [np.array([0, 2]), np.array([True, False, True, False, True]),
                                 np.array([-3])])
def test_an_index_argument_overlapping_is_caught_when_it_runs(idx):
    def f(x, idx, v):
        v1 = x[1:4]
        y = v1 * v1
        np.add.at(x, idx, v)
        return np.sum(y) + np.sum(x * x)

    x, v = _vec(31), 0.75
    expected = numerical_grad(lambda x: f(x, idx, v), (x.copy(),), 0)
    np.testing.assert_allclose(adgen.grad(f)(x.copy(), idx, v), expected, rtol=1e-6)
    with pytest.raises(adgen.MutationError, match="np.add.at"):
        adgen.grad(f, mutation="strict")(x.copy(), idx, v)


def test_swap_apart_by_hand():
    """x[[0, 4]] = x[[4, 0]] after y = x[1:4] ** 2: d/dx of sum(y) + sum(x_final ** 2) is
    2 x on rows 1..3 (twice: y and the untouched rows) and 2 x on rows 0 and 4 (swapped
    twice over)."""

    def f(x):
        v1 = x[1:4]
        y = v1 * v1
        x[[0, 4]] = x[[4, 0]]
        return np.sum(y) + np.sum(x * x)

    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    g = adgen.grad(f, mutation="strict")(x.copy())
    np.testing.assert_allclose(g, [2.0, 8.0, 12.0, 16.0, 10.0])
    np.testing.assert_allclose(g, numerical_grad(f, (x.copy(),), 0), rtol=1e-6)


def test_through_a_lambda_under_strict():
    """The way a user writes it: a lambda fixing the values scattered, under strict."""
    v = _vec(20, 3)
    x = _vec(21)
    g = adgen.grad(lambda x: add_at_apart(x, v), mutation="strict")(x.copy())
    np.testing.assert_allclose(g, numerical_grad(lambda x: add_at_apart(x, v.copy()),
                                                 (x.copy(),), 0), rtol=1e-6)


def scatter_ends(buf, v):
    np.add.at(buf, [0, 3, 3], v)


def through_a_helper(w, v):
    inner = w[1:3]
    y = np.sin(inner) * inner
    scatter_ends(w, v)
    return np.sum(y) + np.sum(w ** 2)


def test_a_helper_scattering_rows_is_guarded_as_a_whole():
    """The rows a helper writes are not carried through the call: its write is one of the
    whole argument, guarded ("save" copies inner; "strict" raises at the call, with a hint
    that names the helper, not a copy of the helper)."""
    w, v = _vec(22, 4), _vec(23, 3)
    g = adgen.grad(through_a_helper, argnums=(0, 1))(w.copy(), v.copy())
    for k in (0, 1):
        np.testing.assert_allclose(g[k], numerical_grad(through_a_helper, (w.copy(), v.copy()),
                                                        k), rtol=1e-6)
    with pytest.raises(adgen.MutationError, match="pass scatter_ends a copy"):
        adgen.grad(through_a_helper, mutation="strict")(w.copy(), v.copy())
