"""Parameter parts written in place: a list, dict or object held by a parameter (or by a
container the function builds: :func:`local_parts`) and changed through a name read from it
(``self.acts.append(h)``, lowered to ``t = self.acts; t.append(h)``; ``cache["z"] = v`` on a
parameter ``cache`` of dicts).

Input: a function in SSA form (read only), its effects (analyses.effects) and its parameters.
Output: for each such written name, the parameter and the part it was read from, as
:class:`ParameterPart`.

Why: the adjoint of a list, dict or object follows its name. A method that appends to
``self.acts`` changed a list its caller reads again through ``self``: the caller hands over
``self``'s adjoint (ShadowMap.deposit), but the write's pullback started the list's adjoint
from zero, a silently zero gradient for what was appended. With a part found here, the
pullback takes the parameter's adjoint over (``sh.withdraw``) and starts the written name's
adjoint from the parameter's part (``take_attr`` / ``take_item``); the read ``t = self.acts``
gives it back, in reverse, once the write is undone.

What is followed (syntactic and narrow, so the part's adjoint is in one place at the write):
``t`` is bound once, by ``t = p.a`` or ``t = p[k]`` of a constant ``k``, with ``p`` a
parameter; the binding comes before the write in the same block, with no read of ``p``
between; ``t`` is read nowhere but as the container of that one write; and another name read
from the same part is bound and read on one side of the write. Any other write through a name read
out of a parameter is listed by :func:`unfollowed` (the reverse pass refuses it when the
written value has a derivative).
"""

from __future__ import annotations

import gast
from adgen.transforms.analyses.activity import NONDIFF_ATTRS
from adgen.transforms.analyses.effects import Effects
from adgen.transforms.node_index import memo, nodes_of
from adgen.transforms.walk import walk


class ParameterPart:
    """``name`` was read as ``param.attr`` (``attr`` set) or ``param[key]`` (``key`` set).
    Read only; equal to another of the same three (``key`` compared by identity)."""

    # a plain class, not a dataclass: see reverse_ast.Site
    __slots__ = ("param", "attr", "key")

    def __init__(self, param: str, attr: str | None, key: gast.expr | None) -> None:
        self.param = param
        self.attr = attr
        self.key = key

    def __eq__(self, other: object) -> bool:
        return type(other) is ParameterPart and (self.param, self.attr, self.key) == \
            (other.param, other.attr, other.key)

    def __hash__(self) -> int:
        return hash((self.param, self.attr, self.key))


def _read_from(value: gast.expr, params: set[str]) -> tuple[str, str | None,
                                                             gast.expr | None] | None:
    if isinstance(value, gast.Attribute) and isinstance(value.value, gast.Name) and \
            value.value.id in params and value.attr not in NONDIFF_ATTRS:
        return value.value.id, value.attr, None
    if isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name) and \
            value.value.id in params and isinstance(value.slice, gast.Constant) and \
            isinstance(value.slice.value, (str, int)) and \
            not isinstance(value.slice.value, bool):
        return value.value.id, None, value.slice
    return None


def _bindings(fn: gast.FunctionDef) -> dict[str, list[gast.stmt]]:
    """Name -> the statements binding it (shared within a frozen block: read only)."""
    return memo(fn, "parameter_parts.bindings", lambda: _compute_bindings(fn))


def _compute_bindings(fn: gast.FunctionDef) -> dict[str, list[gast.stmt]]:
    out: dict[str, list[gast.stmt]] = {}
    for s in nodes_of(fn, gast.Assign, gast.AugAssign, gast.AnnAssign, gast.For):
        if isinstance(s, gast.For):
            for n in nodes_of(s.target, gast.Name):
                out.setdefault(n.id, []).append(s)
            continue
        targets = s.targets if isinstance(s, gast.Assign) else [s.target]
        for t in targets:
            for n in nodes_of(t, gast.Name):
                if isinstance(n.ctx, gast.Store):
                    out.setdefault(n.id, []).append(s)
    return out


