"""Container aliases: in-place writes to a list, dict or object that another name also reaches.

Input: a function in SSA form (read only) and its effects (analyses.effects). Output: the
container writes (``d[k] = v``, ``lst.append(v)``, ``obj.a = v``) whose container another name
may also reach, each with that name, as :class:`AliasedWrite`.

Why: the adjoint of a list, dict or object is a value that follows the container's *name*
(``q = p`` hands p's adjoint to q), unlike an array's, which shadow memory keys by the buffer.
A write through one name read through another (``q = p; q["w"] = 3 * w; return p["w"]``)
therefore gets a silently wrong gradient; the reverse pass refuses it, naming both lines.

What counts as "another name reaches it", all syntactic and conservative (the joining
statement must be able to run before the write: earlier in the code, or in a loop with it;
a write before the join is harmless, as a list comprehension's appends before ``xs = comp``):

- a plain copy ``q = p``, or ``q = f(p)`` for a function of the user's (which may return
  its argument), transitively, where another name of the group is read elsewhere;
- the written name was read out of a container or object (``t = c[k]``, ``t = o.a``) that
  holds a named container (``c = [p]``, ``c[k] = p``, ``c.append(p)``, ``o.a = p``) which is
  read elsewhere;
- the written name itself is held by a container or object that is read elsewhere.
"""

from __future__ import annotations

import builtins

import gast
from adgen.transforms.analyses.activity import NONDIFF_ATTRS
from adgen.transforms.analyses.effects import Effects
from adgen.transforms.walk import walk

# adgen's runtime functions the earlier passes call (they return no container they were given)
_RUNTIME = frozenset({"loop_sequence", "dict_keys", "unpacked_len", "flat_view", "diagonal_index", "list_snapshot",
                      "dtype_kind", "zero_tangent", "dataclass_replacer"})  # (the jvp code's new zero tangents)


class AliasedWrite:
    """A container write whose container ``other`` may also reach (joined to it at
    ``other_stmt``: the copy, or the store into a container). Read only; equal to another
    of the same four (statements compared by identity)."""

    # a plain class, not a dataclass: see reverse_ast.Site
    __slots__ = ("stmt", "target", "other", "other_stmt")

    def __init__(self, stmt: gast.stmt, target: str, other: str, other_stmt: gast.stmt) -> None:
        self.stmt = stmt
        self.target = target
        self.other = other
        self.other_stmt = other_stmt

    def _key(self) -> tuple[gast.stmt, str, str, gast.stmt]:
        return (self.stmt, self.target, self.other, self.other_stmt)

    def __eq__(self, other: object) -> bool:
        return type(other) is AliasedWrite and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


