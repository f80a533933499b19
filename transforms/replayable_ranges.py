"""Loops whose pullback walks the same ``range`` again instead of taping the counter
(:func:`replayable_range`): the range's arguments hold the same values when the pullback
reaches the loop. An analysis: it reads the plan, rewrites nothing (the pullback emitter,
``reverse_rows.Rows``, decides the loop's row with it).
"""

from __future__ import annotations

import gast
from adgen.transforms.analyses.kinds import NUMBER
from adgen.transforms.reverse_plan import Plan, range_step
from adgen.transforms.ssa import is_break_if
from adgen.transforms.walk import walk
from adgen.transforms.writes_behind import spelled_out


def replayable_range(plan: Plan, loop: gast.stmt) -> list[gast.expr] | None:
    """The arguments of ``loop``'s ``range`` where its pullback may run the same range again
    instead of taping the counter: a ``for c in range(stop)`` / ``range(start, stop)`` /
    ``range(start, stop, k)`` (``k`` an int constant) loop without ``break`` whose arguments are int constants, counters of the loops around it, or
    names bound once at the top level (each optionally plus or minus an int constant), so
    they hold the same values when the pullback reaches the loop (a name bound once at the
    function's top level: one an arm binds is None on the other paths, which numba cannot
    type as a range's bound). ``Plan.counted`` takes a
    top-level loop whose numbers are taped in columns; this is for a loop (nested, most
    often) that records nothing else once its element reads are read again."""
    if not (isinstance(loop, gast.For) and isinstance(loop.target, gast.Name) and
            (plan.loop_of_counter.get(loop.target.id) is loop or _stepped(plan, loop))) or \
            any(is_break_if(b) for b in loop.body):
        return None
    params = {a.id for a in plan.fn.args.args}
    args = loop.iter.args[:2]

    def fixed(e: gast.expr) -> bool:
        e = spelled_out(plan, e, loop)
        if isinstance(e, gast.Constant):
            return type(e.value) is int
        if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
            return isinstance(e.operand, gast.Constant) and type(e.operand.value) is int
        if isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Add, gast.Sub)):
            return fixed(e.left) and isinstance(e.right, gast.Constant) and \
                type(e.right.value) is int
        if not isinstance(e, gast.Name):
            return False
        counter = plan.loop_of_counter.get(e.id)
        if counter is not None:
            return id(counter) in plan.loops_of.get(id(loop), ())
        if e.id in plan.def_count:
            at = plan.def_stmt.get(e.id)
            # bound at the function's top level, or once at the top level of a loop around
            # this one (for b in range(len(k)) inside for a in ...: the enclosing loop's
            # pullback has it, taped or computed again): bound on every path (a name an arm
            # binds is None on the others, which a typed backend cannot take as a range's
            # bound)
            return e.id not in params and at is not None and (
                plan.block_of.get(id(at)) == id(plan.fn.body) or
                plan.def_count.get(e.id) == 1 and any(
                    plan.block_of.get(id(at)) == id(getattr(o, "body", None))
                    for o in _loops_around(plan, loop)))
        return e.id in params

    return list(loop.iter.args) if all(fixed(a) for a in args) else None


def _stepped(plan: Plan, loop: gast.For) -> bool:
    """``for c in range(start, stop, k)`` with ``k`` a nonzero int constant (ADI's ``range(n -
    2, 0, -1)``), ``c`` bound by the loop alone: its range runs again as it ran."""
    it = loop.iter
    c = loop.target.id
    return isinstance(it, gast.Call) and len(it.args) == 3 and not it.keywords and \
        plan.resolve_or_none(it.func) is range and range_step(it.args[2]) is not None and \
        plan.def_stmt.get(c) is loop and plan.kinds.get(c) == NUMBER


def _loops_around(plan: Plan, loop: gast.stmt) -> list[gast.stmt]:
    """The loops that hold ``loop`` (its counters' loops and the others), outermost first."""
    around = set(plan.loops_of.get(id(loop), ()))
    return [node for node in walk(plan.fn) if id(node) in around]
