"""Which recorded arrays a counted loop's typed tape keeps in two-dimensional columns.

A typed tape (``Plan.counted``) keeps one column per recorded value; an array of one shape
in every iteration may get a two-dimensional column, one ``(iterations, length)`` array
allocated at the first row (``tape_columns(range(1, t10), 'float64[1]')``), instead of a
tuple and a small array per row (ADI's divisors and copies of ``p``'s columns).

Input: the reverse pass's plan, a counted loop of the function and the names its reversed
body reads (its row). Output: the arrays that go to columns (``array_rows``) and the
statements the reversed body computes again from the counter instead of taping them
(``counter_offsets``). Read-only: nothing here changes the function's tree.
"""

from __future__ import annotations

from collections.abc import Callable

import gast
import numpy as np
from adgen.transforms.node_index import nodes_of
from adgen.transforms.reverse_plan import Plan

__all__ = ["array_rows", "counter_offsets", "fresh_alone"]


def array_rows(plan: Plan, s: gast.For | gast.While, recorded: list[str],
               cap_var: dict[tuple[int, str], str], same_throughout: Callable[[str], bool]
               ) -> dict[str, int]:
    """The recorded arrays a typed tape may keep in two-dimensional columns.

    A float64 array (analyses.floats) of one shape in every iteration (analyses.loop_shapes),
    bound at the top level of the body, so in every iteration, and written in place nowhere
    (the row is a copy taken at the end of the iteration); or the copy the forward takes of
    such a part where it is read (``copy_when_read``, at a statement of the top level). A
    float32 slot, a shape that changes between iterations, or one bound on some paths keeps
    the loop's list of tuples.

    Args:
        plan: the function's plan.
        s: the loop.
        recorded: the names its row holds.
        cap_var: the captures' variables (``Recording.cap_var``: capture key -> name).
        same_throughout: whether a name bound in ``s`` has one shape in all its iterations.

    Returns:
        name -> the rank of a row.
    """
    if not isinstance(s, gast.For):
        return {}
    top = {t.id for b in s.body if isinstance(b, gast.Assign) for t in b.targets
           if isinstance(t, gast.Name)}
    written = {w.target for w in plan.eff.writes} | \
        {b for w in plan.eff.writes for b in w.buffers}
    var_of = {v: key for key, v in cap_var.items()}
    # a row of one array (not counting the counter, whose range is walked again, nor a
    # name computed again from it) is that array in a list, in a loop at the top level:
    # a column costs a copy per row (about 130 ns; heat's 4-8% of its time, docs/cli.md's
    # example) to save the array's object (about 170 bytes). A loop inside another keeps
    # its column: its short rows are mostly that object (adi's divisors: 38.2 kB with
    # columns, 44.1 kB with lists, time equal)
    again = {b.targets[0].id for b in counter_offsets(plan, s, recorded)}
    values = [r for r in recorded if r != getattr(s.target, "id", None) and r not in again]
    lone = len(values) < 2 and plan.loops_of.get(id(s)) == ()
    out: dict[str, int] = {}
    for r in recorded:
        n = r
        if r in var_of:  # a copy of a part, taken where it is read: the part's facts
            cap = plan.caps.get(var_of[r])
            if cap is None or not cap.copied or cap.copy_of is not None or \
                    not any(cap.stmt is b for b in s.body):
                continue
            n = cap.name
        elif r in written or not fresh_alone(plan, r) or lone:
            continue
        rank = plan.kinds.get(n)
        if type(rank) is int and rank >= 1 and n in plan.f64_arrays and n in top and \
                same_throughout(n):
            out[r] = rank
    return out


def fresh_alone(plan: Plan, r: str) -> bool:
    """``r`` is a new array that only the row would keep: the result of an operator or of a
    NumPy ufunc (not a view of an array kept anyway, which a column would copy: the RNN's
    ``xs[t]``), never put into a container, a display or a return."""
    at = plan.def_stmt.get(r)
    if not isinstance(at, gast.Assign):
        return False
    v = at.value
    if isinstance(v, gast.Call):
        if v.keywords or not isinstance(plan.resolve_or_none(v.func), np.ufunc):
            return False
    elif not isinstance(v, (gast.BinOp, gast.UnaryOp)):
        return False
    for node in nodes_of(plan.fn, gast.Call, gast.Tuple, gast.List, gast.Dict,
                         gast.Set, gast.Return):
        if isinstance(node, gast.Call):
            if not (isinstance(node.func, gast.Attribute) and node.func.attr in (
                    "append", "extend", "insert", "add", "update", "setdefault")):
                continue
            parts = list(node.args) + [k.value for k in node.keywords]
        elif isinstance(node, gast.Return):
            parts = [node.value] if node.value is not None else []
        elif isinstance(node, gast.Dict):
            parts = [x for x in list(node.keys) + list(node.values) if x is not None]
        else:
            parts = list(node.elts)
        if any(isinstance(x, gast.Name) and x.id == r for x in parts):
            return False
    return True


def counter_offsets(plan: Plan, s: gast.For | gast.While, recorded: list[str]
                    ) -> list[gast.stmt]:
    """The statements of the top level of the loop's body that bind a recorded name once to
    its counter plus or minus an int constant (ADI's ``j + 1``): the reversed body computes
    them again from the counter it has anyway."""
    if not isinstance(s, gast.For) or not isinstance(s.target, gast.Name):
        return []
    out = []
    for b in s.body:
        if isinstance(b, gast.Assign) and len(b.targets) == 1 and \
                isinstance(b.targets[0], gast.Name) and b.targets[0].id in recorded and \
                plan.def_count.get(b.targets[0].id) == 1 and \
                isinstance(b.value, gast.BinOp) and \
                isinstance(b.value.op, (gast.Add, gast.Sub)) and \
                isinstance(b.value.left, gast.Name) and b.value.left.id == s.target.id and \
                isinstance(b.value.right, gast.Constant) and \
                type(b.value.right.value) is int:
            out.append(b)
    return out
