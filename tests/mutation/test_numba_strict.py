"""mutation="strict" on the numba backend: the same sites accepted, the same MutationError.

The default backend's guard (``adgen.runtime.before_write``) raises a MutationError naming the
line that captured a value the gradient reads and the line that overwrites it. The numba
backend runs the same check in nopython code (``adgen.numba_runtime.strict_before_write``:
the element addresses each capture views, looked up by each guarded write) and raises the
same error. Each test runs both backends on fresh copies of the same inputs and compares the
outcome: the error's text and both locations, or the gradient (against central differences
too) and the arguments' final contents. Skipped when numba is not installed.
"""

from __future__ import annotations

import numpy as np
import pytest
import test_fancy_index_regions
import test_mutation_loops
import test_mutation_seeds
import test_mutation_views
from harness import (
    Case,
    assert_close,
    assert_names_conflict,
    assert_same_state,
    call_plain,
    fd_grad,
    fresh,
    line_of,
    resolve,
)

import adgen

pytest.importorskip("numba")


def _outcome(fn, args, argnums, backend):
    """("error", the MutationError) or ("gradient", (the gradients, the arguments after))."""
    mine = fresh(args)
    try:
        g = adgen.grad(fn, argnums=argnums, backend=backend, mutation="strict")(*mine)
    except adgen.MutationError as err:
        return "error", err
    return "gradient", (g, mine)


def _same_outcome(fn, args, argnums):
    """The numba backend's outcome is the default backend's; returns it."""
    kind, got = _outcome(fn, args, argnums, "default")
    kind_nb, got_nb = _outcome(fn, args, argnums, "numba")
    assert kind_nb == kind, f"default: {kind} {got}; numba: {kind_nb} {got_nb}"
    if kind == "error":
        assert str(got_nb) == str(got)
        assert (got_nb.location.file, got_nb.location.line, got_nb.location.col) == \
            (got.location.file, got.location.line, got.location.col)
        assert got_nb.captured_at.line == got.captured_at.line
        return kind, got_nb
    grads = got_nb[0] if isinstance(argnums, tuple) else (got_nb[0],)
    fd = fd_grad(fn, args, argnums if isinstance(argnums, tuple) else (argnums,))
    for n, g, e in zip(argnums if isinstance(argnums, tuple) else (argnums,), grads, fd):
        assert_close(g, e, f"gradient of argument {n}")
    _, state = call_plain(fn, args)
    assert_same_state(got_nb[1], state, "arguments after grad")
    return kind, got_nb


# --- the mutation corpus: the cases whose code numba compiles -----------------------------------

def _cases() -> dict[str, Case]:
    out = {}
    for m in (test_fancy_index_regions, test_mutation_loops, test_mutation_seeds,
              test_mutation_views):
        for v in vars(m).values():
            if isinstance(v, list) and v and all(isinstance(c, Case) for c in v):
                out.update({c.name: c for c in v})
    return out


CASES = _cases()
# the corpus's cases whose gradient code numba compiles (the others are refused for lists,
# objects, callees writing their arguments, ...; under "save" as well): overwrites found
# when the write runs (the first four), overwrites certain at compile time, free sites
NUMBA_CASES = ["window_rebound_in_loop", "nonlinear_stencil_in_place", "softmax_in_place",
               "view_write_captured", "p_assign_a_matmul_p", "fill_after_use",
               "slice_zero_after_capture", "relu_mask_captured", "fancy_swap_captured",
               "sort_captured", "add_at_captured", "clip_out_captured", "region_precise",
               "running_recurrence", "nonlinear_recurrence", "linear_stencil_in_place"]


@pytest.mark.parametrize("name", NUMBA_CASES)
def test_the_corpus_under_strict(name):
    case = CASES[name]
    kind, got = _same_outcome(case.fn, case.make_args(), case.argnums)
    assert kind == ("error" if case.needed else "gradient")
    if case.needed:
        pairs = [(resolve(c, case.fn)[1], resolve(o, case.fn)[1]) for c, o in case.conflicts]
        assert_names_conflict(got, pairs)


# --- the run-time check: region-precise, as the default backend's -------------------------------

def tail_then_head(x, k):
    y = x[3:] * x[3:]  # the gradient reads x[3:]
    for i in range(k):
        x[i] = 2.0 * x[i]  # guarded: overwrites x[3:] once i reaches 3
    return np.sum(y) + np.sum(x)


def column_then_row(a, r, whole):
    c = a[:, 1] * a[:, 1]  # the gradient reads column 1
    if whole:
        for j in range(a.shape[1]):
            a[r, j] = 0.5 * a[r, j]  # element by element: column 1 too
    else:
        a[r, 0] = 0.5 * a[r, 0]  # column 0 only
    return np.sum(c) + np.sum(a)


def two_reads(x, k):
    y = x * x  # read by the gradient of this line
    z = np.sin(x)  # and of this one
    for i in range(k):
        x[-1 - i] = 0.0
    return np.sum(y) + np.sum(z) + np.sum(x)


def test_a_write_apart_from_the_captured_region_runs():
    """Writing x[0..2] leaves the captured x[3:] as it was: both backends give the gradient
    (the hand formula: 2 for the doubled x[i], 2 x + 1 for the tail)."""
    x = np.random.default_rng(0).random(6)
    kind, (g, _) = _same_outcome(tail_then_head, (x, 3), 0)
    assert kind == "gradient"
    np.testing.assert_allclose(g, np.r_[2.0, 2.0, 2.0, 2.0 * x[3:] + 1.0], rtol=1e-12)


