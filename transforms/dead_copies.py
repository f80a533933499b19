"""Dead copies: pullback statements ``x = e`` whose ``x`` nothing loads, removed.

Input: a compiled function's final pullback (after cleanup and lean_pullback). Output: the
same tree, rewritten in place, where a statement ``x = e`` whose ``x`` nothing loads, bound
once, with ``e`` a name, a constant, a tuple of them or a length
shape_saves.length_expression wrote, is removed (until none is left). Every gradient runs
it; the tape columns such a removal leaves unread are dropped by ``dead_columns``, imported
where the pullback has a loop (issue 15's cold start: a function without one has no tape).
"""

from __future__ import annotations

import gast
from adgen.transforms.walk import walk


def drop_dead_copies(pullback: gast.FunctionDef) -> tuple[dict[str, int], dict[str, int]]:
    """Removes the pullback's dead copies (module doc) and returns the loads and stores of
    each name left (a del counts as a load)."""
    loads, stores = _counts(pullback)
    _drop_copies(pullback, loads, stores)
    return loads, stores


def has_loop(pullback: gast.FunctionDef) -> bool:
    """Whether the pullback has a ``for`` loop, as each one over a tape is."""
    return any(isinstance(s, gast.For) for s in statements(pullback))


def statements(fn: gast.FunctionDef) -> list[gast.AST]:
    """``fn``, its statements and except handlers at any depth, in ``walk``'s order: the
    nodes that hold blocks, without walking the expressions (build time)."""
    todo: list[gast.AST] = [fn]
    for node in todo:
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                todo.extend(b for b in block if isinstance(b, gast.AST))
    return todo


def _counts(fn: gast.FunctionDef) -> tuple[dict[str, int], dict[str, int]]:
    loads: dict[str, int] = {}
    stores: dict[str, int] = {}
    for n in walk(fn):
        if isinstance(n, gast.Name):
            # a del counts as a read: the name must stay bound for it
            table = stores if isinstance(n.ctx, gast.Store) else loads
            table[n.id] = table.get(n.id, 0) + 1
        elif isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Name):
            loads[n.target.id] = loads.get(n.target.id, 0) + 1
    return loads, stores


def plain(e: gast.expr) -> bool:
    """A name, a constant, or a tuple of them: evaluating it has no effect."""
    if isinstance(e, (gast.Name, gast.Constant)):
        return True
    return isinstance(e, gast.Tuple) and all(plain(x) for x in e.elts)


def _length(e: gast.expr | None) -> bool:
    """What shape_saves.length_expression writes of plain values: ``+ - * //``, ``min``
    and ``max`` (no effect on the ints it reads)."""
    if e is None or plain(e):
        return True
    if isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Add, gast.Sub, gast.Mult,
                                                       gast.FloorDiv)):
        return _length(e.left) and _length(e.right)
    return isinstance(e, gast.Call) and isinstance(e.func, gast.Name) and \
        e.func.id in ("min", "max") and not e.keywords and \
        all(_length(a) for a in e.args)


def _drop_copies(fn: gast.FunctionDef, loads: dict[str, int],
                 stores: dict[str, int]) -> None:
    """Removes ``x = e`` (``e`` plain, or a length) where nothing loads ``x`` and nothing else binds it,
    updating ``loads``, until none is left."""
    changed = True
    while changed:
        changed = False
        for node in statements(fn):
            for field in ("body", "orelse", "finalbody"):
                block = getattr(node, field, None)
                if not isinstance(block, list):
                    continue
                kept = []
                for st in block:
                    if isinstance(st, gast.Assign) and len(st.targets) == 1 and \
                            isinstance(st.targets[0], gast.Name) and \
                            loads.get(st.targets[0].id, 0) == 0 and \
                            stores.get(st.targets[0].id, 0) == 1 and _length(st.value):
                        for n in walk(st.value):
                            if isinstance(n, gast.Name):
                                loads[n.id] -= 1
                        stores[st.targets[0].id] = 0
                        changed = True
                        continue
                    kept.append(st)
                if len(kept) != len(block):
                    setattr(node, field, kept or [gast.Pass()])
