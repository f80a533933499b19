"""Forward mode (adgen.jvp) on the end-to-end corpus, and its mutation forms.

Every corpus function (tests/e2e/test_corpus.py) either passes or is refused with an adgen
error that names the file and the line; the refused ones are listed in ``REFUSED`` with the
reason, and a refused function that starts passing (or a passing one that is refused) fails
the test. A passing function is checked twice: its tangent against central differences
(J v), and against adgen's reverse mode through ⟨u, J v⟩ = ⟨Jᵀ u, v⟩.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from e2e.test_corpus import GRAD_CASES, VALUE_AND_GRAD_CASES, VJP_CASES
from gradcheck import (
    assert_grad_close,
    assert_same_state,
    flatten,
    numerical_grad,
    numerical_jvp,
    random_like,
)

import adgen

# corpus function -> what the error says (the reason forward mode refuses it)
# (a nested def that reads x, passed to another function as a value, was refused here: its
# tangent carries x's since session 28, closure_passed_as_argument is checked below)
REFUSED: dict[str, str] = {}


def _corpus() -> list[Any]:
    seen: set[Any] = set()
    out = []
    for c in GRAD_CASES + VALUE_AND_GRAD_CASES + VJP_CASES:
        if c.f in seen:
            continue
        seen.add(c.f)
        out.append(pytest.param(c, id=c.f.__name__))
    return out


def _tangents(args: tuple[Any, ...], rng: np.random.Generator) -> list[Any]:
    return [random_like(a, rng) if flatten(a).size else None for a in args]


@pytest.mark.parametrize("case", _corpus())
def test_jvp_on_corpus(case: Any) -> None:
    rng = np.random.default_rng(3)
    args = copy.deepcopy(case.args)
    tangents = _tangents(args, rng)
    name = case.f.__name__
    if name in REFUSED:
        with pytest.raises(adgen.AdgenError, match=REFUSED[name]) as info:
            adgen.jvp(case.f, copy.deepcopy(args), tangents, **case.kwargs)
        # the error names the user's file and line
        assert "test_corpus.py:" in str(info.value), str(info.value)
        assert "hint:" in str(info.value)
        return
    plain = case.f(*copy.deepcopy(args), **copy.deepcopy(case.kwargs))
    run_args = copy.deepcopy(args)
    out, out_dot = adgen.jvp(case.f, run_args, tangents, **copy.deepcopy(case.kwargs))
    assert_grad_close(out, plain, rtol=1e-12, atol=1e-12, path="out")
    # the same effects on the arguments as a plain call
    plain_args = list(copy.deepcopy(args))
    case.f(*plain_args, **copy.deepcopy(case.kwargs))
    assert_same_state(list(run_args), plain_args)
    # J v by central differences
    jv = numerical_jvp(case.f, args, tangents, kwargs=case.kwargs)
    got = flatten(out_dot)
    assert got.shape == jv.shape, (got.shape, jv.shape)
    np.testing.assert_allclose(got, jv, rtol=max(case.rtol, 1e-5), atol=max(case.atol, 1e-6))
    # <u, J v> = <J^T u, v> with adgen's reverse mode
    u = random_like(plain, rng)
    _, pullback = adgen.vjp(case.f, *copy.deepcopy(args), **copy.deepcopy(case.kwargs))
    cts = pullback(u)
    lhs = float(flatten(u) @ got)
    rhs = sum(float(flatten(ct) @ flatten(t)) for ct, t in zip(cts, tangents) if t is not None)
    assert abs(lhs - rhs) <= 1e-6 + 1e-6 * max(abs(lhs), abs(rhs), 1.0), (lhs, rhs)


# --------------------------------------------------------------------------------------------
# Mutation forms: buffers, views, out=, np.add.at, callees that write their arguments


def _mutation_cases() -> list[Any]:
    from higher_order_functions import SCALAR, VECTOR

    cases = [pytest.param(f, (x,), id=f.__name__) for f, x in SCALAR.items()]
    return cases + [pytest.param(f, args, id=f.__name__) for f, args in VECTOR.items()]


@pytest.mark.parametrize("f,args", _mutation_cases())
def test_jvp_of_mutating_code(f: Any, args: tuple[Any, ...]) -> None:
    rng = np.random.default_rng(5)
    tangents = _tangents(args, rng)
    given = copy.deepcopy(tangents)
    out, out_dot = adgen.jvp(f, copy.deepcopy(args), tangents)
    assert_grad_close(out, f(*copy.deepcopy(args)), rtol=1e-12, atol=1e-12, path="out")
    jv = numerical_jvp(f, args, tangents)
    np.testing.assert_allclose(flatten(out_dot), jv, rtol=1e-6, atol=1e-7)
    assert_same_state(tangents, given, "tangents")  # the caller's tangents are not written


def writes_argument(x, y):
    x[1:] *= y
    x[0] = 2.0
    return np.sum(x * y)


def test_jvp_of_a_function_that_writes_its_argument() -> None:
    x, y = np.array([1.0, 2.0, 3.0]), 0.5
    tx, ty = np.array([0.1, -0.2, 0.3]), 0.7
    _, out_dot = adgen.jvp(writes_argument, (x, y), (tx, ty))
    assert np.array_equal(x, [2.0, 1.0, 1.5])  # written as a plain call writes it
    jv = numerical_jvp(writes_argument, (np.array([1.0, 2.0, 3.0]), 0.5), (tx, ty))
    np.testing.assert_allclose(out_dot, jv[0], rtol=1e-7)


def test_forward_source_is_readable_code() -> None:
    from higher_order_functions import view_scaled

    text = adgen.source(view_scaled, mode="forward")
    assert "def view_scaled_jvp(x, x_dot=None):" in text
    assert "v_dot = y_dot[::2]" in text  # a view's tangent is the same view
    assert "# line" in text


def halve(x):
    return x / 2.0


def uses_halve(x):
    return np.sum(halve(x))


def test_missing_jvp_names_the_line() -> None:
    from adgen.rules import registry

    @registry.defvjp(halve, "x", linear=True)  # a rule with a vjp and no jvp
    def _halve_vjp(g, out, x):
        return g / 2.0

    try:
        with pytest.raises(adgen.MissingRuleError, match=r"test_forward.py:\d+.*halve.*no jvp"):
            adgen.jvp(uses_halve, (np.ones(4),), (np.ones(4),))
    finally:  # the registry is shared by the other tests, which iterate it
        registry._RULES.pop(id(halve), None)
        registry._BY_NAME.pop(registry._qualname(halve), None)


def test_cli_mode_forward(tmp_path: Any, capsys: Any) -> None:
    from adgen.cli import main

    path = tmp_path / "model_fwd.py"
    path.write_text("import numpy as np\n\n\ndef f(x):\n    y = np.empty(3)\n"
                    "    y[0] = x * x\n    y[1:] = np.sin(x)\n    return np.sum(y)\n")
    assert main([str(path), "-f", "f", "--mode", "forward"]) == 0
    text = capsys.readouterr().out
    assert "def f_jvp(x, x_dot=None):" in text and "y_dot[0] = " in text
    ns: dict[str, Any] = {}
    exec(compile(text, "<printed>", "exec"), ns)  # noqa: S102 - the printed module runs
    _, out_dot = ns["f_jvp"](0.3, 1.0)
    assert out_dot == pytest.approx(2 * 0.3 + 2 * np.cos(0.3), rel=1e-12)


class State:
    def __init__(self, u, rate):
        self.u = u
        self.rate = rate
        self.label = "state"


def advance(state, dt):
    """Writes the object's array attribute in place, then rebinds another attribute."""
    state.u[1:] += dt * state.rate * state.u[:-1]
    state.rate = state.rate * np.exp(-dt)
    return np.sum(state.u ** 2) * state.rate


