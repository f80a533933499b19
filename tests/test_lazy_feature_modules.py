"""The first gradient of a small function without loops does not import the modules of
features it does not use (issue 15, cold start): argument_writes and tangent_ast (forward
mode), analyses.user_methods (a method call on a value that is not a known array),
emitted_sites (explain's sites whose overwritten parts are copied where read), walked_lengths
and walked_lists (for loops), counter_rows (reads a write in place may overwrite),
lift_lambdas (lambdas), effect_calls (refusals of calls writing their arguments), lower_match
(match statements), nested_defs (functions defined inside), list_end_reads (the last item
of a list the function grows), reverse_stores (stores and reads by index), reverse_calls
(calls of the user's functions), reversed_items (reversed(xs)) and operator_methods
(operators of the user's classes). Each is
imported where it is first needed, and the function needing it gets the right derivative
(and explain's right reason) in the same fresh process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from gradcheck import numerical_grad

USER_FILE = '''import numpy as np


def smooth(x):
    y = np.sin(x) * x
    return np.sum(y)


def fill_squares(out, x):
    out[:] = x ** 2


def through_helper(x):
    buf = np.empty_like(x)
    fill_squares(buf, x)
    return np.sum(buf * x)


class State:
    def __init__(self, w):
        self.w = w

    def copy(self):
        return State(2.0 * self.w)


def copied_state(x):
    c = State(x).copy()
    return np.sum(c.w * x)


def sweeps(u0):
    n = u0.shape[0]
    u = u0.copy()
    p = np.zeros((n, n))
    for _ in range(3):
        p[:, 0] = 0.0
        for j in range(1, n):
            p[:, j] = -0.3 / (0.5 * p[:, j - 1] + 2.0)
            u[:, j] = (u[:, j] - 0.2 * u[:, j - 1]) / (0.5 * p[:, j - 1] + 2.0)
        for j in range(n - 2, -1, -1):
            u[:, j] = p[:, j + 1] * u[:, j + 1] + u[:, j]
    return np.sum(u ** 2)
'''

SCRIPT = '''import json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import adgen
from user_code import smooth, through_helper, copied_state, sweeps

LAZY = ("adgen.transforms.argument_writes", "adgen.transforms.tangent_ast",
        "adgen.transforms.analyses.user_methods", "adgen.transforms.emitted_sites",
        "adgen.transforms.walked_lengths", "adgen.transforms.walked_lists",
        "adgen.transforms.counter_rows", "adgen.transforms.lift_lambdas",
        "adgen.transforms.effect_calls", "adgen.transforms.lower_match",
        "adgen.transforms.nested_defs", "adgen.transforms.list_end_reads",
        "adgen.transforms.reverse_stores", "adgen.transforms.reverse_calls",
        "adgen.transforms.reversed_items", "adgen.transforms.operator_methods")


def loaded():
    return [m for m in LAZY if m in sys.modules]


x = np.linspace(0.1, 1.0, 5)
v = np.linspace(1.0, -1.0, 5)
u0 = np.random.default_rng(5).random((5, 5))
out = {"smooth": adgen.grad(smooth)(x).tolist(), "after smooth": loaded()}
out["jvp"] = float(adgen.jvp(through_helper, (x,), (v,))[1])
out["after jvp"] = loaded()
out["copied_state"] = adgen.grad(copied_state)(x).tolist()
out["after copied_state"] = loaded()
out["save"] = adgen.grad(sweeps, mutation="save")(u0).tolist()
try:
    adgen.grad(sweeps, mutation="strict")(u0)
except adgen.errors.MutationError as e:
    out["strict"] = str(e)
rows = {r.construct: r for r in adgen.explain(sweeps, u0, file=None)}
out["decision"] = rows["p[:, 0] = 0.0"].decision
out["after sweeps"] = loaded()
print(json.dumps(out))
'''


def test_feature_modules_wait_for_their_feature(tmp_path: Path) -> None:
    (tmp_path / "user_code.py").write_text(USER_FILE)
    (tmp_path / "run.py").write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(tmp_path / "run.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=300, check=True)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    sys.path.insert(0, str(tmp_path))
    try:
        from user_code import sweeps
    finally:
        sys.path.remove(str(tmp_path))
    x = np.linspace(0.1, 1.0, 5)
    v = np.linspace(1.0, -1.0, 5)
    u0 = np.random.default_rng(5).random((5, 5))
    # a loop-free function's first gradient imports none of them
    np.testing.assert_allclose(out["smooth"], np.sin(x) + x * np.cos(x), rtol=1e-12)
    assert out["after smooth"] == []
    # forward mode (a helper writing its argument: buf = x ** 2, so the sum is x ** 3)
    np.testing.assert_allclose(out["jvp"], np.sum(3 * x ** 2 * v), rtol=1e-12)
    assert "adgen.transforms.argument_writes" in out["after jvp"]
    assert "adgen.transforms.tangent_ast" in out["after jvp"]
    # a user's class with its own copy(): State.copy doubles w, so the sum is 2 x ** 2
    np.testing.assert_allclose(out["copied_state"], 4 * x, rtol=1e-12)
    assert "adgen.transforms.analyses.user_methods" in out["after copied_state"]
    assert "adgen.transforms.reverse_calls" in out["after copied_state"]
    # save: p's columns are read again from its final contents, so explain says the write
    # is free
    expected = numerical_grad(sweeps, (u0,), 0)
    np.testing.assert_allclose(out["save"], expected, rtol=1e-6, atol=1e-8)
    # strict refuses the overwrite the gradient reads, at the user's line
    assert "user_code.py:39" in out["strict"] and "p[:, j] = " in out["strict"]
    assert out["decision"] == "free"
    assert "adgen.transforms.emitted_sites" in out["after sweeps"]
    # loops walking lists are checked (walked_lengths, walked_lists) and a loop writing in
    # place is read by rows (counter_rows) only where the function has them
    for module in ("walked_lengths", "walked_lists", "counter_rows", "reverse_stores"):
        assert f"adgen.transforms.{module}" in out["after sweeps"]
