"""lean_pullback inside loops: a reversed loop body drops its iteration's arrays after their
last read (``del``) and updates an adjoint it made in that iteration in place.

Two kinds of tests:

- pullbacks written out by hand and rewritten by ``lean_pullback`` itself, run before and
  after the rewrite on the same data: each ownership condition (made in this iteration, not
  read at a later iteration or after the loop, not kept by a list or a view) has a case that
  gives a different result if the condition is dropped;
- user programs (slices updated in a time loop, a recurrence, a while loop, nested loops, a
  method, a lambda) through ``adgen.grad`` against central differences under both policies,
  the generated source checked for the rewrite, the peak memory of the gradient, and second
  derivatives through the rewritten code.
"""

from __future__ import annotations

import gc
import textwrap
import tracemalloc

import gast
import numpy as np
import pytest
from adgen.transforms.emit import to_source
from adgen.transforms.lean_pullback import LeanFacts, lean_pullback

import adgen
from adgen.runtime import ShadowMap
from tests.gradcheck import check_grad, numerical_grad

POLICIES = ["save", "strict"]


# --------------------------------------------------------------------------------------------
# Pullbacks written out, rewritten by lean_pullback, run before and after.


def _rewrite(src: str, ranks: dict[str, int], in_place: bool = True) -> str:
    tree = gast.parse(textwrap.dedent(src))
    fn = tree.body[0]
    # x, the saved value, is a float64 array (analyses.floats); n's dtype is not known
    lean_pullback(fn, LeanFacts(ranks=ranks, in_place=in_place, f64={"x"}))
    return to_source(fn)


def _run(src: str, x: np.ndarray) -> object:
    ns: dict[str, object] = {"np": np, "ShadowMap": ShadowMap}
    exec(src, ns)  # noqa: S102 - test code written above
    return ns["f_pullback"]((x.copy(), np.arange(6)), 1.0)  # type: ignore[operator]


def _same_results(src: str, ranks: dict[str, int]) -> str:
    new = _rewrite(src, ranks)
    x = np.arange(1.0, 7.0)
    before, after = _run(textwrap.dedent(src), x), _run(new, x)
    for b, a in zip(before, after, strict=True):  # type: ignore[call-overload]
        np.testing.assert_array_equal(a, b)
    return new


RANKS = {n: 1 for n in ("x", "x_bar", "a", "c", "v", "t", "u", "w")}

SLICE_STEP = """
def f_pullback(saved, out_bar, sh=None):
    sh = ShadowMap()
    x, n = saved
    x_bar = sh.of(x)
    x_bar += x * out_bar
    for i in range(3):
        a = x_bar[1:].copy()
        x_bar[1:] = 0.0
        c = a * 2.0
        v = x_bar[:-1]
        v += c
    return (x_bar,)
"""


def test_an_iterations_copy_is_scaled_in_place_and_dropped():
    new = _same_results(SLICE_STEP, RANKS)
    assert "a *= 2.0" in new and "c = a\n" in new
    # one del after the last read of a and c (aliases), the view v with it
    assert "del a, c, v" in new
    strict = _rewrite(SLICE_STEP, RANKS, in_place=False)
    # (c = a * 2.0 is a new array there: a goes after its last read, c with the view)
    assert "a *= 2.0" not in strict and "del a\n" in strict and "del c, v" in strict


def test_a_value_read_at_the_next_iteration_is_not_overwritten():
    # a is bound late in the body and read at the start of the next iteration: it is live
    # at the end of the body (the in-place form would scale what the next iteration reads)
    src = """
def f_pullback(saved, out_bar, sh=None):
    sh = ShadowMap()
    x, n = saved
    x_bar = sh.of(x)
    x_bar += x * out_bar
    a = x * 0.0
    for i in range(3):
        v = x_bar[:]
        v += a
        a = x * 0.5
        c = a * 2.0
        w = x_bar[:]
        w += c
    return (x_bar,)
"""
    new = _same_results(src, RANKS)
    assert "a *= 2.0" not in new and "del a" not in new


def test_a_value_from_before_the_loop_is_not_owned():
    src = """
def f_pullback(saved, out_bar, sh=None):
    sh = ShadowMap()
    x, n = saved
    x_bar = sh.of(x)
    w = x * 3.0
    for i in range(3):
        c = w * 2.0
        x_bar += c
    return (x_bar,)
"""
    new = _same_results(src, RANKS)
    assert "w *= 2.0" not in new
    assert "del c" in new  # c is the iteration's own