def aliased_writes(fn: gast.FunctionDef, eff: Effects) -> list[AliasedWrite]:
    """The container writes of ``fn`` that another name may reach (see the module doc)."""
    stmts = [s for s in walk(fn) if isinstance(s, gast.stmt)]
    order = {id(s): k for k, s in enumerate(_in_order(fn.body))}
    loops: dict[int, set[int]] = {}  # statement -> the loops around it
    for s in stmts:
        if isinstance(s, (gast.For, gast.While)):
            for inner in walk(s):
                if isinstance(inner, gast.stmt) and inner is not s:
                    loops.setdefault(id(inner), set()).add(id(s))

    binding: dict[str, gast.stmt] = {}
    for s in stmts:
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
            binding.setdefault(s.targets[0].id, s)

    def before(join: gast.stmt, write: gast.stmt, x: str) -> bool:
        """The join may run before the write: earlier in the code, or in a loop with it
        whose every iteration does not bind ``x`` afresh (SSA: a name bound in a loop is a
        new value each iteration, which an earlier iteration's join did not reach)."""
        if order[id(join)] < order[id(write)]:
            return True
        shared = loops.get(id(join), set()) & loops.get(id(write), set())
        fresh = loops.get(id(binding[x]), set()) if x in binding else set()
        return bool(shared - fresh)

    # names that may hold a list, dict or object (not an array): of a container kind, or
    # with an attribute other than an array's read or written
    methods = {id(c.func) for c in walk(fn) if isinstance(c, gast.Call)}
    containers = {n for n, k in eff.kinds.items() if k in ("list", "dict", "object")} | {
        a.value.id for a in walk(fn) if isinstance(a, gast.Attribute) and
        isinstance(a.value, gast.Name) and id(a) not in methods and
        a.attr not in NONDIFF_ATTRS and a.attr not in ("T", "real", "imag", "flat")}
    copies: dict[str, list[tuple[str, gast.stmt]]] = {}   # name -> names copied to/from it
    holders: dict[str, list[tuple[str, gast.stmt]]] = {}  # name -> containers holding it
    held_by: dict[str, list[tuple[str, gast.stmt]]] = {}  # container -> names it holds
    element_of: dict[str, str] = {}                      # t = c[k] / t = o.a -> c
    uses: dict[str, list[gast.stmt]] = {}                 # name -> statements that load it
    for s in stmts:
        # reads only: the container of a store (p["w"] = v, p.append(v)) is not read there
        written = set()
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], (gast.Subscript,
                                                                    gast.Attribute)):
            written.add(id(s.targets[0].value))
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) and \
                isinstance(s.value.func, gast.Attribute) and s.value.func.attr == "append":
            written.add(id(s.value.func.value))
        # a compound statement reads only its header (its body's statements come on their own)
        header = [getattr(s, f) for f in ("test", "iter") if getattr(s, f, None) is not None] \
            if hasattr(s, "body") else [s]
        # p is None / p is not None reads no content (the jvp code's test of a tangent
        # argument, self_dot is None, before it binds self_dot = zero_tangent(self))
        identity = {id(c.left) for h in header for c in walk(h)
                    if isinstance(c, gast.Compare) and len(c.ops) == 1 and
                    isinstance(c.ops[0], (gast.Is, gast.IsNot)) and
                    isinstance(c.comparators[0], gast.Constant) and
                    c.comparators[0].value is None}
        for n in (n for h in header for n in walk(h)):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and \
                    id(n) not in written and id(n) not in identity:
                uses.setdefault(n.id, []).append(s)

        def hold(container: str, value: gast.expr, s: gast.stmt = s) -> None:
            for e in ([value] if isinstance(value, gast.Name) else
                      [x for x in getattr(value, "elts", getattr(value, "values", []))
                       if isinstance(x, gast.Name)]):
                holders.setdefault(e.id, []).append((container, s))
                held_by.setdefault(container, []).append((e.id, s))

        if isinstance(s, gast.Assign):
            t, v = s.targets[0], s.value
            if isinstance(t, gast.Name):
                # q = p, and q = f(p) for a function of the user's, which may return p
                sources = [v] if isinstance(v, gast.Name) else \
                    [a for a in v.args if isinstance(a, gast.Name) and a.id in containers] \
                    if isinstance(v, gast.Call) and isinstance(v.func, gast.Name) and \
                    not hasattr(builtins, v.func.id) and v.func.id not in _RUNTIME and \
                    not _reversed_walk(v) else []
                for src in sources:
                    copies.setdefault(t.id, []).append((src.id, s))
                    copies.setdefault(src.id, []).append((t.id, s))
                if isinstance(v, (gast.List, gast.Tuple, gast.Dict)):
                    hold(t.id, v)
                elif isinstance(v, (gast.Subscript, gast.Attribute)) and \
                        isinstance(v.value, gast.Name):
                    element_of[t.id] = v.value.id
                elif isinstance(v, gast.Attribute) and _dotted_root(v) is not None:
                    # t = pkg.config.state (a dotted path normal form keeps whole): a part of
                    # pkg, as t = config.state is of config (a write through t, then a read
                    # of pkg.config.state.u, was a silently zero gradient)
                    element_of[t.id] = _dotted_root(v)
            elif isinstance(t, (gast.Subscript, gast.Attribute)) and \
                    isinstance(t.value, gast.Name) and isinstance(v, gast.Name):
                hold(t.value.id, v)
        elif isinstance(s, gast.Expr) and isinstance(s.value, gast.Call):
            f = s.value.func
            if isinstance(f, gast.Attribute) and f.attr == "append" and \
                    isinstance(f.value, gast.Name) and s.value.args:
                hold(f.value.id, s.value.args[0])

    def after(use: gast.stmt, write: gast.stmt) -> bool:
        """``use`` may run after ``write``: later in the code, or in a loop with it."""
        return order[id(use)] > order[id(write)] or bool(
            loops.get(id(use), set()) & loops.get(id(write), set()))

    # seq = loop_sequence(c): the list a for loop indexes is c itself
    sequences: dict[str, str] = {}
    for s in stmts:
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and \
                isinstance(s.value, gast.Call) and isinstance(s.value.func, gast.Name) and \
                s.value.func.id == "loop_sequence" and s.value.args and \
                isinstance(s.value.args[0], gast.Name):
            sequences[s.targets[0].id] = s.value.args[0].id

    def used_elsewhere(name: str, besides: set[int]) -> gast.stmt | None:
        return next((u for u in uses.get(name, []) if id(u) not in besides), None)

    def group(name: str) -> dict[str, gast.stmt]:
        """The names a chain of plain copies joins to ``name``, with a copy statement."""
        found: dict[str, gast.stmt] = {}
        todo = [name]
        while todo:
            n = todo.pop()
            for other, s in copies.get(n, []):
                if other != name and other not in found:
                    found[other] = s
                    todo.append(other)
        return found

    out: list[AliasedWrite] = []
    for w in eff.writes:
        if not w.container:
            continue
        x = w.target
        members = group(x)
        copy_stmts = {id(s) for s in members.values()}
        hit: tuple[str, gast.stmt] | None = None
        for other, s in members.items():
            if before(s, w.stmt, x) and used_elsewhere(other, copy_stmts) is not None:
                hit = (other, s)
                break
        if hit is None and x in element_of:
            for inner, s in held_by.get(element_of[x], []):
                if before(s, w.stmt, x) and used_elsewhere(inner, {id(s)}) is not None:
                    hit = (inner, s)
                    break
        if hit is None:
            for c, s in holders.get(x, []):
                if before(s, w.stmt, x) and used_elsewhere(c, {id(s)}) is not None:
                    hit = (c, s)
                    break
        if hit is None and x in element_of and x in binding:
            # the written name is an item of a container (m = models[0], for m in models,
            # layer = net.layers[0], at any depth) that is read again once the write may
            # have run (models[0].w, a second loop over models, net.layers[0].w): the
            # item's adjoint follows m, the read's follows models
            chain: list[set[str]] = []
            joins = {id(binding[x])}
            c: str | None = element_of[x]
            while c is not None and len(chain) < 32:
                aliases = _sequence_aliases(c, sequences)
                chain.append(aliases)
                joins |= {id(binding[n]) for n in aliases if n in binding}
                c = next((element_of[n] for n in sorted(aliases) if n in element_of), None)
            shown = next((n for n in sorted(chain[-1]) if n not in sequences),
                         element_of[x])  # the user's name for the outermost container
            for aliases in chain:
                for c in sorted(aliases):
                    late = next((u for u in uses.get(c, []) if id(u) not in joins and
                                 not _only_len(u, c) and after(u, w.stmt)), None)
                    if late is not None:
                        hit = (shown, binding[x])
                        break
                if hit is not None:
                    break
        if hit is not None:
            out.append(AliasedWrite(w.stmt, x, hit[0], hit[1]))
    return out