def _container_writes(eff: Effects) -> bool:
    """Some write of ``fn`` stores into a list, dict or object: without one, no name is a
    written part (the cheap gate of every function here: most functions write none)."""
    return any(w.container for w in eff.writes)


def _earlier(fn: gast.FunctionDef) -> dict[int, list[gast.stmt]]:
    """Statement -> the statements before it in the same block, nearest first."""
    out: dict[int, list[gast.stmt]] = {}
    for node in walk(fn):
        for field in ("body", "orelse", "handlers", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                for k, b in enumerate(block):
                    out[id(b)] = block[:k][::-1]
    return out


def _bound_just_before(write: gast.stmt, at: gast.stmt, param: str,
                       earlier: dict[int, list[gast.stmt]]) -> bool:
    """``at`` comes before ``write`` in the same block, and nothing between reads ``param``
    (a call given it could change the part)."""
    for s in earlier.get(id(write), []):
        if s is at:
            return True
        if any(isinstance(n, gast.Name) and n.id == param for n in walk(s)):
            return False
    return False


def _candidates(fn: gast.FunctionDef, eff: Effects, params: set[str]
                ) -> list[tuple[str, gast.stmt, tuple[str, str | None, gast.expr | None]]]:
    binds = _bindings(fn)
    out = []
    for w in eff.writes:
        t = w.target
        if not w.container or len(binds.get(t, [])) != 1:
            continue
        at = binds[t][0]
        if isinstance(at, gast.Assign) and len(at.targets) == 1 and \
                isinstance(at.targets[0], gast.Name):
            found = _read_from(at.value, params)
            if found is not None:
                out.append((t, w.stmt, found))
    return out


def parameter_parts(fn: gast.FunctionDef, eff: Effects, params: set[str]
                    ) -> dict[str, ParameterPart]:
    """The written names of ``fn`` whose adjoint starts from a parameter's part (module doc)."""
    if not params or not _container_writes(eff):
        return {}
    binds = _bindings(fn)
    earlier = _earlier(fn)
    loads: dict[str, int] = {}
    dtype_reads = {id(c.args[0]) for c in nodes_of(fn, gast.Call)
                   if isinstance(c.func, gast.Name) and c.func.id == "dtype_kind" and c.args}
    for n in walk(fn):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and \
                id(n) not in dtype_reads:
            # dtype_kind(t) (forward mode's float_part of a stored tangent, in the jvp code
            # that second derivatives differentiate again) reads no value of t
            loads[n.id] = loads.get(n.id, 0) + 1
    writes_of: dict[str, int] = {}
    for w in eff.writes:
        writes_of[w.target] = writes_of.get(w.target, 0) + 1
    out: dict[str, ParameterPart] = {}
    for t, stmt, (p, attr, key) in _candidates(fn, eff, params):
        if not _bound_just_before(stmt, binds[t][0], p, earlier) or writes_of.get(t) != 1 or \
                _escapes(fn, p):
            continue
        in_write = sum(1 for n in walk(stmt) if isinstance(n, gast.Name) and n.id == t and
                       isinstance(n.ctx, gast.Load))
        if in_write == 1 and loads.get(t) == 1 and \
                _other_reads_apart(fn, stmt, t, (p, attr, key), binds):
            out[t] = ParameterPart(p, attr, key)
    return out


def _escapes(fn: gast.FunctionDef, p: str) -> bool:
    """``p`` itself is bound to another name or held by a container (``q = p``, ``[p]``,
    ``c.append(p)``): a read through that name would not see the holder's adjoint. Reading
    its parts, handing it to a call (whose pullback shares it: ShadowMap.deposit) and calling
    it (``model(x)``, its ``__call__`` handed ``model``) do not count."""
    for node in walk(fn):
        for field, value in gast.iter_fields(node):
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, gast.Name) and child.id == p and \
                        isinstance(child.ctx, gast.Load):
                    if isinstance(node, (gast.Attribute, gast.Subscript)) and \
                            field == "value":
                        continue
                    if isinstance(node, gast.Call) and field == "func":
                        continue  # model(x): its __call__ is handed model, as model.f(x)
                    if isinstance(node, gast.Call) and field == "args" and not (
                            isinstance(node.func, gast.Attribute) and
                            node.func.attr in ("append", "extend", "insert")):
                        continue
                    return True
    return False