def test_a_value_read_after_the_loop_is_kept():
    src = """
def f_pullback(saved, out_bar, sh=None):
    sh = ShadowMap()
    x, n = saved
    x_bar = sh.of(x)
    for i in range(3):
        a = x * 1.5
        c = a * 2.0
        x_bar += c
    return (x_bar, a)
"""
    new = _same_results(src, RANKS)
    assert "a *= 2.0" not in new and "del a" not in new.replace("del a, c", "")


def test_a_value_kept_by_a_list_or_a_view_is_not_overwritten():
    for keep in ("kept.append(a)", "t = a[1:]\n        kept.append(t)"):
        src = f"""
def f_pullback(saved, out_bar, sh=None):
    sh = ShadowMap()
    x, n = saved
    x_bar = sh.of(x)
    kept = []
    for i in range(3):
        a = x * 1.5
        {keep}
        c = a * 2.0
        x_bar += c
    return (x_bar, kept[0], kept[1], kept[2])
"""
        new = _same_results(src, RANKS)
        assert "a *= 2.0" not in new


def test_a_name_read_before_it_is_bound_in_the_body_is_not_dropped():
    # u's first mention in the body is a read (last iteration's value): not iteration-local
    src = """
def f_pullback(saved, out_bar, sh=None):
    sh = ShadowMap()
    x, n = saved
    x_bar = sh.of(x)
    u = x * 1.0
    for i in range(3):
        x_bar += u
        u = x_bar * 0.5
    return (x_bar,)
"""
    new = _same_results(src, RANKS)
    assert "del u" not in new


def test_a_name_a_closure_reads_is_not_dropped():
    src = """
def f_pullback(saved, out_bar, sh=None):
    sh = ShadowMap()
    x, n = saved
    x_bar = sh.of(x)
    fs = []
    for i in range(3):
        a = x * 1.5
        fs.append(lambda: a)
        x_bar += a
    return (x_bar, fs[0]())
"""
    new = _same_results(src, RANKS)
    assert "del a" not in new


def test_a_numbers_update_and_a_while_loop():
    src = """
def f_pullback(saved, out_bar, sh=None):
    sh = ShadowMap()
    x, n = saved
    x_bar = sh.of(x)
    x_bar += x
    k = 0
    while k < 3:
        a = x_bar[2:].copy()
        c = a / 4.0
        w = x_bar[:-2]
        w += c
        k += 1
    return (x_bar,)
"""
    new = _same_results(src, RANKS)
    assert "a /= 4.0" in new and "del a, c, w" in new


def test_an_int_copy_is_not_divided_in_place():
    # a part of a saved array of unknown dtype (ints here): a / 4.0 is a new float array
    src = """
def f_pullback(saved, out_bar, sh=None):
    sh = ShadowMap()
    x, n = saved
    x_bar = sh.of(x)
    for i in range(2):
        a = n[1:].copy()
        c = a / 4.0
        v = x_bar[1:]
        v += c
    return (x_bar,)
"""
    new = _same_results(src, dict(RANKS, n=1))
    assert "a /= 4.0" not in new


# --------------------------------------------------------------------------------------------
# User programs through adgen.grad.


def jacobi(A):
    A = A.copy()
    B = A.copy()
    for _ in range(4):
        B[1:-1] = (A[:-2] + A[1:-1] + A[2:]) / 3.0
        A[1:-1] = (B[:-2] + B[1:-1] + B[2:]) / 3.0
    return np.sum(A ** 2)


def _pullback_of(f, *args, policy="save"):
    return adgen.source(f, *args, mutation=policy).split("_pullback(")[1]


@pytest.mark.parametrize("policy", POLICIES)
def test_slices_updated_in_a_time_loop(policy):
    A = np.random.default_rng(0).standard_normal(12)
    check_grad(jacobi, (A,), mutation=policy)
    pb = _pullback_of(jacobi, A, policy=policy)
    loop = pb.split("in reversed(")[1]
    assert ("/= 3.0" in loop) == (policy == "save")
    assert "\n        del " in loop


def _peak(call):
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        out = call()
        _, peak = tracemalloc.get_traced_memory()
        del out
    finally:
        tracemalloc.stop()
    return peak - base


