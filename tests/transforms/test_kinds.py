"""Specialisation on the argument signature (transforms/analyses/kinds.py and its uses).

The analysis is checked on its own (which names are numbers, which arrays of which rank,
which shapes are provably equal), then through grad: every specialised pullback is compared
with central differences, including the cases where a wrong fact would give a wrong gradient
(an element that is a row of a matrix, a merge of a number and an array, a counter that
restarts, a read ahead of the write).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from adgen.transforms import front, pipeline
from adgen.transforms.analyses.effects import effects
from adgen.transforms.analyses.kinds import (
    DICT,
    FLOAT_ARG,
    LIST,
    NUMBER,
    kinds,
    signature,
)
from adgen.transforms.analyses.shapes import shape_keys

import adgen
from adgen.errors import MutationError


def _kinds(fn, params):
    parsed, tree, _namer, _headers = front.front(fn)
    resolve = lambda node: front.resolve(parsed, node)  # noqa: E731
    known = kinds(tree, params, resolve)
    return known, shape_keys(tree, known, resolve)


def numerical_grad(f, args, argnum, eps=1e-6):
    args = [np.array(a, dtype=float) if isinstance(a, np.ndarray) else a for a in args]
    x = args[argnum]
    if isinstance(x, float):
        up = list(args)
        dn = list(args)
        up[argnum] = x + eps
        dn[argnum] = x - eps
        return (f(*[a.copy() if isinstance(a, np.ndarray) else a for a in up]) -
                f(*[a.copy() if isinstance(a, np.ndarray) else a for a in dn])) / (2 * eps)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        dn = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        up[argnum][i] += eps
        dn[argnum][i] -= eps
        g[i] = (f(*up) - f(*dn)) / (2 * eps)
    return g


def check_grad(f, *args, argnums=(0,), mutation="save"):
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    got = adgen.grad(f, argnums=argnums, mutation=mutation)(*copies)
    for k, n in enumerate(argnums):
        want = numerical_grad(f, args, n)
        np.testing.assert_allclose(got[k], want, rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------------------------------------
# the analysis


def fill(x, w):
    n = len(x)
    h = np.empty(n)
    for i in range(n):
        e = x[i]
        h[i] = np.tanh(e * w)
    m = x[1:]
    return np.sum(h * h) + np.sum(m)


def test_signature_of_arguments():
    # a float64 number (a Python float, np.float64) is told apart: its columns are float64
    assert signature((np.zeros(3), 2.0, 3, np.float64(1.0))) == (1, FLOAT_ARG, NUMBER, FLOAT_ARG)
    assert signature((np.zeros((2, 3)), np.zeros(()))) == (2, 0)
    # unknown: tuples, bools (they index as masks), object and bool arrays, list subclasses
    assert signature(((1.0,), True, np.array([None]), np.zeros(2, bool),
                      type("L", (list,), {})())) == (None,) * 5
    # lists and dicts are told apart from arrays (a store into one rebinds an item)
    assert signature(([1.0], {"w": 1.0})) == (LIST, DICT)


def test_list_and_dict_parameters_reach_effects():
    tree = front.front(fill)[1]
    assert effects(tree, containers={"x": LIST, "w": DICT}).kinds["x"] == LIST
    # no kind of their own: their items may be anything
    assert "x" not in kinds(tree, {"x": LIST}, lambda n: None)


def test_elements_of_a_vector_are_numbers():
    known, _ = _kinds(fill, {"x": 1, "w": NUMBER})
    assert known["n"] == NUMBER and known["i"] == NUMBER and known["e"] == NUMBER
    assert known["h"] == 1 and known["m"] == 1


def test_elements_of_a_matrix_are_rows():
    known, _ = _kinds(fill, {"x": 2, "w": NUMBER})
    assert known["e"] == 1  # a row: an array (a view), not a number
    assert known["m"] == 2


def test_unknown_parameters_leave_their_uses_unknown():
    known, _ = _kinds(fill, {})
    assert "e" not in known and "x" not in known
    assert known["n"] == NUMBER and known["h"] == 1  # len() and np.empty(n) are known anyway


def merge(x, flag):
    if flag:
        y = x
    else:
        y = 2.0
    a, b = x, flag  # noqa: F841 - a tuple assignment binds both names
    pair = (y, 2.0)
    c = pair[0]
    return y, a, c


def test_a_merge_of_different_kinds_and_tuple_items():
    known, _ = _kinds(merge, {"x": 1, "flag": None})
    # SSA: y (one arm), y_1 (the other), y_2 (the merge)
    assert known["y"] == 1 and known["y_1"] == NUMBER
    assert "y_2" not in known
    # a tuple display bound once is immutable: its items by a constant index are its items'
    assert known["a"] == 1 and "b" not in known
    assert "c" not in known  # the merged y: unknown


def heat_like(u, alpha):
    lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
    v = u[1:]
    w = alpha * lap
    return np.sum(w) + np.sum(v)


def test_shape_keys_of_slices_and_elementwise_results():
    known, keys = _kinds(heat_like, {"u": 1, "alpha": NUMBER})
    assert keys["lap"] == keys["w"]  # a number times an array keeps its shape
    assert keys["v"] != keys["lap"]  # u[1:] is one longer than u[2:]
    slices = {keys[n] for n in known if known[n] == 1 and n not in ("u", "v")}
    assert len(slices) == 1  # u[2:], u[1:-1], u[:-2] and what is computed from them


def test_generated_code_uses_the_facts():
    c = pipeline.compile_function(fill, wrt=(0, 1), sig=(1, NUMBER))
    src = c.own_source
    assert "unbroadcast" not in src.split("for i")[-1]  # the loop body: numbers only
    assert ".copy()" not in src  # an element read is a NumPy scalar: a copy already
    generic = pipeline.compile_function(fill).own_source
    assert "unbroadcast(" in generic.split("def fill_pullback")[1]


def max_plus(delta, logA):
    K = delta.shape[0]
    total = 0.0
    for j in range(K):
        best = -np.inf
        for i in range(K):
            best = np.maximum(best, delta[i] + logA[i, j])
        total += best * np.pi
    return total


def test_a_module_constant_is_a_number():
    """best = -np.inf, then np.maximum(best, ...): np.inf (np.pi, math.e) had no kind, so
    best had none and each step of the pullback asked whether it was broadcast
    (unbroadcast(..., ())), on both backends; np.inf is a number, and so is best."""
    known, _ = _kinds(max_plus, {"delta": 1, "logA": 2})
    assert all(known[n] == NUMBER for n in known if n.startswith("best"))
    rng = np.random.default_rng(4)
    args = (rng.random(5), rng.random((5, 5)))
    c = pipeline.compile_function(max_plus, wrt=(0, 1), sig=(1, 2))
    assert "unbroadcast" not in c.own_source.split("def max_plus_pullback")[1]
    check_grad(max_plus, *args, argnums=(0, 1))


# ---------------------------------------------------------------------------------------------
# gradients of specialised code


def test_vector_then_matrix_recompiles():
    check_grad(fill_rows, np.linspace(-1.0, 1.0, 5), 0.7, argnums=(0, 1))
    g = adgen.grad(fill_rows, argnums=(0, 1))
    xm = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    gx, _gw = g(xm, 0.7)
    assert gx.shape == (4, 3)  # a new signature: compiled again, rows are arrays now
    check_grad(fill_rows, xm, 0.7, argnums=(0, 1))
    check_grad(fill, np.linspace(-1.0, 1.0, 5), 0.7, argnums=(0, 1))


def fill_rows(x, w):
    n = len(x)
    h = np.empty(x.shape)
    for i in range(n):
        e = x[i]
        h[i] = np.tanh(e * w)
    return np.sum(h * h)


def element_update(x):
    s = 0.0
    for i in range(len(x)):
        t = x[i]
        t += 1.0  # a number: rebinds t, x is unchanged
        s += t * x[i]
    return s + np.sum(x)


def test_an_element_updated_is_not_written_back():
    x = np.array([0.5, -1.0, 2.0])
    before = x.copy()
    check_grad(element_update, x)
    adgen.grad(element_update)(x)
    np.testing.assert_array_equal(x, before)


def row_update(x):
    s = 0.0
    for i in range(len(x)):
        t = x[i]
        t += 1.0  # a row of a matrix: updated in place, x changes
        s += np.sum(t * t)
    return s + np.sum(x * x)


def test_a_row_updated_in_place_writes_the_matrix():
    x = np.arange(6.0).reshape(2, 3) / 5.0
    check_grad(row_update, x)


def zero_d(a, x):
    return np.sum(a * x) + a * a


def test_zero_dimensional_array_argument():
    check_grad(zero_d, np.array(1.5), np.array([1.0, 2.0]), argnums=(0, 1))


def rows_forward(hs0, w):
    hs = np.empty((4, len(hs0)))
    hs[0] = hs0
    for t in range(3):
        hs[t + 1] = np.tanh(w * hs[t])
    return np.sum(hs * hs)


def test_rows_written_ahead_of_a_growing_counter_need_no_guard():
    x = np.array([0.3, -0.2])
    check_grad(rows_forward, x, 0.9, argnums=(0, 1), mutation="strict")
    sites = adgen.explain(rows_forward, x, 0.9, file=None)
    write = [s for s in sites if "hs[t + 1]" in s.construct]
    assert write and write[0].decision == "free"


def rows_behind(hs0, w):
    hs = np.empty((4, len(hs0)))
    hs[:] = hs0
    for t in range(3):
        a = hs[t + 1]
        hs[t] = w * np.tanh(a)  # the next iteration overwrites the row read here? no: row t
        hs[t + 1] = hs[t + 1] * w  # ... but this writes the row read this iteration
    return np.sum(hs * hs)


def rows_reread(hs0, w):
    hs = np.empty((4, len(hs0)))
    hs[:] = hs0
    for t in range(3):
        a = hs[t + 1]
        b = a * a  # its pullback reads row t + 1
        hs[t] = w * b  # the next iteration writes row t + 1: what the product read
    return np.sum(hs * hs)


@pytest.mark.parametrize("f", [rows_behind, rows_reread])
def test_rows_written_behind_the_read_are_guarded(f):
    x = np.array([0.3, -0.2])
    check_grad(f, x, 0.9, argnums=(0, 1))
    with pytest.raises(MutationError):
        adgen.grad(f, argnums=(0, 1), mutation="strict")(x.copy(), 0.9)


def row_before_the_first(x):
    y = x.copy()
    s = 0.0
    for i in range(y.shape[0]):
        r = y[i - 1]  # at i = 0 the last row, which the last iteration overwrites
        s = s + np.sum(r * r)
        y[i] = 2.0 * y[i]
    return s + np.sum(y)


def rows_below_wrapping(x):
    y = x.copy()
    s = 0.0
    for i in range(y.shape[0]):
        r = y[:i - 1]  # at i = 0 every row but the last: rows later iterations write
        s = s + np.sum(r * r)
        y[i] = 2.0 * y[i]
    return s + np.sum(y)


@pytest.mark.parametrize("f", [row_before_the_first, rows_below_wrapping])
def test_negative_rows_count_from_the_end(f):
    """A row ``c - 1`` of a counter starting at 0 is the last row at first: it was a silent
    wrong gradient when rows were compared as if they could not wrap."""
    x = np.random.default_rng(6).random((4, 3))
    check_grad(f, x)
    with pytest.raises(MutationError):
        adgen.grad(f, mutation="strict")(x.copy())


def forward_substitution(L, b):
    x = b.copy()
    for i in range(x.shape[0]):
        x[i] -= L[i, :i] @ x[:i]  # reads the rows below i, writes row i
        x[i] /= L[i, i]
    return np.sum(x ** 2)


def test_rows_below_a_growing_counter_need_no_guard():
    L = np.tril(np.random.default_rng(4).random((4, 4))) + 4.0 * np.eye(4)
    b = np.array([0.3, -0.2, 0.5, 1.1])
    check_grad(forward_substitution, L, b, argnums=(0, 1), mutation="strict")
    sites = adgen.explain(forward_substitution, L, b, file=None)
    assert sites and all(s.decision == "free" for s in sites)


def reads_past_the_row(L, b):
    x = b.copy()
    for i in range(x.shape[0] - 1):
        s = L[i, :i + 2] @ x[:i + 2]  # reads row i + 1 too, which row i's write ...
        x[i + 1] = s * 0.5  # ... and this write at i + 1 overwrites
    return np.sum(x ** 2)


def writes_behind(L, b):
    x = b.copy()
    for i in range(1, x.shape[0]):
        s = L[i, :i] @ x[:i]
        x[i - 1] = s * s  # row i - 1 is below i: read above
    return np.sum(x ** 2)


@pytest.mark.parametrize("f", [reads_past_the_row, writes_behind])
def test_rows_below_overwritten_are_guarded(f):
    L = np.tril(np.random.default_rng(5).random((4, 4))) + 4.0 * np.eye(4)
    b = np.array([0.3, -0.2, 0.5, 1.1])
    check_grad(f, L, b, argnums=(0, 1))
    with pytest.raises(MutationError):
        adgen.grad(f, argnums=(0, 1), mutation="strict")(L.copy(), b.copy())


def restarting(hs0, w):
    hs = np.empty((3, len(hs0)))
    hs[:] = hs0
    for k in range(2):
        for t in range(2):
            hs[t + 1] = np.tanh(w * hs[t])  # the inner counter restarts: rows come back
    return np.sum(hs * hs)


def test_a_counter_that_restarts_is_guarded():
    x = np.array([0.3, -0.2])
    check_grad(restarting, x, 0.9, argnums=(0, 1))
    with pytest.raises(MutationError):
        adgen.grad(restarting, argnums=(0, 1), mutation="strict")(x.copy(), 0.9)


def accumulate(W, xs):
    h = np.zeros(W.shape[0])
    for t in range(len(xs)):
        h = np.tanh(W @ xs[t] + h)
    alias = h
    alias = alias + 1.0
    return np.sum(alias * h)


def test_adjoints_accumulated_in_place_stay_private():
    rng = np.random.default_rng(3)
    W = rng.standard_normal((3, 2)) * 0.5
    xs = rng.standard_normal((4, 2))
    check_grad(accumulate, W, xs, argnums=(0, 1))
    # a vjp's pullback can be called again: nothing accumulated leaks between calls
    out, pb = adgen.vjp(accumulate, W, xs)
    first = pb(1.0)[0].copy()
    np.testing.assert_allclose(pb(1.0)[0], first)
    np.testing.assert_allclose(pb(2.0)[0], 2.0 * first)


def self_update(u, alpha):
    u = u.copy()
    for _ in range(3):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        u[1:-1] += alpha * lap
    return np.sum(u * u)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_in_place_slice_updates(mutation):
    u = np.linspace(0.0, 1.0, 7) ** 2
    check_grad(self_update, u, 0.2, argnums=(0, 1), mutation=mutation)


def short_slices(u):
    a = u[2:] * 2.0
    b = u[1:-1] + a  # equal lengths for every len(u), zero included
    return np.sum(b * b)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 6])
def test_slice_lengths_agree_for_every_length(n):
    u = np.linspace(0.1, 1.0, n)
    g = adgen.grad(short_slices)(u)
    assert g.shape == u.shape
    if n:
        check_grad(short_slices, u)


def shapes_of(x):
    n = x.shape[0]
    h = np.zeros(x.shape)
    k = x.ndim
    return np.sum(h) + n + k


def test_shape_items_are_numbers_and_allocations_from_a_shape_have_its_rank():
    known, _ = _kinds(shapes_of, {"x": 2})
    assert known["n"] == NUMBER and known["k"] == NUMBER and known["h"] == 2


def reductions(z):
    a = np.sum(z, axis=1, keepdims=True)
    b = np.max(z, axis=-1)
    c = np.mean(z)
    d = np.sum(z, axis=(0, 1))
    return a, b, c, d


def test_reductions_with_an_axis():
    known, _ = _kinds(reductions, {"z": 2})
    assert known["a"] == 2 and known["b"] == 1 and known["c"] == NUMBER
    assert "d" not in known  # a tuple of axes: not modelled


def method_reductions(z):
    a = z.max(axis=1, keepdims=True)
    b = z.sum(axis=0)
    c = z.mean(axis=-1, keepdims=False)
    d = z.min(axis=(0, 1))
    s = z - a
    return np.sum(np.exp(s) / np.sum(np.exp(s), axis=1, keepdims=True) * z) + \
        np.sum(b * c[0]) + 0.5 * d


def test_reduction_methods_with_an_axis():
    known, _ = _kinds(method_reductions, {"z": 2})
    assert known["a"] == 2 and known["b"] == 1 and known["c"] == 1 and known["s"] == 2
    assert "d" not in known  # a tuple of axes: not modelled
    z = np.random.default_rng(3).standard_normal((4, 5))
    check_grad(method_reductions, z)
    z[1, 2] = z[1, 3] = z[1].max() + 1.0  # a tie in one row: the max's cotangent is shared
    check_grad(method_reductions, z)


# ---------------------------------------------------------------------------------------------
# first writes to a fresh adjoint, and reductions as methods


def three_reads(a):
    return a[0] + a[1] * 2.0 + a[2] * a[2]


def repeated_read(a):
    return a[1] + a[1] * a[0] + a[-1]


def rows_then_element(m):
    r = m[0]
    e = m[0, 1]
    return np.sum(r * r) + e * 3.0


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_first_writes_to_a_fresh_adjoint_are_assignments(mutation):
    src = pipeline.compile_function(three_reads, wrt=(0,), sig=(1,)).own_source
    pull = src.split("def three_reads_pullback")[1]
    assert "a_bar[0] = " in pull and "a_bar[1] = " in pull and "a_bar[2] = " in pull
    assert pull.count("+=") == 1  # a[2] is read twice: its second adjoint accumulates
    check_grad(three_reads, np.array([0.5, -2.0, 1.5, 4.0]), mutation=mutation)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_an_index_written_twice_or_a_negative_one_keeps_accumulating(mutation):
    src = pipeline.compile_function(repeated_read, wrt=(0,), sig=(1,)).own_source
    pull = src.split("def repeated_read_pullback")[1]
    assert "+=" in pull  # a[1] is read twice; a[-1] may be any of them
    check_grad(repeated_read, np.array([0.5, -2.0, 1.5]), mutation=mutation)
    check_grad(repeated_read, np.array([0.5, -2.0]), mutation=mutation)  # a[-1] is a[1]


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_row_and_an_element_of_it_both_count(mutation):
    check_grad(rows_then_element, np.array([[0.5, -2.0], [1.5, 3.0]]), mutation=mutation)


def test_first_writes_of_a_list_argument_are_left_alone():
    # the adjoint of a list is a list (the analysis knows no rank): += stays
    src = pipeline.compile_function(three_reads, wrt=(0,), sig=(None,)).own_source
    assert "a_bar[0] = " not in src
    assert adgen.grad(three_reads)([1.0, 2.0, 0.5]) == pytest.approx([1.0, 2.0, 1.0])


def test_first_writes_keep_a_float32_argument_right():
    x = np.array([0.5, -2.0, 1.5], dtype=np.float32)
    g = adgen.grad(three_reads)(x)
    np.testing.assert_allclose(g, [1.0, 2.0, 3.0])


def full_reductions(x, s):
    y = x * s
    return np.sum(y) + np.max(y) - np.min(x) + np.sum(s) + 2.0 * np.mean(y)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_full_reductions_of_known_arrays_are_methods_in_the_forward(mutation):
    src = pipeline.compile_function(full_reductions, wrt=(0, 1), sig=(1, NUMBER)).own_source
    fwd = src.split("def full_reductions_pullback")[0]
    assert "y.sum()" in fwd and "y.max()" in fwd and "x.min()" in fwd and "y.mean()" in fwd
    assert "np.sum(s)" in fwd  # a number has no .sum() when it is a Python float
    check_grad(full_reductions, np.array([0.5, -2.0, 1.5]), 0.7, argnums=(0, 1),
               mutation=mutation)
    m = np.array([[0.5, -2.0], [1.5, 3.0]])
    check_grad(full_reductions, m, 0.7, argnums=(0, 1), mutation=mutation)
    assert adgen.grad(full_reductions, argnums=1)(m, 2.0) == pytest.approx(
        np.sum(m) + 3.0 + 1.0 + 2.0 * np.mean(m))


def fill_and_reread(a):
    h = np.empty(len(a))
    for i in range(len(a)):
        h[i] = np.tanh(a[i] * 2.0)
    h[0] = a[1] * a[2]  # overwrites a value the tanh adjoint reads
    return np.sum(h * h) + h[0] + np.max(h)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_first_writes_and_reductions_beside_an_in_place_overwrite(mutation):
    # the tanh pullback reads its output from the tape, not from h: both policies run
    check_grad(fill_and_reread, np.array([0.5, -2.0, 1.5, 0.25]), mutation=mutation)


# --------------------------------------------------------------------------------------------
# What a user function returns: its own kinds, specialised to the caller's argument kinds


def _inner(x):
    return x * 2.0


def _inner_rows(x):
    return np.outer(np.array([1.0, -0.5]), x)


def _scaled(x):
    return _inner(x) + 1.0


def _through_callee(x):
    y = _scaled(x)
    z = np.array([y[0], y[1] * y[0]])
    return np.sum(y * y) + np.sum(z * z)


def test_callee_results_have_kinds():
    parsed, tree = front.front(_through_callee)[:2]
    from functools import partial

    known = kinds(tree, {"x": 1}, lambda n: front.resolve(parsed, n),
                  partial(front.returned_kind, {}))
    assert known["y"] == 1  # _scaled's result, through _inner's
    assert known["z"] == 1  # np.array of a list of numbers


def test_callee_kind_follows_the_callees_it_calls(monkeypatch):
    # _scaled's result becomes a matrix when _inner is rebound: the caller recompiles (its
    # guards include its callees') and must not reuse the old kind
    g = adgen.grad(_through_callee)
    x = np.array([0.3, -0.4, 0.8])
    np.testing.assert_allclose(g(x), numerical_grad(_through_callee, [x], 0), rtol=1e-6)
    monkeypatch.setattr(sys.modules[__name__], "_inner", _inner_rows)
    got = g(x)
    assert got.shape == x.shape
    np.testing.assert_allclose(got, numerical_grad(_through_callee, [x], 0), rtol=1e-6)


SCALE = 1.5


def rows_scaled_by_a_global(x):
    y = x.copy()
    for i in range(y.shape[0]):
        y[i, :i + 1] += SCALE * x[i, :i + 1] * x[i, i]  # read at i + 1, stored at i + 1
    return np.sum(y ** 2)


def test_a_slice_updated_in_place_is_stored_where_it_was_read(monkeypatch):
    """``y[i, :i + 1] += v`` computes ``i + 1`` twice (read, store): the two are one view, so
    the store is no write at all, and a global float has a kind (its binding is guarded)."""
    x = np.random.default_rng(7).random((4, 4))
    for mutation in ("save", "strict"):
        check_grad(rows_scaled_by_a_global, x, mutation=mutation)
    src = adgen.source(rows_scaled_by_a_global, x)
    pullback = src.split("def rows_scaled_by_a_global_pullback")[1]
    # (a tuple tape, or typed columns where only numbers are taped: x[i, :i + 1] is read
    # again by the pullback, values_again.final_value)
    loop = pullback.split("reversed_rows(" if "reversed_rows(" in pullback else "reversed(")[1]
    assert " is not " not in pullback and "sh.of(" not in loop and "] = 0.0" not in loop
    # the global becomes an array of another rank: compiled again, still right
    monkeypatch.setattr(sys.modules[__name__], "SCALE", np.array(-2.0))
    check_grad(rows_scaled_by_a_global, x)
    monkeypatch.setattr(sys.modules[__name__], "SCALE", np.float32(0.5))
    check_grad(rows_scaled_by_a_global, x)


def stored_one_row_down(x, w):
    y = x.copy()
    for i in range(y.shape[0] - 1):
        r = y[i + 1, :i + 1]
        r *= w
        y[i, 1:i + 2] = r  # looks like the read (i + 1 twice), is another place
    return np.sum(y ** 2)


def test_indices_alike_in_part_are_not_the_same_view():
    x = np.random.default_rng(8).random((4, 4))
    check_grad(stored_one_row_down, x, 0.7, argnums=(0, 1))


def rows_and_outer(A, B, i):
    r = A[i, :]
    s = B[i]
    u = A[i + 1]
    o = np.outer(r, s)
    scaled = SCALE * o
    return np.sum(r * u) + np.sum(scaled) + np.sum(s)


def test_rows_of_one_matrix_share_a_shape_and_outer_is_a_matrix():
    known, keys = _kinds(rows_and_outer, {"A": 2, "B": 2, "i": NUMBER})
    assert known["o"] == 2 and known["scaled"] == 2
    assert keys["r"] == keys["u"]  # A[i, :] and A[i + 1]: both A.shape[1:]
    assert keys["r"] != keys["s"]  # a row of another matrix: not known to agree
    assert keys["scaled"] == keys["o"]  # a global float times o: o's shape


def test_rows_and_outer_gradients():
    rng = np.random.default_rng(9)
    A, B = rng.random((3, 4)), rng.random((3, 2))
    check_grad(rows_and_outer, A, B, 1, argnums=(0, 1))


def max_of_numbers(x, g):
    a = x[0] / g
    b = x[1] / g
    m = max(a, b)
    return np.exp(m - a) + min(a, b, m)


def test_max_and_min_of_numbers_are_numbers():
    known, _ = _kinds(max_of_numbers, {"x": 1, "g": NUMBER})
    assert known["m"] == NUMBER
    check_grad(max_of_numbers, np.array([0.3, 0.7]), 0.5, argnums=(0, 1))


def row_normalise(x):
    e = np.exp(x)
    return np.sum(np.log(e / np.sum(e, axis=1, keepdims=True)) * x)


def test_a_kept_sum_adds_into_an_adjoint_by_broadcasting():
    # e's adjoint takes the row sum's adjoint as it is (shape (n, 1)): no full copy first
    x = np.random.default_rng(5).standard_normal((3, 4))
    src = pipeline.compile_function(row_normalise, wrt=(0,), sig=signature((x,))).own_source
    assert ", 1, True)" not in src.split("def row_normalise_pullback")[1]
    check_grad(row_normalise, x)


def filter_step(A, y):
    P = np.eye(A.shape[0])
    S = A @ P @ A.T + np.identity(A.shape[0])
    K = P @ np.linalg.inv(S)
    x = np.linalg.solve(S, y)
    X = np.linalg.solve(S, A)
    return np.log(np.linalg.det(S)) + np.sum(K @ x) + np.sum(X)


def test_eye_and_linalg_results_have_kinds():
    known, _ = _kinds(filter_step, {"A": 2, "y": 1})
    assert known["P"] == 2 and known["S"] == 2 and known["K"] == 2
    assert known["x"] == 1 and known["X"] == 2
    rng = np.random.default_rng(10)
    check_grad(filter_step, rng.random((3, 3)) + 2.0 * np.eye(3), rng.random(3),
               argnums=(0, 1))


def numpy_scalar_accumulator(x):
    s = np.float64(0.0)
    c = np.float32(0.5)
    n = np.float64(x.shape[0])
    y = np.float64(x * 2.0)  # of an array: an array, written in place below
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    y[0] = s
    return s * n * c + np.sum(y ** 2)


def test_numpy_scalars_of_numbers_are_numbers():
    # np.float32(0.0) started an accumulator taken for an array written in place: the numba
    # backend refused `s += x[i] * x[i]` as a buffer it could not place (session 25)
    known, _ = _kinds(numpy_scalar_accumulator, {"x": 1})
    assert known["s"] == NUMBER and known["c"] == NUMBER and known["n"] == NUMBER
    assert known.get("y") != NUMBER
    for mutation in ("save", "strict"):
        check_grad(numpy_scalar_accumulator, np.array([0.3, -0.7, 1.1]), mutation=mutation)
