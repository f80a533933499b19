"""numba_tape_capacity: where a counted loop's tape columns are grown, and by how much.

A step of the numba rewrite's list tapes (:func:`adgen.transforms.numba_tapes.list_tapes`):
a loop whose every iteration appends one row (``for j in range(K)``, the store in its body)
has its columns grown before it to hold the rows it will append. Inside a nest of counted
loops that test ran once per execution of the inner loop: Viterbi's ``for j in range(K)``
under ``for k in range(K)`` under ``for t in range(1, T)`` tested (and kept its column
reassignable) 800 times a call, which cost the forward 40 % of its time (3.3 of 8.8 us).

:func:`capacity_site` lifts the test out of every enclosing ``for ... in range(...)`` whose
iterations run the inner loop at most once each with the same count: the inner loop sits in
the outer loop's body (not its ``else``, which runs once after it), and no name the counts
read is bound inside the outer loop. The rows reserved are then the product of the ranges'
lengths, evaluated before the outermost loop lifted past: never fewer than the loops append
(a ``break``, a ``continue`` or an ``if`` around the inner loop only append fewer), so the
columns are never written past their end (numba does not check indices). The counts may
read only names, constants, ``+ - *``, ``len(x)`` and ``x.shape[k]`` (expressions that
cannot raise, whose value is fixed while no name in them is bound again), and an inner
range's step must be a constant: the counts are evaluated where the loops' own ranges may
never have been.
"""

from __future__ import annotations

import ast

from adgen.transforms.analyses.numba_types import call_name
from adgen.transforms.numba_statements import enclosing_loop

__all__ = ["capacity_site"]


def capacity_site(fn: ast.AST, loop: ast.For) -> tuple[ast.stmt, str, bool]:
    """Where to test the capacity of the columns ``loop`` appends to (one row an iteration),
    and an expression of the rows it and the loops lifted past append from there.

    Returns ``(statement, count, lifted)``: the test goes just before ``statement`` (``loop``
    itself, or the outermost enclosing loop it was lifted past: ``lifted``), and ``count``
    reads only values fixed from there until those loops end."""
    count = f"len({ast.unparse(loop.iter)})"
    ranges = [loop.iter]
    cur: ast.stmt = loop
    while True:
        outer = enclosing_loop(fn, cur)
        if not (isinstance(outer, ast.For) and call_name(outer.iter) == "range" and
                not outer.iter.keywords and _in_body(outer, cur)):
            break
        bound = _bound_in(outer)
        if not all(_fixed(a, bound) for r in [*ranges, outer.iter] for a in r.args) or \
                any(len(r.args) == 3 and not _nonzero(r.args[2]) for r in ranges):
            break
        count = f"{count} * len({ast.unparse(outer.iter)})"
        ranges.append(outer.iter)
        cur = outer
    return cur, count, cur is not loop


def _nonzero(step: ast.expr) -> bool:
    """A range's step known not to be 0 (``len(range(a, b, 0))`` raises, and a count taken
    before an outer loop that runs no iteration must not)."""
    if isinstance(step, ast.UnaryOp) and isinstance(step.op, ast.USub):
        step = step.operand
    return isinstance(step, ast.Constant) and type(step.value) is int and step.value != 0


def _in_body(outer: ast.For, st: ast.stmt) -> bool:
    """Whether ``st`` runs in ``outer``'s iterations (not in its ``else``, which runs once
    even when the range is empty)."""
    return not any(n is st for s in outer.orelse for n in ast.walk(s))


def _bound_in(loop: ast.For) -> set[str]:
    """Every name ``loop`` binds: its target and anything stored or deleted in it."""
    return {n.id for n in ast.walk(loop)
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}


def _fixed(e: ast.expr, bound: set[str]) -> bool:
    """Whether ``e`` has no effect and keeps its value while none of ``bound`` changes: names
    not in ``bound``, constants, arithmetic, ``len(x)``, ``x.shape`` and ``x.shape[k]``."""
    if isinstance(e, ast.Name):
        return e.id not in bound
    if isinstance(e, ast.Constant):
        return type(e.value) is int
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult)):
        return _fixed(e.left, bound) and _fixed(e.right, bound)
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        return _fixed(e.operand, bound)
    if isinstance(e, ast.Attribute) and e.attr == "shape":
        return _fixed(e.value, bound)
    if isinstance(e, ast.Subscript) and isinstance(e.slice, ast.Constant) and \
            type(e.slice.value) is int:
        return _fixed(e.value, bound)
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "len" and \
            len(e.args) == 1 and not e.keywords:
        return e.func.id not in bound and _fixed(e.args[0], bound)
    return False
