"""A module edited while a notebook runs, reloaded in place (IPython's ``%autoreload 2``).

IPython 9's autoreload (its "deduperreload", the default) re-runs only the defs that changed:
each is compiled alone, from ``ast.unparse`` of the def, under the module's file name, and its
code is copied into the old function object (``f.__code__ = new.__code__``). The code's
``co_firstlineno`` then counts from that def (1, or 2 for a method, compiled inside a stand-in
class), not from the top of the file, so reading "the lines at co_firstlineno" reads the wrong
lines: adgen refused the function ("f is a lambda or not a plain function", pointing at the
file's first line). A def the edit added is run from its text alone, as ``"<string>"``: adgen
said it had no source. It now finds the def in the file by its name and code.

``patch`` below does what deduperreload does; tests/test_notebook.py runs the real extension.
Gradients are checked against central differences and hand-derived formulas.
"""

from __future__ import annotations

import ast
import importlib
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

BEFORE = '''
import numpy as np


def f(x):
    return np.sum(np.sin(x))


class Model:
    def __init__(self, scale):
        self.scale = scale

    def loss(self, w):
        return self.scale * np.sum(w ** 2)
'''

AFTER = '''
import numpy as np

OFFSET = 0.5


def helper(x):
    return x * x


def f(x):
    y = helper(x) + OFFSET
    return np.sum(y * np.cos(x))


class Model:
    def __init__(self, scale):
        self.scale = scale

    def loss(self, w):
        total = 0.0
        for i in range(w.shape[0]):
            total += self.scale * w[i] ** 3
        return total
'''


def patch(module, path: Path) -> None:
    """deduperreload's in-place update of ``f`` and ``Model.loss`` from the edited file."""
    tree = ast.parse(path.read_text())
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    for name in ("OFFSET",):  # new globals are set on the module
        setattr(module, name, 0.5)
    for name in ("helper",):  # a new def is run from its text alone, as "<string>"
        env: dict = {}
        exec(ast.unparse(defs[name]), module.__dict__ | module.__dict__, env)  # noqa: S102
        setattr(module, name, env[name])
    code = textwrap.dedent(ast.unparse(defs["f"]))
    env = {}
    exec(compile(code, str(path), "exec", dont_inherit=True), module.__dict__, env)  # noqa: S102
    module.f.__code__ = env["f"].__code__
    (method,) = [n for n in defs["Model"].body if getattr(n, "name", "") == "loss"]
    code = "class __autoreload_class__:\n" + textwrap.indent(ast.unparse(method), "    ")
    env = {}
    exec(compile(code, str(path), "exec", dont_inherit=True), module.__dict__, env)  # noqa: S102
    module.Model.loss.__code__ = env["__autoreload_class__"].loss.__code__


@pytest.fixture
def edited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """(module, old f object, old Model.loss) after the file was edited and patched."""
    path = tmp_path / "reloaded_model.py"
    path.write_text(BEFORE)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("reloaded_model")
    x = np.array([0.3, -1.1, 2.0])
    assert np.allclose(adgen.grad(module.f)(x), np.cos(x))  # compiled from the old text
    old_f, old_loss = module.f, module.Model.loss
    path.write_text(AFTER)  # lines move: f now starts at line 12, not 5
    patch(module, path)
    yield module, old_f, old_loss
    sys.modules.pop("reloaded_model", None)


def test_a_patched_function_is_read_from_its_new_lines(edited) -> None:
    module, old_f, _ = edited
    assert module.f is old_f and module.f.__code__.co_firstlineno == 1  # as deduperreload
    x = np.array([0.3, -1.1, 2.0])
    g = adgen.grad(module.f)(x)
    # d/dx sum((x^2 + 0.5) cos x) = 2x cos x - (x^2 + 0.5) sin x
    assert np.allclose(g, 2 * x * np.cos(x) - (x * x + 0.5) * np.sin(x))
    assert np.allclose(g, numerical_grad(module.f, (x,), 0))


def test_a_def_added_by_the_reload_is_read_from_the_module_file(edited) -> None:
    module, _, _ = edited
    assert module.helper.__code__.co_filename == "<string>"  # no file, no linecache entry
    x = np.array([0.3, -1.1, 2.0])
    assert np.allclose(adgen.grad(lambda v: np.sum(module.helper(v)))(x), 2 * x)
    # the generated code names the def's line in the module's file
    assert "# line 8: return x * x" in adgen.source(module.helper)
    ns: dict = {"__name__": "reloaded_model", "np": np}
    exec("def helper(x):\n    return np.sum(x ** 3)\n", ns)  # noqa: S102 - not the file's
    with pytest.raises(adgen.MissingRuleError, match="Python keeps no source"):
        adgen.grad(ns["helper"])(x)


def test_a_patched_method_is_read_from_its_new_lines(edited) -> None:
    module, _, old_loss = edited
    assert module.Model.loss is old_loss and old_loss.__code__.co_firstlineno == 2
    model, w = module.Model(2.0), np.array([0.5, -1.5])
    g = adgen.grad(model.loss)(w)
    assert np.allclose(g, 2.0 * 3 * w ** 2)  # by hand
    assert np.allclose(g, numerical_grad(model.loss, (w,), 0))


def test_code_that_no_def_of_the_file_compiles_to_is_still_refused(edited) -> None:
    module, _, _ = edited

    def other(x):
        return np.sum(np.exp(x))

    module.f.__code__ = other.__code__.replace(co_name="f")  # runs exp, the file says cos
    with pytest.raises(adgen.UnsupportedError, match="is not the code Python runs"):
        adgen.grad(module.f)(np.ones(2))
