"""``adgen FILE.py`` on a module of a package, as a package is laid out: ``heat/__init__.py``,
``heat/ops.py``, and ``heat/model.py`` starting with ``from .ops import laplacian``.

The command imported the file by itself, with its folder on sys.path, and the relative
import failed: "importing heat/model.py failed: ... ImportError: attempted relative import
with no known parent package". It now imports the file by its dotted name (heat.model), the
folder above the package on sys.path, as ``python -m heat.model`` would; ``-o`` writes a
module that imports ``heat.model``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def adgen_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "adgen", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120, check=False, env=dict(os.environ))


def make_package(root: Path) -> None:
    write(root / "heat" / "__init__.py", "from .model import energy_after, Config\n")
    write(root / "heat" / "ops.py", """\
        import numpy as np

        DX = 0.5


        def laplacian(u):
            return (np.roll(u, 1) - 2.0 * u + np.roll(u, -1)) / DX ** 2
        """)
    write(root / "heat" / "model.py", """\
        from dataclasses import dataclass

        import numpy as np

        from . import ops
        from .ops import laplacian


        @dataclass(frozen=True)
        class Config:
            dt: float = 0.01


        def energy(u):
            return 0.5 * np.sum(u ** 2) * ops.DX


        def energy_after(u0, D, cfg):
            u = u0.copy()
            u += cfg.dt * D * laplacian(u0)
            return energy(u)
        """)


def test_a_module_with_relative_imports_prints_its_pullback(tmp_path: Path) -> None:
    make_package(tmp_path)
    r = adgen_cli("heat/model.py", "-f", "energy_after", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "def energy_after_pullback" in r.stdout
    (tmp_path / "elsewhere").mkdir()
    r = adgen_cli("../heat/model.py", "-f", "energy", cwd=tmp_path / "elsewhere")
    assert r.returncode == 0, r.stderr
    assert "def energy_pullback" in r.stdout


def test_the_standalone_module_of_a_package_module_computes_the_gradient(
        tmp_path: Path) -> None:
    make_package(tmp_path)
    r = adgen_cli("heat/model.py", "-f", "energy", "-o", "energy_adjoint.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "from heat.model import *" in (tmp_path / "energy_adjoint.py").read_text()
    u = np.array([0.5, -1.0, 2.0])
    check = ("import numpy as np, energy_adjoint as m\n"
             f"out, saved = m.energy_forward(np.array({u.tolist()}))\n"
             "print(repr(m.energy_pullback(saved, 1.0)[0].tolist()))\n")
    done = subprocess.run([sys.executable, "-c", check], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    # d/du 0.5 sum(u^2) DX = u DX
    assert np.allclose(eval(done.stdout), u * 0.5)  # noqa: S307 - a list printed above
