"""Standalone modules (``adgen FILE -o OUT.py``) run where adgen is not installed.

For each example function, the CLI writes a module; a subprocess started with ``python -I -S``
(no site-packages, no environment) whose ``sys.path`` holds only the generated module's folder,
the user's module's folder and numpy's site-packages, and whose import system refuses
``adgen``, calls ``<f>_forward`` and ``<f>_pullback``. Its results must equal ``adgen.grad`` in
this process (and central differences), with the same output and the same final argument state.
"""

from __future__ import annotations

import copy
import importlib.util
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

# The functions of the examples, in a module that does not import adgen: the point of -o is a
# gradient that ships without adgen, and the user's module is imported by the generated one.
USER_MODULE = '''\
import math

import numpy as np

STEPS = 30


def loss(w, x):
    h = np.empty((x.shape[0], w.shape[1]))
    for i in range(x.shape[0]):
        h[i] = np.tanh(x[i] @ w)
    return np.sum(h ** 2)


def mse(y, y_hat):
    n = len(y)
    s = 0.0
    for i in range(n):
        s += (y[i] - y_hat[i]) ** 2.0
    return s / n


def sum3(array):
    x = array[0]
    y = array[1]
    z = array[2]
    return x + y + z


def addone(a):
    b = np.empty_like(a)
    b[...] = a + 1.0
    return np.sum(b)


def fill_after_use(x):
    y = x * x
    x.fill(0.0)
    return np.sum(y) + np.sum(x)


def g_inner(x, y):
    for i in range(len(x)):
        x[i] = 2.0 * y[i]
    return x


def g_outer(y):
    z = np.empty_like(y)
    g_inner(z, y)
    return np.sum(z * z)


def safe_sqrt(x):
    try:
        return math.sqrt(x)
    except ValueError:
        return 0.0


def heat(u0, alpha):
    u = u0.copy()
    lap = np.empty(len(u0) - 2)
    for _ in range(STEPS):
        lap[:] = u[2:] - 2.0 * u[1:-1] + u[:-2]
        u[1:-1] += alpha * lap
    return np.sum(u * u)


def mlp(params, X, Y):
    h = np.tanh(X @ params["W1"] + params["b1"])
    z = h @ params["W2"] + params["b2"]
    return np.mean((z - Y) ** 2)


def logistic(w, X, y):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))
'''

RUNNER = '''\
"""Runs generated forward/pullback pairs with adgen unimportable; pickles the results."""
import importlib
import pickle
import sys

adjoint_module, folders, inputs, outputs = sys.argv[1], sys.argv[2:-2], sys.argv[-2], sys.argv[-1]
sys.path[:0] = folders


class NoAdgen:
    """Refuses `import adgen`, wherever an installed copy might be found."""

    def find_spec(self, name, path=None, target=None):
        if name == "adgen" or name.startswith("adgen."):
            raise ImportError("adgen is not importable in this test")
        return None


sys.meta_path.insert(0, NoAdgen())
module = importlib.import_module(adjoint_module)
with open(inputs, "rb") as f:
    cases = pickle.load(f)
results = {}
for key, (name, args) in cases.items():
    out, saved = getattr(module, name + "_forward")(*args)
    pullback = getattr(module, name + "_pullback")
    first = pullback(saved, 1.0)
    results[key] = (out, first, pullback(saved, 1.0), args)
assert not [m for m in sys.modules if m.split(".")[0] == "adgen"]
with open(outputs, "wb") as f:
    pickle.dump(results, f)
'''

rng = np.random.default_rng(7)
CASES: dict[str, tuple[str, tuple[Any, ...], tuple[int, ...]]] = {
    # key: (function, arguments, positions with a gradient)
    "loss": ("loss", (rng.standard_normal((3, 2)), rng.standard_normal((4, 3))), (0, 1)),
    "mse": ("mse", (rng.standard_normal(6), rng.standard_normal(6)), (0, 1)),
    "sum3": ("sum3", (rng.standard_normal(5),), (0,)),
    "addone": ("addone", (rng.standard_normal(4),), (0,)),
    "fill_after_use": ("fill_after_use", (rng.standard_normal(4),), (0,)),
    "g_outer": ("g_outer", (rng.standard_normal(5),), (0,)),
    "safe_sqrt": ("safe_sqrt", (4.0,), (0,)),
    "safe_sqrt_except": ("safe_sqrt", (-1.0,), (0,)),
    "heat": ("heat", (rng.standard_normal(12), 0.2), (0, 1)),
    "mlp": ("mlp", ({"W1": rng.standard_normal((2, 5)), "b1": rng.standard_normal(5),
                     "W2": rng.standard_normal((5, 1)), "b2": rng.standard_normal(1)},
                    rng.standard_normal((8, 2)), rng.standard_normal((8, 1))), (0,)),
    "logistic": ("logistic", (0.3 * rng.standard_normal(3), rng.standard_normal((10, 3)),
                              (rng.random(10) < 0.5).astype(float)), (0,)),
}


