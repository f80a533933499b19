"""The public API's behaviour (design.md §1, §2.6): argnums, value_and_grad, has_aux, vjp and
its reusable pullback, @differentiable, source, kwargs, and the arguments' final state.

Gradients are checked against central differences (tests/gradcheck.py) or hand formulas.
"""

from __future__ import annotations

import copy
import math
import os
import re

import numpy as np
import pytest
from gradcheck import (
    assert_grad_close,
    assert_same_state,
    check_grad,
    check_vjp,
    numerical_grad,
    numerical_grads,
)

import adgen
from adgen.errors import MutationError

rng = np.random.default_rng(99)

THIS_FILE = os.path.abspath(__file__)


def _line_of(marker: str) -> int:
    """The line of this file that ends with the comment ``# MARK:<marker>``."""
    with open(THIS_FILE) as fh:
        for number, text in enumerate(fh, start=1):
            if text.rstrip().endswith(f"# MARK:{marker}"):
                return number
    raise LookupError(marker)


def _source_line(line: int) -> str:
    with open(THIS_FILE) as fh:
        return fh.readlines()[line - 1].strip()


def f3(x, y, z):
    return x * y ** 2 + np.sum(z ** 2) * x


X, Y, Z = 1.5, -0.7, np.array([0.3, -1.2, 2.0])


# ============================================================================================
# argnums


def test_argnums_default_is_zero_and_gives_a_float():
    g = adgen.grad(f3)(X, Y, Z.copy())
    assert isinstance(g, float)
    assert g == pytest.approx(Y ** 2 + np.sum(Z ** 2), rel=1e-12)


@pytest.mark.parametrize("argnums", [0, 1, 2, -1, -2, -3])
def test_argnums_int(argnums):
    check_grad(f3, (X, Y, Z), argnums)


@pytest.mark.parametrize("argnums", [(0,), (0, 2), (2, 0), (1, 2), (0, 1, 2), (-1, 0)])
def test_argnums_tuple_gives_a_tuple_in_the_given_order(argnums):
    g = adgen.grad(f3, argnums=argnums)(X, Y, Z.copy())
    assert isinstance(g, tuple) and len(g) == len(argnums)
    check_grad(f3, (X, Y, Z), argnums)


def test_argnums_negative_is_the_same_as_positive():
    a = adgen.grad(f3, argnums=-1)(X, Y, Z.copy())
    b = adgen.grad(f3, argnums=2)(X, Y, Z.copy())
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, 2.0 * Z * X, rtol=1e-12)


def test_argnums_list_is_accepted_like_a_tuple():
    g = adgen.grad(f3, argnums=[1, 0])(X, Y, Z.copy())
    assert isinstance(g, tuple) and len(g) == 2
    assert g[0] == pytest.approx(2 * X * Y, rel=1e-12)


# ============================================================================================
# value_and_grad, has_aux


def test_value_and_grad():
    value, g = adgen.value_and_grad(f3)(X, Y, Z.copy())
    assert value == pytest.approx(f3(X, Y, Z), rel=1e-14)
    assert g == pytest.approx(Y ** 2 + np.sum(Z ** 2), rel=1e-12)
    value, (_, gz) = adgen.value_and_grad(f3, argnums=(0, 2))(X, Y, Z.copy())
    assert value == pytest.approx(f3(X, Y, Z), rel=1e-14)
    assert_grad_close(gz, 2.0 * Z * X, rtol=1e-12)


def loss_with_aux(w, x):
    pred = np.tanh(x @ w)
    loss = np.sum(pred ** 2)
    return loss, {"pred": pred, "count": x.shape[0], "first": pred[0]}


W4, X34 = rng.standard_normal(4), rng.standard_normal((3, 4))


def _loss_only(w, x):
    return loss_with_aux(w, x)[0]


def test_grad_has_aux():
    g, aux = adgen.grad(loss_with_aux, has_aux=True)(W4.copy(), X34.copy())
    assert_grad_close(g, numerical_grad(_loss_only, [W4, X34], 0))
    assert_same_state(aux, loss_with_aux(W4, X34)[1], "aux")


def test_value_and_grad_has_aux():
    (value, aux), g = adgen.value_and_grad(loss_with_aux, argnums=(0, 1), has_aux=True)(
        W4.copy(), X34.copy())
    plain_value, plain_aux = loss_with_aux(W4, X34)
    assert value == pytest.approx(plain_value, rel=1e-14)
    assert_same_state(aux, plain_aux, "aux")
    assert_grad_close(g, numerical_grads(_loss_only, [W4, X34], (0, 1)))


def test_has_aux_gradient_ignores_the_aux_output():
    # aux depends on w; its value must not leak into the gradient of the loss.
    def f(w):
        return np.sum(w), w * 1000.0

    g, aux = adgen.grad(f, has_aux=True)(W4.copy())
    assert_grad_close(g, np.ones(4), rtol=1e-12)
    np.testing.assert_array_equal(aux, W4 * 1000.0)


