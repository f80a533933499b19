"""Rows a loop's pullback computes again instead of taping (transforms/recomputed_rows.py),
fuzzed: dynamic programmes of soft-DTW's shape, a table ``R`` filled cell by cell from
neighbours, with the near misses the analysis must see through drawn from the same grammar.

Each program fills ``R[i, j]`` in ``for i: for j:`` from two neighbours (behind the cell,
on it, or ahead of it) through a short chain of numbers (ufuncs, ``max``/``min``/``abs``,
products and differences), and may write a neighbour again in the iteration, sweep the
previous row again after the inner loop, or run a second loop over the table. The gradient
under both policies is compared with central differences of the plain function; a refusal
(strict's MutationError) is allowed, a wrong value is not. ``event`` counts the programs
whose inner loop keeps no tape.
"""

from __future__ import annotations

import numpy as np
import progen
from hypothesis import event, given, note
from hypothesis import strategies as st

OFFSETS = ["i - 1, j - 1", "i - 1, j", "i, j - 1", "i - 1, j + 1", "i, j", "i - 1, 0",
           "0, j - 1"]
STARTS = ["1", "1", "0", "2"]
UNARY = ["np.exp(-0.5 * {x})", "np.sin({x})", "np.tanh({x})", "np.log1p({x} * {x})",
         "abs({x})", "-{x} / 0.7", "np.sqrt({x} * {x} + 1.0)"]
BINARY = ["max({x}, {y})", "min({x}, {y})", "{x} * {y}", "{x} - {y}", "np.logaddexp({x}, {y})"]
AGAIN = ["", "R[i - 1, j] = 0.5 * R[i - 1, j] + c", "R[i, j - 1] = R[i, j - 1] * 0.9",
         "R[i, j] = R[i, j] + 0.1 * c"]


@st.composite
def programs(draw):
    u, v = draw(st.sampled_from(OFFSETS)), draw(st.sampled_from(OFFSETS))
    names = ["u", "v"]
    body = [f"            u = R[{u}]", f"            v = R[{v}]"]
    for k in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            op = draw(st.sampled_from(UNARY)).format(x=draw(st.sampled_from(names)))
        else:
            op = draw(st.sampled_from(BINARY)).format(x=draw(st.sampled_from(names)),
                                                     y=draw(st.sampled_from(names)))
        body.append(f"            w{k} = {op}")
        names.append(f"w{k}")
    body.append(f"            c = np.tanh({names[-1]})")
    body.append("            R[i, j] = a[i - 1, j - 1] * c + 0.5 * u")
    near = draw(st.booleans())  # half the programs draw no write after the reads
    again = draw(st.sampled_from(AGAIN)) if near else ""
    if again:
        body.append(f"            {again}")
    start = draw(st.sampled_from(STARTS))
    lines = ["import numpy as np", "", "", "def f(a):", "    n, m = a.shape",
             "    R = np.zeros((n + 1, m + 2))", "    R[0, :] = 0.2", "    R[:, 0] = 0.3",
             "    for i in range(1, n + 1):", f"        for j in range({start}, m + 1):"]
    lines += body
    if near and draw(st.booleans()):
        lines += ["        for j in range(m + 2):", "            R[i - 1, j] = R[i - 1, j] * 0.9"]
    if near and draw(st.booleans()):
        lines += ["    for i in range(n + 1):", "        for j in range(m + 2):",
                  "            R[i, j] = np.sin(R[i, j])"]
    lines.append("    return np.sum(R * R) * 0.1 + R[n, m]")
    return "\n".join(lines) + "\n"


@progen.campaign_settings(ci_examples=25)
@given(program=programs(), seed=st.integers(0, 2**16))
def test_recomputed_rows_agree_with_central_differences(program, seed, tmp_path_factory):
    note(program)
    a = np.random.default_rng(seed).random((3, 4)) * 0.8 + 0.1
    pullback = progen.check_loop_program(program, tmp_path_factory.mktemp("recomputed_rows"), a)
    if pullback is None:
        event("index out of range (not run)")
    else:
        event("row computed again" if "in reversed(range(" in pullback and
              "reversed(tape" not in pullback else "row taped")
