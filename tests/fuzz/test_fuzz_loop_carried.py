"""Values carried between loop iterations through control flow, fuzzed: a name bound on some
iterations only (one arm of an if, a nested loop that may run no iteration or stops at a
break, an if/else) and read on later ones, in ``for`` and ``while`` loops with ``continue``.

The differential fuzzer's programs bind each name on every path of an iteration; this
grammar is the one that found a silently wrong gradient in the SSA form (a name bound in
one arm of an if read on a later iteration: tests/e2e/test_values_from_earlier_iterations.py).
Reverse mode under both policies and forward mode are compared with central differences.
"""

from __future__ import annotations

import numpy as np
import progen
from gradcheck import numerical_grad
from hypothesis import event, given, note
from hypothesis import strategies as st

import adgen
from adgen.errors import AdgenError

CONDS = ["x[i] > 0.5", "i % 2 == 0", "i % 3 == 1", "x[i] < x[0]", "i == 0"]
EXPRS = ["x[i] * 2.0", "np.sin(x[i])", "x[i] * x[0]", "v * 0.5 + x[i]", "s * 0.1 + x[i]",
         "np.cos(v) * x[i]"]


@st.composite
def _binding(draw, name, ind):
    kind = draw(st.sampled_from(["if", "ifelse", "inner", "inner_break", "plain"]))
    e = draw(st.sampled_from(EXPRS)).replace("v", "v0")
    c = draw(st.sampled_from(CONDS))
    if kind == "if":
        return [f"{ind}if {c}:", f"{ind}    {name} = {e}"]
    if kind == "ifelse":
        other = draw(st.sampled_from(EXPRS)).replace("v", "v0")
        return [f"{ind}if {c}:", f"{ind}    {name} = {e}", f"{ind}else:",
                f"{ind}    {name} = {other} + 1.0"]
    if kind == "inner":
        trips = draw(st.sampled_from([2, 3]))
        return [f"{ind}for j in range(i % {trips}):", f"{ind}    {name} = {e} + x[j]"]
    if kind == "inner_break":
        return [f"{ind}for j in range(3):", f"{ind}    if j >= i % 3:", f"{ind}        break",
                f"{ind}    {name} = {e} * x[j]"]
    return [f"{ind}{name} = {e}"]


@st.composite
def programs(draw):
    loop = draw(st.sampled_from(["for", "while"]))
    lines = ["import numpy as np", "", "", "def f(x):", "    s = 0.0", "    v0 = x[0] * 0.3",
             "    v = x[1]"]
    lines += ["    for i in range(x.shape[0]):"] if loop == "for" else \
        ["    i = 0", "    while i < x.shape[0]:"]
    ind = " " * 8
    lines += draw(_binding("v0", ind))
    late = draw(st.booleans())  # a name bound in the body only
    if late:
        lines += draw(_binding("w", ind))
    if draw(st.booleans()):
        lines += [f"{ind}if i % 4 == 3:"] + ([f"{ind}    i += 1"] if loop == "while" else []) \
            + [f"{ind}    continue"]
    use = draw(st.sampled_from(["s = s + v0 * x[i]", "s = s + np.sin(v0) * v",
                                "s = s * 0.9 + v0"]))
    if late:
        use += " + (w * x[i] if i > 0 else 0.0)"
    lines.append(ind + use)
    if draw(st.booleans()):
        lines.append(f"{ind}v = v * 0.5 + v0")
    if loop == "while":
        lines.append(f"{ind}i += 1")
    lines.append("    return s + v")
    return "\n".join(lines) + "\n"


@progen.campaign_settings(ci_examples=25)
@given(text=programs(), seed=st.integers(0, 2**16))
def test_loop_carried_values_agree_with_central_differences(text, seed, tmp_path_factory):
    note(text)
    f = progen.load(text, tmp_path_factory.mktemp("loop_carried")).f
    x = np.random.default_rng(seed).random(6) + 0.05
    try:
        f(x.copy())
    except NameError:  # w read on an iteration before any binding: Python refuses it too
        event("unbound in Python (not run)")
        return
    want = numerical_grad(f, (x,), 0)
    tol = 1e-5 * (1.0 + np.max(np.abs(want)))
    for mutation in ("save", "strict"):
        got = adgen.grad(f, mutation=mutation)(x.copy())
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=tol, err_msg=mutation)
    direction = np.linspace(0.2, 1.0, x.size)
    try:
        _, tangent = adgen.jvp(f, (x.copy(),), (direction,))
    except AdgenError:
        event("forward mode refused")
        return
    np.testing.assert_allclose(tangent, want @ direction, rtol=1e-4, atol=tol)
