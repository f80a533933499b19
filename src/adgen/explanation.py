"""What :func:`adgen.explain` reports: one :class:`MutationSite` per mutating statement (what
adgen decided there and why), merged to one row per user statement, and the
:class:`Explanation` list that prints them as a table (text, IPython, Jupyter HTML)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class MutationSite:
    """What adgen decided at one mutation site (one row of :func:`explain`).

    Attributes:
        file: the user's file.
        line: the line of the mutating statement.
        col: its column.
        construct: the statement's source text, e.g. ``x.fill(0.0)``.
        decision: one of ``free``, ``guarded-save``, ``guarded-raise``, ``certain-conflict``,
            ``forced-pullback``, ``elided-pullback``.
        reason: why, in words (which capture, which line).
        captured_at: lines whose captured values this site may overwrite.
        bytes_saved: bytes the guard saved in the last measured execution (None: not measured).
    """

    file: str
    line: int
    col: int
    construct: str
    decision: str
    reason: str
    captured_at: tuple[int, ...] = ()
    bytes_saved: int | None = None

    def __str__(self) -> str:
        saved = "" if self.bytes_saved is None else f" [{self.bytes_saved} bytes saved]"
        from adgen.cells import where  # a notebook cell is named as IPython names it

        return (f"{where(self.file, self.line, self.col)}: {self.decision}: {self.construct}"
                f" -- {self.reason}{saved}")


# Decisions from the most to the least severe: one row per site keeps the most severe.
_SEVERITY = ("certain-conflict", "guarded-raise", "guarded-save", "forced-pullback",
             "elided-pullback", "free")


def merge_sites(sites: Sequence[MutationSite]) -> list[MutationSite]:
    """One row per user statement: the compiler may lower one statement into several writes
    (``u[1:-1] += v`` reads, updates and stores back), and a callee's sites come once."""
    rows: dict[tuple[str, int, int, str], MutationSite] = {}
    for site in sites:
        key = (site.file, site.line, site.col, site.construct)
        kept = rows.get(key)
        if kept is None or _rank(site) < _rank(kept):
            rows[key] = site
    return list(rows.values())


def _rank(site: MutationSite) -> int:
    return _SEVERITY.index(site.decision) if site.decision in _SEVERITY else len(_SEVERITY)


class Explanation(list):
    """The list of :class:`MutationSite` of one function; prints as a table. ``route``: for
    ``explain(grad(f), x)``, the path second derivatives of ``grad(f)`` take ("" otherwise)."""

    route: str = ""

    def __str__(self) -> str:
        if not self:
            return "no mutation sites"
        return "\n".join(str(s) for s in self)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # IPython
        p.text(str(self))

    def _repr_html_(self) -> str:  # Jupyter
        from adgen.display import sites_html

        return sites_html(self)
