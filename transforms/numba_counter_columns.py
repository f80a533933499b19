"""numba_counter_columns: a loop's counter computed again from its row, not recorded.

A step of the numba rewrite (:class:`adgen.transforms.numba_emit.Rewriter`), after
:func:`adgen.transforms.numba_tapes.list_tapes`. A loop ``for j in range(K)`` whose tape
records ``j`` in every iteration (``tape2_j[tape2_n] = j``, then ``tape2_n += 1``) records it
in row ``lo + j`` of the rows its pullback walks for that run of the loop (``for tape2_row in
range(tape2_hi_ - 1, tape2_lo_ - 1, -1)``), so the pullback reads ``j = tape2_row -
tape2_lo_`` instead of ``tape2_j[tape2_row]``, and the column goes: one store and one load
fewer per iteration (Viterbi's and Gauss-Seidel's inner loops recorded ``j`` beside the
values their pullbacks need).

Only where the row is the iteration's for certain: the store is a statement of the loop's own
body (it runs in every iteration), nothing in that body breaks or continues the loop, the
loop's target is bound by nothing else, the range's start and step are integer constants
(``range(n)``, ``range(1, n)``, ``range(0, n, 2)``), and the column has that one store.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from adgen.transforms.analyses.numba_types import call_name, name_of
from adgen.transforms.numba_statements import blocks, expr

if TYPE_CHECKING:
    from adgen.transforms.numba_emit import Rewriter

__all__ = ["counters_again"]


def counters_again(rw: Rewriter) -> None:
    """Drops the tape columns that record a loop's counter (see the module docstring), the
    pullback computing each counter from its row."""
    stores = _column_stores(rw.fwd)
    for loop in list(ast.walk(rw.fwd)):
        if not (isinstance(loop, ast.For) and isinstance(loop.target, ast.Name) and
                call_name(loop.iter) == "range" and not loop.orelse):
            continue
        first = _start_and_step(loop.iter)  # type: ignore[arg-type]
        if first is None or _leaves_early(loop.body) or _binds(loop.body, loop.target.id):
            continue
        for st in loop.body:
            col = _counter_store(st, loop.target.id)
            if col is None or stores.get(col) != 1:
                continue
            reads = _row_reads(rw.pb, col)
            n = name_of(st.targets[0].slice)  # type: ignore[attr-defined]
            if reads is None or not all(_rows_start(rw.fwd, loop, n or "", lo == "0")
                                        for _, _, lo in reads):
                continue
            start, step = first
            for read, row, lo in reads:
                offset = f"({row} - {lo})" if lo != "0" else row
                read.value = expr(offset if (start, step) == (0, 1) else
                                  f"{start} + {offset}" if step == 1 else
                                  f"{start} + {offset} * {step}")
            _drop_column(rw, col)


def _rows_start(fwd: ast.FunctionDef, loop: ast.For, n: str, at_zero: bool) -> bool:
    """Whether the forward starts the tape's rows for this run of ``loop`` where the pullback
    starts walking them: ``tape1_n = 0`` before it (rows from 0), or ``tape2_start =
    tape2_n`` (the rows from there, recorded by the loop around it), in its block."""
    for b in blocks(fwd):
        if any(st is loop for st in b):
            before = b[:next(k for k, st in enumerate(b) if st is loop)]
            return any(isinstance(st, ast.Assign) and len(st.targets) == 1 and (
                at_zero and name_of(st.targets[0]) == n and
                isinstance(st.value, ast.Constant) and st.value.value == 0 or
                not at_zero and name_of(st.targets[0]) == n[:-1] + "start" and
                name_of(st.value) == n) for st in before)
    return False


def _start_and_step(rng: ast.Call) -> tuple[int, int] | None:
    """The constant start and step of ``range(...)``, or None."""
    args = rng.args
    if rng.keywords or not 1 <= len(args) <= 3:
        return None
    values = [a.value if isinstance(a, ast.Constant) and type(a.value) is int else None
              for a in args]
    start = 0 if len(args) == 1 else values[0]
    step = values[2] if len(args) == 3 else 1
    if start is None or step is None or step == 0:
        return None
    return start, step


def _own_nodes(body: list[ast.stmt]) -> list[ast.AST]:
    """The nodes of a loop's body that belong to that loop (not to a loop inside it)."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, (ast.For, ast.While)):
            out.append(node.iter if isinstance(node, ast.For) else node.test)
            continue  # (its break and continue are its own)
        todo.extend(ast.iter_child_nodes(node))
    return out


def _leaves_early(body: list[ast.stmt]) -> bool:
    return any(isinstance(n, (ast.Break, ast.Continue, ast.Return, ast.Raise))
               for n in _own_nodes(body))


