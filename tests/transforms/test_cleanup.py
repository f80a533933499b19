"""The cleanup pass: its rewrites change no value the pullback computes.

Negations cancel across statements (transforms/cleanup.py): random straight-line adjoint
code, with rebinding and loops, must compute bit for bit what it computed before, with no more
negations than before; and generated pullbacks with chains of signs keep right gradients.
"""

from __future__ import annotations

import ast

import gast
import numpy as np
import pytest
from adgen.transforms import pipeline
from adgen.transforms.cleanup import cleanup
from hypothesis import example, given, settings
from hypothesis import strategies as st

import adgen
from adgen.rules.helpers import inverse_axes, mean_vjp

PROLOGUE = "top = sh is None\nif top:\n    sh = ShadowMap()\n"


def _compile(fn: gast.FunctionDef) -> object:
    tree = gast.gast_to_ast(gast.Module(body=[fn], type_ignores=[]))
    ast.fix_missing_locations(tree)
    namespace: dict[str, object] = {"np": np, "unbroadcast": lambda g, shape: g,
                                    "sum_vjp": lambda g, shape, axis, k: g + 0.0,
                                    "mean_vjp": mean_vjp, "ShadowMap": dict,
                                    "inverse_axes": inverse_axes}
    exec(compile(tree, "<cleanup-test>", "exec"), namespace)
    return namespace[fn.name]


def _negations(fn: gast.FunctionDef) -> int:
    return sum(isinstance(n, gast.UnaryOp) and isinstance(n.op, gast.USub)
               for n in gast.walk(fn))


EXPRS = ["-{a}", "-{a} + {b}", "{a} * {b}", "{a} / {b}", "{a} + {b}", "{a} - {b}", "-{a} * {b}",
         "{a} - -{b}", "-({a} + {b})", "unbroadcast(-{a}, {b}.shape)", "{a}",
         "sum_vjp(-{a}, {b}.shape, None, False)", "np.exp({a})", "-{a} / {b} * {b}",
         "np.transpose(-{a}, inverse_axes(None))", "-unbroadcast({a}.copy(), {b}.shape)"]


@st.composite
def programs(draw: st.DrawFn) -> str:
    names = ["a", "b", "c"]
    lines: list[str] = []
    for k in range(draw(st.integers(1, 9))):
        # negated definitions, and reads of the latest names, are the interesting cases
        form = draw(st.sampled_from(EXPRS + ["-{a}", "-{a} * {b}"] * 3))
        recent = names[-2:] * 3 + names
        a, b = draw(st.sampled_from(recent)), draw(st.sampled_from(recent))
        expr = form.format(a=a, b=b)
        if draw(st.booleans()) and len(names) > 3:
            target = draw(st.sampled_from(names[3:]))  # rebinds an earlier name
        else:
            target = f"t{k}"
        shape = draw(st.sampled_from(["plain", "aug", "loop", "item"]))
        if shape == "aug" and target in names:
            lines.append(f"{target} {draw(st.sampled_from(['+=', '-=']))} {expr}")
        elif shape == "item" and target in names:
            # an element written in place: every name of that array must see it (copies)
            lines.append(f"{target}[1] += ({expr})[0]")
        elif shape == "loop":
            lines.append("for i in range(2):")
            lines.append(f"    {target} = {expr}")
            lines.append(f"    a = a * 0.5 + {target}")
        else:
            lines.append(f"{target} = {expr}")
            lines.append(f"a = a * 0.5 + {target}" if draw(st.booleans()) else "")
        if target not in names:
            names.append(target)
    # the returned names are read there: a few, so that most others are read once
    outs = {"a", target, draw(st.sampled_from(names))}
    ret = ", ".join(sorted(outs))
    return "def f(a, b, c, sh=None):\n" + "".join(
        "    " + ln + "\n" for ln in (PROLOGUE + "\n".join(lines)).split("\n")) + \
        f"    return ({ret},)\n"


# found by this test: a loop's definition read again after the loop, by n += ...
LOOP_OUT = """def f(a, b, c, sh=None):
    top = sh is None
    if top:
        sh = ShadowMap()
    t1 = c
    for i in range(2):
        t1 = -b
        a = a * 0.5 + t1
    t1 += b
    return (a,)
"""
# the name a negation reads is bound again before the negation's one read
REBOUND = """def f(a, b, c, sh=None):
    top = sh is None
    if top:
        sh = ShadowMap()
    t1 = b * 1.0
    t2 = -t1
    t1 = c
    t3 = t2 + a
    return (t3,)
"""


