"""The numba backend's on-disk rewrite cache across checkouts (src/adgen/numba_cache.py): the
same module in another directory (CI's fresh clone) finds the rewrite an earlier checkout
made, where the rewrite's text names no file; where it does (an unbound local's message
names the file and line), the rewrite runs again and the error names the new file. Gradients
against central differences. Skipped without numba."""

from __future__ import annotations

import importlib.util
import json
import os

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

numba = pytest.importorskip("numba")

_SOURCE = '''import numpy as np


def set_on_some_steps(x, first):
    s = 0.0
    for k in range(4):
        if k >= first:
            c = x[k] * 2.0
        s += c * x[k]
    return s


def smooth(x, w):
    s = 0.0
    for i in range(1, x.shape[0]):
        s += w * (x[i] - x[i - 1]) ** 2
    return s
'''


def _checkout(root, name):
    """kernels.py in directory ``name`` of ``root``, imported under a module name of its own."""
    os.makedirs(root / name)
    path = root / name / "kernels.py"
    path.write_text(_SOURCE)
    spec = importlib.util.spec_from_file_location(f"kernels_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, str(path)


def _rewrites(cache):
    return sorted(f for f in os.listdir(cache) if f.startswith("adgen_numba_code_"))


def test_a_checkout_elsewhere_reads_the_rewrite_unless_it_names_the_file(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("ADGEN_NUMBA_CACHE", str(cache))
    a, path_a = _checkout(tmp_path, "a")
    b, path_b = _checkout(tmp_path, "b")
    x = np.array([0.3, -1.2, 0.8, 1.5, -0.4])
    for mod in (a, b):
        g = adgen.grad(mod.smooth, argnums=(0, 1), backend="numba")(x, 0.7)
        for k in (0, 1):
            assert_grad_close(g[k], numerical_grad(mod.smooth, (x, 0.7), k))
    # smooth's rewrite names no file: b read a's
    assert len(_rewrites(cache)) == 1
    for mod, path in ((a, path_a), (b, path_b)):
        g = adgen.grad(mod.set_on_some_steps, backend="numba")(x.copy(), 0)
        assert_grad_close(g, numerical_grad(mod.set_on_some_steps, (x.copy(), 0), 0))
        with pytest.raises(UnboundLocalError) as err:
            adgen.grad(mod.set_on_some_steps, backend="numba")(x.copy(), 1)
        assert path in str(err.value)  # this checkout's file, not the other's
    # set_on_some_steps' rewrite names its file: made again for b, and compiled into a
    # module of its own
    made = [json.loads((cache / f).read_text())["made_for"] for f in _rewrites(cache)]
    assert [path_b] in made and all(m in ([path_a], [path_b]) for m in made)
    modules = [f for f in os.listdir(cache) if f.startswith("adgen_numba_set_on_some_steps_")
               and f.endswith(".py")]
    assert len(modules) == 2