def test_jvp_through_object_attributes_read_and_written() -> None:
    def make(u, rate):
        return State(np.array(u), rate)

    u, rate, dt = [1.0, 0.5, -0.3], 0.8, 0.1
    tangent = State(np.array([0.2, -0.1, 0.4]), 0.3)
    out, out_dot = adgen.jvp(advance, (make(u, rate), dt), (tangent, 0.5))
    eps = 1e-6

    def at(a: float) -> float:
        s = make(np.array(u) + a * tangent.u, rate + a * tangent.rate)
        return advance(s, dt + a * 0.5)

    assert out == pytest.approx(at(0.0), rel=1e-14)
    assert out_dot == pytest.approx((at(eps) - at(-eps)) / (2 * eps), rel=1e-7)


def int_buffers(x):
    """Stores into integer arrays truncate (found by the fuzzer: the tangent went through)."""
    n = np.zeros(3, dtype=np.int64)
    n[0] = 2.0 * x[1]
    m = np.array(x * 3.0, dtype=int)
    b = np.full(2, x[0], dtype=int)
    c = np.zeros(2, dtype=np.int64)
    np.add.at(c, [0, 0], x[:2] * 5.0)
    return np.sum(n * x[:3]) + np.sum(m) * x[2] + np.sum(b) + np.sum(x ** 2) + np.sum(c) * x[3]