def _same_part(a: tuple[str, str | None, gast.expr | None],
               b: tuple[str, str | None, gast.expr | None]) -> bool:
    return a[0] == b[0] and a[1] == b[1] and (
        (a[2] is None) == (b[2] is None) and (a[2] is None or a[2].value == b[2].value))


def _other_reads_apart(fn: gast.FunctionDef, write: gast.stmt, t: str,
                       part: tuple[str, str | None, gast.expr | None],
                       binds: dict[str, list[gast.stmt]]) -> bool:
    """Every other name read from the same part (``u = self.acts`` for ``self.acts[-1]``)
    is bound and read on one side of the write, in the same loops: its adjoint then reaches
    the parameter's before (in reverse) the write takes it, or after the write gave it back.
    A name bound before the write and read after it would hold part of the list's adjoint
    when the write's pullback needs all of it."""
    order: dict[int, int] = {}
    loops: dict[int, frozenset[int]] = {}

    def visit(node: gast.AST, around: frozenset[int]) -> None:
        order[id(node)] = len(order)
        loops[id(node)] = around
        inner = around | {id(node)} if isinstance(node, (gast.For, gast.While)) else around
        for child in gast.iter_child_nodes(node):
            visit(child, inner)

    visit(fn, frozenset())
    params = {part[0]}
    for u, at in binds.items():
        if u == t or len(at) != 1 or not isinstance(at[0], gast.Assign) or \
                len(at[0].targets) != 1:
            continue
        found = _read_from(at[0].value, params)
        if found is None or not _same_part(found, part):
            continue
        places = [at[0]] + [s for s in walk(fn) if isinstance(s, gast.stmt) and
                            not hasattr(s, "body") and
                            any(isinstance(n, gast.Name) and n.id == u and
                                isinstance(n.ctx, gast.Load) for n in walk(s))]
        sides = {order[id(s)] < order[id(write)] for s in places}
        around = {loops[id(s)] for s in places}
        if len(sides) != 1 or len(around) != 1:
            return False
    return True


def _local_holders(fn: gast.FunctionDef, eff: Effects, params: set[str]) -> set[str]:
    kept = [n for n, k in eff.kinds.items() if k in ("list", "dict", "object") and
            n not in params]
    if not kept:
        return set()  # the function builds no container: it holds no part
    binds = _bindings(fn)
    return {n for n in kept if len(binds.get(n, [])) == 1}


def local_parts(fn: gast.FunctionDef, eff: Effects, params: set[str]
                ) -> dict[str, ParameterPart]:
    """As :func:`parameter_parts`, for the parts of a list, dict or object the function
    builds (``hist = {"h": []}; hist["h"].append(h)``): the holder's adjoint, which reads of
    ``hist["h"]`` after the write added to, gives the written name its start."""
    return parameter_parts(fn, eff, _local_holders(fn, eff, params))


def held_writes(fn: gast.FunctionDef, eff: Effects, params: set[str],
                by_index: bool = False) -> list[tuple[str, str]]:
    """(written name, holder) of every container write into a part, at any depth, of a
    container the function builds, followed or not: the write changes the holder, so its
    derivative flows there (activity), and one not followed is then refused where it is.
    ``by_index``: every write, also ``L[0][1] = v`` into a part whose kind is not known (a
    list of numbers held by a list), which forward mode writes into the holder's tangent as
    the primal does; reverse mode refuses it instead (reverse_stores)."""
    return [(t, h) for t, h in _rooted(fn, eff, _local_holders(fn, eff, params),
                                       by_index).values()]


