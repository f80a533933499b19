"""The first gradient of a function without loops does not import the modules that decide what
a loop's tape keeps (transforms/reverse_rows.py and the analyses of loops only it uses): fewer
modules for the cold start of a small function (issue 15). A function with a loop imports them
at its first loop, and both gradients are right."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

USER_FILE = '''import numpy as np


def smooth(x):
    y = np.sin(x) * x
    return np.sum(y)


def running(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i] ** 3
    return s
'''

SCRIPT = '''import json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import adgen
from user_code import smooth, running

LOOPS = ("adgen.transforms.reverse_rows", "adgen.transforms.analyses.iteration_invariants",
         "adgen.transforms.invariant_finals", "adgen.transforms.recomputed_rows")
x = np.linspace(0.1, 1.0, 5)
g1 = adgen.grad(smooth)(x)
before = [m for m in LOOPS if m in sys.modules]
g2 = adgen.grad(running)(x)
after = [m for m in LOOPS if m in sys.modules]
print(json.dumps({"g1": g1.tolist(), "g2": g2.tolist(), "before": before, "after": after}))
'''


def test_loop_modules_wait_for_the_first_loop(tmp_path: Path) -> None:
    (tmp_path / "user_code.py").write_text(USER_FILE)
    (tmp_path / "run.py").write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(tmp_path / "run.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=300, check=True)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    x = np.linspace(0.1, 1.0, 5)
    np.testing.assert_allclose(out["g1"], np.sin(x) + x * np.cos(x), rtol=1e-12)
    np.testing.assert_allclose(out["g2"], 3 * x ** 2, rtol=1e-12)
    assert out["before"] == []
    assert "adgen.transforms.reverse_rows" in out["after"]
