"""Values a loop's pullback computes again instead of taping them: parts of arrays that no
write after the read changes and numbers spelled out from final elements, counters and
numbers it has without a tape.

:func:`final_value` extends :func:`reverse_final.final_load` to parts of an array that no
write after the read changes at all (``A[:i + 1, k]``; :func:`writes_behind.slice_behind`) and
to such a part times, plus, minus or over a number (syrk's ``A[:i + 1, k] * ALPHA``), which
the pullback computes again; :func:`counters_again` and :func:`index_again` spell a number or
an index out from the counters and numbers the pullback has in every iteration. An analysis:
it reads the plan, rewrites nothing (the pullback emitter, ``reverse_rows.Rows``, places what
it returns).
"""

from __future__ import annotations

import gast
from adgen.transforms.analyses.kinds import NUMBER, of_value
from adgen.transforms.reverse_ast import basic_index
from adgen.transforms.reverse_final import final_load
from adgen.transforms.reverse_plan import Plan
from adgen.transforms.walk import clone
from adgen.transforms.writes_behind import one_object, slice_behind


def final_value(plan: Plan, r: str, loop: gast.stmt) -> gast.expr | None:
    """An expression the pullback may evaluate again for ``r`` instead of taping it: ``r``
    is bound once, at the top level of ``loop``'s body, to a part of an array that no write
    that may run after the read changes (``A[:i + 1, k]``, the array a parameter or bound
    once outside any loop), or to such a part times, plus, minus or over a number (``A[:i +
    1, k] * ALPHA``, through the normal form's temporary): the same operation on the same
    values gives the same bits. The index may hold numbers only (constants, slices of them,
    names of numbers not bound by a read of an array), which are immutable, so the pullback,
    which has them (taped or bound outside the loop), reads the same part. A linear step of
    syrk and syr2k kept ``A[:i + 1, k] * ALPHA`` per inner iteration; the hand adjoint reads
    ``A`` again. Elements are :func:`reverse_final.final_load`'s (which also proves elements that later
    writes pass by).

    Not for a value whose adjoint lives in shadow memory (``Plan.tracked``), which is keyed
    by the object: a value computed again (``acc.append(x[k] * 2.0)`` in the loop, then
    ``acc[0] *= 3.0``) is another object, whose shadow holds nothing (it was a silently zero
    gradient); only a part read again through a basic index, a view of the same base, finds
    the base's shadow."""
    if not plan.kinds or plan.def_count.get(r) != 1:
        return None
    st = plan.def_stmt.get(r)
    body = id(getattr(loop, "body", None))
    if not (isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name) and
            plan.block_of.get(id(st)) == body):
        return None
    v = st.value
    if isinstance(v, gast.Subscript):
        if plan.tracked(r) and not basic_index(v.slice, plan.int_names):
            return None
        return _unchanged_part(plan, v, st)
    if plan.tracked(r):
        return None
    again = _of_counters(plan, v, loop)
    if again is not None:
        return again  # i + a, j - 1: the pullback has the counters and the numbers
    if plan.column_dtypes.get(r) == "float64":  # (an int's tape is an int64 column)
        again = _recomputed(plan, v, loop, [RECOMPUTED_STEPS])
        if again is not None:
            return again  # -R[i - 1, j - 1] / gamma: final elements and numbers
    base = plan.def_stmt.get(v.value.id) if isinstance(v, gast.Attribute) and \
        isinstance(v.value, gast.Name) else None
    if isinstance(v, gast.Attribute) and v.attr == "T" and isinstance(v.value, gast.Name) and \
            type(plan.kinds.get(v.value.id)) is int and plan.def_count.get(v.value.id, 0) <= 1 \
            and (base is None or id(loop) not in plan.loops_of.get(id(base), ()) or
                 plan.block_of.get(id(base)) == body):
        # a transposed view (A.T, K.T): the same view of the same array object, which the
        # pullback has (a parameter, bound outside the loop, or bound at the top of its body
        # and taped instead of its view), so it sees the same memory a taped view would
        return gast.Attribute(value=gast.Name(v.value.id, gast.Load(), None, None), attr="T",
                              ctx=gast.Load())
    if not (isinstance(v, gast.BinOp) and
            isinstance(v.op, (gast.Mult, gast.Add, gast.Sub, gast.Div))):
        return None
    for part, other in ((v.left, v.right), (v.right, v.left)):
        if not (isinstance(part, gast.Name) and plan.def_count.get(part.id) == 1 and
                _a_number(plan, other)):
            continue
        at = plan.def_stmt.get(part.id)
        if not (isinstance(at, gast.Assign) and isinstance(at.value, gast.Subscript) and
                plan.block_of.get(id(at)) == body):
            continue
        read = _unchanged_part(plan, at.value, at)
        if read is None:
            continue
        left, right = (read, other) if part is v.left else (other, read)
        return gast.BinOp(left=left, op=v.op, right=right)
    return None


