"""Values an inner loop reads that the pullback computes again from an array's final contents:
the same in every iteration of the loop around it, and not overwritten in its last one.

ADI's row sweep reads ``p``'s columns in every time step: its divisors ``d * p[1:n - 1, j -
1] + e`` and, in its back substitution, ``p[1:n - 1, j]``. ``p`` does not depend on the step
(analyses.iteration_invariants: a private array whose written values are invariant), and
nothing writes those columns after the row sweep reads them in the last step, so ``p`` still
holds them when the pullback runs: it reads them again instead of keeping a column per sweep
on the tape.

Input: the reverse pass's plan, a name ``r`` recorded by a loop ``f`` whose statement is at
the top level of the body of a loop ``L`` that is itself at the function's top level, and
``L``'s invariant facts. Output: the expression the pullback evaluates for ``r`` (numbers,
counters and parts of private arrays, combined by ``+ - * /`` as the forward combined them:
the same operations on the same values give the same bits), or None. Read-only.

A read ``t = P[S, j + e]`` (``j`` the counter of ``f``) counts when ``P`` is one of
``L``'s private arrays with invariant contents, ``t`` is invariant in ``L`` (so it reads the
same in every iteration), and every write of ``P`` that may run after it in the same iteration
of ``L`` misses the column: in ``f`` at ``j + d`` (each access of a private array has one
column axis, the same slices on the others), ``f`` ascending, with ``e < d`` for a write after
the read in the body and ``e <= d`` for one before it (later steps write columns further on);
none after
``f`` in ``L``'s body. ``P`` is written nowhere but in ``L``, which runs once.
"""

from __future__ import annotations

import gast
from adgen.transforms.analyses.kinds import NUMBER
from adgen.transforms.node_index import nodes_of
from adgen.transforms.reverse_plan import Plan
from adgen.transforms.values_again import counters_again

__all__ = ["enclosing_loop", "invariant_final_value"]

_DEPTH = 8  # definitions followed through the normal form's temporaries
_OPS = (gast.Add, gast.Sub, gast.Mult, gast.Div)


def enclosing_loop(plan: Plan, f: gast.stmt) -> gast.For | gast.While | None:
    """The loop ``L`` whose body holds ``f`` at its top level, when ``L`` is at the function's
    top level (it runs once); else None."""
    loops = plan.loops_of.get(id(f), ())
    if len(loops) != 1:
        return None
    found = [g for g in nodes_of(plan.fn, gast.For, gast.While) if id(g) == loops[0]]
    if not found or plan.block_of.get(id(f)) != id(found[0].body):
        return None
    return found[0]


def invariant_final_value(plan: Plan, r: str, f: gast.stmt, inv: set[str],
                          private: set[str]) -> gast.expr | None:
    """The expression the pullback may evaluate for ``r`` instead of taping it (see the
    module's docstring).

    Args:
        plan: the function's plan.
        r: a name bound once at the top level of ``f``'s body.
        f: a ``for`` loop at the top level of the body of a top-level loop ``L``.
        inv: ``L``'s invariant names (analyses.iteration_invariants).
        private: ``L``'s private arrays with invariant contents.

    Returns:
        The expression, or None.
    """
    if not (isinstance(f, gast.For) and isinstance(f.target, gast.Name)) or \
            r not in inv or plan.act.active(r):
        return None
    at = plan.def_stmt.get(r)
    if not (isinstance(at, gast.Assign) and plan.block_of.get(id(at)) == id(f.body)):
        return None  # (a counter, a number bound elsewhere: not this module's)
    value = _spelled(plan, gast.Name(r, gast.Load(), None, None), f, inv, private, 0)
    if value is None or not any(isinstance(n, gast.Subscript) for n in gast.walk(value)):
        return None  # (numbers alone: reverse_final's)
    return value


def _spelled(plan: Plan, e: gast.expr, f: gast.For, inv: set[str], private: set[str],
             depth: int) -> gast.expr | None:
    if depth > _DEPTH:
        return None
    if isinstance(e, gast.BinOp) and isinstance(e.op, _OPS):
        left = _spelled(plan, e.left, f, inv, private, depth + 1)
        right = _spelled(plan, e.right, f, inv, private, depth + 1) if left is not None \
            else None
        return None if right is None else gast.BinOp(left=left, op=e.op, right=right)
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
        inner = _spelled(plan, e.operand, f, inv, private, depth + 1)
        return None if inner is None else gast.UnaryOp(op=gast.USub(), operand=inner)
    number = counters_again(plan, e, f)  # constants, counters, numbers the pullback has
    if number is not None:
        return number
    if not isinstance(e, gast.Name) or e.id not in inv or plan.def_count.get(e.id) != 1:
        return None
    at = plan.def_stmt.get(e.id)
    if not (isinstance(at, gast.Assign) and len(at.targets) == 1 and
            plan.block_of.get(id(at)) == id(f.body)):
        return None
    v = at.value
    if isinstance(v, gast.Subscript):
        return _final_part(plan, v, at, f, private)
    if plan.kinds.get(e.id) == NUMBER or isinstance(v, (gast.BinOp, gast.UnaryOp)):
        return _spelled(plan, v, f, inv, private, depth + 1)
    return None


