"""Reverse over reverse: second derivatives through adgen's own generated pullbacks.

``jacrev(grad(f))`` and ``grad(grad(f))`` differentiate the generated forward and pullback of
``grad(f)`` with reverse mode (adgen.second_order) where the generated code allows it, and
take the forward-over-reverse path (Hessian-vector products) otherwise; ``explain(grad(f),
x).route`` says which. On the higher-order corpus (tests/higher_order_functions.py), under
both mutation policies, the Hessians agree with forward over reverse (``adgen.hessian``) and
with central differences of ``adgen.grad``; the functions listed in ``REVERSE`` must take the
reverse-over-reverse path (so that a change routing them elsewhere fails here).
"""

from __future__ import annotations

import copy
import math
import sys
from typing import Any

import numpy as np
import pytest
from higher_order_functions import SCALAR, SCALARS

import adgen

POLICIES = ["save", "strict"]
EPS = 1e-5

# The corpus functions whose generated code reverse mode differentiates again (23 of 27):
# loops with list and typed tapes, branches, early return, allocate-then-fill, in-place
# stencils, views written in place, out=, np.add.at, np.copyto, np.where, matmul, solve, det,
# inv, max, norm, and in-place updates whose overwritten values the gradient reads (validity
# guards: their captures become copies). The others take the forward-over-reverse path:
# list_append (pop_adjoint has no second-order rule), recursive and callee_writes (a callee's
# pullback shares its caller's shadow map), checkpointed_steps (a call resolved at run time).
REVERSE = {"fill_loop", "stencil_inplace", "view_scaled", "branch", "while_loop", "add_at",
           "out_argument", "fill_then_copyto", "early_return", "softplus", "running", "heat",
           "where_branches", "gram", "solve_outer", "logsumexp", "det2", "norm_cubed",
           "tridiagonal", "out_of_constant", "times_equal", "reaction_stencil",
           "view_nonlinear"}
ROUTE = "reverse over reverse"


def route(f: Any, x: Any, policy: str) -> str:
    return adgen.explain(adgen.grad(f, mutation=policy), copy.deepcopy(x), file=None).route


def fd_hessian(f: Any, x: np.ndarray, policy: str) -> np.ndarray:
    grad = adgen.grad(f, mutation=policy)
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = EPS
        e = e.reshape(x.shape)
        cols.append((grad(x + e) - grad(x - e)) / (2 * EPS))
    return np.stack(cols, axis=-1)


def strict_refuses(f: Any, x: Any) -> bool:
    try:
        adgen.grad(f, mutation="strict")(copy.deepcopy(x))
    except adgen.MutationError:
        return True
    return False


def _ids(d: dict[Any, Any]) -> list[str]:
    return [f.__name__ for f in d]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", list(SCALAR), ids=_ids(SCALAR))
def test_jacrev_of_grad(f: Any, policy: str) -> None:
    x = SCALAR[f]
    if policy == "strict" and strict_refuses(f, x):
        with pytest.raises(adgen.MutationError):
            adgen.jacrev(adgen.grad(f, mutation=policy), mutation=policy)(x.copy())
        return
    path = route(f, x, policy)
    assert path.startswith("second derivatives: " + ROUTE) == (f.__name__ in REVERSE), path
    before = x.copy()
    h = adgen.jacrev(adgen.grad(f, mutation=policy), mutation=policy)(x)
    np.testing.assert_array_equal(x, before)  # the argument is left as it was
    assert h.shape == (x.size, x.size)
    np.testing.assert_allclose(h, adgen.hessian(f, mutation=policy)(x.copy()), rtol=1e-9,
                               atol=1e-10)
    np.testing.assert_allclose(h, fd_hessian(f, x, policy), rtol=1e-5, atol=1e-6)


def test_how_many_take_reverse_over_reverse() -> None:
    taken = {f.__name__ for f, x in SCALAR.items()
             if route(f, x, "save").startswith("second derivatives: " + ROUTE)}
    assert taken == REVERSE


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", list(SCALARS), ids=_ids(SCALARS))
def test_grad_of_grad_of_a_number(f: Any, policy: str) -> None:
    x = SCALARS[f]
    assert route(f, x, policy).startswith("second derivatives: " + ROUTE)
    d2 = adgen.grad(adgen.grad(f, mutation=policy), mutation=policy)(x)
    g = adgen.grad(f, mutation=policy)
    assert abs(d2 - (g(x + EPS) - g(x - EPS)) / (2 * EPS)) < 1e-6 * max(1.0, abs(d2))


def cubic_sine(x):
    return x ** 3 * math.sin(x)


def test_grad_of_grad_against_the_formula() -> None:
    x = 0.7
    want = 6 * x * math.sin(x) + 6 * x * x * math.cos(x) - x ** 3 * math.sin(x)
    assert abs(adgen.grad(adgen.grad(cubic_sine))(x) - want) < 1e-12


