"""Rich display in Jupyter: generated code highlighted, ``explain``'s sites as a table.

Objects here have a ``_repr_html_`` (what a notebook shows) and print as plain text anywhere
else. Nothing here imports IPython unless it is already running.
"""

from __future__ import annotations

import html
import sys
from collections.abc import Iterable
from typing import Any

from adgen.cells import cell_label

# Inline styles: a notebook's output cell (and GitHub's renderer) drops <style> blocks.
_TABLE = "border-collapse: collapse; font-size: 90%; text-align: left"
_CELL = "padding: 2px 8px; border-bottom: 1px solid #ddd; vertical-align: top; text-align: left"
_DECISION_COLOURS = {"free": "#1a7f37", "elided-pullback": "#1a7f37",
                     "guarded-save": "#9a6700", "forced-pullback": "#0969da",
                     "guarded-raise": "#cf222e", "certain-conflict": "#cf222e"}


class SourceView(str):
    """Generated source: a ``str`` that a notebook renders highlighted."""

    def _repr_html_(self) -> str:
        return code_html(str(self))

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # IPython's plain text
        p.text(str(self))


def code_html(text: str) -> str:
    """``text`` as highlighted Python HTML (pygments, inline styles), or an escaped <pre>."""
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer
    except ImportError:
        return f"<pre>{html.escape(text)}</pre>"
    return highlight(text, PythonLexer(), HtmlFormatter(noclasses=True, nobackground=True))


def sites_html(sites: Iterable[Any]) -> str:
    """:class:`adgen.MutationSite` rows as an HTML table (location, construct, decision, why,
    bytes saved)."""
    sites = list(sites)
    if not sites:
        return "<p><i>no mutation sites</i></p>"
    measured = any(s.bytes_saved is not None for s in sites)
    head = ["where", "construct", "decision", "why"] + (["bytes saved"] if measured else [])
    rows = ["<tr>" + "".join(f'<th style="{_CELL}">{h}</th>' for h in head) + "</tr>"]
    for s in sites:
        colour = _DECISION_COLOURS.get(s.decision, "inherit")
        label = cell_label(s.file)  # "Cell In[3], line 4" for code typed into a cell
        cells = [html.escape(f"{label}, line {s.line}" if label else f"{_short(s.file)}:{s.line}"),
                 f"<code>{html.escape(s.construct)}</code>",
                 (f'<span style="color: {colour}; font-weight: bold">'
                  f"{html.escape(s.decision)}</span>"),
                 html.escape(s.reason)]
        if measured:
            cells.append("" if s.bytes_saved is None else str(s.bytes_saved))
        rows.append("<tr>" + "".join(f'<td style="{_CELL}">{c}</td>' for c in cells) + "</tr>")
    return f'<table style="{_TABLE}">' + "".join(rows) + "</table>"


def _short(file: str) -> str:
    """A file name as a table shows it: the last two path components."""
    parts = file.replace("\\", "/").split("/")
    return "/".join(parts[-2:])


def in_notebook() -> bool:
    """True inside a Jupyter kernel (or another IPython front end that renders HTML); False
    in a terminal IPython and in plain Python."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    shell = get() if get is not None else None
    return shell is not None and type(shell).__name__ != "TerminalInteractiveShell"
