"""Notebook display: ``adgen.show`` renders highlighted HTML in Jupyter, ``explain``'s result an
HTML table; both are plain text elsewhere.

A notebook is simulated with a stand-in ``IPython`` module whose ``get_ipython()`` returns a
kernel shell (class ``ZMQInteractiveShell``, as ipykernel's) and whose ``display`` records what
it is given; a terminal IPython (``TerminalInteractiveShell``) and plain Python get text.
"""

from __future__ import annotations

import sys
import types
from html.parser import HTMLParser

import numpy as np
import pytest

import adgen
from adgen.display import SourceView, code_html, in_notebook
from adgen.explanation import Explanation


def clip_then_scale(x):
    y = np.sin(x)  # the pullback reads x ...
    x[x < 0.0] = 0.0  # ... which this overwrites: guarded-save
    return np.sum(y * x)


class ZMQInteractiveShell:
    pass


class TerminalInteractiveShell:
    pass


@pytest.fixture
def notebook(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """A stand-in IPython kernel; returns the list of objects passed to display()."""
    shown: list[object] = []
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = ZMQInteractiveShell  # type: ignore[attr-defined]
    display = types.ModuleType("IPython.display")
    display.display = shown.append  # type: ignore[attr-defined]
    ipython.display = display  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", display)
    return shown


class Cells(HTMLParser):
    """The text of each <td>/<th> cell of an HTML table, row by row."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None:
            self.rows[-1].append("".join(self.cell))
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def table(html: str) -> list[list[str]]:
    parser = Cells()
    parser.feed(html)
    return parser.rows


def test_explain_renders_an_html_table_of_the_sites() -> None:
    result = adgen.explain(clip_then_scale, np.array([-1.0, 2.0, 3.0]), file=None)
    rows = table(result._repr_html_())
    assert rows[0] == ["where", "construct", "decision", "why", "bytes saved"]
    assert len(rows) == len(result) + 1
    for site, row in zip(result, rows[1:]):
        # the parsed text is the site's own, so '<' in x[x < 0.0] was escaped
        assert row[0].endswith(f":{site.line}") and row[1] == site.construct
        assert row[2] == site.decision and row[3] == site.reason
        assert row[4] == ("" if site.bytes_saved is None else str(site.bytes_saved))
    guarded = [r for r in rows[1:] if r[1] == "x[x < 0.0] = 0.0"]
    assert guarded and guarded[0][2] == "guarded-save" and int(guarded[0][4]) > 0
    assert "&lt;" in result._repr_html_()


def test_explain_without_sites_and_without_arguments() -> None:
    assert "no mutation sites" in Explanation([])._repr_html_()
    result = adgen.explain(clip_then_scale, file=None)
    assert table(result._repr_html_())[0] == ["where", "construct", "decision", "why"]


def test_explain_prints_text_outside_a_notebook(capsys: pytest.CaptureFixture[str]) -> None:
    result = adgen.explain(clip_then_scale, file=sys.stdout)  # (the default: stdout at import)
    out = capsys.readouterr().out
    assert out == str(result) + "\n" and "<" not in out.replace("x < 0.0", "")


def test_explain_in_a_notebook_renders_once(notebook: list[object],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert in_notebook()
    result = adgen.explain(clip_then_scale)
    adgen.explain(clip_then_scale, file=sys.stdout)
    assert capsys.readouterr().out == ""  # the returned value renders as the table
    assert "<table" in result._repr_html_()


def test_show_in_a_notebook_displays_highlighted_html(notebook: list[object],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    adgen.show(clip_then_scale)
    assert capsys.readouterr().out == ""
    (shown,) = notebook
    assert isinstance(shown, SourceView) and str(shown) == adgen.source(clip_then_scale)
    html = shown._repr_html_()
    assert "clip_then_scale_pullback" in html and "<span style=" in html  # pygments colours


def test_show_prints_plain_text_elsewhere(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    adgen.show(clip_then_scale)  # plain Python, output not a terminal
    assert capsys.readouterr().out == adgen.source(clip_then_scale) + "\n"
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = TerminalInteractiveShell  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    assert not in_notebook()
    adgen.show(clip_then_scale)
    assert capsys.readouterr().out == adgen.source(clip_then_scale) + "\n"


def test_code_html_without_pygments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pygments", None)  # import pygments raises ImportError
    assert code_html("a < b") == "<pre>a &lt; b</pre>"
