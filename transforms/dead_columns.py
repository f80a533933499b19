"""Tape columns the final pullback never reads, dropped from the forward's rows.

The reverse pass decides what a loop records before cleanup and lean_pullback have run: a
value it recorded may end up read by no statement of the final pullback (heat's
``concatenate`` adjoint splits the cotangent by the first two parts' lengths only, so the
third part's length, taped per step, is bound again as a shape and never read). Each such
column is pure cost: a slot per iteration, and whatever object it keeps alive.

Input: a compiled function's final forward and pullback (after cleanup and lean_pullback).
Output: the same pair, rewritten in place, where

- the pullback's dead copies are removed first (dead_copies.drop_dead_copies);
- a loop ``for (a, b, ...) in reversed(tape):`` of the pullback, the only loop over
  ``tape``, whose target names one that nothing loads (or nothing loads before another
  binding of the name: :func:`_shadowed`), loses it, and so does the one
  ``tape.append((..., ...))`` of the forward at that position, when what the forward
  records there has no effect (a name, a constant, ``len(x)``, ``x.shape``,
  ``np.shape(x)``, ``shape_tree(x)``). A row left with no column is ``()``, one object.

Tapes of other forms (typed columns, a tape read by two loops) are left as they are.
:func:`unwrapped_rows` then gives the code to compile, where a row of one column is the
value itself.
"""

from __future__ import annotations

import copy

import gast
from adgen.transforms.dead_copies import drop_dead_copies, plain, statements
from adgen.transforms.walk import walk

_SHAPE_CALLS = frozenset({"len", "shape_tree"})


def drop_dead_columns(forward: gast.FunctionDef, pullback: gast.FunctionDef) -> None:
    """Drops the pullback's dead copies of names and the tape columns nothing reads (see
    the module docstring), in place."""
    loads, stores = drop_dead_copies(pullback)
    loops = _tape_loops(pullback)
    if not loops:
        return
    appends = _appends(forward)
    for tape, found in loops.items():
        rows = appends.get(tape, [])
        if len(found) != 1 or len(rows) != 1:
            continue
        loop, row = found[0], rows[0]
        if not (isinstance(loop.target, gast.Tuple) and len(row.args) == 1 and
                isinstance(row.args[0], gast.Tuple) and
                len(row.args[0].elts) == len(loop.target.elts) and
                all(isinstance(t, gast.Name) for t in loop.target.elts)):
            continue
        record = row.args[0].elts
        keep = [k for k, t in enumerate(loop.target.elts)
                if (loads.get(t.id, 0) > 0 or stores.get(t.id, 0) != 1) and
                not _shadowed(pullback, loop, t.id) or not _no_effect(record[k])]
        if len(keep) == len(record):
            continue
        row.args[0].elts = [record[k] for k in keep]
        targets = [loop.target.elts[k] for k in keep]
        loop.target = gast.Tuple(elts=targets, ctx=gast.Store()) if targets else \
            gast.Name(id="_", ctx=gast.Store(), annotation=None, type_comment=None)


def unwrapped_rows(forward: gast.FunctionDef, pullback: gast.FunctionDef
                   ) -> tuple[gast.FunctionDef, gast.FunctionDef] | None:
    """Copies of the pair in which each list tape whose rows hold one column records the
    value itself (``tape.append(x)``, ``for x in reversed(tape):``): a 1-tuple per row is 64
    bytes besides the list's slot (heat's row is one length). None where no tape has one
    column. The compiled source is these copies; the trees other backends rewrite keep
    their tuples (the numba backend lays rows of tuples out in typed lists)."""
    if not _single_columns(forward, pullback):
        return None
    forward, pullback = copy.deepcopy(forward), copy.deepcopy(pullback)
    for loop, row in _single_columns(forward, pullback):
        row.args[0] = row.args[0].elts[0]
        loop.target = loop.target.elts[0]
    return forward, pullback


def _tape_loops(pullback: gast.FunctionDef) -> dict[str, list[gast.For]]:
    """The pullback's loops over a reversed tape, by the tape's name."""
    loops: dict[str, list[gast.For]] = {}
    for node in statements(pullback):
        if isinstance(node, gast.For):
            tape = _reversed_tape(node)
            if tape is not None:
                loops.setdefault(tape, []).append(node)
    return loops


def _single_columns(forward: gast.FunctionDef, pullback: gast.FunctionDef
                    ) -> list[tuple[gast.For, gast.Call]]:
    """The pullback's loops over a tape of one column and the forward's record of it."""
    loops = _tape_loops(pullback)
    if not any(isinstance(f.target, gast.Tuple) and len(f.target.elts) == 1
               for found in loops.values() for f in found):
        return []
    appends = _appends(forward)
    out = []
    for tape, found in loops.items():
        rows = appends.get(tape, [])
        if len(found) == 1 and len(rows) == 1 and isinstance(found[0].target, gast.Tuple) and \
                len(found[0].target.elts) == 1 and \
                isinstance(found[0].target.elts[0], gast.Name) and \
                len(rows[0].args) == 1 and isinstance(rows[0].args[0], gast.Tuple) and \
                len(rows[0].args[0].elts) == 1:
            out.append((found[0], rows[0]))
    return out


def _appends(forward: gast.FunctionDef) -> dict[str, list[gast.Call]]:
    """``tape.append(...)`` calls of the forward, by the name they append to."""
    appends: dict[str, list[gast.Call]] = {}
    for node in walk(forward):
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and \
                node.func.attr == "append" and isinstance(node.func.value, gast.Name):
            appends.setdefault(node.func.value.id, []).append(node)
    return appends


