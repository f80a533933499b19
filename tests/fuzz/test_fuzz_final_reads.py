"""Element reads a loop's pullback repeats instead of taping (transforms/reverse_final.py),
fuzzed: triangular loop nests of the shape the analysis proves things about, with the near
misses it must see through drawn from the same grammar.

Each program is a top-level ``for i in range(...)`` holding a ``for j in range(...)`` that
reads ``x[...]`` (one row or an element of a matrix) and writes ``x`` before, inside or after
the inner loop, optionally followed by a loop that writes every row again. Range starts may
be negative (a row counted from the end), indices may be ahead of or behind the counters,
rows may be written backwards. The gradient under both policies is compared with central
differences of the plain function; a refusal (strict's MutationError) is allowed, a wrong
value is not. ``event`` counts the programs whose pullback reads the element again.
"""

from __future__ import annotations

import numpy as np
import progen
from hypothesis import event, given, note
from hypothesis import strategies as st

STARTS1 = ["0", "1", "-1", "-2"]
STOPS1 = ["n", "n - 1"]
STARTS2 = ["0", "1", "-1", "i - 1", "i - 2", "i", "i + 1"]
STOPS2 = ["i", "i + 1", "n", "i - 1", "n - 1"]
READS = ["j", "i", "0", "-1", "i - 1", "j + 1", "n - 1 - j", "j - 1"]
WRITES = ["i", "i + 1", "n - 1 - i", "j", "-1", "0", "i - 1"]


@st.composite
def programs(draw):
    s1, e1 = draw(st.sampled_from(STARTS1)), draw(st.sampled_from(STOPS1))
    s2, e2 = draw(st.sampled_from(STARTS2)), draw(st.sampled_from(STOPS2))
    r, w = draw(st.sampled_from(READS)), draw(st.sampled_from(WRITES))
    where = draw(st.sampled_from(["after", "inner", "before"]))
    matrix = draw(st.booleans())
    alloc = "a.copy()" if matrix else draw(st.sampled_from(["a.copy()", "np.zeros(n)"]))
    if matrix:
        read = f"x[{r}, i]" if draw(st.booleans()) else f"x[i, {r}]"
        col = draw(st.sampled_from(["i", "j", "0"] if where == "inner" else ["i", "0", "1"]))
        write = f"x[{w}, {col}]"
    else:
        read, write = f"x[{r}]", f"x[{w}]"
    if where != "inner":  # outside the inner loop, j is not bound: write at a row of i
        write = write.replace("x[j", "x[i").replace(", j]", ", i]")
    lines = ["import numpy as np", "", "", "def f(a):", "    n = a.shape[0]", f"    x = {alloc}",
             "    s = 0.0", f"    for i in range({s1}, {e1}):", "        acc = 0.1"]
    if where == "before":
        lines.append(f"        {write} = 0.5 * np.cos({write}) + 0.5 * acc")
    lines += [f"        for j in range({s2}, {e2}):", f"            t = {read}",
              "            acc = acc + np.sin(t) * a.flat[0]"]
    if where == "inner":
        lines.append(f"            {write} = np.sin(acc) + 0.5 * {write}")
    elif where == "after":
        lines.append(f"        {write} = np.sin(acc) + 0.5 * {write}")
    lines.append("        s = s + acc")
    if draw(st.booleans()):
        lines += ["    for i in range(n):", "        x[i] = 0.5 * x[i] + 1.0"]
    lines.append("    return np.sum(x * x) + s")
    return "\n".join(lines) + "\n", matrix


@progen.campaign_settings(ci_examples=25)
@given(program=programs(), seed=st.integers(0, 2**16))
def test_final_reads_agree_with_central_differences(program, seed, tmp_path_factory):
    text, matrix = program
    note(text)
    a = np.random.default_rng(seed).random((5, 5) if matrix else 6) * 0.5 + 0.1
    pullback = progen.check_loop_program(text, tmp_path_factory.mktemp("final_reads"), a)
    if pullback is None:
        event("index out of range (not run)")
    else:
        event("element read again" if "t = x[" in pullback else "element taped")
