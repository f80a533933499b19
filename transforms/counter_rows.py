"""Rows of an array named by a top-level loop's counter, and what they prove about a capture.

An analysis for :mod:`reverse_captures` (it reads the plan, rewrites nothing). An index of
the first axis is read as ``(counter, offset)``: ``c``, ``c + k`` or ``c - k`` for the counter
``c`` of an ascending ``for c in range(...)`` loop (``Plan.loop_of_counter``), a slice ``c +
k:`` (the rows from there on) or ``lo:c + k`` (the rows below). The counter only grows, so
every later iteration's row is further on; from that:

- :func:`disjoint_rows`: no later write reaches the row a pullback reads (``x[c + j]``
  written, ``x[c + i]`` read, ``j > i``): the read needs no capture;
- :func:`rows_ahead`: every write of the loop is behind the rows read (``x[c + k:]`` read,
  ``x[c + j]`` written, ``j <= k``): what is read is what the rows held when the loop
  began, read by the pullback from one copy taken before the loop (under "save").

A counter whose offset can make an index negative proves nothing (``x[i - 1]`` at ``i = 0``
is the last row): :func:`nonnegative_rows`.
"""

from __future__ import annotations

import gast
from adgen.transforms.analyses.effects import Write
from adgen.transforms.reverse_plan import Plan
from adgen.transforms.user_calls import is_user_call


def disjoint_rows(plan: Plan, n: str, w: Write, stmt: gast.stmt, after: bool) -> bool:
    """True when ``n = x[c + i]`` is read at ``stmt`` and ``w`` writes ``x[c + j]``, in
    the body of the same top-level ``for c in range(...)`` loop, and no later write can
    reach the row read: ``j > i`` (or ``j >= i`` when the write comes first in the body).
    The counter only grows, so every later iteration writes a row further on. Likewise
    for ``n = x[:c + i]`` (the rows below, as a triangular solve reads): ``j >= i``."""
    if not plan.kinds:
        return False
    view = plan.defs.get(n)
    st = w.stmt
    if not (isinstance(view, gast.Subscript) and isinstance(view.value, gast.Name) and
            isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Subscript) and
            isinstance(st.targets[0].value, gast.Name) and
            st.targets[0].value.id == view.value.id and
            isinstance(plan.kinds.get(view.value.id), int)):
        return False
    read = _row(plan, view.slice)
    below = _rows_below(plan, view.slice) if read is None else None
    written = _row(plan, st.targets[0].slice)
    if below is not None:
        read = below
    if read is None or written is None or read[0] != written[0]:
        return False
    loop = plan.loop_of_counter.get(read[0])
    if loop is None or plan.loops_of.get(id(loop)) != ():
        return False  # a nested loop restarts its counter
    if not nonnegative_rows(loop, read[1], written[1]):
        return False
    view_stmt = plan.def_stmt.get(n)
    for x in (stmt, st, view_stmt):
        if x is None or plan.loops_of.get(id(x)) != (id(loop),):
            return False
    order = plan.order
    write_later = order[id(st)] > order[id(stmt)] or (st is stmt and not after)
    if below is not None:
        # rows c' + j written at c' >= c (c' > c when the write comes first in the body),
        # rows below c + i read: apart when j >= i (j >= i - 1)
        return written[1] >= read[1] if write_later else written[1] >= read[1] - 1
    return written[1] > read[1] if write_later else written[1] >= read[1]


def rows_ahead(plan: Plan, n: str, stmt: gast.stmt, after: bool, conflicts: list[Write]
               ) -> tuple[gast.For, str, gast.expr] | None:
    """(loop, base, index) when ``n = base[c + k:, ...]`` (or the row ``base[c + k]``) is
    read at ``stmt`` in the body of a top-level ``for c in range(...)`` loop whose every
    conflicting write is a row ``base[c + j]`` (or the rows ``base[:c + j]``) at or below
    ``c + k``: behind the rows read in every earlier iteration (``j <= k``), and strictly
    behind in this one when it comes first (``j < k``). Then what ``stmt`` reads is what
    those rows held when the loop began: the pullback reads them from one copy of
    ``base`` taken before the loop, and the writes need no guard (``B[i, :] += A[i + 1:,
    i] @ B[i + 1:, :]``, Gauss-Seidel's ``x[i + 1:]``). Only under "save": the copy is
    one the user did not write."""
    if plan.policy != "save" or after or not plan.kinds:
        return None
    view = plan.defs.get(n)
    if not (isinstance(view, gast.Subscript) and isinstance(view.value, gast.Name) and
            isinstance(plan.kinds.get(view.value.id), int) and
            plan.stable_index(view.slice)):
        return None
    base = view.value.id
    read = _rows_from(plan, view.slice)
    if read is None:
        return None
    loop = plan.loop_of_counter.get(read[0])
    if loop is None or plan.loops_of.get(id(loop)) != ():
        return None  # a nested loop restarts its counter
    view_stmt = plan.def_stmt.get(n)
    if isinstance(stmt, (gast.Assign, gast.Expr)) and isinstance(stmt.value, gast.Call) \
            and is_user_call(plan, stmt.value):
        return None  # a callee's saved values hold the array itself
    for x in (stmt, view_stmt):
        if x is None or plan.loops_of.get(id(x)) != (id(loop),):
            return None
    # the base is bound once before the loop, at the top of the function, or a parameter
    if base in plan.def_count:
        at = plan.def_stmt.get(base)
        if at is None or plan.block_of.get(id(at)) != id(plan.fn.body) or \
                plan.order[id(at)] > plan.order[id(loop)]:
            return None
    elif base not in {a.id for a in plan.fn.args.args}:
        return None
    if not any(id(loop) in plan.loops_of.get(id(w.stmt), ()) for w in conflicts):
        return None  # only writes after the loop: a guard copies what they overwrite
    offsets = [read[1]]
    for w in conflicts:
        if id(loop) not in plan.loops_of.get(id(w.stmt), ()):
            continue  # before the loop (in the copy) or after it (the copy is apart)
        if plan.loops_of.get(id(w.stmt)) != (id(loop),):
            return None
        written = _row_written(plan, w, base)
        if written is None or written[0] != read[0]:
            return None
        first = plan.order[id(w.stmt)] < plan.order[id(stmt)]
        if written[1] > read[1] or (first and written[1] == read[1]):
            return None
        offsets.append(written[2])
    if not nonnegative_rows(loop, *offsets):
        return None
    return loop, base, view.slice


