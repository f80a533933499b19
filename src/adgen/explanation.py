"""What :func:`adgen.explain` reports: one :class:`MutationSite` per mutating statement (what
adgen decided there and why), merged to one row per user statement, and the
:class:`Explanation` list that prints them as a table (text, IPython, Jupyter HTML)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from adgen.records import FrozenRecord, dataclass_fields


class MutationSite(FrozenRecord):
    """What adgen decided at one mutation site (one row of :func:`explain`).

    A frozen record: compared and hashed by its fields, read only. ``dataclasses.replace``,
    ``dataclasses.fields``, ``asdict`` and ``is_dataclass`` work on it as on the frozen
    dataclass it was (their field descriptions are made at their first use, not by ``import
    adgen``: a dataclass compiles its generated methods when defined, issue 15's cold start).

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
    captured_at: tuple[int, ...]
    bytes_saved: int | None

    _fields = ("file", "line", "col", "construct", "decision", "reason", "captured_at",
               "bytes_saved")
    __match_args__ = _fields
    __dataclass_fields__ = dataclass_fields()

    def __init__(self, file: str, line: int, col: int, construct: str, decision: str,
                 reason: str, captured_at: tuple[int, ...] = (),
                 bytes_saved: int | None = None) -> None:
        self.__dict__.update(file=file, line=line, col=col, construct=construct,
                             decision=decision, reason=reason, captured_at=captured_at,
                             bytes_saved=bytes_saved)

    @property
    def overwrites(self) -> tuple[tuple[str, int], ...]:
        """(name, line) of each value the gradient of that line reads that the write may
        overwrite (a guarded site's; () for the others)."""
        return getattr(self.reason, "overwrites", ())

    def __str__(self) -> str:
        saved = "" if self.bytes_saved is None else f" [{self.bytes_saved} bytes saved]"
        from adgen.cells import where  # a notebook cell is named as IPython names it

        return (f"{where(self.file, self.line, self.col)}: {self.decision}: {self.construct}"
                f" -- {self.reason}{saved}")


class Reason(str):
    """A guarded site's reason, which also keeps the (name, line) pairs it lists: the
    compiler's Site carries it to the :class:`MutationSite` unchanged, as text."""

    overwrites: tuple[tuple[str, int], ...] = ()


def overwrite_reason(overwrites: Sequence[tuple[str, int]]) -> Reason:
    """The reason of a guarded site: the values it may overwrite and the lines reading them."""
    names = ", ".join(sorted({n for n, _ in overwrites}))
    lines = ", ".join(str(ln) for ln in sorted({ln for _, ln in overwrites}))
    reason = Reason(f"may overwrite {names}, read by the gradient of line(s) {lines}")
    reason.overwrites = tuple(sorted(set(overwrites)))
    return reason


def as_measured(site: MutationSite, captured: dict[tuple[str, int, str], set[str]],
                bytes_saved: int | None) -> MutationSite:
    """``site`` as one run on example arguments saw it (``explain(f, *args)``): the bytes
    its guard saved, and without the values it may overwrite that held numbers at every
    capture of the run (``captured``: what :func:`adgen.guards.note_captured` noted). Without
    example arguments a parameter may be an array sharing the written one's memory; a number
    is never written in place. A value the run did not capture stays listed."""
    numbers = {(n, ln) for n, ln in site.overwrites
               if captured.get((site.file, ln, n)) == {"number"}}
    if not numbers:
        return replace(site, bytes_saved=bytes_saved)
    kept = tuple(p for p in site.overwrites if p not in numbers)
    held = ", ".join(sorted({n for n, _ in numbers}))
    text = overwrite_reason(kept) if kept else \
        "may overwrite only values that held numbers in this run"
    reason = Reason(f"{text} (not {held}: it held a number in this run, which no write "
                    "changes)")
    reason.overwrites = kept
    return replace(site, reason=reason, captured_at=tuple(sorted({ln for _, ln in kept})),
                   bytes_saved=bytes_saved)


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
