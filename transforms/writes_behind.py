"""Proofs that a write which may run after a read of an array writes another element than
the one read: what makes an element final (:mod:`reverse_final`) or a part of an array
unchanged (:mod:`values_again`) when a loop's pullback reads it again. An analysis: it reads
the plan, rewrites nothing.

An element is final when every write of the array's buffers that may run after the read

- is absent (``L`` never written), or
- writes ``X[..., c1, ...]`` with ``c1`` the counter of a top-level ``for c1 in range(...)``
  loop holding the read, and the read's index on that axis is below ``c1`` (the counter of a
  ``for e in range(c1)`` / ``range(a, c1 - k)`` loop): later writes are at ``c1' >= c1``
  (``x[i] = ...`` after ``x[j]``, ``j < i``); or
- writes ``X[.., c1, .., c2, ..]`` (either order) with ``c2`` the counter of a loop directly
  in the ``c1`` loop, both holding the read, and the read's index is at most ``c1`` on
  ``c1``'s axis and below ``c2`` on ``c2``'s: later writes are at ``(c1', c2')`` after ``(c1,
  c2)`` in lexicographic order, so on another row or a column further on (Cholesky's
  ``L[i, k]`` and ``L[j, k]``, ``k < j <= i``, before ``L[i, j] = ...``).

A part ``X[lo:hi]`` of the first axis (``values_again.final_value``) is final when every such
later write is ``X[c1] = ...`` and ``hi <= c1`` (trisolv's ``x[:i]`` before ``x[i] = ...``:
:func:`slice_behind`).

Counters are ascending (``range`` with one or two arguments: ``Plan.loop_of_counter``), bound
only by their loop, and every index of the read is a counter or a non-negative constant, so
the pullback, which has each iteration's counters, reads the same element; a counter in an
index must start at a value that is never negative (``x[j]`` with ``j`` of ``range(-1, i)`` is
the last row at ``j = -1``).
"""

from __future__ import annotations

import gast
from adgen.transforms.analyses.effects import Write
from adgen.transforms.reverse_plan import Plan


def behind(plan: Plan, w: Write, x: str, read: list[gast.expr], at: gast.stmt) -> bool:
    """Every run of the write ``w`` after the read ``at`` of ``x[read]`` writes another
    element (the two orders of the module's docstring)."""
    found = _element_write(plan, w, x)
    if found is None:
        return False
    s, written, loops = found
    if len(written) != len(read) or not loops:
        return False
    around = plan.loops_of.get(id(at), ())
    if plan.loops_of.get(loops[0]) != () or loops[0] not in around:
        return False
    # the axes whose written index is the counter of the top-level loop, and of the loop
    # directly in it
    outer = [(k, e.id) for k, e in enumerate(written) if _counter_of(plan, e, loops[0])]
    if any(_below(plan, read[a], c1) for a, c1 in outer):
        return True  # later writes are at c1' >= c1 on axis a
    done = loops[1] if len(loops) > 1 else id(s)
    if plan.loops_of.get(done) == (loops[0],) and done not in around and \
            plan.order[done] < plan.order[id(at)] and \
            any(_at_most(plan, read[a], c1) for a, c1 in outer):
        # the write (or the loop holding it) ran before the read in this iteration of the
        # top-level loop: later writes are at c1' > c1
        return True
    if len(loops) < 2 or plan.loops_of.get(loops[1]) != (loops[0],) or loops[1] not in around:
        return False
    inner = [(k, e.id) for k, e in enumerate(written) if _counter_of(plan, e, loops[1])]
    return any(_at_most(plan, read[a], c1) and _below(plan, read[b], c2)
               for a, c1 in outer for b, c2 in inner)


def slice_behind(plan: Plan, w: Write, x: str, idx: gast.expr, at: gast.stmt) -> bool:
    """Every run of the write ``w`` after the read ``at`` of ``x[lo:hi]`` (a slice of the
    first axis, ``lo`` absent or a constant >= 0, no step) writes another row: ``w`` is
    ``x[c] = ...`` with ``c`` the counter of a top-level ``for c in range(...)`` loop holding
    the read, and ``hi <= c`` (:func:`_at_most`), so the rows read are below ``c`` and the
    later writes at ``c' >= c`` (trisolv's ``x[:i]`` before ``x[i] = ...``)."""
    if not (isinstance(idx, gast.Slice) and idx.step is None and idx.upper is not None and
            (idx.lower is None or isinstance(idx.lower, gast.Constant) and
             type(idx.lower.value) is int and idx.lower.value >= 0)):
        return False
    found = _element_write(plan, w, x)
    if found is None:
        return False
    _, written, loops = found
    if len(written) != 1 or not loops or \
            plan.loops_of.get(loops[0]) != () or loops[0] not in plan.loops_of.get(id(at), ()):
        return False
    c = written[0]
    return _counter_of(plan, c, loops[0]) and isinstance(c, gast.Name) and \
        _at_most(plan, idx.upper, c.id)


def one_object(plan: Plan, x: str) -> bool:
    """``x`` names one object for the whole call: a parameter never rebound, or a name bound
    once outside any loop (not rebound, and not another object in each iteration)."""
    params = {a.id for a in plan.fn.args.args}
    if x in plan.def_count:
        at = plan.def_stmt.get(x)
        return x not in params and isinstance(at, gast.Assign) and plan.loops_of.get(id(at)) == ()
    return x in params


