"""Tape columns the final pullback never reads leave the forward's rows
(transforms/dead_columns.py): every name a reversed loop unpacks from its tape is read by the
pullback, for loops as users write them, and a row of one column is that value, not a tuple
(``unwrapped_rows``); gradients against central differences under both policies, through a
method and a lambda, and on the numba backend (which keeps its rows as tuples).
"""

from __future__ import annotations

import ast
import functools

import gast
import numpy as np
import pytest
from gradcheck import check_grad

import adgen

POLICIES = ["save", "strict"]


def heat(u0, alpha):
    """The concatenation's adjoint splits by the first two parts' lengths: the third's,
    taped per step, was never read."""
    u = u0
    for _ in range(4):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        u = np.concatenate([u[:1], u[1:-1] + alpha * lap, u[-1:]])
    return np.sum(u * u)


def softmax_steps(W, xs, targets):
    """A log-sum-exp per step (as the rnn workload's loss): its log was taped, unread."""
    h = np.zeros(W.shape[0])
    loss = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
        y = h - np.max(h)
        loss = loss - np.sum(targets[t] * (y - np.log(np.sum(np.exp(y)))))
    return loss


def every_column_read(h, x):
    """Look-alike: every recorded value is read (nothing to drop)."""
    s = 0.0
    for i in range(x.shape[0]):
        a = np.sin(x[i] * h)
        b = a * x[i]
        s = s + b * b
    return s


class Diffuser:
    def __init__(self, alpha):
        self.alpha = alpha

    def __call__(self, u0):
        return heat(u0, self.alpha) + np.sum(u0)


def _unread_columns(fn, args):
    """Names reversed loops unpack from a tape that the pullback never loads."""
    tree = ast.parse(adgen.source(fn, *args))
    out = []
    for f in tree.body:
        if not (isinstance(f, ast.FunctionDef) and f.name.endswith("_pullback")):
            continue
        loads = _live_loads(f)
        for loop in ast.walk(f):
            if isinstance(loop, ast.For) and isinstance(loop.iter, ast.Call) and \
                    getattr(loop.iter.func, "id", None) == "reversed" and \
                    isinstance(loop.iter.args[0], ast.Name):
                out += [t.id for t in ast.walk(loop.target)
                        if isinstance(t, ast.Name) and t.id != "_" and t.id not in loads]
    return out


def _live_loads(f):
    """The names some statement loads, not counting ``x = ...`` copies whose ``x`` nothing
    loads in turn (``t_shape = (t_len,)`` never read)."""
    copies = [st for st in ast.walk(f) if isinstance(st, ast.Assign) and
              len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)]
    dead: set[int] = set()
    while True:
        skip = {id(n) for st in copies if id(st) in dead for n in ast.walk(st.value)}
        loads = {n.id for n in ast.walk(f) if isinstance(n, ast.Name) and
                 isinstance(n.ctx, ast.Load) and id(n) not in skip}
        more = {id(st) for st in copies if st.targets[0].id not in loads} - dead
        if not more:
            return loads
        dead |= more


def _cases():
    rng = np.random.default_rng(0)
    return [(heat, (rng.standard_normal(7), 0.2), (0, 1)),
            (softmax_steps, (0.3 * rng.standard_normal((4, 4)), rng.standard_normal((5, 4)),
                             rng.random((5, 4))), (0, 1)),
            (every_column_read, (0.7, rng.standard_normal(5)), (0, 1))]


@pytest.mark.parametrize("k", range(3))
def test_every_taped_column_is_read(k):
    fn, args, _ = _cases()[k]
    assert _unread_columns(fn, args) == [], adgen.source(fn, *args)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("k", range(3))
def test_gradients(k, mutation):
    fn, args, argnums = _cases()[k]
    check_grad(fn, args, argnums, mutation=mutation, rtol=1e-5)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_heat_while_the_lengths_change(n):
    # at 1 and 2 points the concatenation makes u longer: the lengths kept change per step
    check_grad(heat, (np.random.default_rng(n).standard_normal(n), 0.3), (0, 1), rtol=1e-5)


def test_a_method_and_a_lambda():
    u0 = np.random.default_rng(1).standard_normal(6)
    check_grad(Diffuser(0.25), (u0,), 0)
    check_grad(lambda u: 3.0 * heat(u, 0.1), (u0,), 0)  # the callee's rows


def linear_heat(u0):
    u = u0
    for _ in range(5):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        u = np.concatenate([u[:1], u[1:-1] + 0.2 * lap, u[-1:]])
    return np.sum(u * u)