def index_again(plan: Plan, idx: gast.expr, loop: gast.stmt) -> gast.expr | None:
    """The index ``idx`` (numbers, slices of them, ``None``, ``...``; read at the top level
    of ``loop``'s body) with its numbers spelled out from counters and numbers the pullback
    has in every iteration without a tape (:func:`_of_counters`); else None."""

    def spelled(e: gast.expr | None) -> gast.expr | None:
        if e is None or isinstance(e, gast.Constant) and (e.value is None or
                                                          e.value is Ellipsis):
            return clone(e) if e is not None else None
        return _of_counters(plan, e, loop)

    parts = idx.elts if isinstance(idx, gast.Tuple) else [idx]
    out: list[gast.expr] = []
    for e in parts:
        if isinstance(e, gast.Slice):
            bounds = [spelled(b) for b in (e.lower, e.upper, e.step)]
            if any(b is None and o is not None for b, o in zip(bounds, (e.lower, e.upper,
                                                                        e.step))):
                return None
            out.append(gast.Slice(lower=bounds[0], upper=bounds[1], step=bounds[2]))
        else:
            part = spelled(e)
            if part is None:
                return None
            out.append(part)
    return gast.Tuple(elts=out, ctx=gast.Load()) if isinstance(idx, gast.Tuple) else out[0]


# the most steps (operations and names spelled out) of a number the pullback computes again
RECOMPUTED_STEPS = 8
_EXTREMES = (max, min)


def _recomputed(plan: Plan, e: gast.expr, loop: gast.stmt, budget: list[int]
                ) -> gast.expr | None:
    """The number ``e`` (at the top level of ``loop``'s body) spelled out for the pullback
    to compute again: arithmetic (a negation, ``+``, ``-``, ``*``, ``/``) and the builtins
    ``max`` and ``min`` of numbers the pullback has without a tape (:func:`_of_counters`),
    elements that hold the same value when it runs (:func:`reverse_final.final_load`: ``R[i - 1, j]``
    before ``R[i, j]`` is written), and names of numbers bound once at the top level of the
    body to such expressions, in at most ``budget[0]`` steps (an operation or a name spelled
    out): the same operations on the same values give the same bits (soft-DTW's ``r0 =
    -R[i - 1, j - 1] / gamma`` per cell); else None. Everything is spelled out from the
    array and the counters: a chain of such numbers (soft-DTW's ``rmax = max(max(r0, r1),
    r2)``, ``rsum`` from the taped ``exp`` terms) is over the budget and stays taped; the
    pullback computing it again from the others cost 10-15% of the gradient's time for a
    tape 30% smaller (docs/performance.md, Update 6)."""
    again = _of_counters(plan, e, loop)
    if again is not None:
        return again
    budget[0] -= 1
    if budget[0] < 0:
        return None
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
        inner = _recomputed(plan, e.operand, loop, budget)
        return None if inner is None else gast.UnaryOp(op=gast.USub(), operand=inner)
    if isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Add, gast.Sub, gast.Mult,
                                                       gast.Div)):
        left = _recomputed(plan, e.left, loop, budget)
        right = _recomputed(plan, e.right, loop, budget) if left is not None else None
        return None if right is None else gast.BinOp(left=left, op=e.op, right=right)
    if isinstance(e, gast.Call) and not e.keywords and len(e.args) == 2 and \
            any(plan.resolve_or_none(e.func) is m for m in _EXTREMES):
        args = []
        for a in e.args:
            args.append(_recomputed(plan, a, loop, budget))
            if args[-1] is None:
                return None
        return gast.Call(func=clone(e.func), args=args, keywords=[])
    if not (isinstance(e, gast.Name) and plan.kinds.get(e.id) == NUMBER and
            plan.def_count.get(e.id) == 1):
        return None
    at = plan.def_stmt.get(e.id)
    if not (isinstance(at, gast.Assign) and len(at.targets) == 1 and
            plan.block_of.get(id(at)) == id(getattr(loop, "body", None))):
        return None
    found = final_load(plan, e.id, loop)
    if found is not None:
        return gast.Subscript(value=gast.Name(found[0], gast.Load(), None, None),
                              slice=clone(found[1]), ctx=gast.Load())
    return _recomputed(plan, at.value, loop, budget)


