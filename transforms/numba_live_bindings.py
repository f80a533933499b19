"""numba_live_bindings: which buffer a name holds, recorded where it is bound.

The numba backend replaces shadow memory by one static adjoint buffer per buffer
(``transforms/numba_shadows.py``). A name a loop binds to different buffers on different
iterations has no one static buffer: Deriche's ``ym2 = ym1; ym1 = y1[:, j]`` holds the
fresh ``np.zeros(h)`` on the first iterations and a column of ``y1`` after, and the
default backend's shadow memory finds the adjoint of whichever array it holds at run time.

Input: the forward and the pullback a ``Rewriter`` is rewriting (before its tapes and
shadows steps) and the classes of :func:`adgen.transforms.analyses.numba_types.live_bindings`:
names bound only to one another and to *sources*, each a buffer (a parameter, a fresh
allocation) or a basic-indexing view of a buffer bound once by its subscript.

Output: the forward binds, beside each such name, which source it holds (``ym1_1_live =
1``) and, for a view source, the values its index read when the view was made (copied
from the view's own record, ``ym1_2_at_j = j``, made right after the view: the index names
may be rebound before the name is). Where the forward records the name for the pullback
(a loop's tape, the saved values), it records these beside it (``record_names``). The
pullback's adjoint of the name is then the adjoint of the source it held there:
``(ym1_shadow if ym1_1_live == 0 else y1_shadow[:, ym1_1_live1_j])`` (``shadow_choice``),
a static buffer or the same view of one, as for a name that always holds one source. The
buffers the choice names are added to the saved values where the pullback does not have
them (``saved_buffers``).
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field
from typing import Any, Callable

from adgen.transforms.analyses.numba_types import LiveBinding, View, name_of, saved_values


@dataclass
class Companions:
    """The names the forward binds beside the members of live-binding classes."""

    live: dict[str, LiveBinding]
    # member -> the name holding the index of its source in ``LiveBinding.sources``
    which: dict[str, str] = field(default_factory=dict)
    # (member, source index, index name) -> the value that name had when the view was made
    index: dict[tuple[str, int, str], str] = field(default_factory=dict)
    # (view source, index name) -> its value when the view was made
    at: dict[tuple[str, str], str] = field(default_factory=dict)
    # renewed buffers (an allocation in a loop: one array per iteration,
    # numba_shadows.renewed_buffers): each name of one (the buffer's own, ``out=`` of it, a
    # plain rebinding) -> the buffer, and -> the number of the array it holds
    # (``tmp_inst``); each buffer -> the count of the arrays made (``tmp_count``) and the
    # pullback's list of their adjoints (``tmp_shadows``)
    buffer: dict[str, str] = field(default_factory=dict)
    renewed: dict[str, str] = field(default_factory=dict)
    counts: dict[str, str] = field(default_factory=dict)
    shadows: dict[str, str] = field(default_factory=dict)
    # member of a class with a renewed source -> the number of the array it holds
    inst: dict[str, str] = field(default_factory=dict)

    def names(self) -> set[str]:
        """Every companion (ints)."""
        return set(self.which.values()) | set(self.index.values()) | \
            set(self.at.values()) | set(self.renewed.values()) | \
            set(self.counts.values()) | set(self.inst.values())

    def record_names(self, member: str) -> list[str]:
        """What the forward records beside ``member`` for the pullback's choice."""
        if member in self.renewed:
            return [self.renewed[member]]
        return [self.which[member]] + sorted(v for (t, _, _), v in self.index.items()
                                             if t == member) + \
            ([self.inst[member]] if member in self.inst else [])


def companions(live: dict[str, LiveBinding], views_: dict[str, View],
               fresh: Callable[[str], str], renewed: set[str] = frozenset(),
               roots: dict[str, str | None] | None = None) -> Companions:
    """Names for the companions of every member and view source, and of the names of the
    ``renewed`` buffers (their ``roots``; ``fresh`` makes a name no other binds)."""
    out = Companions(live)
    for r in sorted(renewed):
        out.counts[r] = fresh(f"{r}_count")
        out.shadows[r] = fresh(f"{r}_shadows")
    for n, r in sorted((roots or {}).items()):
        if r in renewed:
            out.buffer[n] = r
            out.renewed[n] = fresh(f"{n}_inst")
    for t, lb in sorted(live.items()):
        out.which[t] = fresh(f"{t}_live")
        if any(s in out.buffer for s in lb.sources):
            out.inst[t] = fresh(f"{t}_inst")
        for k, s in enumerate(lb.sources):
            if s in views_:
                for m in sorted(views_[s].names()):
                    out.index[(t, k, m)] = fresh(f"{t}_live{k}_{m}")
                    if (s, m) not in out.at:
                        out.at[(s, m)] = fresh(f"{s}_at_{m}")
    return out