def _element_write(plan: Plan, w: Write, x: str
                   ) -> tuple[gast.Assign, list[gast.expr], tuple[int, ...]] | None:
    """For a write ``w`` that is ``x[...] = v`` of ``x`` itself (one target): the statement,
    the elements it writes (:func:`element_index`) and the loops around it; else None."""
    s = w.stmt
    if not (isinstance(s, gast.Assign) and len(s.targets) == 1 and
            isinstance(s.targets[0], gast.Subscript) and
            isinstance(s.targets[0].value, gast.Name) and s.targets[0].value.id == x and
            w.target == x):
        return None
    written = element_index(plan, s.targets[0].slice)
    return None if written is None else (s, written, plan.loops_of.get(id(s), ()))


def element_index(plan: Plan, idx: gast.expr) -> list[gast.expr] | None:
    """The parts of an element index: counters that are never negative and non-negative int
    constants (a negative index is a row counted from the end: ``x[-1]``, read when ``j`` of
    ``range(-1, i)`` is -1, is the last row, which a later ``x[i] = ...`` writes)."""
    parts = idx.elts if isinstance(idx, gast.Tuple) else [idx]
    for e in parts:
        if not (isinstance(e, gast.Name) and never_negative(plan, e) or
                isinstance(e, gast.Constant) and type(e.value) is int and e.value >= 0):
            return None
    return list(parts)


def never_negative(plan: Plan, e: gast.expr, depth: int = 0) -> bool:
    """``e`` >= 0 whenever it is evaluated: a non-negative int constant, the counter of
    ``range(stop)`` or of ``range(start, stop)`` whose start is never negative, or a sum of
    such."""
    if depth > 8:
        return False
    if isinstance(e, gast.Constant):
        return type(e.value) is int and e.value >= 0
    if isinstance(e, gast.BinOp) and isinstance(e.op, gast.Add):
        return never_negative(plan, e.left, depth + 1) and \
            never_negative(plan, e.right, depth + 1)
    if isinstance(e, gast.BinOp) and isinstance(e.op, gast.Sub) and \
            isinstance(e.left, gast.Name) and e.left.id in plan.loop_of_counter and \
            isinstance(e.right, gast.Constant) and type(e.right.value) is int:
        # c - k: the counter of range(start, ...) with start an int constant >= k
        counted = plan.loop_of_counter[e.left.id]
        args = counted.iter.args
        start = spelled_out(plan, args[0], counted) if len(args) == 2 else gast.Constant(0, None)
        return isinstance(start, gast.Constant) and type(start.value) is int and \
            start.value >= e.right.value >= 0
    if not isinstance(e, gast.Name) or e.id not in plan.loop_of_counter:
        return False
    loop = plan.loop_of_counter[e.id]
    args = loop.iter.args
    return len(args) == 1 or never_negative(plan, spelled_out(plan, args[0], loop), depth + 1)


def _counter_of(plan: Plan, e: gast.expr, loop: int) -> bool:
    return isinstance(e, gast.Name) and e.id in plan.loop_of_counter and \
        id(plan.loop_of_counter[e.id]) == loop


def _stop(plan: Plan, e: gast.expr) -> gast.expr | None:
    if not isinstance(e, gast.Name) or e.id not in plan.loop_of_counter:
        return None
    loop = plan.loop_of_counter[e.id]
    return spelled_out(plan, loop.iter.args[-1], loop)


def spelled_out(plan: Plan, e: gast.expr, loop: gast.stmt) -> gast.expr:
    """``e``, or for a temporary the normal form bound just before ``loop`` in the same block
    (``t2 = i + 1; for j in range(t2)``), the value bound to it, which the range saw."""
    at = plan.def_stmt.get(e.id) if isinstance(e, gast.Name) else None
    if isinstance(at, gast.Assign) and plan.def_count.get(e.id) == 1 and \
            plan.block_of.get(id(at)) == plan.block_of.get(id(loop)) and \
            plan.order[id(at)] < plan.order[id(loop)] and \
            isinstance(at.value, (gast.BinOp, gast.Name, gast.Constant)):
        return at.value
    return e


def _below(plan: Plan, e: gast.expr, c: str) -> bool:
    """``e`` < ``c``: the counter of ``range(c)``, ``range(a, c)`` or ``range(a, c - k)``, or
    ``e' - k`` for such an ``e'`` (``k >= 0``) or ``c - k`` (``k >= 1``)."""
    if isinstance(e, gast.BinOp) and isinstance(e.op, gast.Sub) and \
            isinstance(e.left, gast.Name) and isinstance(e.right, gast.Constant) and \
            type(e.right.value) is int and e.right.value >= 0:
        return e.left.id == c and e.right.value >= 1 or _below(plan, e.left, c)
    stop = _stop(plan, e)
    if isinstance(stop, gast.Name):
        return stop.id == c
    return isinstance(stop, gast.BinOp) and isinstance(stop.op, gast.Sub) and \
        isinstance(stop.left, gast.Name) and stop.left.id == c and \
        isinstance(stop.right, gast.Constant) and type(stop.right.value) is int and \
        stop.right.value >= 0


def _at_most(plan: Plan, e: gast.expr, c: str) -> bool:
    """``e`` <= ``c``: ``c`` itself, below it, the counter of ``range(..., c + 1)``, or such
    an ``e'`` minus ``k >= 0``."""
    if isinstance(e, gast.Name) and e.id == c:
        return True
    if isinstance(e, gast.BinOp) and isinstance(e.op, gast.Sub) and \
            isinstance(e.right, gast.Constant) and type(e.right.value) is int and \
            e.right.value >= 0:
        return _at_most(plan, e.left, c)
    if _below(plan, e, c):
        return True
    stop = _stop(plan, e)
    return isinstance(stop, gast.BinOp) and isinstance(stop.op, gast.Add) and \
        isinstance(stop.left, gast.Name) and stop.left.id == c and \
        isinstance(stop.right, gast.Constant) and stop.right.value == 1
