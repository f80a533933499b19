"""numba_instance_lifetimes: the adjoint of an array made in a loop dropped when its last use
is done.

An array a line in a loop makes, one per iteration (``lap = np.empty(n)`` in each time
step), has an adjoint of its own on the numba backend (``numba_shadows.renewed_buffers``):
the forward numbers the arrays as they are made (``lap_inst = lap_count; lap_count += 1``),
and the pullback keeps their adjoints in a list (``lap_shadows``), each made at its first
use (``instance_shadow``). Until session 19 every one stayed in the list until the pullback
returned: 200 steps making a 1 MB array held 200 MB of adjoints at the end.

An array numbered ``k`` is made at some point of the forward; the pullback reads its
adjoint only while it goes back over what the forward did after that point. So once the
pullback has gone back over a whole iteration of a loop, the adjoints of every array made
from that iteration's start on are done with. The forward records, per iteration of the
innermost loop around the line that makes the arrays, how many had been made when the
iteration started (``lap_row0 = lap_count``, the first statement of its body, a column of
that loop's tape), and the pullback, at the end of its pass over that iteration, drops the
adjoints numbered from there up (``release_shadows``; ``lap_free``, the lowest number
dropped so far, makes each dropped once):

    lap_free = lap_count                     # after the saved values are unpacked
    for (..., lap_row0) in reversed(tape2):
        ...                                  # the iteration's adjoints, as before
        lap_free = release_shadows(lap_shadows, lap_free, lap_row0, np.zeros((0,)))

Left as before (nothing dropped): a loop with no list tape of tuples (a counted loop's typed
tape), or whose body in the forward or the pullback holds a ``break`` or ``continue`` of its
own (a partial iteration's record); a renewed buffer none of whose arrays is made in a loop.

Input: a :class:`adgen.transforms.numba_emit.Rewriter` after ``numba_shadows.view_indices``
(``rw.live``: the counts and the pullback's lists) and before the tapes steps; ``types_``
gets the new column's kind (int64). Output: the forward and pullback, changed in place.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from adgen.transforms.analyses.numba_types import call_name, name_of, saved_values

if TYPE_CHECKING:
    from adgen.transforms.numba_emit import Rewriter

__all__ = ["release_instances"]

_LOOPS = (ast.For, ast.While)


def release_instances(rw: Rewriter, types_: dict[str, Any]) -> None:
    """Drops each array-in-a-loop adjoint when the pullback is done with it (the module)."""
    comp = rw.live
    if not comp.counts:
        return
    count_of = {c: r for r, c in comp.counts.items()}
    # the innermost loop around each renewed buffer's first numbered array
    made_in: dict[str, ast.stmt] = {}

    def find(body: list[ast.stmt], loop: ast.stmt | None) -> None:
        for st in body:
            if loop is not None and isinstance(st, ast.Assign) and \
                    name_of(st.value) in count_of and count_of[st.value.id] not in made_in:
                made_in[count_of[st.value.id]] = loop
            for field in ("body", "orelse"):
                inner = getattr(st, field, None)
                if isinstance(inner, list):
                    find(inner, st if isinstance(st, _LOOPS) and field == "body" else loop)

    find(rw.fwd.body, None)
    found = saved_values(rw.fwd, rw.pb)
    unpacked = _after_unpacking(rw.pb)
    if found is None or unpacked is None:
        return
    for r in sorted(made_in):
        loop = made_in[r]
        append = _own_append(loop)
        reader = _reader(rw.pb, append)
        if append is None or reader is None or _leaves_early(loop) or _leaves_early(reader):
            continue
        count, shadows = comp.counts[r], comp.shadows[r]
        if count not in {name_of(e) for e in found[0].elts}:
            continue  # (view_indices saves it wherever it made the list)
        row0, free = rw.fresh(f"{r}_row0"), rw.fresh(f"{r}_free")
        types_[row0] = types_[free] = "i8"
        loop.body.insert(0, _line(f"{row0} = {count}", loop.body[0]))
        append.value.args[0].elts.append(ast.Name(id=row0, ctx=ast.Load()))
        reader.target.elts.append(ast.Name(id=row0, ctx=ast.Store()))
        ty = types_.get(r)
        ndim = ty[2] if isinstance(ty, tuple) and ty[0] == "array" and len(ty) == 3 else 1
        reader.body.append(_line(f"{free} = release_shadows({shadows}, {free}, {row0}, "
                                 f"np.zeros({(0,) * ndim}))", reader.body[-1]))
        rw.pb.body.insert(unpacked, _line(f"{free} = {count}", rw.pb.body[unpacked - 1]))


def _line(text: str, near: ast.stmt) -> ast.stmt:
    """The statement ``text``, at the user's line of ``near``."""
    st = ast.parse(text).body[0]
    st._user_line = getattr(near, "_user_line", 0)  # type: ignore[attr-defined]
    return ast.fix_missing_locations(ast.copy_location(st, near))


def _own_append(loop: ast.stmt) -> ast.Expr | None:
    """``tape.append((...))``, the loop's record of an iteration (a statement of its body
    whose innermost loop is ``loop``), where it appends a tuple of names; else None."""
    out = []

    def find(body: list[ast.stmt]) -> None:
        for st in body:
            if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and \
                    isinstance(st.value.func, ast.Attribute) and \
                    st.value.func.attr == "append" and name_of(st.value.func.value) and \
                    len(st.value.args) == 1 and isinstance(st.value.args[0], ast.Tuple):
                out.append(st)
            if not isinstance(st, _LOOPS):
                for field in ("body", "orelse"):
                    inner = getattr(st, field, None)
                    if isinstance(inner, list):
                        find(inner)

    find(loop.body)
    return out[0] if len(out) == 1 and all(isinstance(e, ast.Name) for e in
                                            out[0].value.args[0].elts) else None


def _reader(pb: ast.FunctionDef, append: ast.Expr | None) -> ast.For | None:
    """The pullback's loop over the rows ``append`` records (``for (...) in
    reversed(tape)``), where its target is a tuple of names as long as the row."""
    if append is None:
        return None
    tape = append.value.func.value.id
    for node in ast.walk(pb):
        if isinstance(node, ast.For) and call_name(node.iter) == "reversed" and \
                node.iter.args and name_of(node.iter.args[0]) == tape and \
                isinstance(node.target, ast.Tuple) and \
                len(node.target.elts) == len(append.value.args[0].elts) and \
                all(isinstance(e, ast.Name) for e in node.target.elts) and node.body:
            return node
    return None


def _leaves_early(loop: ast.stmt) -> bool:
    """Whether ``loop``'s body (not a loop inside it) holds a ``break`` or ``continue``."""
    todo = list(loop.body) + list(getattr(loop, "orelse", []))
    while todo:
        st = todo.pop()
        if isinstance(st, (ast.Break, ast.Continue)):
            return True
        if not isinstance(st, _LOOPS):
            for field in ("body", "orelse", "finalbody"):
                todo += getattr(st, field, None) or []
            for h in getattr(st, "handlers", None) or []:
                todo += h.body
    return False


def _after_unpacking(pb: ast.FunctionDef) -> int | None:
    """The position in the pullback's body right after it unpacks its saved values."""
    at = None
    for k, st in enumerate(pb.body):
        if isinstance(st, ast.Assign) and name_of(st.value) == "saved":
            at = k + 1
    return at