def _of_counters(plan: Plan, e: gast.expr, loop: gast.stmt, depth: int = 0
                 ) -> gast.expr | None:
    """``e`` again, when it is arithmetic (``+``, ``-``, ``*``, ``//``, ``%``, a negation) of
    number constants, counters of ``loop`` or of loops around it, names of numbers bound
    outside ``loop``, ``len(X)`` of an array that is one object for the call (conv's bound
    ``len(k)``, bound in the loop around), and names bound once in ``loop``'s body to such
    arithmetic (spelled
    out in what is returned): values the pullback has in every iteration without a tape
    (``i + a`` in a convolution, ``j - 1`` in a dynamic programme, ``1.0 + 2.0 * d`` in
    ADI); else None."""
    if depth > 6:
        return None
    if isinstance(e, gast.Constant):
        return clone(e) if type(e.value) in (int, float) else None
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
        inner = _of_counters(plan, e.operand, loop, depth + 1)
        return None if inner is None else gast.UnaryOp(op=gast.USub(), operand=inner)
    if isinstance(e, gast.BinOp):
        if not isinstance(e.op, (gast.Add, gast.Sub, gast.Mult, gast.FloorDiv, gast.Mod)):
            return None
        left = _of_counters(plan, e.left, loop, depth + 1)
        right = _of_counters(plan, e.right, loop, depth + 1) if left is not None else None
        return None if right is None else gast.BinOp(left=left, op=e.op, right=right)
    if isinstance(e, gast.Call) and isinstance(e.func, gast.Name) and len(e.args) == 1 and \
            not e.keywords and isinstance(e.args[0], gast.Name) and \
            plan.resolve_or_none(e.func) is len:
        # len(k) of an array that is one object for the call: its shape never changes
        x = e.args[0].id
        rank = plan.kinds.get(x)
        return clone(e) if type(rank) is int and rank >= 1 and one_object(plan, x) else None
    if not isinstance(e, gast.Name):
        return None
    counted = plan.loop_of_counter.get(e.id)
    if counted is not None:
        return clone(e) if counted is loop or \
            id(counted) in plan.loops_of.get(id(loop), ()) else None
    at = plan.def_stmt.get(e.id)
    if at is None:
        return clone(e) if _a_number(plan, e) else None  # a parameter or a free name
    if plan.kinds.get(e.id) != NUMBER or plan.def_count.get(e.id) != 1 or at is loop:
        return None
    if id(loop) not in plan.loops_of.get(id(at), ()):
        # a number bound once outside the loop (n of n = u0.shape[0] too): the pullback has
        # it as the forward had it
        return clone(e)
    if isinstance(at, gast.Assign) and plan.block_of.get(id(at)) == \
            id(getattr(loop, "body", None)):
        return _of_counters(plan, at.value, loop, depth + 1)  # t21 = 2.0 * d: spelled out
    return None