def _rooted(fn: gast.FunctionDef, eff: Effects, holders: set[str], by_index: bool = False
            ) -> dict[int, tuple[str, str]]:
    """Container writes (by statement id; ``by_index``: any write) through a name read out
    of one of ``holders``, directly or through other parts: statement -> (written name,
    holder)."""
    if not holders or not (by_index and eff.writes or _container_writes(eff)):
        return {}
    binds = _bindings(fn)

    def root(t: str) -> str | None:
        seen: set[str] = set()
        while t not in seen:
            seen.add(t)
            at = binds.get(t, [])
            if len(at) != 1 or not isinstance(at[0], gast.Assign) or \
                    not isinstance(at[0].value, (gast.Attribute, gast.Subscript)) or \
                    not isinstance(at[0].value.value, gast.Name):
                return None
            t = at[0].value.value.id
            if t in holders:
                return t
        return None

    out = {}
    for w in eff.writes:
        if (w.container or by_index) and w.target not in holders - set(binds):
            h = root(w.target)
            if h is not None:
                out[id(w.stmt)] = (w.target, h)
    return out


def first_part(fn: gast.FunctionDef, name: str, holder: str) -> gast.expr | None:
    """The read of a part directly out of ``holder`` on the way to ``name``, when ``name``
    is two or more levels inside it (``t1 = model.layers; layer = t1[0]``: ``model.layers``
    for ``layer``); None when ``name`` is read out of ``holder`` itself, or the way is not
    one binding a name."""
    binds = _bindings(fn)
    seen: set[str] = set()
    t = name
    while t not in seen:
        seen.add(t)
        at = binds.get(t, [])
        if len(at) != 1 or not isinstance(at[0], gast.Assign) or \
                not isinstance(at[0].value, (gast.Attribute, gast.Subscript)) or \
                not isinstance(at[0].value.value, gast.Name):
            return None
        up = at[0].value.value.id
        if up == holder:
            return None if t == name else at[0].value
        t = up
    return None


def unfollowed(fn: gast.FunctionDef, eff: Effects, params: set[str]
               ) -> dict[int, tuple[str, str]]:
    """Writes (by statement id) through a name read out of a parameter or a container the
    function builds, directly or through other parts (``self.layers[0].acts.append(h)``),
    that :func:`parameter_parts` / :func:`local_parts` do not follow: statement ->
    (written name, holder)."""
    followed = set(parameter_parts(fn, eff, params)) | set(local_parts(fn, eff, params))
    found = _rooted(fn, eff, params) | _rooted(fn, eff, _local_holders(fn, eff, params))
    # the items of a for loop's sequence (for m in models: m.w = ...) are followed by the
    # loop's own lowering, which refuses the sequence read again after such a write
    sequences = {st.targets[0].id for st in walk(fn)
                 if isinstance(st, gast.Assign) and len(st.targets) == 1 and
                 isinstance(st.targets[0], gast.Name) and isinstance(st.value, gast.Call) and
                 isinstance(st.value.func, gast.Name) and st.value.func.id == "loop_sequence"}
    return {k: v for k, v in found.items() if v[0] not in followed and v[1] not in sequences}


def unfollowed_varied(fn: gast.FunctionDef, eff: Effects, params: set[str],
                      varied: set[str]) -> tuple[gast.stmt, str, str] | None:
    """The first write :func:`unfollowed` finds that puts a value with a derivative (a name
    of ``varied`` other than the one written) into a part of a parameter: (statement, written
    name, the parameter); None where there is none. (A container the function builds is
    followed by forward mode, which reverse mode refuses: ``hist["h"].append(v)`` with
    ``other = hist`` read after.)
    Forward mode refuses it as reverse mode does (reverse_stores.refuse_unfollowed_part):
    ``self.hist.append(np.sin(self.w * x))`` reads self.hist before self.w, and its jvp
    code kept no tangent for the append (a silently wrong jvp, or an IndexError)."""
    found = unfollowed(fn, eff, params)
    if not found:
        return None
    for st in walk(fn):
        hit = found.get(id(st))
        if hit is not None and hit[1] in params and any(
                isinstance(n, gast.Name) and n.id != hit[0] and n.id in varied
                for n in walk(st)):
            return st, hit[0], hit[1]
    return None