def bind_companions(fwd: ast.FunctionDef, comp: Companions) -> None:
    """Inserts the companions' bindings into the forward: zero at its top (numba types
    them int64 on every path), a view's index values right after the view, and a member's
    source (and the index values it carries) right after each binding of the member."""

    def after(st: ast.Assign) -> list[ast.stmt]:
        t, m = name_of(st.targets[0]) or "", name_of(st.value) or ""
        lines = []
        if t in comp.renewed:
            v = st.value
            held = m or (name_of(v.args[0]) if isinstance(v, ast.Call) and
                         isinstance(v.func, ast.Name) and v.func.id == "loop_sequence" and
                         v.args else None) or \
                next((name_of(k.value) for k in getattr(v, "keywords", []) if
                      k.arg == "out"), None)
            if held in comp.renewed:  # another name of the array: its number
                lines = [f"{comp.renewed[t]} = {comp.renewed[held]}"]
            else:  # an array made: its number, counted
                r = comp.buffer[t]
                lines = [f"{comp.renewed[t]} = {comp.counts[r]}", f"{comp.counts[r]} += 1"]
        elif isinstance(st.value, ast.Subscript):
            lines = [f"{v} = {n}" for (s, n), v in sorted(comp.at.items()) if s == t]
        elif t in comp.live:
            lb = comp.live[t]
            if m in comp.live:  # another member: what it holds
                lines.append(f"{comp.which[t]} = {comp.which[m]}")
                lines += [f"{v} = {comp.index[(m, k, n)]}"
                          for (u, k, n), v in sorted(comp.index.items()) if u == t]
                if t in comp.inst:
                    lines.append(f"{comp.inst[t]} = {comp.inst[m]}")
            else:
                k = lb.sources.index(m)
                lines.append(f"{comp.which[t]} = {k}")
                if m in comp.buffer:
                    lines.append(f"{comp.inst[t]} = {comp.renewed[m]}")
                lines += [f"{v} = {comp.at[(m, n)]}"
                          for (u, j, n), v in sorted(comp.index.items()) if u == t and j == k]
        new = [ast.parse(line).body[0] for line in lines]
        for n in new:
            n._user_line = getattr(st, "_user_line", 0)  # type: ignore[attr-defined]
        return new

    def visit(body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for st in body:
            for attr in ("body", "orelse", "finalbody"):
                inner = getattr(st, attr, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    setattr(st, attr, visit(inner))
            for h in getattr(st, "handlers", []) or []:
                h.body = visit(h.body)
            out.append(st)
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and \
                    isinstance(st.targets[0], ast.Name):
                out += after(st)
        return out

    fwd.body = visit(fwd.body)
    zeros = sorted(comp.names())
    fwd.body[0:0] = [ast.parse(f"{z} = 0").body[0] for z in zeros]


def shadow_choice(comp: Companions, member: str, roots: dict[str, str | None],
                  views_: dict[str, View], shadow: Callable[[ast.expr], ast.expr]) -> ast.expr:
    """The pullback's adjoint of ``member``: that of the source it held, chosen by the
    recorded index (``shadow`` gives a buffer's static adjoint)."""
    lb = comp.live[member]
    alternatives: list[ast.expr] = []
    for k, s in enumerate(lb.sources):
        r = roots.get(s)
        if s in comp.buffer:  # the array it held, by its number
            alternatives.append(instance_shadow(comp, s, comp.inst[member], member))
            continue
        if r is not None:
            alternatives.append(shadow(ast.Name(id=r, ctx=ast.Load())))
            continue
        view = views_[s]
        index = _Rename({n: comp.index[(member, k, n)] for n in view.names()}).visit(
            copy.deepcopy(view.index))
        alternatives.append(ast.Subscript(value=shadow(ast.Name(id=view.base, ctx=ast.Load())),
                                          slice=index, ctx=ast.Load()))
    out = alternatives[-1]
    for k in range(len(alternatives) - 2, -1, -1):
        out = ast.IfExp(test=ast.Compare(left=ast.Name(id=comp.which[member], ctx=ast.Load()),
                                         ops=[ast.Eq()], comparators=[ast.Constant(k)]),
                        body=alternatives[k], orelse=out)
    return out


def instance_shadow(comp: Companions, name: str, number: str, holder: str) -> ast.expr:
    """The adjoint of the array of a renewed buffer (of which ``name`` is a name) that
    ``holder`` holds, the ``number``-th made (``adgen.numba_runtime.instance_shadow``)."""
    return ast.Call(func=ast.Name(id="instance_shadow", ctx=ast.Load()),
                    args=[ast.Name(id=comp.shadows[comp.buffer[name]], ctx=ast.Load()),
                          ast.Name(id=number, ctx=ast.Load()),
                          ast.Name(id=holder, ctx=ast.Load())], keywords=[])


def buffers_of(comp: Companions, roots: dict[str, str | None],
               views_: dict[str, View]) -> set[str]:
    """The buffers the members' choices name (their shadows are allocated from them)."""
    out: set[str] = set()
    for lb in comp.live.values():
        for s in lb.sources:
            r = roots.get(s)
            out.add(r if r is not None else views_[s].base)
    return out - set(comp.buffer)


def saved_buffers(fwd: ast.FunctionDef, pb: ast.FunctionDef, names: set[str],
                  params: Any) -> None:
    """Adds to the forward's saved values (and to the pullback's unpacking of them) each of
    ``names`` the pullback does not receive: a parameter, or a name the forward binds at its
    top level (so it is bound where the forward returns). Others are left out, and the
    shadows step refuses them as before (it cannot allocate their adjoint)."""
    found = saved_values(fwd, pb)
    if found is None:
        return
    saved, read = found
    have = {name_of(e) for e in saved.elts}
    top = {st.targets[0].id for st in fwd.body if isinstance(st, ast.Assign) and
           len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)}
    # a name bound only at the top level: nothing after rebinds it
    once = {n for n in top if sum(isinstance(x, ast.Name) and x.id == n and
                                  isinstance(x.ctx, ast.Store) for x in ast.walk(fwd)) == 1}
    for n in sorted(names):
        if n not in have and (n in params or n in once):
            saved.elts.append(ast.Name(id=n, ctx=ast.Load()))
            read.elts.append(ast.Name(id=n, ctx=ast.Store()))
            have.add(n)


class _Rename(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.AST:
        new = self.names.get(node.id)
        return ast.Name(id=new, ctx=node.ctx) if new is not None else node