def test_a_write_into_the_captured_region_raises_naming_both_lines():
    x = np.random.default_rng(1).random(6)
    kind, err = _same_outcome(tail_then_head, (x, 5), 0)
    assert kind == "error"
    assert err.location.line == line_of(tail_then_head, "x[i] = 2.0 * x[i]")
    assert err.captured_at.line == line_of(tail_then_head, "y = x[3:] * x[3:]")
    # the writes before the one that raised happened, as in a plain call until that line
    mine = x.copy()
    with pytest.raises(adgen.MutationError):
        adgen.grad(tail_then_head, backend="numba", mutation="strict")(mine, 5)
    np.testing.assert_array_equal(mine, np.r_[2.0 * x[:3], x[3:]])


@pytest.mark.parametrize("r", [0, -1])
@pytest.mark.parametrize("whole", [0, 1])
def test_elements_of_a_matrix(r, whole):
    a = np.random.default_rng(2).random((4, 3))
    kind, _ = _same_outcome(column_then_row, (a, r, whole), 0)
    assert kind == ("error" if whole else "gradient")


@pytest.mark.parametrize("k", [0, 1])
def test_a_write_both_captures_read_names_both_lines(k):
    """Negative indices, and one element read by the gradients of two lines: the error
    names the first and says the other reads it too (the default backend's words)."""
    x = np.random.default_rng(3).random(4)
    kind, err = _same_outcome(two_reads, (x, k), 0)
    assert kind == ("error" if k else "gradient")
    if k:
        assert f"the gradient of line {line_of(two_reads, 'z = np.sin(x)')} reads it too" \
            in str(err)


def test_vjp_raises_the_same():
    x = np.random.default_rng(4).random(6)
    with pytest.raises(adgen.MutationError) as err:
        adgen.vjp(tail_then_head, x.copy(), 4, backend="numba", mutation="strict")
    with pytest.raises(adgen.MutationError) as expected:
        adgen.vjp(tail_then_head, x.copy(), 4, mutation="strict")
    assert str(err.value) == str(expected.value)


# --- the hint where the write's own gradient reads what it overwrites ---------------------------

RENORM = '''import numpy as np


def renorm(x, k):
    q = x * 1.0
    s = np.sum(q * q)
    for t in range(k):
        q /= np.sqrt(np.sum(q * q))
    return s + q[0]
'''


def _load(tmp_path, name, text):
    import importlib.util

    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_hint_where_the_writes_own_gradient_reads_the_value(tmp_path):
    """q /= np.sqrt(np.sum(q * q)) overwrites q, which the gradient of line 5 reads and its
    own gradient reads too: a copy made before the line (the hint the numba guard gave) is
    overwritten in its turn. The hint is the default backend's, computing it out of place,
    whether the guard runs in the first call or in a later one (the fast call); followed
    literally, the program compiles on numba under both policies with central differences'
    gradient."""
    mod = _load(tmp_path, "renorm_h7", RENORM)
    x = np.array([0.6, 1.1, 0.8, 1.4])
    line = line_of(mod.renorm, "q /= np.sqrt")
    kind, err = _same_outcome(mod.renorm, (x, 3), 0)  # the hint is in str(err), compared
    assert kind == "error" and err.location.line == line
    out_of_place = "q = q / np.sqrt(np.sum(q * q))"
    assert err.hint.endswith(f"or compute it out of place: {out_of_place}")
    g = adgen.grad(mod.renorm, backend="numba", mutation="strict")
    np.testing.assert_allclose(g(x.copy(), 0), np.r_[2.0 * x[0] + 1.0, 2.0 * x[1:]])
    with pytest.raises(adgen.MutationError) as again:  # the compiled call's fast path
        g(x.copy(), 3)
    assert again.value.hint == err.hint
    fixed = _load(tmp_path, "renorm_h7_fixed",
                  RENORM.replace("q /= np.sqrt(np.sum(q * q))", out_of_place))
    for policy in ("save", "strict"):
        got = adgen.grad(fixed.renorm, backend="numba", mutation=policy)(x.copy(), 3)
        assert_close(got, fd_grad(fixed.renorm, (x, 3), (0,))[0], f"{policy}: gradient")


SQUARES = '''import numpy as np


def squares_after_a_read(x):
    a = x * 1.0
    b = a * a
    for i in range(a.shape[0]):
        a[i] = a[i] * a[i]
    return np.sum(a) + np.sum(b)
'''


def test_the_copy_for_a_write_in_a_loop_is_made_before_the_loop(tmp_path):
    """a[i] = a[i] * a[i] in a loop overwrites a, which b = a * a's gradient reads outside
    it. The hint said 'a = a.copy() before line 8': put there, inside the loop, the copy is
    made in each iteration, which the numba backend refuses (an array made anew in each
    iteration). It names the loop's line now, on both backends; followed literally, the
    program compiles on numba under both policies with central differences' gradient."""
    mod = _load(tmp_path, "squares_h7", SQUARES)
    x = np.array([0.6, 1.1, 0.8, 1.4])
    kind, err = _same_outcome(mod.squares_after_a_read, (x,), 0)  # the same text and hint
    assert kind == "error"
    loop, line = (line_of(mod.squares_after_a_read, s) for s in ("for i in", "a[i] = a[i]"))
    assert err.hint.endswith(f"write into a copy: a = a.copy() before line {loop} "
                             f"(before the loop holding line {line})")
    lines = SQUARES.splitlines(keepends=True)
    lines.insert(loop - 1, "    a = a.copy()\n")
    fixed = _load(tmp_path, "squares_h7_fixed", "".join(lines))
    for policy in ("save", "strict"):
        got = adgen.grad(fixed.squares_after_a_read, backend="numba", mutation=policy)(x.copy())
        assert_close(got, fd_grad(fixed.squares_after_a_read, (x,), (0,))[0], policy)
        assert_close(got, 4.0 * x, f"{policy}: the hand formula (2 sum x ** 2)")