class Quadratic:
    """A user's object whose method is differentiated (a receiver: forward over reverse)."""

    def __init__(self, scale):
        self.scale = scale

    def energy(self, x):
        y = np.empty_like(x)
        for i in range(x.shape[0]):
            y[i] = self.scale * x[i] ** 2
        return np.sum(y * x)


def test_the_forms_users_write() -> None:
    x = np.array([0.3, -0.7, 1.1])
    want = np.diag(6.0 * x)
    # a lambda
    h = adgen.jacrev(adgen.grad(lambda v: np.sum(v ** 3)))(x)
    np.testing.assert_allclose(h, want, rtol=1e-12)
    # a bound method: forward over reverse (said by explain), the same numbers
    q = Quadratic(2.0)
    assert "forward over reverse" in adgen.explain(adgen.grad(q.energy), x, file=None).route
    np.testing.assert_allclose(adgen.jacrev(adgen.grad(q.energy))(x), 2.0 * want,
                               rtol=1e-12)


def test_vjp_of_grad_pullback_is_reusable() -> None:
    f = next(f for f in SCALAR if f.__name__ == "heat")
    x = SCALAR[f]
    out, pullback = adgen.vjp(adgen.grad(f), x.copy())
    np.testing.assert_allclose(out, adgen.grad(f)(x.copy()))
    u = np.random.default_rng(3).standard_normal(x.shape)
    (first,) = pullback(u)
    (again,) = pullback(u)
    np.testing.assert_array_equal(first, again)
    np.testing.assert_allclose(first, adgen.hvp(f)(x.copy(), u), rtol=1e-9, atol=1e-10)


def test_explain_says_why_the_fallback() -> None:
    f = next(f for f in SCALAR if f.__name__ == "list_append")
    text = route(f, SCALAR[f], "save")
    assert text.startswith("second derivatives: forward over reverse")
    assert "pop_adjoint" in text and "no derivative rule" in text
    f = next(f for f in SCALAR if f.__name__ == "checkpointed_steps")
    assert "call_forward" in route(f, SCALAR[f], "save")


SCALE = 2.0


def term(v):
    return np.sin(v) * SCALE


def other_term(v):
    return np.cos(v) * v


def with_callee(x):
    y = np.empty_like(x)
    for i in range(x.shape[0]):
        y[i] = term(x[i]) * x[i]
    return np.sum(y ** 2) * SCALE


def test_a_callee_and_live_globals(monkeypatch: pytest.MonkeyPatch) -> None:
    """A user callee (its pullback gets no shadow map: it uses none), and the globals and
    helpers as the primal sees them at each call (the program is rebuilt with the code)."""
    x = np.array([0.3, -0.7, 1.1])
    assert route(with_callee, x, "save").startswith("second derivatives: " + ROUTE)
    before = adgen.jacrev(adgen.grad(with_callee))(x)
    np.testing.assert_allclose(before, fd_hessian(with_callee, x, "save"), rtol=1e-5, atol=1e-6)
    module = sys.modules[__name__]
    monkeypatch.setattr(module, "SCALE", 3.0)
    after = adgen.jacrev(adgen.grad(with_callee))(x)
    np.testing.assert_allclose(after, fd_hessian(with_callee, x, "save"), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(after, before * 27.0 / 8.0, rtol=1e-12)  # SCALE ** 3
    monkeypatch.setattr(module, "term", other_term)
    again = adgen.jacrev(adgen.grad(with_callee))(x)
    np.testing.assert_allclose(again, fd_hessian(with_callee, x, "save"), rtol=1e-5, atol=1e-6)


def test_a_callee_that_shares_the_shadow_map_falls_back() -> None:
    f = next(f for f in SCALAR if f.__name__ == "recursive")
    text = route(f, SCALAR[f], "save")
    assert text.startswith("second derivatives: forward over reverse")
    # said at the user's line, in the user's words (not adgen's generated file and lines)
    assert "higher_order_functions.py:103: return np.sum(power(x, 3))" in text, text
    assert "with_shadows(...)" in text and "<adgen" not in text


def test_kept_copy_refuses_what_a_capture_would_hold_by_reference() -> None:
    from adgen.runtime import kept_copy

    x = np.arange(3.0)
    kept = kept_copy(x)
    x[0] = 5.0
    assert kept[0] == 0.0  # a copy, taken at once
    assert kept_copy([1, 2]) == [1, 2] and kept_copy((x, 1))[1] == 1
    with pytest.raises(adgen.AdgenError):
        kept_copy({"w": x})
    with pytest.raises(adgen.AdgenError):
        kept_copy([x])


def scattered_after_a_write(x):
    y = 2.0 * x
    y[0:1] = 0.5
    v = y[np.array([1, 2, 1])]              # a copy: its adjoint is scattered into y's
    return np.sum(np.sin(v))


@pytest.mark.parametrize("policy", ["save", "strict"])
def test_a_copy_scattered_into_a_written_buffer_falls_back(policy: str) -> None:
    # found by the long reverse-over-reverse fuzz campaign: reverse over reverse compiled
    # scatter_if_copy as a callee, whose write through sh.of(x) it did not see as a write of
    # the shadow: the second derivative was zero (silently wrong)
    x = np.array([0.3, -0.4, 0.9])
    text = route(scattered_after_a_write, x, policy)
    assert text.startswith("second derivatives: forward over reverse")
    assert "scatter_if_copy" in text
    expected = np.diag([0.0, -8.0 * np.sin(-0.8), -4.0 * np.sin(1.8)])  # 2 sin(2 x1) + sin(2 x2)
    np.testing.assert_allclose(adgen.jacrev(adgen.grad(scattered_after_a_write, mutation=policy))(x),
                               expected, rtol=1e-10, atol=1e-12)



def soft_dtw_table(C: Any, gamma: float) -> Any:
    """Soft-DTW (the bench workload): a table filled cell by cell, read at (i - 1, j - 1),
    (i - 1, j) and (i, j - 1)."""
    n, m = C.shape
    R = np.full((n + 1, m + 1), 1e10)
    R[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            r0 = -R[i - 1, j - 1] / gamma
            r1 = -R[i - 1, j] / gamma
            r2 = -R[i, j - 1] / gamma
            rmax = max(max(r0, r1), r2)
            rsum = np.exp(r0 - rmax) + np.exp(r1 - rmax) + np.exp(r2 - rmax)
            R[i, j] = C[i - 1, j - 1] - gamma * (np.log(rsum) + rmax)
    return R[n, m]


def test_jacrev_of_grad_through_a_table_written_by_index_pairs() -> None:
    # reverse over reverse read the index's cotangent of add_item(R_bar, (i, j), g) item by
    # item, and its rule gave None: TypeError 'NoneType' object is not subscriptable
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))
    from gradcheck import central

    from bench.workloads.softdtw import soft_dtw_hand  # the paper's gradient, by hand

    C = np.random.default_rng(0).random((3, 3))
    path = adgen.explain(adgen.grad(soft_dtw_table), C.copy(), 0.1, file=None).route
    assert path.startswith("second derivatives: " + ROUTE), path
    h = adgen.jacrev(adgen.grad(soft_dtw_table))(C.copy(), 0.1)
    want = np.array([central(lambda t, e=e: soft_dtw_hand(C + t * e, 0.1).ravel(), 0.0)
                     for e in np.eye(C.size).reshape(-1, *C.shape)])
    np.testing.assert_allclose(h.reshape(9, 9), want.T, rtol=1e-5, atol=1e-6)


