"""emit.compile_source: generated code is registered in linecache for exactly as long as a
function compiled from it lives, and two live sources never share a file name."""

from __future__ import annotations

import gc
import inspect
import linecache
import traceback

import numpy as np
from adgen.transforms import pipeline
from adgen.transforms.emit import compile_source

import adgen


def _entries(prefix: str) -> list[str]:
    return [k for k in linecache.cache if k.startswith(prefix)]


def test_lines_released_with_their_functions() -> None:
    ns: dict = {}
    compile_source("def one(x):\n    return x + 1\n\ndef two(x):\n    return 2 * x\n",
                   "<emit test pair>", ns)
    one, two = ns.pop("one"), ns.pop("two")
    assert inspect.getsource(one) == "def one(x):\n    return x + 1\n"
    del one
    gc.collect()
    assert _entries("<emit test pair>") == ["<emit test pair>"]  # two still runs from it
    assert inspect.getsource(two) == "def two(x):\n    return 2 * x\n"
    del two
    gc.collect()
    assert _entries("<emit test pair>") == []


def test_module_without_functions_keeps_no_lines() -> None:
    compile_source("x = 1\n", "<emit test no function>", {})
    assert _entries("<emit test no function>") == []


def test_two_live_sources_get_two_names() -> None:
    a: dict = {}
    b: dict = {}
    compile_source("def f():\n    return 'a'\n", "<emit test same>", a)
    compile_source("def f():\n    return 'b'\n", "<emit test same>", b)
    fa, fb = a["f"], b["f"]
    assert fa.__code__.co_filename != fb.__code__.co_filename
    assert "'a'" in inspect.getsource(fa) and "'b'" in inspect.getsource(fb)
    same: dict = {}
    compile_source("def f():\n    return 'a'\n", "<emit test same>", same)
    assert same["f"].__code__.co_filename == fa.__code__.co_filename  # one entry, shared
    del a, fa, same
    gc.collect()
    assert _entries("<emit test same") == [fb.__code__.co_filename]


def _local_loss():
    def loss(x):
        y = np.sin(x)
        return np.sum(y * x)

    return loss


def test_compiled_gradients_release_their_sources() -> None:
    """Two specialisations (an array, a float) live at once, each with its own lines; when
    the gradient, the function and the compile cache are dropped, so are the lines."""
    loss = _local_loss()
    prefix = f"<adgen {loss.__qualname__} "
    g = adgen.grad(loss)
    x = np.array([0.5, -1.0])
    np.testing.assert_allclose(g(x), np.sin(x) + x * np.cos(x))
    assert abs(g(0.3) - (np.sin(0.3) + 0.3 * np.cos(0.3))) < 1e-12
    for sig in ((1,), ("number",)):
        c = pipeline.compile_function(loss, sig=sig)
        for f in (c.forward, c.pullback):
            text = "".join(linecache.getlines(f.__code__.co_filename))
            assert text and text in c.own_source  # its own lines, not the other's
    assert _entries(prefix)
    del g, c, f, loss
    pipeline.clear_cache()
    gc.collect()
    assert _entries(prefix) == []


def test_traceback_shows_generated_lines() -> None:
    ns: dict = {}
    compile_source("def boom(x):\n    return 1 / x  # the line that raises\n", "<emit test tb>",
                   ns)
    try:
        ns["boom"](0)
    except ZeroDivisionError:
        text = traceback.format_exc()
    assert "return 1 / x  # the line that raises" in text
