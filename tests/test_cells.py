"""Code typed into notebook cells, named as IPython names it (src/adgen/cells.py).

IPython (>= 8) compiles each cell under a file name of its own (ipykernel: a temporary path)
and its tracebacks say ``Cell In[N], line L``; adgen's errors, ``explain``'s rows and its HTML
table say the same instead of the temporary path. Here a stand-in ``IPython`` whose shell's
``compile.format_code_name`` answers as IPython's ``CachingCompiler`` does; the real kernel is
tests/test_notebook.py.
"""

from __future__ import annotations

import linecache
import sys
import textwrap
import types

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen
from adgen.cells import cell_label, where
from adgen.display import SourceView

CELL_FILE = "/tmp/ipykernel_4242/3875072446.py"  # what ipykernel names a cell's code


class Compiler:
    """IPython's CachingCompiler as tracebacks use it: {file: execution count}."""

    def __init__(self, cells: dict[str, int]) -> None:
        self.cells = cells

    def format_code_name(self, name: str) -> tuple[str, str] | None:
        if name in self.cells:
            return "Cell", f"In[{self.cells[name]}]"
        return None


class ZMQInteractiveShell:
    def __init__(self, cells: dict[str, int]) -> None:
        self.compile = Compiler(cells)


@pytest.fixture
def kernel(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """A stand-in IPython kernel; returns its {cell file: execution count} map."""
    cells: dict[str, int] = {}
    ipython = types.ModuleType("IPython")
    shell = ZMQInteractiveShell(cells)
    ipython.get_ipython = lambda: shell  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    return cells


def run_cell(source: str, file: str, cells: dict[str, int], count: int) -> dict:
    """Runs ``source`` as ipykernel runs a cell: compiled under ``file``, its text in
    linecache (so adgen can read it), ``file`` mapped to the execution count."""
    text = textwrap.dedent(source)
    linecache.cache[file] = (len(text), None, text.splitlines(True), file)
    cells[file] = count
    ns: dict = {"__name__": "__main__", "np": np, "adgen": adgen}
    exec(compile(text, file, "exec"), ns)  # noqa: S102 - the test's own cell
    return ns


def test_where_names_a_cell_as_ipython_does(kernel: dict[str, int]) -> None:
    kernel[CELL_FILE] = 7
    assert cell_label(CELL_FILE) == "Cell In[7]"
    assert where(CELL_FILE, 3, 4) == "Cell In[7], line 3"
    assert where("model.py", 3, 4) == "model.py:3:4" and where("model.py", 3) == "model.py:3"


def test_where_without_ipython_or_with_an_odd_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert cell_label(CELL_FILE) is None and where(CELL_FILE, 3, 4) == f"{CELL_FILE}:3:4"
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: None  # type: ignore[attr-defined]  # IPython, not running
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    assert cell_label(CELL_FILE) is None

    def broken() -> object:
        raise RuntimeError("no shell")

    ipython.get_ipython = broken  # type: ignore[attr-defined]
    assert where(CELL_FILE, 3, 4) == f"{CELL_FILE}:3:4"  # a message never fails on its name


def test_an_error_in_a_cell_names_the_cell_and_line(kernel: dict[str, int]) -> None:
    ns = run_cell("""
        total = 0.0
        def accumulate(x):
            global total
            total = total + np.sum(x)
            return total
        """, CELL_FILE, kernel, 12)
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(ns["accumulate"])(np.ones(2))
    text = str(info.value)
    # (a counter, total += 1, is differentiated since session 29; a value with a derivative
    # stored in a global is refused at the store)
    assert text.startswith("Cell In[12], line 5: error: UnsupportedError: the global total")
    assert "\n    total = total + np.sum(x)\n    ^" in text and CELL_FILE not in text
    assert str(info.value.location) == "Cell In[12], line 5"
    assert info.value.location.file == CELL_FILE  # the file itself is kept for tools


def test_a_strict_refusal_in_a_cell_names_the_cell(kernel: dict[str, int]) -> None:
    ns = run_cell("""
        def overwrite(x):
            y = x * x
            x.fill(0.0)
            return np.sum(y) + np.sum(x)
        """, CELL_FILE, kernel, 3)
    with pytest.raises(adgen.MutationError) as info:
        adgen.grad(ns["overwrite"], mutation="strict")(np.ones(2))
    assert str(info.value).startswith("Cell In[3], line 4: error: MutationError: x.fill(0.0)")
    assert "the gradient of line 3 (y = x * x)" in str(info.value)
    # under "save" the gradient is right: 2 x (the saved x), plus 0 from the zeroed x
    x = np.array([0.5, -1.5])
    assert np.allclose(adgen.grad(ns["overwrite"])(x.copy()), 2 * x)


def test_explain_rows_and_table_name_the_cell(kernel: dict[str, int]) -> None:
    ns = run_cell("""
        def overwrite(x):
            y = x * x
            x.fill(0.0)
            return np.sum(y) + np.sum(x)
        """, CELL_FILE, kernel, 5)
    sites = adgen.explain(ns["overwrite"], file=None)
    (site,) = sites
    assert site.file == CELL_FILE and site.line == 4
    assert str(site).startswith("Cell In[5], line 4: guarded-save: x.fill(0.0)")
    assert "<td" in sites._repr_html_() and "Cell In[5], line 4</td>" in sites._repr_html_()
    assert "ipykernel_4242" not in sites._repr_html_()


def test_code_of_a_timing_magic_is_refused_naming_the_magic() -> None:
    # %%time runs the cell's code compiled under "<timed exec>", with no text in linecache
    ns: dict = {"np": np}
    exec(compile("def timed(x):\n    return np.sum(x ** 2)\n", "<timed exec>", "exec"), ns)
    with pytest.raises(adgen.MissingRuleError) as info:
        adgen.grad(ns["timed"])(np.ones(2))
    assert "run by %time or %%time (<timed exec>)" in str(info.value)
    assert "define it in a plain cell, without %time or %%time" in str(info.value)


def test_source_renders_as_code_in_a_notebook() -> None:
    def sq_sum(x):
        return np.sum(np.sin(x) ** 2)

    text = adgen.source(sq_sum)
    assert isinstance(text, SourceView) and isinstance(text, str)
    assert "def sq_sum_pullback" in text and "sq_sum_pullback" in text._repr_html_()
    # what the text says is what runs: the generated pullback's gradient is sin(2x)
    ns: dict = {}
    exec(str(text), ns)  # noqa: S102 - adgen's generated module
    x = np.array([0.3, -1.2])
    out, saved = ns["sq_sum_forward"](x)
    (g,) = ns["sq_sum_pullback"](saved, 1.0)[:1]
    assert np.allclose(g, numerical_grad(sq_sum, (x,), 0)) and np.allclose(g, np.sin(2 * x))
