"""A caller keeps a callee's saved values element by element (transforms/callee_saved.py,
reverse_calls.Calls._saved_again): the elements the callee made on its own, its parameters
not at all (the caller reads its own arguments when it calls the pullback).

Integrators a user writes with a helper right-hand side (RK4 with preallocated stages,
explicit Euler, leapfrog, a lambda, a static method, a helper calling a helper), checked
against central differences under both policies, and through vjp's pullback run twice.
Look-alikes whose callee must keep its tuple (it writes its parameter, views it in shadow
memory, rebinds it, takes ``*args``) or whose argument is passed in a form the caller cannot
read again (a default, a packed tuple), and an argument overwritten after the call. The
loop's tape holds no tuple per call (the tests of the form fail without the layout).
"""

from __future__ import annotations

import gc
import re
import tracemalloc

import numpy as np
import pytest
from adgen.transforms.analyses.kinds import signature
from adgen.transforms.callee_saved import saved_layout
from adgen.transforms.pipeline import compile_function
from gradcheck import check_grad, numerical_grad

import adgen
from adgen.api import compile_fun

POLICIES = ["save", "strict"]
RNG = np.random.default_rng(11)
N = 5
Y0 = RNG.standard_normal(N)
W0 = RNG.standard_normal((N, N)) / np.sqrt(N)
DT = 0.1
STEPS = 30


def rhs(y, W):
    return np.tanh(W @ y)


def rk4(y0, W):
    y = y0.copy()
    k = np.empty((4, y0.shape[0]))
    for _ in range(STEPS):
        k[0] = rhs(y, W)
        k[1] = rhs(y + 0.5 * DT * k[0], W)
        k[2] = rhs(y + 0.5 * DT * k[1], W)
        k[3] = rhs(y + DT * k[2], W)
        y += DT / 6.0 * (k[0] + 2.0 * k[1] + 2.0 * k[2] + k[3])
    return np.sum(y ** 2)


def euler(y0, W):
    y = y0
    for _ in range(8):
        y = y + DT * rhs(y, W)
    return np.sum(np.sin(y))


def force(q, k):
    return -k * q ** 3


def leapfrog(q0, p0, k):
    q, p = q0.copy(), p0.copy()
    p += 0.5 * DT * force(q, k)
    for _ in range(7):
        q += DT * p
        p += DT * force(q, k)
    return np.sum(q ** 2) + np.sum(p * q)


def layer(y, W):
    return W @ y


def nested_rhs(y, W):
    return np.tanh(layer(y, W)) * y


def euler_nested(y0, W):
    y = y0
    for _ in range(5):
        y = y + DT * nested_rhs(y, W)
    return np.sum(y ** 2)


lambda_rhs = lambda y, W: np.sin(W @ y)  # noqa: E731 - a user's lambda helper


def euler_lambda(y0, W):
    y = y0
    for _ in range(5):
        y = y + DT * lambda_rhs(y, W)
    return np.sum(y ** 2)


class Oscillator:
    @staticmethod
    def rhs(y, W):
        return np.cos(W @ y) * y

    def run(self, y0, W):
        y = y0
        for _ in range(5):
            y = y + DT * Oscillator.rhs(y, W)
        return np.sum(y ** 2)


def method_run(y0, W):
    return Oscillator().run(y0, W)


def keyword_rhs(y, W, scale=2.0):
    return np.tanh(scale * (W @ y))


def euler_keywords(y0, W):
    y = y0
    for _ in range(4):
        y = y + DT * keyword_rhs(W=W, y=y)  # by keyword; scale left to its default
        y = y + DT * keyword_rhs(y, W, 0.5)
    return np.sum(y ** 2)


WG = RNG.standard_normal((N, N)) / np.sqrt(N)


def scaled(y, c):
    return np.tanh(c * y)


def euler_global_and_constant(y0, c):
    y = y0
    for _ in range(4):
        y = y + DT * rhs(y, WG)  # a global array: read again through the free values
        y = y + DT * scaled(y, 2.0)  # a constant: scaled keeps its tuple
        y = y + DT * scaled(y, c)
    return np.sum(y ** 2)


def once_at_top(y0, W):
    k = rhs(y0, W)  # outside any loop: the function's own saved values hold the parts
    y = y0 + k
    y = y * 0.5
    return np.sum(y * rhs(y, W))


