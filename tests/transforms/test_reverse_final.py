"""reverse_final: element reads a loop's pullback repeats instead of taping them.

Each function is differentiated under both policies and compared with central differences
of the plain function (with the arguments' final contents checked against a plain call);
the positive cases also check that the value is no longer taped (the generated forward),
and the negative ones are the near misses where reading the array again would give the
value of a later write: a row the same iteration writes after the read, a later loop that
writes the array, a counter restarting in an outer loop, writes running backwards, a column
of the current row at or past the one written, two arguments that may be one array, counters
that may be negative (a row counted from the end).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

POLICIES = ["save", "strict"]


def trisolv(L, b):
    n = b.shape[0]
    x = np.zeros(n)
    for i in range(n):
        acc = b[i]
        for j in range(i):
            acc = acc - L[i, j] * x[j]  # x[j], j < i: final once row j is solved
        x[i] = acc / L[i, i]
    s = 0.0
    for i in range(n):
        s += x[i] * x[i]
    return s


def cholesky(A):
    n = A.shape[0]
    L = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1):
            acc = A[i, j]
            for k in range(j):
                acc = acc - L[i, k] * L[j, k]  # (i, k), (j, k): k < j <= i, before (i, j)
            if i == j:
                L[i, j] = np.sqrt(acc)
            else:
                L[i, j] = acc / L[j, j]
    s = 0.0
    for i in range(n):
        for j in range(i + 1):
            s += L[i, j] * L[i, j] * (1.0 + 0.1 * j)
    return s


def row_read_then_written(a):
    """x[j] for j <= i: x[i] is read, then written in the same iteration."""
    n = a.shape[0]
    x = a.copy()
    for i in range(n):
        acc = 0.0
        for j in range(i + 1):
            acc = acc + x[j] * x[j]
        x[i] = np.sin(acc)
    return np.sum(x * x)


def written_by_a_later_loop(a):
    n = a.shape[0]
    x = np.ones(n)
    s = 0.0
    for i in range(n):
        for j in range(i):
            s = s + x[j] * x[j] * a[i]
        x[i] = np.cos(a[i])
    for i in range(n):
        x[i] = 3.0 * x[i] + 1.0
    return s + np.sum(x)


def counter_restarts(a):
    """The top-level loop around the writing loop starts its counter again."""
    n = a.shape[0]
    x = a.copy()
    s = 0.0
    for sweep in range(2):
        for i in range(n):
            for j in range(i):
                s = s + x[j] * x[j]
            x[i] = np.tanh(x[i] + s)
    return s + np.sum(x)


def written_backwards(a):
    """Rows written from the end: the row read (j < i) is written in a later iteration."""
    n = a.shape[0]
    x = a.copy()
    s = 0.0
    for i in range(n):
        for j in range(i):
            s = s + x[j] * x[j]
        x[n - 1 - i] = np.sin(x[n - 1 - i] + s)
    return s + np.sum(x * x)


def column_at_or_past(A):
    """L[i, k] for k <= j: L[i, j] itself is read before it is written."""
    n = A.shape[0]
    L = A.copy()
    for i in range(n):
        for j in range(n):
            acc = 0.0
            for k in range(j + 1):
                acc = acc + L[i, k] * L[i, k]
            L[i, j] = np.sqrt(acc)
    return np.sum(L)


def two_arguments(x, y):
    """Reads x[j], writes y[i]: the same array when the caller passes it twice."""
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        for j in range(i + 1):
            s = s + x[j] * x[j]
        y[i] = np.sin(s)
    return s + np.sum(y * y)


def counter_from_minus_one(a):
    """x[j] with j of range(-1, i): at j = -1 it is the last row, which x[i] writes later."""
    n = a.shape[0]
    y = a.copy()
    for i in range(n):
        acc = 0.0
        for j in range(-1, i):
            t = y[j]
            acc = acc + t * t
        y[i] = acc
    return np.sum(y)


def window_behind(a):
    """x[j] for j in range(i - 2, i): rows counted from the end at i = 0 and 1."""
    n = a.shape[0]
    x = a.copy()
    for i in range(n):
        acc = 0.0
        for j in range(i - 2, i):
            acc = acc + x[j] * x[j]
        x[i] = np.sin(acc) + x[i]
    return np.sum(x * x)


def _rng_args(fn):
    rng = np.random.default_rng(11)
    if fn in (trisolv,):
        return (np.tril(rng.random((6, 6))) + 3.0 * np.eye(6), rng.random(6))
    if fn in (cholesky,):
        m = rng.random((5, 5))
        return (m @ m.T + 5.0 * np.eye(5),)
    if fn is column_at_or_past:
        return (rng.random((4, 4)) + 0.5,)
    return (0.5 * rng.random(6),)


def _check(fn, args, argnums, mutation, backend="default"):
    plain = copy.deepcopy(args)
    fn(*plain)
    mine = copy.deepcopy(args)
    g = adgen.grad(fn, argnums=argnums, mutation=mutation, backend=backend)(*mine)
    for k, gk in zip(argnums, g):
        assert_grad_close(gk, numerical_grad(fn, copy.deepcopy(args), k))
    for a, b in zip(mine, plain):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn, untaped", [
    (trisolv, "x[j]"), (cholesky, "L[j_2, k]")])
def test_final_elements_are_read_again(fn, untaped, mutation):
    args = _rng_args(fn)
    _check(fn, args, tuple(range(len(args))), mutation)
    forward = adgen.source(fn, *args, mutation=mutation).split("_pullback")[0]
    assert ".append((k," not in forward and ".append((j," not in forward
    pullback = adgen.source(fn, *args, mutation=mutation).split("_pullback")[1]
    assert untaped in pullback


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", [row_read_then_written, written_by_a_later_loop,
                                counter_restarts, written_backwards, column_at_or_past,
                                counter_from_minus_one, window_behind])
def test_near_misses_keep_their_tapes(fn, mutation):
    _check(fn, _rng_args(fn), (0,), mutation)


@pytest.mark.parametrize("mutation", POLICIES)
def test_two_arguments_that_may_be_one_array(mutation):
    x = 0.5 * np.random.default_rng(3).random(5)
    _check(two_arguments, (x.copy(), x.copy() + 0.1), (0, 1), mutation)
    # one array passed twice: the reads of x see the writes of y; each argument's gradient
    # is the one buffer's (design 2.5: gradients follow aliasing), the derivative of
    # z -> two_arguments(z, z)
    shared = x.copy()
    g = adgen.grad(two_arguments, argnums=(0, 1), mutation="save")(shared, shared)

    def once(z):
        return two_arguments(z, z)

    expected = numerical_grad(once, (x.copy(),), 0)
    assert_grad_close(g[0], expected)
    assert_grad_close(g[1], expected)


def test_a_parameter_read_again_is_checked_after_vjp():
    """The pullback reads L when it runs: changing L after vjp raises, as for any value the
    pullback reads."""
    L, b = _rng_args(trisolv)
    out, pullback = adgen.vjp(trisolv, L, b)
    ct = pullback(1.0)
    assert_grad_close(ct[1], numerical_grad(trisolv, (L.copy(), b.copy()), 1))
    L[3, 1] += 1.0
    with pytest.raises(adgen.MutationError, match="argument 0"):
        pullback(1.0)


@pytest.mark.parametrize("fn", [trisolv, cholesky, row_read_then_written, written_backwards])
def test_numba_backend(fn):
    pytest.importorskip("numba")
    args = _rng_args(fn)
    _check(fn, args, (0,), "save", backend="numba")


# --- generated loop nests: reads and writes at counter indices, against central differences -

def _program_1d(r) -> str:
    init = r.choice(["a.copy()", "np.zeros(n)", "0.5 * np.ones(n)"])
    inner = r.choice(["range(i)", "range(i + 1)", "range(i - 1)", "range(n)", "range(1, i)",
                      "range(-1, i)", "range(i, n)", "range(i + 1, n)"])
    term = r.choice(["x[j] * x[j]", "np.sin(x[j]) * a[i]", "a[j] * x[j]", "x[j] * x[i]"])
    written = r.choice(["i", "n - 1 - i", "i - 1", "j", "0"])
    after = r.choice(["", "    for i in range(n):\n        x[i] = 2.0 * x[i] + x[i] * x[i]\n",
                      "    x[0] = np.cos(x[0])\n"])
    sweeps = r.choice([False, True])
    pad = "        " if sweeps else "    "
    return ("import numpy as np\n\n\ndef f(a):\n    n = a.shape[0]\n"
            f"    x = {init}\n    s = 0.0\n" + ("    for sweep in range(2):\n" if sweeps else "")
            + f"{pad}for i in range({r.choice(['0', '1'])}, n):\n"
            f"{pad}    acc = {r.choice(['x[i]', 'a[i]', '0.0'])}\n"
            f"{pad}    for j in {inner}:\n{pad}        acc = acc + {term}\n"
            f"{pad}    s = s + acc * a[i]\n{pad}    x[{written}] = np.tanh(acc)\n"
            + after + "    return s + np.sum(x * x)\n")


def _program_2d(r) -> str:
    def index() -> str:
        return f"{r.choice(['i', 'j', 'k'])}, {r.choice(['i', 'j', 'k'])}"

    return ("import numpy as np\n\n\ndef f(a):\n    n = a.shape[0]\n"
            f"    L = {r.choice(['a.copy()', 'np.zeros((n, n))'])}\n"
            "    for i in range(n):\n"
            f"        for j in {r.choice(['range(i + 1)', 'range(n)', 'range(i)'])}:\n"
            "            acc = a[i, j]\n"
            f"            for k in {r.choice(['range(j)', 'range(j + 1)', 'range(i)', 'range(n)'])}:\n"
            f"                acc = acc + L[{index()}] * L[{index()}]\n"
            f"            L[{r.choice(['i, j', 'j, i', 'i, i', 'j, j'])}] = np.tanh(acc)\n"
            "    return np.sum(L * L)\n")


@pytest.mark.parametrize("rank", [1, 2])
def test_generated_loop_nests(rank, tmp_path, monkeypatch):
    """Random loop nests of the shapes above (rows read below, at or past the counter,
    written forwards, backwards, at another counter, again after the loop or in a second
    sweep): every gradient matches central differences under both policies (or strict
    raises MutationError), and some of them read elements again."""
    import importlib
    import random

    monkeypatch.syspath_prepend(str(tmp_path))
    r = random.Random(rank)
    read_again = 0
    for k in range(24):
        (tmp_path / f"nest{rank}_{k}.py").write_text(
            _program_1d(r) if rank == 1 else _program_2d(r))
        f = importlib.import_module(f"nest{rank}_{k}").f
        a = 0.3 + 0.4 * np.random.default_rng(k).random((5,) if rank == 1 else (4, 4))
        try:
            f(a.copy())
        except (IndexError, UnboundLocalError):
            continue  # a row past the end, or x[j] after a loop that bound no j
        pullback = adgen.source(f, a).split("_pullback")[1]
        read_again += any(f" = {x}[" in pullback for x in ("x", "a", "L"))
        for mutation in POLICIES:
            try:
                g = adgen.grad(f, mutation=mutation)(a.copy())
            except adgen.MutationError:
                assert mutation == "strict"
                continue
            assert_grad_close(g, numerical_grad(f, (a.copy(),), 0))
    assert read_again >= 3
