"""A loop's row of numbers computed again by the pullback, where that leaves the loop nothing
to tape but its counter.

A loop's pullback reads, per iteration, the numbers its rules need, and the forward keeps
them in a row (a tuple per iteration; ``reverse_blocks.Blocks.rev_loop``). reverse_final already
lets the pullback read again an element that holds the same value when it runs
(``final_load``) and compute again a number spelled out from such elements in a few steps
(``final_value``). A dynamic programme's cell is a longer chain: soft-DTW's ``rmax = max(max(r0,
r1), r2)``, three ``np.exp(r - rmax)`` and their sum, from the three neighbours ``R[i - 1, j -
1]``, ``R[i - 1, j]``, ``R[i, j - 1]`` that are final when read. Its row was a tuple of a counter
and six NumPy scalars a cell (about 240 bytes), where the hand adjoint keeps ``R`` and
computes the cell again.

:func:`recomputed_row` answers, for the numbers a loop would still tape after those per-name
rules, statements that bind them again from what the pullback has in every iteration: the
counters, numbers bound outside the loop, final elements (``final_load``), the numbers the
per-name rules already bind (``have``) and each other. Each statement is the forward's own
(``t21 = np.exp(t20)``, its operands bound by the statements before it), so the pullback
performs the same operations on the same values and gets the same bits: the operations are
a negation, ``+ - * /``, the builtins ``max``/``min``/``abs``, and NumPy ufuncs (pure
functions of their operands). It is all or nothing: a row that would keep one number keeps
its tuple, and recomputing the others would only cost time. The chain's length is capped:
at most :data:`STEPS_PER_NUMBER` operations for each number the row loses, and
:data:`CHAIN_STEPS` in all. The recomputation costs about what the forward spent on those
statements, against a tuple, its scalars (32 bytes and an allocation each) and a list slot
per iteration. Soft-DTW's cell is 10 operations for 6 numbers: computed again, the
gradient takes 1.18x the time of the code that tapes them (three ``np.exp`` of NumPy
scalars a cell), and 0.84-0.85x the time before session 13 together with scalar_extremes'
comparisons and the inline cotangents of ``max`` (docs/performance.md, Update 12).

An analysis: it reads the plan and returns new statements; the pullback emitter places them.
"""

from __future__ import annotations

import builtins

import gast
import numpy as np
from adgen.transforms.analyses.kinds import NUMBER
from adgen.transforms.desugar import assign
from adgen.transforms.reverse_final import final_load
from adgen.transforms.reverse_plan import Plan
from adgen.transforms.ssa import is_break_if
from adgen.transforms.values_again import counters_again
from adgen.transforms.walk import clone

# the most operations a loop's pullback performs again per iteration instead of taping,
# in all and for each number the row loses
CHAIN_STEPS = 32
STEPS_PER_NUMBER = 3
_OPS = (gast.Add, gast.Sub, gast.Mult, gast.Div)


def recomputed_row(plan: Plan, loop: gast.stmt, numbers: list[str], have: set[str]
                   ) -> list[gast.stmt] | None:
    """Statements binding every name of ``numbers`` again at the top of ``loop``'s reversed
    body, in the forward's order, with the intermediates they need; None where one of them
    cannot be (see the module docstring) or the chain is over its cap.

    Args:
        plan: the reverse pass's plan (kinds, float64 facts, definitions, effects).
        loop: a ``for`` or ``while`` loop without ``break``.
        numbers: the names its row would still keep besides the counter.
        have: names already bound before these statements (the per-name rules' reads).
    """
    body = getattr(loop, "body", None)
    if not numbers or body is None or any(is_break_if(b) for b in body):
        return None
    emitted: dict[str, gast.stmt] = {}
    steps = [0]
    cap = min(CHAIN_STEPS, STEPS_PER_NUMBER * len(numbers))
    todo = list(numbers)
    while todo:
        n = todo.pop()
        if n in have or n in emitted:
            continue
        st = _again(plan, loop, n, todo, steps)
        if st is None or steps[0] > cap:
            return None
        emitted[n] = st
    return sorted(emitted.values(), key=lambda st: plan.order[id(plan.def_stmt[
        st.targets[0].id])])


def _again(plan: Plan, loop: gast.stmt, n: str, todo: list[str], steps: list[int]
           ) -> gast.stmt | None:
    """``n = ...`` for the pullback: ``n`` a number bound once at the top level of
    ``loop``'s body, an element read again, counter arithmetic, or one operation of names
    (pushed onto ``todo``) and numbers the pullback has; else None."""
    at = plan.def_stmt.get(n)
    if not (isinstance(at, gast.Assign) and len(at.targets) == 1 and
            isinstance(at.targets[0], gast.Name) and plan.def_count.get(n) == 1 and
            plan.block_of.get(id(at)) == id(loop.body) and plan.kinds.get(n) == NUMBER and
            plan.column_dtypes.get(n) in ("float64", "int64") and not plan.tracked(n)):
        return None
    found = final_load(plan, n, loop)
    if found is not None:
        steps[0] += 1
        return assign(gast.Name(n, gast.Store(), None, None), gast.Subscript(
            value=gast.Name(found[0], gast.Load(), None, None), slice=clone(found[1]),
            ctx=gast.Load()), at)
    spelled = counters_again(plan, at.value, loop)
    if spelled is not None:
        steps[0] += 1
        return assign(gast.Name(n, gast.Store(), None, None), spelled, at)
    v = at.value
    if isinstance(v, gast.UnaryOp) and isinstance(v.op, (gast.USub, gast.UAdd)):
        operands = [v.operand]
    elif isinstance(v, gast.BinOp) and isinstance(v.op, _OPS):
        operands = [v.left, v.right]
    elif isinstance(v, gast.Call) and not v.keywords and _pure(plan, v):
        operands = list(v.args)
    else:
        return None
    for e in operands:
        if isinstance(e, gast.Constant):
            if type(e.value) not in (int, float):
                return None
        elif not isinstance(e, gast.Name):
            return None
        elif plan.block_of.get(id(plan.def_stmt.get(e.id))) == id(loop.body):
            todo.append(e.id)  # bound in the body: computed again before n
        elif counters_again(plan, e, loop) is None:
            return None  # not a counter, nor a number bound outside the loop
    steps[0] += 1
    return assign(gast.Name(n, gast.Store(), None, None), clone(v), at)


def _pure(plan: Plan, v: gast.Call) -> bool:
    """A call whose result is a function of its operands' values alone: ``max``/``min`` of
    two, ``abs`` of one (the builtins), or a NumPy ufunc of its ``nin`` operands."""
    f = plan.resolve_or_none(v.func)
    if f is builtins.max or f is builtins.min:  # (identity: any object may be resolved)
        return len(v.args) == 2
    if f is builtins.abs:
        return len(v.args) == 1
    return isinstance(f, np.ufunc) and f.nout == 1 and f.nin == len(v.args)