def make_rhs(scale):
    def closure_rhs(y, W):
        return np.tanh(scale * (W @ y)) * y
    return closure_rhs


CLOSURE_RHS = make_rhs(0.8)


def euler_closure(y0, W):
    y = y0
    for _ in range(4):
        y = y + DT * CLOSURE_RHS(y, W)  # a factory's closure: its cell read at each call
    return np.sum(y ** 2)


def branches_and_while(y0, W):
    y = y0
    n = 0
    while n < 4:
        if np.sum(y) > 0.0:  # the call on one path: its elements are None on the other
            y = y + DT * rhs(y, W)
        else:
            y = y * 0.9
        try:
            t = y - DT * rhs(y, W) ** 2
        except FloatingPointError:
            t = y * 0.5
        y = t
        n += 1
    return np.sum(y ** 2)


CASES = [(branches_and_while, (Y0, W0), (0, 1)), (branches_and_while, (-Y0, W0), (0, 1)),
         (euler_closure, (Y0, W0), (0, 1)), (euler_global_and_constant, (Y0, 0.7), (0, 1)), (once_at_top, (Y0, W0), (0, 1)),
         (rk4, (Y0, W0), (0, 1)), (euler, (Y0, W0), (0, 1)),
         (leapfrog, (Y0, 0.5 * Y0[::-1].copy(), 0.7), (0, 1, 2)),
         (euler_nested, (Y0, W0), (0, 1)), (euler_lambda, (Y0, W0), (0, 1)),
         (method_run, (Y0, W0), (0, 1)), (euler_keywords, (Y0, W0), (0, 1))]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f,args,argnums", CASES, ids=[f"{c[0].__name__}{k}" for k, c in enumerate(CASES)])
def test_integrators_with_helper_right_hand_sides(f, args, argnums, policy):
    check_grad(f, args, argnums, mutation=policy)


def _generated(f, args, argnums):
    return compile_fun(f, "save", wrt=tuple(argnums), sig=signature(args)).source


@pytest.mark.parametrize("f,args,argnums,helper",
                         [(rk4, (Y0, W0), (0, 1), "rhs"), (euler, (Y0, W0), (0, 1), "rhs"),
                          (leapfrog, (Y0, Y0.copy(), 0.7), (0, 1, 2), "force"),
                          (euler_lambda, (Y0, W0), (0, 1), "lambda_rhs")])
def test_the_loop_keeps_no_tuple_per_call(f, args, argnums, helper):
    text = _generated(f, args, argnums)
    caller = text[text.index(f"def {f.__name__}_forward"):]
    row = next(line for line in caller.splitlines() if ".append((" in line)
    assert f"{helper}_saved" not in row, row  # the tuple is not taped
    # built again where the pullback is called (redirected by remap_saved where an argument
    # is overwritten after the call: leapfrog's q)
    assert re.search(r"_pullback\((remap_saved\()?\(", caller), caller


def test_a_callee_that_reads_only_its_arguments_keeps_nothing_of_its_own():
    # layer's pullback reads W and y, both the caller's: nothing of layer's is kept
    layout = saved_layout(compile_function(layer))
    assert layout is not None and all(isinstance(e, int) for e in layout)
    assert saved_layout(compile_function(rhs)) is not None


def writes_param(y, a):
    y *= a
    return np.sum(np.sin(y))


def writes_caller(y0, a):
    s = 0.0
    for _ in range(3):
        y = y0 * 1.5
        s = s + writes_param(y, a)
    return s


def views_param(y):
    v = y[1:]
    v *= 2.0
    return np.sum(y ** 2)


def views_caller(x):
    s = 0.0
    for _ in range(3):
        z = x + 1.0
        s = s + views_param(z)
    return s


def rebinds(y, W):
    y = W @ y
    return np.tanh(y) * y


def rebinds_caller(y0, W):
    y = y0
    for _ in range(3):
        y = y + DT * rebinds(y, W)
    return np.sum(y ** 2)


def packed(y, *ws):
    return np.tanh(ws[0] @ y) + ws[1] * y


def packed_caller(y0, W):
    y = y0
    for _ in range(3):
        y = y + DT * packed(y, W, 0.5)
    return np.sum(y ** 2)