@settings(max_examples=500, deadline=None)
@given(programs(), st.integers(0, 2**31 - 1))
@example(LOOP_OUT, 0)
@example(REBOUND, 0)
def test_cleanup_computes_the_same_values(src, seed):
    before = gast.parse(src).body[0]
    after = cleanup(gast.parse(src).body[0])
    assert _negations(after) <= _negations(before)
    rng = np.random.default_rng(seed)
    args = [rng.standard_normal(4) + 3.0 for _ in range(3)]
    namespace_shadow = {"ShadowMap": dict}
    f0, f1 = _compile(before), _compile(after)
    f0.__globals__.update(namespace_shadow)
    f1.__globals__.update(namespace_shadow)
    args0, args1 = [a.copy() for a in args], [a.copy() for a in args]
    with np.errstate(all="ignore"):
        want = f0(*args0)
        got = f1(*args1)
    # the values, and the arguments: an alias made where a new array was would show there
    for w, g in zip(list(want) + args0, list(got) + args1):
        np.testing.assert_array_equal(g, w)


def test_a_chain_of_signs_cancels():
    src = PROLOGUE + """t11_bar = -out_bar
t10_bar = mean_vjp(t11_bar, t10.shape, None, False)
t7_bar = t10_bar / t7
p_bar = -t7_bar
p_bar = p_bar + t4_bar / p
t3_bar = -p_bar * p / t3
t2_bar = t3_bar
t1_bar = t2_bar * t2
z_bar = -t1_bar
return (z_bar,)"""
    def parse():
        return gast.parse("def pb(out_bar, t10, t7, t4_bar, p, t3, t2, sh=None):\n" + "".join(
            "    " + ln + "\n" for ln in src.split("\n"))).body[0]

    before, after = parse(), cleanup(parse())
    rng = np.random.default_rng(1)
    args = [1.5] + [rng.standard_normal(5) + 2.0 for _ in range(6)]
    np.testing.assert_array_equal(_compile(after)(*args)[0], _compile(before)(*args)[0])
    text = ast.unparse(gast.gast_to_ast(after))
    # out_bar's sign passes through mean_vjp and t7_bar and cancels at p_bar's; a copy of a
    # name (t11_bar = -out_bar, t2_bar = t3_bar) is replaced at its one read
    body = text.split("sh=None):\n")[1]
    assert body == """    t10_bar = mean_vjp(out_bar, t10.shape, None, False)
    t7_bar = t10_bar / t7
    p_bar = t7_bar
    p_bar = p_bar + t4_bar / p
    t3_bar = p_bar * p / t3
    t1_bar = t3_bar * t2
    return (t1_bar,)"""
    # a sign that cannot cancel stays where it was: on the scalar, not moved into an array
    fn = gast.parse("def pb(out_bar, t10, sh=None):\n" + "".join(
        "    " + ln + "\n" for ln in (PROLOGUE + """t11_bar = -out_bar
t10_bar = mean_vjp(t11_bar, t10.shape, None, False)
a_bar = t10_bar * 2.0
b_bar = t10_bar * 3.0
return (a_bar, b_bar)""").split("\n"))).body[0]
    text = ast.unparse(gast.gast_to_ast(cleanup(fn)))
    assert "t11_bar = -out_bar" in text and "t10_bar = mean_vjp(t11_bar" in text


def logistic(w, X, y):
    z = X @ w
    p = 1.0 / (1.0 + np.exp(-z))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def signs_in_a_loop(x):
    s = 0.0
    for i in range(3):
        d = -x * (i + 1.0)
        s = s - np.sum(d * d) - np.sum(-d)
    return s


def test_gradients_with_cancelled_signs():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((6, 3))
    w = rng.standard_normal(3) * 0.3
    y = (rng.random(6) < 0.5).astype(float)
    src = pipeline.compile_function(logistic, wrt=(0,), sig=(1, 2, 1)).own_source
    assert "= -p_bar" not in src and "= -t1_bar" not in src
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    np.testing.assert_allclose(adgen.grad(logistic)(w, X, y), X.T @ (p - y) / len(y),
                               rtol=1e-12)
    x = np.array([0.5, -1.0, 2.0])
    want = sum(-2.0 * (i + 1.0) ** 2 * x - (i + 1.0) for i in range(3))
    np.testing.assert_allclose(adgen.grad(signs_in_a_loop)(x), want, rtol=1e-12)


def signs_in_place(x):
    b = -x
    b[0] = 5.0  # in place on a negated copy
    c = -b
    c += x
    return np.sum(c * c) - np.sum(-(c - x))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_cancelled_signs_beside_in_place_writes(mutation):
    x = np.array([0.5, -1.2, 2.0])
    # c = 2x except c[0] = x[0] - 5; f = sum(c^2) + sum(c) - sum(x)
    want = 8.0 * x + 1.0
    want[0] = 2.0 * (x[0] - 5.0)
    g = adgen.grad(signs_in_place, mutation=mutation)(x.copy())
    np.testing.assert_allclose(g, want, rtol=1e-12)