def nonnegative_rows(loop: gast.For, *offsets: int) -> bool:
    """True when ``c + k`` is never negative for the loop's counter ``c`` and each offset
    ``k``: a negative index counts from the end (``x[i - 1]`` at ``i = 0`` is the last
    row, which a later iteration may write), so the order of rows proves nothing."""
    args = loop.iter.args
    start = 0 if len(args) == 1 else args[0]
    if not isinstance(start, int):
        if not (isinstance(start, gast.Constant) and type(start.value) is int):
            return False
        start = start.value
    return all(start + k >= 0 for k in offsets)


def _rows_from(plan: Plan, idx: gast.expr) -> tuple[str, int] | None:
    """(counter, offset) for a first-axis index ``c + k`` or slice ``c + k:`` (no upper
    bound, no step): the rows from ``c + k`` on."""
    first = idx.elts[0] if isinstance(idx, gast.Tuple) and idx.elts else idx
    if isinstance(first, gast.Slice):
        if first.upper is not None or first.step is not None or first.lower is None:
            return None
        return _row(plan, first.lower)
    return _row(plan, idx)


def _row_written(plan: Plan, w: Write, base: str) -> tuple[str, int, int] | None:
    """(counter, the last row's offset, the index's offset) of what ``w`` writes of
    ``base``: ``base[c + j] = v`` (j, j), ``base[:c + j] = v`` (j - 1, j), or ``v op= e``
    where ``v`` is such a view of ``base`` (through names bound once)."""
    st = w.stmt
    if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Subscript) and \
            isinstance(st.targets[0].value, gast.Name):
        target, idx = st.targets[0].value.id, st.targets[0].slice
    elif isinstance(st, gast.AugAssign):
        target, idx = st.target.id, None
        while target in plan.view_of and idx is None:
            target, idx = plan.view_of[target]
        if idx is None or not plan.stable_index(idx):
            return None
    else:
        return None
    if target != base:
        return None
    row = _row(plan, idx)
    if row is not None:
        return row[0], row[1], row[1]
    below = _rows_below(plan, idx)
    if below is not None:
        return below[0], below[1] - 1, below[1]
    return None


def _rows_below(plan: Plan, idx: gast.expr) -> tuple[str, int] | None:
    """(counter, offset) for a first-axis slice ``lo:c + k`` (``lo`` absent or a
    non-negative int, no step): the rows below ``c + k``."""
    if isinstance(idx, gast.Tuple):
        if not idx.elts:
            return None
        idx = idx.elts[0]
    if not isinstance(idx, gast.Slice) or idx.step is not None or idx.upper is None:
        return None
    lo = idx.lower
    if lo is not None and not (isinstance(lo, gast.Constant) and type(lo.value) is int and
                               lo.value >= 0):
        return None
    return _row(plan, idx.upper)


def _row(plan: Plan, idx: gast.expr) -> tuple[str, int] | None:
    """(counter, offset) for a first-axis index ``c``, ``c + k`` or ``c - k``."""
    if isinstance(idx, gast.Tuple):
        if not idx.elts:
            return None
        idx = idx.elts[0]
    if isinstance(idx, gast.Name) and idx.id in plan.loop_of_counter:
        return idx.id, 0
    if isinstance(idx, gast.Name) and plan.def_count.get(idx.id) == 1:
        v = plan.defs.get(idx.id)
        if isinstance(v, gast.BinOp) and isinstance(v.left, gast.Name) and \
                v.left.id in plan.loop_of_counter and isinstance(v.right, gast.Constant) \
                and type(v.right.value) is int and isinstance(v.op, (gast.Add, gast.Sub)):
            k = v.right.value
            return v.left.id, k if isinstance(v.op, gast.Add) else -k
    return None
