"""``adgen FILE.py`` prints the ``@adgen.differentiable`` methods of the file's classes too.

They were skipped without a word (only module-level functions were looked at), so a user who
decorated ``Net.loss`` saw nothing for it; ``-f Net.loss`` did work."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from tests.gradcheck import central

MODEL = """\
import numpy as np

import adgen


class Net:
    @adgen.differentiable
    def loss(self, w, x):
        return np.sum(np.tanh(x @ w) ** 2)

    @staticmethod
    @adgen.differentiable
    def penalty(w):
        return np.sum(w ** 4)

    def plain(self, w):
        return np.sum(w)


@adgen.differentiable
def mse(y, t):
    return np.mean((y - t) ** 2)
"""


def _cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "adgen", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300, check=False,
                          env=dict(os.environ))


def test_methods_are_printed_and_written(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "model.py").write_text(textwrap.dedent(MODEL))
    r = _cli("model.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "# ---- Net.loss" in r.stdout and "def loss_pullback" in r.stdout
    assert "# ---- Net.penalty" in r.stdout and "# ---- mse" in r.stdout
    assert "plain_forward" not in r.stdout  # not decorated
    r = _cli("model.py", "-o", "adjoints.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    monkeypatch.syspath_prepend(str(tmp_path))  # the module may import the user's file
    spec = importlib.util.spec_from_file_location("adjoints", tmp_path / "adjoints.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rng = np.random.default_rng(0)
    w, x = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))
    _, saved = module.loss_forward(None, w, x)
    w_bar = module.loss_pullback(saved, 1.0)[1]
    np.testing.assert_allclose(w_bar, central(lambda v: np.sum(np.tanh(x @ v) ** 2), w),
                               rtol=1e-6)