@pytest.mark.parametrize("n", [1, 2, 5])
def test_a_row_of_one_length_is_that_length(n):
    u0 = np.random.default_rng(n).standard_normal(n)
    text = adgen.source(linear_heat, u0)
    rows = [line.strip() for line in text.split("_pullback(")[0].splitlines()
            if ".append(" in line]
    assert rows == ["tape1.append(len(u_1))"], text
    assert "for u_1_len1 in reversed(tape1):" in text, text
    for mutation in POLICIES:
        check_grad(linear_heat, (u0,), 0, mutation=mutation, rtol=1e-5)


def test_numba_backend_agrees():
    pytest.importorskip("numba")
    fn, args, argnums = _cases()[0]
    want = adgen.grad(fn, argnums=argnums)(*args)
    got = adgen.grad(fn, argnums=argnums, backend="auto")(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_the_pass_on_trees():
    from adgen.transforms.dead_columns import drop_dead_columns, unwrapped_rows

    fwd = gast.parse(
        "def f_forward(x):\n"
        "    tape1 = []\n"
        "    for i in range(3):\n"
        "        t = x * i\n"
        "        tape1.append((i, len(t), t, g(t)))\n"
        "    return (x, (tape1,))\n").body[0]
    pb = gast.parse(
        "def f_pullback(saved, out_bar):\n"
        "    (tape1,) = saved\n"
        "    for i, t_len, t, u in reversed(tape1):\n"
        "        t_shape = (t_len,)\n"
        "        kept = i\n"
        "        del kept\n"
        "        out_bar = out_bar * t\n"
        "    return out_bar\n").body[0]
    drop_dead_columns(fwd, pb)
    text = gast.unparse(fwd) + gast.unparse(pb)
    # the length (read only by a dead copy) goes; i (read by a copy a del needs), t (read)
    # and g(t) (a call: it may have an effect) stay
    assert "tape1.append((i, t, g(t)))" in text and "for i, t, u in reversed(tape1)" in text
    assert "t_shape" not in text and "kept = i" in text and "del kept" in text
    assert unwrapped_rows(fwd, pb) is None  # three columns
    fwd.body[1].body[1].value.args[0].elts[1:] = []
    pb.body[1].target.elts[1:] = []
    fwd2, pb2 = unwrapped_rows(fwd, pb)
    assert "tape1.append(i)" in gast.unparse(fwd2) and "for i in reversed(tape1)" in \
        gast.unparse(pb2)
    assert "tape1.append((i,))" in gast.unparse(fwd)  # the trees themselves keep the tuple


def viterbi_score(logA, logb, init):
    """Max-plus (session 17's Viterbi): the j loop's row recorded best, which its
    pullback reads only in the i loop, whose row binds best again."""
    T = logb.shape[0]
    K = init.shape[0]
    delta = init + logb[0]
    new = np.empty(K)
    for t in range(1, T):
        for j in range(K):
            best = -np.inf
            for i in range(K):
                best = np.maximum(best, delta[i] + logA[i, j])
            new[j] = best + logb[t, j]
        delta[:] = new
    return np.max(delta)


def triangular_max(x, w):
    """The inner loop runs no iteration for j = 0: best is then the outer binding."""
    s = 0.0
    for j in range(x.shape[0]):
        best = x[j] * w[j]
        for i in range(j):
            best = max(best, x[i] * w[j])
        s += best * best
    return s


@pytest.mark.parametrize("backend", ["default", "numba"])
@pytest.mark.parametrize("mutation", POLICIES)
def test_a_column_bound_again_by_the_inner_row_is_dropped(backend, mutation):
    if backend == "numba":
        pytest.importorskip("numba")
    rng = np.random.default_rng(3)
    args = (np.log(rng.random((4, 4))), np.log(rng.random((6, 4))), np.log(rng.random(4)))
    grad = functools.partial(adgen.grad, backend=backend)
    check_grad(viterbi_score, args, (0, 1, 2), mutation=mutation, grad=grad, rtol=1e-5)
    text = adgen.source(viterbi_score, *args, backend=backend)
    assert ("tape2_best" not in text) if backend == "numba" else \
        "tape2.append((j, tape1_lo" in text or "tape2.append((j, tape1))" in text, text
    x, w = rng.standard_normal(5), rng.standard_normal(5)
    check_grad(triangular_max, (x, w), (0, 1), mutation=mutation, grad=grad, rtol=1e-5)


def test_a_column_read_after_an_inner_loop_that_may_not_run_stays():
    from adgen.transforms.dead_columns import drop_dead_columns

    def pair(after: str) -> tuple[gast.FunctionDef, gast.FunctionDef]:
        fwd = gast.parse(
            "def f_forward(x):\n"
            "    tape2 = []\n"
            "    for j in range(3):\n"
            "        b = x * j\n"
            "        tape1 = []\n"
            "        for i in range(j):\n"
            "            c = b * i\n"
            "            tape1.append((b, c))\n"
            "            b = c\n"
            "        tape2.append((b, j, tape1))\n"
            "    return (x, (tape2,))\n").body[0]
        pb = gast.parse(
            "def f_pullback(saved, out_bar):\n"
            "    (tape2,) = saved\n"
            "    for b, j, tape1 in reversed(tape2):\n"
            "        for b, c in reversed(tape1):\n"
            "            out_bar = out_bar * b + c * j\n"
            f"{after}"
            "    return out_bar\n").body[0]
        drop_dead_columns(fwd, pb)
        return gast.unparse(fwd), gast.unparse(pb)

    fwd, pb = pair("")
    assert "tape2.append((j, tape1))" in fwd and "for j, tape1 in reversed(tape2)" in pb
    # read after the inner loop (which runs no iteration for j = 0): the outer b is read
    fwd, pb = pair("        out_bar = out_bar + b\n")
    assert "tape2.append((b, j, tape1))" in fwd and "for b, j, tape1 in reversed(tape2)" in pb
    # read after the outer loop: the last row's b
    fwd, pb = pair("    out_bar = out_bar + b\n")
    assert "tape2.append((b, j, tape1))" in fwd


def gauss_seidel_sweeps(A, b, sweeps):
    """The inner row recorded r, which the pullback's outer row binds again (and reads)
    before each inner loop, so the inner binding was read by nothing."""
    n = b.shape[0]
    x = np.zeros(n)
    for s in range(sweeps):
        for i in range(n):
            r = b[i]
            for j in range(n):
                if j != i:
                    r -= A[i, j] * x[j]
            x[i] = r / A[i, i]
    s = 0.0
    for i in range(n):
        s += x[i] * x[i]
    return s


@pytest.mark.parametrize("backend", ["default", "numba"])
@pytest.mark.parametrize("mutation", POLICIES)
def test_a_column_the_outer_row_binds_again_before_the_inner_loop_is_dropped(backend,
                                                                             mutation):
    if backend == "numba":
        pytest.importorskip("numba")
    rng = np.random.default_rng(4)
    A = rng.standard_normal((5, 5)) * 0.3 + 5.0 * np.eye(5)
    args = (A, rng.standard_normal(5), 3)
    grad = functools.partial(adgen.grad, backend=backend)
    check_grad(gauss_seidel_sweeps, args, (0, 1), mutation=mutation, grad=grad, rtol=1e-5)
    text = adgen.source(gauss_seidel_sweeps, *args, backend=backend)
    assert ("tape1_r_1" not in text) if backend == "numba" else \
        "tape1.append((j, r_1" not in text, text


def test_a_column_read_after_the_inner_loop_in_the_outer_row_stays():
    from adgen.transforms.dead_columns import drop_dead_columns

    def pair(before: str, after: str) -> tuple[str, str]:
        fwd = gast.parse(
            "def f_forward(x):\n"
            "    tape2 = []\n"
            "    for j in range(3):\n"
            "        b = x * j\n"
            "        tape1 = []\n"
            "        for i in range(2):\n"
            "            c = b * i\n"
            "            tape1.append((b, c))\n"
            "            b = c\n"
            "        tape2.append((b, j, tape1))\n"
            "    return (x, (tape2,))\n").body[0]
        pb = gast.parse(
            "def f_pullback(saved, out_bar):\n"
            "    (tape2,) = saved\n"
            "    for b, j, tape1 in reversed(tape2):\n"
            f"{before}"
            "        for b, c in reversed(tape1):\n"
            "            out_bar = out_bar * c + j\n"
            f"{after}"
            "    return out_bar\n").body[0]
        drop_dead_columns(fwd, pb)
        return gast.unparse(fwd), gast.unparse(pb)

    # the outer row's b read before the inner loop: the inner b is read by nothing
    fwd, pb = pair("        out_bar = out_bar + b\n", "")
    assert "tape1.append((b, c))" not in fwd and "for b, c in reversed(tape1)" not in pb, pb
    assert "reversed(tape1)" in pb and "tape1.append(" in fwd
    assert "tape2.append((b, j, tape1))" in fwd
    # read after the inner loop too: that read sees the inner loop's last b
    fwd, pb = pair("        out_bar = out_bar + b\n", "        out_bar = out_bar + b\n")
    assert "tape1.append((b, c))" in fwd