def _dotted_root(node: gast.Attribute) -> str | None:
    """The name a dotted path ``a.b.c`` starts from, or None (an item or a call on the way)."""
    v = node.value
    while isinstance(v, gast.Attribute):
        v = v.value
    return v.id if isinstance(v, gast.Name) else None


def _reversed_walk(call: gast.Call) -> bool:
    """``walked = reversible(ws, file, line)``, the check transforms/reversed_items puts
    before a loop over ``reversed(ws)``, or ``walked = walked_list(ws, file, line)``,
    transforms/walked_lengths' before a loop over ``ws``: its result holds ``ws`` only for
    the check at each step, which reads it (not a name the list's gradient should follow)."""
    f = call.func
    base = next((b for b in ("reversible", "walked_list") if isinstance(f, gast.Name) and
                 f.id.startswith(b)), None)
    return base is not None and \
        f.id[len(base):] in ("", *map(str, range(1, 100))) and len(call.args) == 3 and \
        isinstance(call.args[1], gast.Constant) and type(call.args[1].value) is str and \
        isinstance(call.args[2], gast.Constant) and type(call.args[2].value) is int


def _sequence_aliases(name: str, sequences: dict[str, str]) -> set[str]:
    """``name`` and the names joined to it by ``seq = loop_sequence(c)`` either way."""
    group = {name}
    changed = True
    while changed:
        changed = False
        for seq, c in sequences.items():
            if (seq in group) != (c in group):
                group |= {seq, c}
                changed = True
    return group


def _only_len(s: gast.stmt, name: str) -> bool:
    """``s`` reads ``name`` only for its length (``t = len(seq)``, a loop's count)."""
    return isinstance(s, gast.Assign) and isinstance(s.value, gast.Call) and \
        isinstance(s.value.func, gast.Name) and s.value.func.id == "len" and \
        len(s.value.args) == 1 and isinstance(s.value.args[0], gast.Name) and \
        s.value.args[0].id == name


def _in_order(body: list[gast.stmt]) -> list[gast.stmt]:
    """The statements of ``body`` and of the blocks inside it, in the order of the code."""
    out: list[gast.stmt] = []
    for s in body:
        out.append(s)
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(s, field, None)
            if isinstance(inner, list):
                out += _in_order(inner)
        for h in getattr(s, "handlers", []):
            out += _in_order(h.body)
    return out
