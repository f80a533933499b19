"""Smoke tests of examples/: each runs as a script (exit 0), and the gradients it prints match
central differences of the example's own function at the example's own inputs.

An example prints a gradient as ``<label> = <value>``; the test imports the example (its
``__main__`` block does not run) to get the function and inputs, and compares.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from functools import cache
from itertools import pairwise
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from gradcheck import numerical_grad

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
HAVE_SCIPY = importlib.util.find_spec("scipy") is not None
HAVE_DASK = importlib.util.find_spec("distributed") is not None  # the "interop" extra
NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"


@cache
def run(name: str) -> str:
    """Runs examples/<name> as a script once; returns its stdout."""
    r = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True,
                       timeout=600, check=False)
    assert r.returncode == 0, f"examples/{name} failed:\n{r.stdout}\n{r.stderr}"
    return r.stdout


@cache
def load(name: str) -> ModuleType:
    """Imports examples/<name> without running its __main__ block (with examples/ on the
    path, as when it runs as a script: ode_fit_dask imports lotka_volterra)."""
    spec = importlib.util.spec_from_file_location(f"example_{Path(name).stem}", EXAMPLES / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(EXAMPLES))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(EXAMPLES))
    return module


def printed(stdout: str, label: str) -> np.ndarray:
    """The numbers printed after ``label =`` (a scalar, or a bracketed numpy array)."""
    assert f"{label} =" in stdout, f"{label!r} not printed:\n{stdout}"
    text = stdout[stdout.index(f"{label} =") + len(label) + 2:].lstrip()
    if text.startswith("["):
        depth = 0
        for end, char in enumerate(text):
            depth += {"[": 1, "]": -1}.get(char, 0)
            if depth == 0:
                text = text[:end + 1]
                break
    else:
        text = text.splitlines()[0]
    return np.array([float(t) for t in re.findall(NUMBER, text)])


def assert_printed_gradient(stdout: str, label: str, f: Any, args: tuple[Any, ...],
                            argnum: int, part: str | None = None) -> None:
    expected = numerical_grad(f, args, argnum)
    if part is not None:
        expected = expected[part]
    # numpy prints 8 decimals: compare at that precision.
    np.testing.assert_allclose(printed(stdout, label), np.ravel(expected), rtol=1e-5, atol=1e-7,
                               err_msg=label)


ALL = sorted(p.name for p in EXAMPLES.glob("*.py"))


@pytest.mark.parametrize("name", ALL)
def test_runs(name: str) -> None:
    if name == "logistic_scipy.py" and not HAVE_SCIPY:
        pytest.skip("scipy is not installed (pip install -e '.[examples]')")
    if name == "ode_fit_dask.py" and not (HAVE_DASK and HAVE_SCIPY):
        pytest.skip("dask.distributed or scipy is not installed (pip install -e "
                    "'.[interop,examples]')")
    assert run(name).strip()


def test_quickstart() -> None:
    out, ex = run("quickstart.py"), load("quickstart.py")
    assert_printed_gradient(out, "d loss / d w", ex.loss, (ex.w, ex.x), 0)
    assert_printed_gradient(out, "d loss / d x", ex.loss, (ex.w, ex.x), 1)
    assert re.search(r"quickstart\.py:\d+:\d+: free: h\[i\]", out), out
    assert "def loss_forward(w, x):" in out and "def loss_pullback(" in out


def test_quickstart_with_the_cli() -> None:
    """The README's first command: adgen examples/quickstart.py."""
    r = subprocess.run([sys.executable, "-m", "adgen", str(EXAMPLES / "quickstart.py")],
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    assert "def loss_forward(w, x):" in r.stdout and "def loss_pullback(" in r.stdout


def test_seeds() -> None:
    out, ex = run("seeds.py"), load("seeds.py")
    a = ex.a
    for label, f, args, argnum in [
        ("d mse / d y", ex.mse, (ex.y, ex.y_hat), 0),
        ("d mse / d y_hat", ex.mse, (ex.y, ex.y_hat), 1),
        ("d sum3 / d a", ex.sum3, (a,), 0),
        ("d addone / d a", ex.addone, (a,), 0),
        ("d g_outer / d a", ex.g_outer, (a,), 0),
        ("d fill_after_use / d a", ex.fill_after_use, (a,), 0),
        ("d safe_sqrt / d x at 4.0", ex.safe_sqrt, (4.0,), 0),
        ("d safe_sqrt / d x at -1.0", ex.safe_sqrt, (-1.0,), 0),
        ("d cube_roots / d x at 2.0", ex.cube_roots, (2.0,), 0),
    ]:
        assert_printed_gradient(out, label, f, args, argnum)
    assert "x afterwards, as after a plain call: [0. 0. 0. 0.]" in out
    assert "error: MutationError" in out and "error: MissingRuleError" in out


@pytest.mark.skipif(not HAVE_SCIPY, reason="scipy is not installed (pip install -e '.[examples]')")
def test_logistic_scipy() -> None:
    out, ex = run("logistic_scipy.py"), load("logistic_scipy.py")
    assert_printed_gradient(out, "d loss / d w at w0", ex.loss, (ex.w0, ex.X, ex.y), 0)
    np.testing.assert_allclose(printed(out, "fitted w"), ex.w_true, atol=0.2)
    assert float(printed(out, "accuracy")[0]) > 0.7


def test_mlp_sgd() -> None:
    out, ex = run("mlp_sgd.py"), load("mlp_sgd.py")
    assert_printed_gradient(out, "d loss / d W1 at the start", ex.mlp_loss,
                            (ex.params, ex.X, ex.Y), 0, part="W1")
    losses = [float(v) for v in re.findall(rf"step +\d+ +loss ({NUMBER})", out)]
    assert len(losses) >= 5
    assert all(later < earlier for earlier, later in pairwise(losses)), losses
    assert losses[-1] < losses[0] / 10


@pytest.mark.skipif(not (HAVE_DASK and HAVE_SCIPY),
                    reason="dask.distributed or scipy is not installed (pip install -e "
                           "'.[interop,examples]')")
def test_lotka_volterra() -> None:
    out, ex = run("lotka_volterra.py"), load("lotka_volterra.py")
    assert_printed_gradient(out, f"d misfit / d p at {ex.starts[0]}", ex.misfit,
                            (ex.starts[0], ex.y0, ex.observed, ex.dt), 0)


def test_ode_fit_dask() -> None:
    out, ex = run("ode_fit_dask.py"), load("ode_fit_dask.py")
    assert_printed_gradient(out, "d misfit / d p at start 0", ex.misfit,
                            (ex.starts[0], ex.y0, ex.observed, ex.dt), 0)
    np.testing.assert_allclose(printed(out, "fitted p"), ex.p_true, atol=1e-4)
    assert "same gradients with ProcessPoolExecutor: True" in out


def test_ode_adjoint() -> None:
    out, ex = run("ode_adjoint.py"), load("ode_adjoint.py")
    assert_printed_gradient(out, "d misfit / d alpha at 0.1", ex.misfit,
                            (0.1, ex.u0, ex.observed), 0)
    assert abs(printed(out, "recovered alpha")[0] - 0.3) < 1e-3
    # The in-place update of u is free; overwriting the lap buffer is saved.
    assert re.search(r"ode_adjoint\.py:\d+:\d+: free: u\[1:-1\]", out), out
    assert re.search(r"ode_adjoint\.py:\d+:\d+: guarded-save: lap\[:\]", out), out