def overwritten_after(y0, W):
    y = y0.copy()
    s = 0.0
    for _ in range(3):
        t = rhs(y, W)
        y *= 0.9  # the argument rhs read, overwritten after the call
        s = s + np.sum(t * y)
    return s


def test_callees_that_keep_their_tuple():
    layout = saved_layout(compile_function(writes_param))
    assert layout is None or 0 not in _flat(layout)
    assert saved_layout(compile_function(views_param)) is None  # shadow memory
    # a helper calling a helper compiles without kinds: it hands y's adjoint over in shadow
    # memory (sh.deposit), keyed by the object
    assert saved_layout(compile_function(nested_rhs)) is None
    # y = W @ y binds a new name (SSA): the matmul's pullback reads y as received
    layout = saved_layout(compile_function(rebinds))
    assert sorted(e for e in _flat(layout) if isinstance(e, int)) == [0, 1]


def _flat(layout):
    for e in layout:
        if isinstance(e, tuple):
            yield from _flat(e)
        else:
            yield e


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f,args", [(writes_caller, (Y0, 0.8)), (views_caller, (Y0,)),
                                    (rebinds_caller, (Y0, W0)), (packed_caller, (Y0, W0)),
                                    (overwritten_after, (Y0, W0))],
                         ids=["writes", "views", "rebinds", "packed", "overwritten"])
def test_look_alikes(f, args, policy):
    check_grad(f, args, tuple(range(len(args))), mutation=policy)


def test_vjp_pullback_runs_twice():
    out, pullback = adgen.vjp(rk4, Y0, W0)
    first = pullback(1.0)
    second = pullback(1.0)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(first[0], numerical_grad(rk4, (Y0, W0), 0), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(2.0 * first[1], pullback(2.0)[1], rtol=1e-12)


def rk4_inlined(y0, W):
    y = y0.copy()
    k = np.empty((4, y0.shape[0]))
    for _ in range(STEPS):
        k[0] = np.tanh(W @ y)
        k[1] = np.tanh(W @ (y + 0.5 * DT * k[0]))
        k[2] = np.tanh(W @ (y + 0.5 * DT * k[1]))
        k[3] = np.tanh(W @ (y + DT * k[2]))
        y += DT / 6.0 * (k[0] + 2.0 * k[1] + 2.0 * k[2] + k[3])
    return np.sum(y ** 2)


def _peak(call):
    for _ in range(3):  # the second call of a signature builds grad's fast form
        call()
    gc.collect()  # (and empties the free lists: a tuple they hold is not traced)
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_helper_costs_about_what_its_body_costs_in_memory():
    # per call and step the tuple was 64 bytes and a slot: rk4 with its helper peaked 19%
    # above the inlined code (53.6 kB, 45.1 kB); now the elements alone (each stage's
    # argument, which the inlined code keeps too, and tanh's output): 47.0 kB
    helper = adgen.grad(rk4, argnums=(0, 1))
    inlined = adgen.grad(rk4_inlined, argnums=(0, 1))
    np.testing.assert_allclose(helper(Y0, W0)[1], inlined(Y0, W0)[1], rtol=1e-12)
    assert _peak(lambda: helper(Y0, W0)) <= 1.1 * _peak(lambda: inlined(Y0, W0))


def times(v, a):
    return v * a  # its pullback reads v and a, both the caller's: nothing of its own kept


def scalar_loop(x, a):
    s = 0.0
    for i in range(x.shape[0]):
        s += times(x[i], a) * times(x[i], 3) + times(a, x[i]) ** 2
    return s


@pytest.mark.parametrize("policy", POLICIES)
def test_numba_matches_a_call_that_keeps_only_arguments(policy):
    pytest.importorskip("numba")
    x = RNG.standard_normal(6)
    # times is compiled for (float, float) and (float, int): the pullback's call is matched
    # with its forward's by the arguments it passes again
    got = adgen.grad(scalar_loop, argnums=(0, 1), mutation=policy, backend="numba")(x, 0.6)
    for k in (0, 1):
        np.testing.assert_allclose(got[k], numerical_grad(scalar_loop, (x, 0.6), k),
                                   rtol=1e-6, atol=1e-8)
    assert "times_pullback((" in adgen.source(scalar_loop, x, 0.6)