def _final_part(plan: Plan, v: gast.Subscript, at: gast.stmt, f: gast.For,
                private: set[str]) -> gast.expr | None:
    """``P[index]`` again, for a read ``v`` at ``at`` of a private array ``P`` whose column
    no write after it in the same iteration of the loop around ``f`` changes."""
    if not (isinstance(v.value, gast.Name) and v.value.id in private):
        return None
    x = v.value.id
    if x in {a.id for a in plan.fn.args.args}:
        return None  # (an argument may be changed between the forward and the pullback)
    e = _column_offset(plan, v.slice, f)
    index = _index_again(plan, v.slice, f)
    if e is None or index is None:
        return None
    bufs = plan.eff.buffers.get(x, set())
    for w in plan.eff.writes:
        if not (w.buffers & bufs):
            continue
        st = w.stmt
        if plan.block_of.get(id(st)) == id(f.body):
            target = st.targets[0] if isinstance(st, gast.Assign) and \
                len(st.targets) == 1 else None
            d = _column_offset(plan, target.slice, f) \
                if isinstance(target, gast.Subscript) else None
            after = plan.order.get(id(st), 0) > plan.order.get(id(at), 0)
            if d is None or not _ascending(plan, f) or (e >= d if after else e > d):
                return None
        elif id(f) in plan.loops_of.get(id(st), ()) or \
                plan.order.get(id(st), 0) > plan.order.get(id(f), 0):
            return None  # deeper in f, or after f in the iteration
    return gast.Subscript(value=gast.Name(x, gast.Load(), None, None), slice=index,
                          ctx=gast.Load())


def _index_again(plan: Plan, idx: gast.expr, f: gast.For) -> gast.expr | None:
    """``idx`` spelled from numbers and counters the pullback has (reverse_final's
    ``counters_again``), ``f``'s own counter included: the reversed loop binds it whichever
    way ``f`` counts."""
    parts = idx.elts if isinstance(idx, gast.Tuple) else [idx]
    out: list[gast.expr] = []
    for p in parts:
        if isinstance(p, gast.Slice):
            bounds = [None if b is None else _number_again(plan, b, f, 0)
                      for b in (p.lower, p.upper, p.step)]
            if any(b is None and o is not None
                   for b, o in zip(bounds, (p.lower, p.upper, p.step))):
                return None
            out.append(gast.Slice(lower=bounds[0], upper=bounds[1], step=bounds[2]))
            continue
        again = _number_again(plan, p, f, 0)
        if again is None:
            return None
        out.append(again)
    return gast.Tuple(elts=out, ctx=gast.Load()) if isinstance(idx, gast.Tuple) else out[0]


def _number_again(plan: Plan, e: gast.expr, f: gast.For, depth: int) -> gast.expr | None:
    """An int of an index again: ``f``'s counter, int arithmetic of it through names bound
    once at the top level of ``f``'s body, or what ``counters_again`` spells."""
    if depth > _DEPTH:
        return None
    if isinstance(e, gast.Name) and e.id == f.target.id:
        return gast.Name(e.id, gast.Load(), None, None)
    if isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Add, gast.Sub, gast.Mult)):
        left = _number_again(plan, e.left, f, depth + 1)
        right = _number_again(plan, e.right, f, depth + 1) if left is not None else None
        return None if right is None else gast.BinOp(left=left, op=e.op, right=right)
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
        inner = _number_again(plan, e.operand, f, depth + 1)
        return None if inner is None else gast.UnaryOp(op=gast.USub(), operand=inner)
    at = plan.def_stmt.get(e.id) if isinstance(e, gast.Name) else None
    if isinstance(at, gast.Assign) and plan.def_count.get(e.id) == 1 and \
            plan.kinds.get(e.id) == NUMBER and plan.block_of.get(id(at)) == id(f.body):
        return _number_again(plan, at.value, f, depth + 1)
    return counters_again(plan, e, f)


def _column_offset(plan: Plan, idx: gast.expr, f: gast.For) -> int | None:
    """``e`` when the one part of ``idx`` that is not a slice is ``f``'s counter plus ``e``."""
    parts = idx.elts if isinstance(idx, gast.Tuple) else [idx]
    col = [p for p in parts if not isinstance(p, gast.Slice)]
    if len(col) != 1:
        return None
    return _offset(plan, col[0], f.target.id, 0)


def _offset(plan: Plan, e: gast.expr, j: str, depth: int) -> int | None:
    if depth > _DEPTH:
        return None
    if isinstance(e, gast.Name):
        if e.id == j:
            return 0
        at = plan.def_stmt.get(e.id)
        if plan.def_count.get(e.id) == 1 and isinstance(at, gast.Assign) and \
                plan.kinds.get(e.id) == NUMBER:
            return _offset(plan, at.value, j, depth + 1)
        return None
    if isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Add, gast.Sub)) and \
            isinstance(e.right, gast.Constant) and type(e.right.value) is int:
        base = _offset(plan, e.left, j, depth + 1)
        if base is None:
            return None
        return base + e.right.value if isinstance(e.op, gast.Add) else base - e.right.value
    return None


def _ascending(plan: Plan, f: gast.For) -> bool:
    """``for j in range(stop)`` or ``range(start, stop)`` (of the builtin): ``j`` ascends."""
    it = f.iter
    return isinstance(it, gast.Call) and not it.keywords and 1 <= len(it.args) <= 2 and \
        plan.resolve_or_none(it.func) is range and \
        plan.loop_of_counter.get(f.target.id) is f