def test_stores_into_integer_arrays_have_zero_tangent() -> None:
    x = np.array([0.3, 1.7, -0.8, 2.2])
    t = np.array([0.5, -1.0, 0.25, 2.0])
    _, out_dot = adgen.jvp(int_buffers, (x,), (t,))
    np.testing.assert_allclose(out_dot, numerical_jvp(int_buffers, (x,), (t,))[0], rtol=1e-7)


def test_jvp_of_a_numpy_function_uses_its_rule() -> None:
    x, t = np.array([0.3, -1.2, 2.0]), np.array([1.0, 0.5, -2.0])
    out, out_dot = adgen.jvp(np.tanh, (x,), (t,))
    np.testing.assert_allclose(out_dot, numerical_jvp(np.tanh, (x,), (t,)), rtol=1e-7)
    a = np.array([[2.0, 0.3], [0.1, 1.5]])
    da = np.array([[0.2, -0.1], [0.4, 0.3]])
    _, d_det = adgen.jvp(np.linalg.det, (a,), (da,))
    assert d_det == pytest.approx(numerical_jvp(np.linalg.det, (a,), (da,))[0], rel=1e-7)


def _masked(x):
    big = x > 0.5
    small = not (x[0] > 2.0)
    return np.sum(np.where(big, x, 0.0) ** 2) * (2.0 if small else 1.0)


def test_comparisons_of_values_with_tangents_have_none() -> None:
    # a bool computed from x: no tangent (it was refused as "the expression Compare")
    x, v = np.array([0.2, 0.7, 1.3]), np.array([1.0, -0.5, 0.25])
    out, dot = adgen.jvp(_masked, (x,), (v,))
    assert out == _masked(x)
    np.testing.assert_allclose(dot, np.dot(adgen.grad(_masked)(x), v), rtol=1e-12)


def _kw_only_default(a, *, scale=1.0):
    return scale * a * a


def _star_then_keyword(a, *xs, scale=1.0):
    return scale * a * sum(np.sum(v * v) for v in xs)


def _calls_with_defaults(x):
    return (_kw_only_default(x[0]) + _kw_only_default(x[1], scale=3.0) +
            _star_then_keyword(x[0], x, 2.0 * x, scale=3.0) + _star_then_keyword(x[2]))


def _required_after_defaults(a, b=2.0, *, scale, shift=0.5):
    return scale * np.sin(a) * b + shift


def _calls_required_keyword(x):
    # b and shift left out, scale required and given; then a value with a derivative passed
    # to the keyword-only parameter
    return np.sum(_required_after_defaults(x, scale=3.0) +
                  _required_after_defaults(x, 3.0, shift=x[1], scale=x[0]))


def test_callee_with_a_required_keyword_after_defaults():
    # a raw TypeError ("h_jvp() missing 1 required positional argument: 'b'") before
    x, v = np.array([0.3, -0.5, 0.8]), np.array([1.0, 0.5, 0.2])
    out, dot = adgen.jvp(_calls_required_keyword, (x,), (v,))
    assert out == pytest.approx(_calls_required_keyword(x))
    assert dot == pytest.approx(np.dot(numerical_grad(_calls_required_keyword, (x,), 0), v),
                                rel=1e-6)
    hess = adgen.hessian(_calls_required_keyword)(x)
    fd = np.array([numerical_grad(lambda y: adgen.grad(_calls_required_keyword)(y)[i], (x,), 0)
                   for i in range(3)])
    np.testing.assert_allclose(hess, fd, rtol=1e-5, atol=1e-6)


def test_callees_with_keyword_only_defaults_and_star_args():
    # the jvp of a callee takes its keyword-only defaults (a raw TypeError before)
    x, v = np.array([0.3, -0.5, 0.8]), np.array([1.0, 0.5, 0.2])
    out, dot = adgen.jvp(_calls_with_defaults, (x,), (v,))
    assert out == pytest.approx(_calls_with_defaults(x))
    assert dot == pytest.approx(np.dot(adgen.grad(_calls_with_defaults)(x), v))