def _means(x):
    m = x.reshape(3, 4)
    return np.mean(np.sin(m) ** 2) + np.sum(np.mean(m ** 3, axis=0) ** 2) + \
        np.sum(np.mean(np.exp(m), axis=1, keepdims=True) * m)


@pytest.mark.parametrize("policy", POLICIES)
def test_means_take_reverse_over_reverse(policy):
    # np.mean's adjoint (mean_vjp) had no second-order rule: every loss with a mean took the
    # forward-over-reverse path (and a gradient called inside a differentiated function
    # compiled the refused program again at every call)
    x = np.linspace(-0.7, 0.9, 12)
    assert route(_means, x, policy).startswith("second derivatives: " + ROUTE)
    H = adgen.jacrev(adgen.grad(_means, mutation=policy))(x)
    np.testing.assert_allclose(H, fd_hessian(_means, x, policy), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(H, adgen.hessian(_means)(x), rtol=1e-9, atol=1e-12)


def logs_weighted(v, w):
    return np.sum(np.log(v) * w ** 2)


def through_a_log_helper(x):
    return logs_weighted(x, x) + np.sum(np.sqrt(x))


@pytest.mark.parametrize("policy", POLICIES)
def test_a_helper_taking_a_log_of_its_parameter(policy: str) -> None:
    # a callee compiles without a signature, so its pullback reads np.log(v)'s operand through
    # sequence_operand and gives v's adjoint through array_vjp (v may be a list: f66b27f);
    # array_vjp had no second-order rule, and the second derivatives took forward over reverse
    x = np.array([0.5, 1.3, 2.0])
    assert route(through_a_log_helper, x, policy).startswith("second derivatives: " + ROUTE)
    H = adgen.jacrev(adgen.grad(through_a_log_helper, mutation=policy))(x)
    expected = np.diag(2 * np.log(x) + 3 - 0.25 * x ** -1.5)  # d2/dx2 of log(x) x^2 + sqrt(x)
    np.testing.assert_allclose(H, expected, rtol=1e-10)
    np.testing.assert_allclose(H, fd_hessian(through_a_log_helper, x, policy), rtol=1e-5,
                               atol=1e-6)
    assert adgen.grad(adgen.grad(lambda t: logs_weighted(t, t), mutation=policy),
                      mutation=policy)(0.7) == pytest.approx(2 * math.log(0.7) + 3)