def test_the_time_loops_peak_is_five_arrays():
    # the forward's A and B, their adjoints, and one step's copy: the hand adjoint's five
    # arrays (one step's copy, its quotient and the last step's copies alive besides before)
    A = np.random.default_rng(1).standard_normal(20000)
    grad = adgen.grad(jacobi)
    grad(A)
    assert _peak(lambda: grad(A)) < 5.5 * A.nbytes


def recurrence(x, w):
    h = np.zeros_like(x)
    for t in range(5):
        h = np.tanh(w * h + x)
        h = h * 0.5 + x * 0.25
    return np.sum(h * h)


def nested(A):
    A = A.copy()
    for _ in range(2):
        for j in range(1, A.shape[0]):
            A[j] = A[j] + 0.5 * A[j - 1]
            A[j] = A[j] / 2.0
    return np.sum(A ** 2)


def while_loop(x):
    y = x.copy()
    k = 0
    while k < 3:
        y[1:] = (y[1:] + y[:-1]) / 2.0
        k += 1
    return np.sum(np.sin(y))


class Smoother:
    def __init__(self, steps):
        self.steps = steps

    def energy(self, u):
        u = u.copy()
        for _ in range(self.steps):
            u[1:-1] = 0.25 * u[:-2] + 0.5 * u[1:-1] + 0.25 * u[2:]
        return np.sum(u ** 3)


@pytest.mark.parametrize("policy", POLICIES)
def test_programs_a_user_writes(policy):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(7)
    check_grad(recurrence, (x, 0.7), argnums=(0, 1), mutation=policy)
    check_grad(nested, (rng.standard_normal((4, 3)),), mutation=policy)
    check_grad(while_loop, (x,), mutation=policy)
    check_grad(Smoother(3).energy, (x,), mutation=policy)
    smooth = lambda u: np.sum(jacobi(u) * u)  # noqa: E731
    check_grad(smooth, (x,), mutation=policy)


def test_a_pullback_runs_again_to_the_same_result():
    A = np.random.default_rng(3).standard_normal(9)
    _, pull = adgen.vjp(jacobi, A)
    first = pull(1.0)[0].copy()
    np.testing.assert_array_equal(pull(1.0)[0], first)
    np.testing.assert_array_equal(pull(2.0)[0], 2.0 * first)


def smoothed_cubic(u):
    u = u.copy()
    v = u.copy()
    for _ in range(2):
        v[1:-1] = (u[:-2] + u[1:-1] + u[2:]) / 3.0
        u[1:-1] = (v[:-2] + v[1:-1] + v[2:]) / 3.0
    return np.sum(u ** 3)


def test_second_derivatives_through_the_rewritten_loop():
    u = np.random.default_rng(4).standard_normal(6)
    assert "/= 3.0" in _pullback_of(smoothed_cubic, u).split("in reversed(")[1]
    g = adgen.grad(smoothed_cubic)
    expected = np.stack([numerical_grad(lambda y, k=k: g(y)[k], (u,), 0)
                         for k in range(u.size)])
    np.testing.assert_allclose(adgen.hessian(smoothed_cubic)(u), expected, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(adgen.jacrev(adgen.grad(smoothed_cubic))(u), expected,
                               rtol=1e-5, atol=1e-6)


def _softplus(v, beta):
    return np.log(1.0 + np.exp(beta * v)) / beta


def _scaled(v, k):
    return v * v * k


def _row_energy(r, a):
    s = 0.0
    for j in range(len(r)):
        s += np.sin(a * r[j]) * r[j]
    return s


def callees_in_nested_loops(X, a):
    # each reversed body unpacks callees' cotangents (ct, _ = f_pullback(...)), the inner
    # one and the outer one both binding _: the inner body's del of it must not leave the
    # outer body deleting an unbound name (UnboundLocalError)
    s = 0.0
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            s += _softplus(X[i, j], a) + _scaled(X[i, j], 3) + _scaled(a, 0.5)
        s += _row_energy(X[i] * a, 0.7)
    return s


@pytest.mark.parametrize("policy", POLICIES)
def test_callees_cotangents_in_nested_loops(policy):
    rng = np.random.default_rng(5)
    X = rng.standard_normal((3, 4))
    check_grad(callees_in_nested_loops, (X, 0.8), argnums=(0, 1), mutation=policy)