@pytest.fixture
def user(tmp_path: Path) -> tuple[Path, ModuleType]:
    """The user's module on disk, and imported into this process under a unique name."""
    (tmp_path / "user").mkdir()
    path = tmp_path / "user" / "examples_plain.py"
    path.write_text(USER_MODULE)
    spec = importlib.util.spec_from_file_location(f"examples_plain_{id(path)}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return path, module


def generate(user_file: Path, names: list[str], out: Path) -> None:
    functions = [arg for name in names for arg in ("-f", name)]
    r = subprocess.run([sys.executable, "-m", "adgen", str(user_file), *functions, "-o",
                        str(out)], capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    assert out.exists()


def run_without_adgen(adjoint: Path, user_file: Path, keys: list[str],
                      tmp_path: Path) -> dict[str, Any]:
    inputs, outputs, runner = (tmp_path / "inputs.pkl", tmp_path / "outputs.pkl",
                               tmp_path / "runner.py")
    inputs.write_bytes(pickle.dumps({k: CASES[k][:2] for k in keys}))
    runner.write_text(RUNNER)
    numpy_site = str(Path(np.__file__).resolve().parent.parent)
    r = subprocess.run([sys.executable, "-I", "-S", str(runner), adjoint.stem,
                        str(adjoint.parent), str(user_file.parent), numpy_site, str(inputs),
                        str(outputs)], capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    return pickle.loads(outputs.read_bytes())


def check(key: str, result: tuple[Any, ...], module: ModuleType) -> None:
    name, args, argnums = CASES[key]
    out, cotangents, again, final_args = result
    f = getattr(module, name)
    plain_args = copy.deepcopy(args)
    assert_grad_close(out, f(*plain_args), rtol=1e-12, atol=1e-12)  # the same value
    for after, expected in zip(final_args, plain_args):  # the same effects on the arguments
        assert_grad_close(after, expected, rtol=0, atol=0)
    grads = adgen.grad(f, argnums=argnums)(*copy.deepcopy(args))
    for n, g in zip(argnums, grads):
        assert_grad_close(cotangents[n], g, rtol=1e-10, atol=1e-12)
        assert_grad_close(again[n], g, rtol=1e-10, atol=1e-12)  # pullbacks are reusable
        assert_grad_close(g, numerical_grad(f, args, n))


@pytest.mark.parametrize("key", list(CASES))
def test_one_function_per_module(key: str, user: tuple[Path, ModuleType],
                                 tmp_path: Path) -> None:
    user_file, module = user
    adjoint = tmp_path / "out" / f"{key}_adjoint.py"
    adjoint.parent.mkdir()
    generate(user_file, [CASES[key][0]], adjoint)
    results = run_without_adgen(adjoint, user_file, [key], tmp_path)
    check(key, results[key], module)


def test_all_functions_in_one_module(user: tuple[Path, ModuleType], tmp_path: Path) -> None:
    user_file, module = user
    adjoint = tmp_path / "out" / "all_adjoints.py"
    adjoint.parent.mkdir()
    names = list(dict.fromkeys(name for name, _, _ in CASES.values()))
    generate(user_file, names, adjoint)
    results = run_without_adgen(adjoint, user_file, list(CASES), tmp_path)
    for key in CASES:
        check(key, results[key], module)


def test_runner_really_blocks_adgen(tmp_path: Path) -> None:
    """The harness itself: a module that imports adgen must fail in the runner."""
    (tmp_path / "out").mkdir()
    bad = tmp_path / "out" / "needs_adgen.py"
    bad.write_text(textwrap.dedent("""\
        import adgen

        def f_forward(x):
            return x, ()
        """))
    inputs, runner = tmp_path / "inputs.pkl", tmp_path / "runner.py"
    inputs.write_bytes(pickle.dumps({}))
    runner.write_text(RUNNER)
    r = subprocess.run([sys.executable, "-I", "-S", str(runner), "needs_adgen", str(bad.parent),
                        str(Path(adgen.__file__).resolve().parent.parent), str(inputs),
                        str(tmp_path / "o.pkl")], capture_output=True, text=True, timeout=120,
                       check=False)
    assert r.returncode != 0
    assert "adgen is not importable in this test" in r.stderr
