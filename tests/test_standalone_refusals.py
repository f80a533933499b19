"""``adgen FILE -f NAME -o OUT.py`` writes a module that needs numpy only, or refuses at
generation time.

A closure's cells, a call adgen resolves only when it runs (a nested def, a method of an
object built inside) and a global of another module would make the module fail where adgen is
not installed (it said "Needs numpy only" and then raised ``No module named 'adgen'`` or a
NameError), or read another module's value of the same name. Those are refused, naming the
user's line; the hint is followed and works. Private globals (``_SCALE``, ``_helper``), which
``import *`` leaves out, are imported by name; callees of callees are in the module. Every module written is run in a subprocess where adgen
cannot be imported, and its gradient compared with central differences.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

USER = textwrap.dedent('''\
    import numpy as np

    from helpers_elsewhere import scaled_sum, uses_private

    _SCALE = 3.0


    def _helper(x):
        return x * _SCALE


    def private_globals(x):
        return np.sum(_helper(x) ** 2)


    def make(scale):
        def inner(x):
            return np.sum(scale * x ** 2)
        return inner


    closure = make(3.0)


    def scaled(x, scale):  # the hint followed: the cell as a parameter
        return np.sum(scale * x ** 2)


    def nested_def(x):
        def h(z):
            return z * 2.0
        return np.sum(h(x))


    def double(z):  # the hint followed: a module-level function
        return z * 2.0


    def module_level(x):
        return np.sum(double(x))


    class Model:
        def __init__(self):
            self.w = np.arange(1.0, 4.0)

        def loss(self, x):
            return np.sum(self.w * x ** 2)


    def method_call(x):
        m = Model()
        return m.loss(x)


    def calls_elsewhere(x):
        return uses_private(x) + 1.0


    def calls_scaled_sum(x):  # reads another module's SCALE
        return scaled_sum(x) * SCALE


    SCALE = 10.0


    def deep1(x):  # a callee's callee's callee
        return deep2(x) * 2.0


    def deep2(x):
        return np.sum(deep3(x))


    def deep3(x):
        return np.sin(x) * SCALE
''')

ELSEWHERE = textwrap.dedent('''\
    import numpy as np

    _K = 2.0


    def _twice(x):
        return _K * x


    def uses_private(x):
        return np.sum(_twice(x) ** 2)


    SCALE = 3.0


    def scaled_sum(x):
        return np.sum(x) * SCALE
''')

RUNNER = textwrap.dedent('''\
    import importlib
    import pickle
    import sys

    module_name, function, folder, numpy_site, out_file = sys.argv[1:6]
    sys.path[:0] = [folder, numpy_site]


    class NoAdgen:
        def find_spec(self, name, path=None, target=None):
            if name == "adgen" or name.startswith("adgen."):
                raise ImportError("adgen is not importable in this test")
            return None


    sys.meta_path.insert(0, NoAdgen())
    import numpy as np

    module = importlib.import_module(module_name)
    x = np.array([0.5, -1.0, 2.0])
    out, saved = getattr(module, function + "_forward")(x)
    grads = getattr(module, function + "_pullback")(saved, 1.0)
    with open(out_file, "wb") as f:
        pickle.dump((out, grads), f)
''')

X = np.array([0.5, -1.0, 2.0])


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "user_model.py").write_text(USER)
    (tmp_path / "helpers_elsewhere.py").write_text(ELSEWHERE)
    (tmp_path / "runner.py").write_text(RUNNER)
    return tmp_path


def generate(folder: Path, name: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "adgen", str(folder / "user_model.py"), "-f",
                           name, "-o", str(folder / f"{name}_adjoint.py")], cwd=folder,
                          capture_output=True, text=True, timeout=300, check=False)


def run_without_adgen(folder: Path, name: str) -> tuple[float, tuple]:
    numpy_site = str(Path(np.__file__).resolve().parent.parent)
    r = subprocess.run([sys.executable, "-I", "-S", str(folder / "runner.py"),
                        f"{name}_adjoint", name, str(folder), numpy_site,
                        str(folder / "out.pkl")], capture_output=True, text=True, timeout=300,
                       check=False)
    assert r.returncode == 0, r.stderr
    return pickle.loads((folder / "out.pkl").read_bytes())


def user_function(folder: Path, name: str):
    sys.path.insert(0, str(folder))
    try:
        import importlib

        for module in ("user_model", "helpers_elsewhere"):
            sys.modules.pop(module, None)
        return getattr(importlib.import_module("user_model"), name)
    finally:
        sys.path.remove(str(folder))


@pytest.mark.parametrize("name", ["private_globals", "module_level", "deep1"])
def test_module_runs_without_adgen(folder: Path, name: str) -> None:
    r = generate(folder, name)
    assert r.returncode == 0, r.stderr
    assert "Needs numpy only" in (folder / f"{name}_adjoint.py").read_text()
    out, (grad,) = run_without_adgen(folder, name)
    fun = user_function(folder, name)
    assert np.isclose(out, fun(X.copy()))
    assert_grad_close(grad, numerical_grad(fun, (X,), 0))
    assert_grad_close(grad, adgen.grad(fun)(X.copy()))


@pytest.mark.parametrize("name, line, says", [
    ("closure", 17, "is a closure: it reads scale"),
    ("nested_def", 32, ("line 32 (return np.sum(h(x))) in nested_def calls a function adgen "
                        "resolves only when it runs")),
    ("method_call", 53, "line 53 (return m.loss(x)) in method_call calls a function"),
    ("calls_elsewhere", 56, "_twice reads _K, which the module cannot import"),
    ("calls_scaled_sum", 60, "would give scaled_sum another SCALE than the one it reads"),
])
def test_refused_at_generation_time(folder: Path, name: str, line: int, says: str) -> None:
    r = generate(folder, name)
    assert r.returncode == 1, r.stdout + r.stderr
    assert not (folder / f"{name}_adjoint.py").exists()
    assert f"user_model.py:{line}:" in r.stderr and "UnsupportedError" in r.stderr
    assert says in r.stderr and "hint:" in r.stderr
    with pytest.raises(adgen.UnsupportedError):
        adgen.standalone_source(user_function(folder, name))


def test_the_closure_hint_followed_works(folder: Path) -> None:
    # "pass scale as a parameter": scaled(x, scale) is written and runs without adgen
    r = generate(folder, "scaled")
    assert r.returncode == 0, r.stderr
    text = (folder / "scaled_adjoint.py").read_text()
    assert "adgen" not in "".join(ln for ln in text.splitlines()
                                  if ln.startswith(("import", "from")))
    assert "pass scale as a parameter" in generate(folder, "closure").stderr
