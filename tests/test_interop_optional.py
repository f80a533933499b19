"""torch, jax and dask stay optional: ``import adgen`` loads none of them, and a wrapper whose
framework is missing says which extra installs it. These tests run without the extras."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tomllib

import adgen
from adgen.interop import jax_function, torch_function

ROOT = Path(__file__).resolve().parent.parent


def square_sum(x):
    return np.sum(x ** 2)


def test_import_adgen_loads_no_framework() -> None:
    code = ("import sys, adgen, adgen.interop; "
            "print(sorted(m for m in ('torch', 'jax', 'dask', 'distributed') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       check=True)
    assert r.stdout.strip() == "[]"


@pytest.mark.parametrize("wrap, module", [(torch_function, "torch"), (jax_function, "jax")])
def test_missing_framework_names_the_extra(wrap, module: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # `import module` raises ImportError
    with pytest.raises(adgen.UnsupportedError, match=rf"needs {module}") as info:
        wrap(square_sum)
    assert "adgen[interop]" in str(info.value)


def test_the_interop_extra_lists_the_frameworks() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    names = {r.split(">")[0].split("=")[0].split("[")[0] for r in extras["interop"]}
    assert {"torch", "jax", "jaxlib", "dask"} <= names
    assert "interop" in (ROOT / ".ci" / "run").read_text()  # CI runs the interop tests