# ============================================================================================
# vjp


def tape_loop(w, x, n):
    """A loop whose pullback reads per-iteration values back from a tape."""
    h = x
    for _ in range(n):
        h = np.tanh(w @ h)
    return h * 2.0


W33, X3 = rng.standard_normal((3, 3)) * 0.7, rng.standard_normal(3)


def test_vjp_dot_product():
    check_vjp(tape_loop, (W33, X3, 4))


def test_vjp_out_is_the_plain_value():
    out, _ = adgen.vjp(tape_loop, W33.copy(), X3.copy(), 4)
    np.testing.assert_array_equal(out, tape_loop(W33, X3, 4))


def test_pullback_called_many_times_gives_identical_answers():
    _, pullback = adgen.vjp(tape_loop, W33.copy(), X3.copy(), 4)
    u1, u2 = rng.standard_normal(3), rng.standard_normal(3)
    first = pullback(u1.copy())
    other = pullback(u2.copy())
    for _ in range(3):
        again = pullback(u1.copy())
        assert_same_state(list(again), list(first), "pullback(u1) again")
    # linear in the cotangent: pullback(u1 + u2) = pullback(u1) + pullback(u2)
    both = pullback(u1 + u2)
    assert_grad_close(both[0], first[0] + other[0], rtol=1e-10, atol=1e-12)
    assert_grad_close(both[1], first[1] + other[1], rtol=1e-10, atol=1e-12)


def test_jacobian_row_by_row():
    _, pullback = adgen.vjp(tape_loop, W33.copy(), X3.copy(), 4)
    rows = [pullback(e)[1] for e in np.eye(3)]
    jac = np.stack(rows)
    # reference Jacobian d out / d x by central differences, column by column
    eps = 1e-6
    ref = np.zeros((3, 3))
    for j in range(3):
        step = np.zeros(3)
        step[j] = eps
        ref[:, j] = (tape_loop(W33, X3 + step, 4) - tape_loop(W33, X3 - step, 4)) / (2 * eps)
    np.testing.assert_allclose(jac, ref, rtol=1e-6, atol=1e-8)
    # and rows again, in the other order: nothing was consumed
    np.testing.assert_array_equal(np.stack([pullback(e)[1] for e in np.eye(3)[::-1]])[::-1], jac)


def mixed_args(x, n, y, name, flag, idx, arr):
    """Positional arguments of every kind: only x, y and arr carry gradients."""
    s = x * y * n + np.sum(arr[idx]) * y
    if flag and name == "double":
        s = s * 2.0
    return np.array([s, x * x])


MIXED = (1.3, 3, -0.4, "double", True, np.array([0, 2]), rng.standard_normal(4))


def test_pullback_gives_one_cotangent_per_positional_argument():
    _, pullback = adgen.vjp(mixed_args, *copy.deepcopy(MIXED))
    cts = pullback(np.array([1.0, 0.5]))
    assert isinstance(cts, tuple) and len(cts) == 7
    gx, gn, gy, gname, gflag, gidx, garr = cts
    assert gn is None and gname is None and gflag is None and gidx is None
    assert isinstance(gx, float) and isinstance(gy, float)
    assert isinstance(garr, np.ndarray) and garr.shape == (4,)
    check_vjp(mixed_args, MIXED)


def test_vjp_of_a_scalar_function_and_structured_arguments():
    def f(p, t):
        return np.sum(p["w"] * t[0]) + p["b"] * t[1]

    args = ({"w": rng.standard_normal(3), "b": 0.5}, (rng.standard_normal(3), 2.0))
    _, pullback = adgen.vjp(f, *copy.deepcopy(args))
    gp, gt = pullback(1.0)
    assert isinstance(gp, dict) and set(gp) == {"w", "b"} and isinstance(gp["b"], float)
    assert isinstance(gt, tuple) and isinstance(gt[0], np.ndarray) and isinstance(gt[1], float)
    check_vjp(f, args)


# ============================================================================================
# kwargs


def scaled_power(x, scale=1.0, power=2):
    return scale * np.sum(x ** power)


def test_kwargs_are_passed_through():
    x = np.array([0.5, -1.5, 2.0])
    g = adgen.grad(scaled_power)(x.copy(), scale=3.0, power=3)
    assert_grad_close(g, 9.0 * x ** 2, rtol=1e-12)
    check_grad(scaled_power, (x,), kwargs={"scale": 3.0, "power": 3})
    value, g = adgen.value_and_grad(scaled_power)(x.copy(), power=4)
    assert value == pytest.approx(np.sum(x ** 4), rel=1e-14)
    assert_grad_close(g, 4.0 * x ** 3, rtol=1e-12)


