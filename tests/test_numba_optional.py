"""numba stays optional: ``import adgen`` (and the default backend) never loads it, and
``backend="numba"`` without it says which extra installs it while ``"auto"`` falls back with
a warning. These tests run without numba."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tomllib
from gradcheck import assert_grad_close

import adgen
from adgen.backends import NumbaFallbackWarning

ROOT = Path(__file__).resolve().parent.parent


def loop_sum(x):
    s = 0.0
    for i in range(len(x)):
        s += x[i] * x[i]
    return s


def test_import_adgen_loads_no_numba() -> None:
    code = ("import sys, numpy as np, adgen, test_numba_optional as t; "
            "adgen.grad(t.loop_sum)(np.ones(3)); print('numba' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, check=True, cwd=Path(__file__).parent)
    assert r.stdout.strip() == "False"


def test_missing_numba_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from adgen import backends

    monkeypatch.setitem(sys.modules, "numba", None)  # `import numba` raises ImportError
    monkeypatch.setattr(backends, "_NUMBA", {})
    x = np.arange(3.0)
    with pytest.raises(adgen.UnsupportedError, match="needs numba") as info:
        adgen.grad(loop_sum, backend="numba")(x)
    assert "adgen[numba]" in str(info.value)
    with pytest.warns(NumbaFallbackWarning, match="needs numba"):
        g = adgen.grad(loop_sum, backend="auto")(x)
    assert_grad_close(g, 2.0 * x)


def test_the_numba_extra_and_ci() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert extras["numba"] == ["numba"]
    # CI installs the extra, so it runs the numba tests
    installed = re.findall(r'pip install[^\n]*"\.\[([^\]]*)\]"', (ROOT / ".ci" / "run").read_text())
    assert any("numba" in extras.split(",") for extras in installed), installed
