"""A standalone module (``adgen FILE -o OUT.py``) reads the user's module's globals when it
runs, as the user's function does: a constant the user rebinds after importing (``sim.DT =
0.3``, a private ``sim._GAIN``) changes the value and the gradient. Before, the module did
``from sim import *`` only, which copies the values of import time: both were silently those of
the old constant. A name the generated code binds itself (a parameter ``K`` of a helper) is
not read from the user's module."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

SIM = '''\
import numpy as np

DT = 0.1
K = 0.5
_GAIN = 2.0


def step(u, out, K=K):  # K here is the parameter, not the global
    out[1:-1] = u[1:-1] + DT * K * (u[2:] - 2 * u[1:-1] + u[:-2])
    out[0] = out[-1] = 0.0
    return out


def simulate(u0, n_steps=5):
    u = u0.copy()
    buf = np.empty_like(u)
    for _ in range(n_steps):
        step(u, buf, 0.25)
        u, buf = buf, u
    return _GAIN * np.sum(u ** 2) + K * np.sum(u)
'''

CHECK = '''\
import json, sys
import numpy as np
import sim, sim_adjoint

def value_and_grad():
    u0 = np.sin(np.linspace(0.0, np.pi, 12))
    out, saved = sim_adjoint.simulate_forward(u0)
    g = sim_adjoint.simulate_pullback(saved, 1.0)[0]  # (u0, n_steps)
    h, fd = 1e-6, np.zeros_like(u0)
    for i in range(u0.size):
        e = np.zeros_like(u0)
        e[i] = h
        fd[i] = (sim.simulate(u0 + e) - sim.simulate(u0 - e)) / (2 * h)
    return [float(out), float(sim.simulate(u0)), float(np.max(np.abs(g - fd)))]

before = value_and_grad()
sim.DT, sim.K, sim._GAIN = 0.3, 1.5, 0.5   # the user changes the constants
after = value_and_grad()
print(json.dumps([before, after]))
'''


@pytest.mark.parametrize("functions", [["simulate"], ["simulate", "step"]])
def test_rebound_constants_are_read_when_the_module_runs(tmp_path: Path, functions) -> None:
    (tmp_path / "sim.py").write_text(SIM)
    selected = [a for f in functions for a in ("-f", f)]
    r = subprocess.run([sys.executable, "-m", "adgen", "sim.py", *selected, "-o",
                        "sim_adjoint.py"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    (tmp_path / "check.py").write_text(textwrap.dedent(CHECK))
    r = subprocess.run([sys.executable, "check.py"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    before, after = json.loads(r.stdout)
    for value, expected, grad_error in (before, after):
        assert value == pytest.approx(expected, rel=1e-12)
        assert grad_error < 1e-6
    assert after[1] != pytest.approx(before[1])  # the constants did change the function
    np.testing.assert_array_less(0.0, np.abs(after[1] - before[1]))