def _shadowed(fn: gast.FunctionDef, loop: gast.For, name: str) -> bool:
    """Whether no statement of ``fn`` reads the value ``loop``'s target binds to ``name``:
    its body binds it again (or leaves the iteration) before any read, and every read
    outside ``loop`` is in the body of another loop whose target binds ``name`` and which
    does not hold ``loop`` (so the read sees that loop's binding). Viterbi's outer row
    ``for (best_1, j, tape1) in reversed(tape2):`` reads ``best_1`` only in the inner
    ``for (best_1, best_2, i, t7) in reversed(tape1):``; the outer column was kept, a float
    per step of the ``j`` loop that nothing read."""
    if _scan(loop.body, name)[0]:
        return False
    parents: dict[int, gast.AST] = {}
    for node in walk(fn):
        for child in gast.iter_child_nodes(node):
            parents[id(child)] = node
    inside_loop = {id(n) for n in walk(loop)}
    for n in walk(fn):
        read = isinstance(n, gast.Name) and n.id == name and \
            not isinstance(n.ctx, gast.Store) or isinstance(n, gast.AugAssign) and \
            isinstance(n.target, gast.Name) and n.target.id == name
        if not read or id(n) in inside_loop:
            continue
        child, up = n, parents.get(id(n))
        while up is not None and not (
                isinstance(up, gast.For) and up is not loop and _binds(up.target, name) and
                any(child is b for b in up.body) and (
                    id(loop) not in {id(x) for x in walk(up)} or
                    _before(up.body, child, loop))):
            child, up = up, parents.get(id(up))
        if up is None:
            return False
    return True


def _before(body: list[gast.stmt], child: gast.stmt, loop: gast.For) -> bool:
    """Whether statement ``child`` of ``body`` comes before the statement of ``body`` that
    holds ``loop``: a read there, in a loop whose target binds the name at each iteration,
    sees that binding, never ``loop``'s of the iteration before. Gauss-Seidel's
    ``for (i_2, r_1, tape1) in reversed(tape2):`` reads ``r_1`` before its inner ``for (j,
    r_1, ...) in reversed(tape1):``, whose ``r_1`` nothing reads: a float per inner
    iteration was recorded for nothing."""
    holder = next((k for k, b in enumerate(body)
                   if any(x is loop for x in walk(b))), None)
    at = next((k for k, b in enumerate(body) if b is child), None)
    return holder is not None and at is not None and at < holder


def _binds(target: gast.expr, name: str) -> bool:
    """Whether assigning to ``target`` binds ``name`` (a name, or one unpacked)."""
    if isinstance(target, gast.Name):
        return target.id == name
    return isinstance(target, (gast.Tuple, gast.List)) and \
        any(_binds(e, name) for e in target.elts)


def _reads(node: gast.AST | None, name: str) -> bool:
    return node is not None and any(
        isinstance(n, gast.Name) and n.id == name and not isinstance(n.ctx, gast.Store)
        for n in walk(node))


def _scan(body: list[gast.stmt], name: str) -> tuple[bool, bool]:
    """(whether ``body`` may read the value ``name`` has when it starts, before binding it
    again; whether control may run past its end with that value still bound)."""
    for st in body:
        if isinstance(st, gast.Assign):
            if _reads(st.value, name) or any(not isinstance(t, (gast.Name, gast.Tuple,
                                                                gast.List)) and
                                             _reads(t, name) for t in st.targets):
                return True, False
            if any(_binds(t, name) for t in st.targets):
                return False, False
        elif isinstance(st, gast.For):
            if _reads(st.iter, name) or \
                    not _binds(st.target, name) and _scan(st.body, name)[0] or \
                    _scan(st.orelse, name)[0]:
                return True, False
        elif isinstance(st, gast.While):
            if _reads(st.test, name) or _scan(st.body, name)[0] or \
                    _scan(st.orelse, name)[0]:
                return True, False
        elif isinstance(st, gast.If):
            if _reads(st.test, name):
                return True, False
            (r1, on1), (r2, on2) = _scan(st.body, name), _scan(st.orelse, name)
            if r1 or r2:
                return True, False
            if not (on1 or on2):
                return False, False
        elif isinstance(st, (gast.Break, gast.Continue, gast.Return, gast.Raise)):
            return _reads(st, name), False
        elif isinstance(st, (gast.Expr, gast.Pass, gast.AugAssign, gast.AnnAssign)):
            if _reads(st, name) or isinstance(st, gast.AugAssign) and \
                    _binds(st.target, name):
                return True, False
        elif _reads(st, name) or any(isinstance(n, gast.Name) and n.id == name
                                     for n in walk(st)):
            return True, False  # (a try, a with, ...: taken as reading it)
    return False, True


def _reversed_tape(loop: gast.For) -> str | None:
    """``tape`` of ``for ... in reversed(tape):`` (else None)."""
    it = loop.iter
    if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and \
            it.func.id == "reversed" and len(it.args) == 1 and not it.keywords and \
            isinstance(it.args[0], gast.Name):
        return it.args[0].id
    return None


def _no_effect(e: gast.expr) -> bool:
    """What a forward row may record and lose: a plain value or the shape or length of a
    name."""
    if plain(e):
        return True
    if isinstance(e, gast.Attribute) and e.attr == "shape" and isinstance(e.value, gast.Name):
        return True
    if not (isinstance(e, gast.Call) and len(e.args) == 1 and not e.keywords and
            isinstance(e.args[0], gast.Name)):
        return False
    f = e.func
    return isinstance(f, gast.Name) and f.id in _SHAPE_CALLS or \
        isinstance(f, gast.Attribute) and f.attr == "shape" and \
        isinstance(f.value, gast.Name) and f.value.id == "np"
