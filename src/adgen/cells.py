"""Code typed into a notebook cell: how adgen names where it stands.

IPython compiles each cell under a file name of its own (ipykernel: a temporary path such as
``/tmp/ipykernel_4242/3875072446.py``; terminal IPython: ``<ipython-input-3-...>``) and keeps
the cell's text in ``linecache``, so adgen reads a function defined in a cell as it reads one
from a file. Only the name is foreign to the user: IPython's own tracebacks say
``Cell In[3], line 4``, and adgen's messages, ``explain``'s rows and its HTML table say the
same. Nothing here imports IPython unless it is already running.
"""

from __future__ import annotations

import sys

__all__ = ["cell_label", "where"]


def cell_label(file: str) -> str | None:
    """The name the running IPython gives the cell compiled under ``file`` (``"Cell In[3]"``),
    or None: not a cell of this session, or no IPython running."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    try:
        shell = get() if get is not None else None
        # IPython >= 8: CachingCompiler.format_code_name -> ("Cell", "In[3]") or None
        format_code_name = getattr(getattr(shell, "compile", None), "format_code_name", None)
        named = format_code_name(file) if format_code_name is not None else None
    except Exception:  # a stand-in or broken shell: keep the file name, never fail a message
        return None
    if not named:
        return None
    label, name = named
    return f"{label} {name}"


def where(file: str, line: int, col: int | None = None) -> str:
    """``file:line:col`` (``file:line`` without a column), or ``Cell In[3], line 4`` for
    code typed into a notebook cell (the caret under the source line shows the column)."""
    label = cell_label(file)
    if label is not None:
        return f"{label}, line {line}"
    return f"{file}:{line}" if col is None else f"{file}:{line}:{col}"
