"""Values a loop stores that its pullback reads back from the array instead of taping them
(transforms/reverse_final.final_store), fuzzed: a store ``x[...] = t`` of tanh's output (whose
pullback reads it) in one or two nested loops, with the near misses the analysis must see
through drawn from the same grammar: indices that repeat across iterations (a row of the
outer counter only, a constant, a row counted from the end), writes of the same array before
or after the store in the iteration, a second sweep, a write after the loops, an array made
by the function or the argument itself, float64 or float32.

The gradient under both policies is compared with central differences of the plain function;
a refusal (strict's MutationError) is allowed, a wrong value is not. ``event`` counts the
programs whose pullback reads the stored value again.
"""

from __future__ import annotations

import numpy as np
import progen
from hypothesis import event, given, note
from hypothesis import strategies as st

STARTS = ["0", "1", "-1"]
ROWS = ["i", "j", "0", "-1", "i + 1", "n - 1 - i"]
OTHERS = ["", "before", "after", "sweep", "last"]


@st.composite
def programs(draw):
    nested = draw(st.booleans())
    start = draw(st.sampled_from(STARTS))
    matrix = nested and draw(st.booleans())
    rows = ROWS if nested else [r for r in ROWS if "j" not in r]
    r = draw(st.sampled_from(rows))
    index = f"{r}, {draw(st.sampled_from(['j', 'i', '0']))}" if matrix else r
    shape = "(n, n)" if matrix else "n"
    alloc = draw(st.sampled_from([f"np.zeros({shape})", "a.copy()",
                                  f"np.zeros({shape}, np.float32)"]))
    other = draw(st.sampled_from(OTHERS))
    lines = ["import numpy as np", "", "", "def f(a):", "    n = a.shape[0]", f"    x = {alloc}",
             "    s = 0.0", f"    for i in range({start}, n):"]
    pad = "        "
    if nested:
        lines.append(f"{pad}for j in range(n - 1):")
        pad += "    "
    first = "a[i % 3, 0]" if matrix else "a[i % 3]"
    lines.append(f"{pad}t = np.tanh({first} * (1.0 + s) + 0.1 * i)")
    if other == "before":
        lines.append(f"{pad}x[{index}] = 0.5 * t")
    lines.append(f"{pad}x[{index}] = t")
    if other == "after":
        lines.append(f"{pad}x[{index}] += 0.3 * t")
    lines.append(f"{pad}s = s + 0.1 * t")
    if other == "sweep":
        lines += ["    for i in range(n):", "        x[i] = np.sin(x[i]) + x[i]"]
    if other == "last":
        lines.append("    x[0] = 2.0 * s")
    lines.append("    return np.sum(x * x) + s")
    return "\n".join(lines) + "\n", matrix


@progen.campaign_settings(ci_examples=40)
@given(program=programs(), seed=st.integers(0, 2**16))
def test_final_stores_agree_with_central_differences(program, seed, tmp_path_factory):
    text, matrix = program
    note(text)
    a = np.random.default_rng(seed).random((4, 4) if matrix else 5) * 0.5 + 0.1
    pullback = progen.check_loop_program(text, tmp_path_factory.mktemp("final_stores"), a,
                                         narrow="float32" in text)
    if pullback is None:
        event("index out of range (not run)")
    else:
        event("stored value read again" if "t = x[" in pullback else "stored value taped")