def _binds(body: list[ast.stmt], name: str) -> bool:
    return any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id == name
               for st in body for n in ast.walk(st))


def _column_stores(fwd: ast.FunctionDef) -> dict[str, int]:
    """How many statements store into each name by a subscript (``col[n] = v``)."""
    count: dict[str, int] = {}
    for n in ast.walk(fwd):
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store) and \
                isinstance(n.value, ast.Name):
            count[n.value.id] = count.get(n.value.id, 0) + 1
    return count


def _counter_store(st: ast.stmt, counter: str) -> str | None:
    """``tape2_j[tape2_n] = j``: the column (a list tape's, ``<tape>_<name>`` indexed by
    ``<tape>_n``) where ``st`` records ``counter``, or None."""
    if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and
            isinstance(st.targets[0], ast.Subscript) and name_of(st.value) == counter):
        return None
    col, index = name_of(st.targets[0].value), name_of(st.targets[0].slice)
    if col is None or index is None or not index.endswith("_n") or \
            not col.startswith(index[:-1]):
        return None
    return col


def _row_reads(pb: ast.FunctionDef, col: str) -> list[tuple[ast.Assign, str, str]] | None:
    """Each pullback statement ``x = col[row]`` with the row's loop ``for row in
    range(hi - 1, lo - 1, -1)`` (or ``range(n - 1, -1, -1)``: lo is 0) and ``lo``; None where
    the pullback reads the column otherwise."""
    found: list[tuple[ast.Assign, str, str]] = []
    reads = 0
    for loop in ast.walk(pb):
        if not (isinstance(loop, ast.For) and isinstance(loop.target, ast.Name) and
                call_name(loop.iter) == "range" and len(loop.iter.args) == 3):  # type: ignore[attr-defined]
            continue
        row = loop.target.id
        stop, step = loop.iter.args[1:]  # type: ignore[attr-defined]
        if _constant(step) != -1:
            continue
        if _constant(stop) == -1:
            lo = "0"
        elif isinstance(stop, ast.BinOp) and isinstance(stop.op, ast.Sub) and \
                isinstance(stop.left, ast.Name) and isinstance(stop.right, ast.Constant) and \
                stop.right.value == 1:
            lo = stop.left.id
        else:
            continue
        for st in loop.body:
            if isinstance(st, ast.Assign) and isinstance(st.value, ast.Subscript) and \
                    name_of(st.value.value) == col and name_of(st.value.slice) == row:
                found.append((st, row, lo))
    for n in ast.walk(pb):
        if isinstance(n, ast.Name) and n.id == col:
            reads += 1
    # every read of the column is one of those (and the saved values' unpacking)
    return found if found and reads == len(found) + 1 else None


def _constant(e: ast.expr) -> int | None:
    """The value of an integer literal (``-1`` is a negation of ``1``), or None."""
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        inner = _constant(e.operand)
        return -inner if inner is not None else None
    return e.value if isinstance(e, ast.Constant) and type(e.value) is int else None


def _drop_column(rw: Rewriter, col: str) -> None:
    """Removes column ``col`` from the forward (its allocation, growth and store) and from the
    saved values both functions pass."""
    dropped: list[ast.stmt] = []
    for st in ast.walk(rw.fwd):
        # the growth check before a loop (``if tape2_n + len(range(K)) >
        # tape2_j.shape[0]:``, growing every column of the tape) reads another column, or
        # goes with the last one
        if isinstance(st, ast.If) and any(name_of(n) == col for n in ast.walk(st.test)):
            others = [name_of(g.targets[0]) for g in st.body if isinstance(g, ast.Assign) and
                      call_name(g.value) == "grow" and name_of(g.targets[0]) != col]
            if others:
                for n in ast.walk(st.test):
                    if isinstance(n, ast.Name) and n.id == col:
                        n.id = others[0]  # type: ignore[assignment]
            else:
                dropped.append(st)
    for fn in (rw.fwd, rw.pb):
        for b in blocks(fn):
            b[:] = [st for st in b if not _about(st, col) and
                    not any(st is d for d in dropped)] or [ast.Pass()]
        for node in ast.walk(fn):
            if isinstance(node, ast.Tuple):
                node.elts = [e for e in node.elts if name_of(e) != col]


def _about(st: ast.stmt, col: str) -> bool:
    """Whether ``st`` binds or stores into ``col`` (``col = np.empty(0, np.int64)``, ``col =
    grow(col, n)``, ``col[n] = v``)."""
    if not isinstance(st, ast.Assign) or len(st.targets) != 1:
        return False
    t = st.targets[0]
    return name_of(t) == col or isinstance(t, ast.Subscript) and name_of(t.value) == col
