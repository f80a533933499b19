"""Shapes a loop's pullback takes again instead of taping the array whose shape it reads:
the same part of the same array (:func:`shape_again`), or a value the reversed body computes
again anyway (:func:`shape_of_bound`). An analysis: it reads the plan, rewrites nothing (the
pullback emitter, ``reverse_rows.Rows``, places what it returns).
"""

from __future__ import annotations

import gast
from adgen.transforms.analyses.kinds import NUMBER, of_value
from adgen.transforms.reverse_plan import Plan
from adgen.transforms.values_again import index_again
from adgen.transforms.walk import clone
from adgen.transforms.writes_behind import one_object


def shape_again(plan: Plan, r: str, loop: gast.stmt) -> gast.expr | None:
    """An array expression the pullback may evaluate for the *shape* of ``r`` instead of
    taping it, for an ``r`` the reversed body reads only for its shape; else None.

    ``r`` (an ndarray, bound once at the top level of ``loop``'s body) is a basic part of an
    array ``X[index]`` or elementwise arithmetic of such parts and numbers (syrk's ``A[:i +
    1, k] * ALPHA * B[i, k]``), through the normal form's temporaries. An ndarray keeps its
    shape whatever is written into it, so its values need not be final as in
    :func:`values_again.final_value` (seidel-2d's ``A[i - 1:i + 2, j - 1:j + 2]``, written by the next
    step): the answer is the same part ``X[index]`` again (a view, no copy), ``X`` one object
    for the whole call (:func:`writes_behind.one_object`) and every number of the index spelled out from
    counters and numbers bound outside the loop (values_again.index_again), so the pullback needs
    no tape for it. A number combined with an array broadcasts to the array's shape; two
    arrays combine to either one's shape where analyses.shapes proves it theirs. A loop whose
    tape held only such shapes records nothing (its range runs again)."""
    if type(plan.kinds.get(r)) is not int or plan.def_count.get(r) != 1:
        return None
    return _shaped_like(plan, gast.Name(r, gast.Load(), None, None), loop, 0)


def shape_of_bound(plan: Plan, r: str, loop: gast.stmt, bound: set[str]) -> str | None:
    """A name of ``bound`` (values the reversed body of ``loop`` computes again anyway, at
    its top level) whose array has the shape of ``r``, for an ``r`` the reversed body reads
    only for its shape; else None. The same chain as :func:`shape_again` (a number combined
    with an array keeps the array's shape; two arrays, the one analyses.shapes proves), ending
    at a name the body binds: syr2k's ``t14 = t12 * B[i, k]`` with ``t12 = A[:i + 1, k] *
    ALPHA`` computed again by the pullback has ``t12``'s shape. Reading that shape costs
    nothing (no tape, no view taken again)."""
    if type(plan.kinds.get(r)) is not int or plan.def_count.get(r) != 1 or r in bound:
        return None
    found = _shaped_like(plan, gast.Name(r, gast.Load(), None, None), loop, 0, bound)
    return found.id if isinstance(found, gast.Name) and found.id in bound else None


def _shaped_like(plan: Plan, e: gast.expr, loop: gast.stmt, depth: int,
                 bound: set[str] | None = None) -> gast.expr | None:
    """An expression of an array of ``e``'s shape the pullback can evaluate without a tape
    (:func:`shape_again`); else None. With ``bound``, a name in it is the answer itself."""
    if depth > 8:
        return None
    if isinstance(e, gast.Subscript):
        return _part_again(plan, e, loop)
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
        return _shaped_like(plan, e.operand, loop, depth + 1, bound)
    if isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Add, gast.Sub, gast.Mult,
                                                       gast.Div, gast.FloorDiv, gast.Pow)):
        if _any_number(plan, e.left):
            return _shaped_like(plan, e.right, loop, depth + 1, bound)
        if _any_number(plan, e.right):
            return _shaped_like(plan, e.left, loop, depth + 1, bound)
        return None
    if not isinstance(e, gast.Name) or type(plan.kinds.get(e.id)) is not int:
        return None
    if bound is not None:
        if e.id in bound and plan.def_count.get(e.id) == 1:
            return clone(e)  # one value in the forward: the body's is the same
        if plan.block_of.get(id(plan.def_stmt.get(e.id))) != id(getattr(loop, "body", None)):
            return None  # only a chain inside the body, to a name it binds
    if e.id not in plan.def_count:
        return clone(e) if e.id in {a.id for a in plan.fn.args.args} else None
    at = plan.def_stmt.get(e.id)
    if plan.def_count.get(e.id) != 1 or not isinstance(at, gast.Assign) or \
            len(at.targets) != 1 or not isinstance(at.targets[0], gast.Name):
        return None
    if plan.block_of.get(id(at)) != id(getattr(loop, "body", None)):
        return clone(e) if one_object(plan, e.id) else None
    v = at.value
    if isinstance(v, gast.BinOp) and isinstance(v.left, gast.Name) and \
            isinstance(v.right, gast.Name) and not _any_number(plan, v.left) and \
            not _any_number(plan, v.right):
        # two arrays: the result has the shape of the one analyses.shapes says it has
        for side in (v.left, v.right):
            if plan.same_shape(e.id, side.id):
                return _shaped_like(plan, side, loop, depth + 1, bound)
        return None
    return _shaped_like(plan, v, loop, depth + 1, bound)


def _part_again(plan: Plan, v: gast.Subscript, loop: gast.stmt) -> gast.expr | None:
    """``X[index]`` with the index's numbers spelled out (values_again.index_again), for ``X``
    an ndarray that is one object for the whole call and an index of numbers, slices of
    numbers, ``None`` and ``...``: the same part of the same array, so the same shape."""
    if not (isinstance(v.value, gast.Name) and type(plan.kinds.get(v.value.id)) is int and
            one_object(plan, v.value.id)):
        return None
    index = index_again(plan, v.slice, loop)
    return None if index is None else gast.Subscript(
        value=gast.Name(v.value.id, gast.Load(), None, None), slice=index, ctx=gast.Load())


def _any_number(plan: Plan, e: gast.expr) -> bool:
    """``e`` is a number (of any origin: only its shape, ``()``, matters here)."""
    if isinstance(e, gast.Constant):
        return type(e.value) in (int, float)
    if not isinstance(e, gast.Name):
        return False
    if e.id not in plan.kinds and e.id not in plan.def_count and \
            e.id not in {a.id for a in plan.fn.args.args}:
        return of_value(plan.resolve_or_none(e)) == NUMBER
    return plan.kinds.get(e.id) == NUMBER