def counters_again(plan: Plan, e: gast.expr, loop: gast.stmt) -> gast.expr | None:
    """``e`` spelled out from counters and numbers the pullback has in every iteration of
    ``loop`` without a tape (:func:`_of_counters`), for the pullback emitter's other
    analyses (recomputed_rows); else None."""
    return _of_counters(plan, e, loop)


def _a_number(plan: Plan, e: gast.expr) -> bool:
    """A number the pullback has as the forward had it: a constant, or a name of a number
    (immutable) bound by something other than a read of an array (which the pullback may
    itself read again), or the negation of one (the step of ``x[::-1]``)."""
    if isinstance(e, gast.Constant):
        return type(e.value) in (int, float)
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
        return _a_number(plan, e.operand)
    if not isinstance(e, gast.Name):
        return False
    if e.id not in plan.kinds and e.id not in plan.def_count and \
            e.id not in {a.id for a in plan.fn.args.args}:
        # a free name: a number at every call (its binding's guard), which the pullback
        # reads from its saved values (free_values)
        return of_value(plan.resolve_or_none(e)) == NUMBER
    if plan.kinds.get(e.id) != NUMBER:
        return False
    at = plan.def_stmt.get(e.id)
    return not (isinstance(at, gast.Assign) and isinstance(at.value, gast.Subscript))


def _unchanged_part(plan: Plan, v: gast.Subscript, st: gast.stmt, depth: int = 0
                    ) -> gast.expr | None:
    """``X[index]`` again, when the read ``v`` at ``st`` is of an ndarray ``X`` (a parameter,
    or bound once outside any loop) that no write which may run after ``st`` changes, with an
    index of numbers (:func:`_a_number`) and slices of them; else None. ``X`` may also be a
    view bound once earlier in ``st``'s block to such a part (a basic index: the same
    memory), which is spelled out: durbin's ``t8 = t7[::-1]`` with ``t7 = r[:k]`` is
    ``r[:k][::-1]`` again."""
    if not isinstance(v.value, gast.Name) or depth > _VIEW_DEPTH:
        return None
    x = v.value.id
    # an ndarray (the signature's, or one the function makes); or, compiled for any
    # arguments, a parameter of unknown kind (re-indexing it gives the same item as long as
    # nothing, an item stored into a list included, writes it after the read)
    unknown = x not in plan.kinds and x not in plan.objlike and x in plan.eff.buffers and \
        bool(plan.eff.buffers[x])
    if type(plan.kinds.get(x)) is not int and not unknown:
        return None
    parts = v.slice.elts if isinstance(v.slice, gast.Tuple) else [v.slice]
    for e in parts:
        bounds = [e.lower, e.upper, e.step] if isinstance(e, gast.Slice) else [e]
        if not all(b is None or _a_number(plan, b) for b in bounds):
            return None
    base: gast.expr | None = gast.Name(x, gast.Load(), None, None)
    if not one_object(plan, x):
        # a view taken earlier in the block, of a part no later write changes: the same
        # elements (its own writes are the base's, checked below through its buffers too)
        at = plan.def_stmt.get(x)
        base = None
        if plan.def_count.get(x) == 1 and isinstance(at, gast.Assign) and \
                len(at.targets) == 1 and isinstance(at.value, gast.Subscript) and \
                basic_index(at.value.slice, plan.int_names) and \
                plan.block_of.get(id(at)) == plan.block_of.get(id(st)) and \
                plan.order.get(id(at), -1) < plan.order.get(id(st), -1):
            base = _unchanged_part(plan, at.value, at, depth + 1)
        if base is None:
            return None
    bufs = plan.eff.buffers.get(x, set())
    if any((unknown or not w.container) and w.buffers & bufs and
           plan.may_run_after(w.stmt, st) and not slice_behind(plan, w, x, v.slice, st)
           for w in plan.eff.writes):
        return None
    return gast.Subscript(value=base, slice=clone(v.slice), ctx=gast.Load())


_VIEW_DEPTH = 4  # views of views followed by _unchanged_part