def test_vjp_kwargs_get_no_cotangent():
    x = np.array([0.5, -1.5, 2.0])
    out, pullback = adgen.vjp(scaled_power, x.copy(), scale=2.0)
    assert out == pytest.approx(2.0 * np.sum(x ** 2))
    cts = pullback(1.0)
    assert len(cts) == 1
    assert_grad_close(cts[0], 4.0 * x, rtol=1e-12)


def test_positional_default_used():
    def f(x, y=2.0):
        return x * y

    assert adgen.grad(f)(3.0) == pytest.approx(2.0)
    assert adgen.grad(f, argnums=1)(3.0, 5.0) == pytest.approx(3.0)


# ============================================================================================
# Effects: grad(f)(args) does what f(args) does, once


def double_then_square(x):
    x *= 2.0
    return np.sum(x ** 2)


def test_arguments_final_state_matches_a_plain_call():
    x0 = np.array([1.0, -2.0, 0.5])
    plain = x0.copy()
    double_then_square(plain)
    ad = x0.copy()
    g = adgen.grad(double_then_square)(ad)
    np.testing.assert_array_equal(ad, plain)  # x doubled, as the plain call leaves it
    # f(x0) = sum((2 x0)^2): gradient with respect to the value passed in
    assert_grad_close(g, 8.0 * x0, rtol=1e-12)
    assert_grad_close(g, numerical_grad(double_then_square, [x0], 0))


def appends(lst, x):
    lst.append(x * 2.0)
    return lst[0] * lst[-1]


def test_list_argument_final_state_matches_a_plain_call():
    plain = [1.5, 0.5]
    appends(plain, 3.0)
    ad = [1.5, 0.5]
    g = adgen.grad(appends, argnums=1)(ad, 3.0)
    assert ad == plain
    assert g == pytest.approx(3.0, rel=1e-12)


def test_non_mutating_function_leaves_arguments_alone():
    args = (X, Y, Z.copy())
    adgen.grad(f3, argnums=(0, 1, 2))(*args)
    np.testing.assert_array_equal(args[2], Z)


def noisy(x):
    print("ran")
    return x * x


def test_user_code_runs_once(capsys):
    adgen.grad(noisy)(2.0)
    assert capsys.readouterr().out.count("ran") == 1
    adgen.value_and_grad(noisy)(2.0)
    assert capsys.readouterr().out.count("ran") == 1
    _, pullback = adgen.vjp(noisy, 2.0)
    pullback(1.0)
    pullback(1.0)
    assert capsys.readouterr().out.count("ran") == 1


# ============================================================================================
# @adgen.differentiable


def test_differentiable_function_behaves_as_before():
    def plain(x, y):
        return math.sin(x) * y + np.sum(np.arange(3.0) * x)

    @adgen.differentiable
    def decorated(x, y):
        return math.sin(x) * y + np.sum(np.arange(3.0) * x)

    for x, y in [(0.3, 2.0), (-1.2, 0.5)]:
        assert decorated(x, y) == plain(x, y)
    assert decorated.__name__ == "decorated"
    check_grad(decorated, (0.3, 2.0), (0, 1))


def test_differentiable_with_options():
    @adgen.differentiable(mutation="strict")
    def f(x):
        return x ** 3

    assert f(2.0) == 8.0
    assert adgen.grad(f)(2.0) == pytest.approx(12.0, rel=1e-12)


def test_differentiable_raises_at_decoration_for_a_generator():
    with pytest.raises(adgen.UnsupportedError) as info:
        @adgen.differentiable
        def gen(x):
            y = x * 2.0
            yield y  # MARK:yield

    _assert_located(info.value, [_line_of("yield")])


def test_differentiable_raises_at_decoration_for_a_global_write():
    with pytest.raises(adgen.UnsupportedError) as info:
        @adgen.differentiable
        def bump(x):
            global _API_COUNTER  # MARK:global
            _API_COUNTER = x  # MARK:global-write
            return x * 2.0

    _assert_located(info.value, [_line_of("global"), _line_of("global-write")])


def test_differentiable_raises_at_decoration_not_at_call():
    calls = []

    def define():
        @adgen.differentiable
        def f(x):
            calls.append(x)
            exec("pass")  # noqa: S102  # MARK:exec
            return x

        return f

    with pytest.raises(adgen.UnsupportedError) as info:
        define()
    assert calls == []  # nothing ran: the error came from compiling
    _assert_located(info.value, [_line_of("exec")])


def _assert_located(err: adgen.AdgenError, lines: list[int]) -> None:
    """The error names this file, one of ``lines``, and that line's source."""
    message = str(err)
    name = re.escape(os.path.basename(THIS_FILE))
    found = [ln for ln in lines if re.search(rf"{name}:{ln}\b", message)]
    assert found, f"expected {os.path.basename(THIS_FILE)}:<one of {lines}> in:\n{message}"
    assert _source_line(found[0]).split("  # MARK")[0] in message, message
    assert err.location is not None and err.location.line == found[0]


