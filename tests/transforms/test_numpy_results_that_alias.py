"""analyses.effects: a NumPy function that may return its argument, or a view of it.

``np.ascontiguousarray(y)`` returns ``y`` itself when y is already contiguous, and a write
through the result writes ``y``. The effects analysis took every ``np.<name>(...)`` without a
view rule for a new array, so such a write went unseen and the gradient was silently wrong
(tests/e2e/test_results_that_are_their_argument.py). Here NumPy itself is the reference: every
public function that returns memory shared with its one argument, probed on arrays of several
layouts, must be one the analysis says may view that argument.
"""

from __future__ import annotations

import textwrap
import warnings

import gast
import numpy as np
import pytest
from adgen.transforms.analyses.effects import effects

_SKIP = {"save", "savez", "savez_compressed", "savetxt", "load", "loadtxt", "genfromtxt",
         "fromfile", "memmap", "info", "show_config", "show_runtime", "test", "seterr",
         "setbufsize", "set_printoptions", "printoptions", "copyto", "place", "put", "putmask",
         "fill_diagonal", "from_dlpack", "frombuffer", "asmatrix", "ix_"}


def _inputs() -> list[np.ndarray]:
    v = np.linspace(0.1, 0.9, 6)
    return [v, v.reshape(2, 3), np.asfortranarray(v.reshape(2, 3)),
            np.linspace(0.1, 0.9, 9).reshape(3, 3), v[:4].reshape(1, 4), np.array(0.5)]


def _returning_their_argument() -> list[tuple[str, object]]:
    found = []
    for prefix, mod in (("np", np), ("np.linalg", np.linalg), ("np.fft", np.fft)):
        for name in dir(mod):
            f = getattr(mod, name)
            if name.startswith("_") or name in _SKIP or not callable(f) or \
                    isinstance(f, (type, np.ufunc)):
                continue
            for a in _inputs():
                b = a.copy()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        out = f(b)
                    except Exception:
                        continue
                outs = out if isinstance(out, (list, tuple)) else [out]
                if any(isinstance(o, np.ndarray) and np.shares_memory(o, b) for o in outs):
                    found.append((f"{prefix}.{name}", f))
                    break
    return found


CASES = _returning_their_argument()


def test_the_probe_finds_the_known_ones() -> None:
    names = {n for n, _ in CASES}
    assert {"np.ascontiguousarray", "np.asfortranarray", "np.require", "np.diag",
            "np.transpose"} <= names


@pytest.mark.parametrize("spelled, obj", CASES, ids=[n for n, _ in CASES])
def test_the_result_may_view_the_argument(spelled: str, obj: object) -> None:
    fn = gast.parse(textwrap.dedent(f"""
        def f(x):
            y = x * 2.0
            d = {spelled}(y)
            return d
    """)).body[0]
    eff = effects(fn, resolve=lambda node: obj if gast.dump(node).count("Attribute") else None)
    assert eff.buffers["y"] & eff.buffers["d"], f"{spelled}(y) may return y's memory"


@pytest.mark.parametrize("spelled, obj", [("np.sin", np.sin), ("np.sum", np.sum),
                                          ("np.zeros_like", np.zeros_like),
                                          ("np.copy", np.copy), ("np.outer", np.outer)])
def test_new_arrays_stay_new(spelled: str, obj: object) -> None:
    fn = gast.parse(f"def f(x):\n    y = x * 2.0\n    d = {spelled}(y)\n    return d\n").body[0]
    eff = effects(fn, resolve=lambda node: obj if isinstance(node, gast.Attribute) else None)
    assert not eff.buffers["y"] & eff.buffers["d"]
