"""explain's sites as the emitters left them.

Input: the plan's mutation sites (reverse_captures decides them before any code is emitted)
and the emitters' recording. Output: the same sites, their reasons changed where the
emitters took back what the plan kept. Read-only on the trees; rewrites Site records only.

A write the plan leaves unguarded because the parts it overwrites are "copied where they
are read" (ADI's ``p[1:n - 1, j] = ...``, read by both sweeps' back substitutions) may lose
those copies when the pullback is emitted: invariant_finals reads such a part again from
its array's final contents where that array holds the same values in every step of the
loop around it (the row sweep's ``p[1:n - 1, j]``), so the forward never takes the copy.
explain said "copied where it is read" for both; it now says which reads are copied and
which are read again, and a write whose copies are all gone is free. A copy the forward
stores as a row of a loop's typed tape (array_columns) is no ``copy_when_read`` call, so
explain's measured bytes leave it out ("[0 bytes saved]" for ADI's p): the reason says so.
"""

from __future__ import annotations

import gast
from adgen.transforms.node_index import nodes_of
from adgen.transforms.reverse_ast import Recording
from adgen.transforms.reverse_plan import Plan

__all__ = ["sites_as_emitted"]


def sites_as_emitted(plan: Plan, rec: Recording) -> None:
    """Says, in each site whose overwritten parts are copied where read, which copies the
    emitted code takes (and whether they are rows of a loop's typed tape, which explain's
    measured bytes, counted by ``copy_when_read``, leave out) and which parts it reads again
    from their array's final contents (``rec.read_final``)."""
    for site in rec.sites:
        if not site.copied:
            continue
        again = [c for c in site.copied if (id(c.stmt), c.name) in rec.read_final]
        kept = [c for c in site.copied if (id(c.stmt), c.name) not in rec.read_final]
        rows = any(rec.cap_var.get((id(c.stmt), c.name)) in rec.array_columns for c in kept)
        where = (", into a row of the loop's tape in each iteration (not in the bytes "
                 "counted below)") if rows else ""
        if not again:
            if rows:
                site.reason += where
            continue
        reread = _phrase(plan, again)
        if kept:
            what = ", ".join(sorted({plan.user_name(c.name) for c in kept}))
            site.reason = (f"no guard at the write: it overwrites {what}, which the gradient "
                           f"of line(s) {_lines(kept)} reads, so that is copied where it is "
                           f"read{where}; {reread}")
        else:
            what = ", ".join(sorted({plan.user_name(c.name) for c in again}))
            site.decision = "free"
            site.reason = f"no guard and no copy: it overwrites {what}; {reread}"


def _lines(caps: list) -> str:
    return ", ".join(str(n) for n in sorted({getattr(c.stmt, "lineno", 0) for c in caps}))


def _phrase(plan: Plan, caps: list) -> str:
    """'the gradient of line(s) 224 reads p[1:(n - 1), j] again from p's final contents,
    the same in every iteration of the loop at line 200'."""
    what = ", ".join(sorted({plan.user_name(c.name) for c in caps}))
    bases = sorted({plan.user_name(v.value.id) for c in caps
                    for v in [plan.defs.get(c.name)]
                    if isinstance(v, gast.Subscript) and isinstance(v.value, gast.Name)})
    source = f"{' and '.join(bases)}'s" if bases else "its array's"
    text = (f"the gradient of line(s) {_lines(caps)} reads {what} again from {source} final "
            "contents")
    loops = {plan.loops_of.get(id(c.stmt), (None,))[0] for c in caps}
    found = [g for g in nodes_of(plan.fn, gast.For, gast.While) if id(g) in loops]
    if len(found) == 1:
        text += (", the same in every iteration of the loop at line "
                 f"{getattr(found[0], 'lineno', 0)}")
    return text