# ============================================================================================
# adgen.source


def tanh_energy(x):
    y = np.tanh(x)  # MARK:tanh
    return np.sum(y ** 2)


def test_source_is_readable_python_with_forward_and_pullback():
    src = adgen.source(tanh_energy)
    assert isinstance(src, str)
    compile(src, "<adgen source>", "exec")
    assert re.search(r"^def tanh_energy_forward\(", src, re.MULTILINE), src
    assert re.search(r"^def tanh_energy_pullback\(", src, re.MULTILINE), src


def test_source_comments_name_the_users_lines():
    src = adgen.source(tanh_energy)
    line = _line_of("tanh")
    comments = [s.strip() for s in src.splitlines() if s.strip().startswith("#")]
    assert any(str(line) in c and "np.tanh(x)" in c for c in comments), (
        f"no comment names line {line} (y = np.tanh(x)) in:\n{src}")


def test_source_is_deterministic():
    assert adgen.source(tanh_energy) == adgen.source(tanh_energy)


def test_source_runs_and_gives_the_gradient():
    # The generated pair follows the contract f_forward(*args) -> (out, saved) and
    # f_pullback(saved, out_bar) -> one cotangent per positional argument.
    src = adgen.source(tanh_energy)
    namespace = dict(globals())
    exec(compile(src, "<adgen source>", "exec"), namespace)  # noqa: S102
    x = np.array([0.3, -1.1, 0.8])
    out, saved = namespace["tanh_energy_forward"](x.copy())
    assert out == pytest.approx(tanh_energy(x), rel=1e-14)
    (gx,) = namespace["tanh_energy_pullback"](saved, 1.0)
    assert_grad_close(gx, numerical_grad(tanh_energy, [x], 0))
    assert_grad_close(gx, 2.0 * np.tanh(x) * (1.0 - np.tanh(x) ** 2), rtol=1e-12)


def test_source_of_a_function_with_a_callee_includes_the_callee():
    def helper_square(v):
        return v * v

    def outer(x):
        return helper_square(x) + x

    src = adgen.source(outer)
    compile(src, "<adgen source>", "exec")
    assert "outer_forward" in src and "outer_pullback" in src
    assert "helper_square_forward" in src  # "the forward and pullback of fun and its callees"


# ---------------------------------------------------------------------------------------------
# vjp: arguments and outputs changed in place before the pullback runs


def _tanh_matvec(X, w):
    return np.tanh(X @ w)


def test_vjp_refuses_an_argument_changed_before_the_pullback():
    X = np.array([[0.5, -1.0], [2.0, 0.25], [1.0, 1.0]])
    w = np.array([0.3, -0.7])
    out, pb = adgen.vjp(_tanh_matvec, X, w)
    want = X.T @ (1.0 - np.tanh(X @ w) ** 2)
    np.testing.assert_allclose(pb(np.ones(3))[1], want)
    X[0, 0] = 5.0  # the pullback of X @ w reads X
    with pytest.raises(MutationError, match=r"argument 0 \(X\) was changed in place") as e:
        pb(np.ones(3))
    assert "test_api.py" in str(e.value)


def test_vjp_refuses_an_output_changed_before_the_pullback():
    x = np.array([0.5, -1.0])
    out, pb = adgen.vjp(_tanh_of, x)
    out *= 2.0  # the pullback of tanh reads its output
    with pytest.raises(MutationError, match="the output was changed in place"):
        pb(np.ones(2))


def _tanh_of(x):
    return np.tanh(x)


def _sum_and_scale(x, y):
    return np.sum(x) + np.sum(y * 2.0)


def test_vjp_allows_changes_to_what_the_pullback_does_not_read():
    x = np.array([1.0, np.nan])
    y = np.array([3.0, 4.0])
    out, pb = adgen.vjp(_sum_and_scale, x, y)
    y[0] = -1.0  # sum and scaling read no values of x or y
    gx, gy = pb(1.0)
    np.testing.assert_allclose(gx, [1.0, 1.0])
    np.testing.assert_allclose(gy, [2.0, 2.0])


def _scale_in_place(x):
    x *= 2.0
    return np.sum(x * x)


def test_vjp_snapshots_arguments_after_the_function_changed_them():
    x = np.array([1.0, -2.0])
    out, pb = adgen.vjp(_scale_in_place, x)
    np.testing.assert_allclose(x, [2.0, -4.0])  # the call's own effect
    for _ in range(2):  # unchanged since: the pullback runs, any number of times
        np.testing.assert_allclose(pb(1.0)[0], 4.0 * x)
