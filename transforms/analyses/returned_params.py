"""Which parameters' memory the values a function returns may share: its callers' view of a
call's result (``Compiled.returns_params``, read by ``callee_facts.viewed_arguments`` for
``analyses.effects``).

``def laplace(u, out): out[1:-1] = ...; return out`` returns its ``out``, never ``u``: a
caller's ``lap = laplace(u, np.empty_like(u))`` holds the new array, and a later ``u += ...``
overwrites nothing ``lap``'s readers need (it took every argument's memory for the
result's: ``mutation="strict"`` refused the caller of such a step, whose gradient reads
``lap``, as writing it, and ``save`` copied ``u`` at each call).

Input: a function in SSA form and its effects (read only). The answer follows each returned
name back through the bindings that keep memory (a name, an item or attribute of a name, a
view method, ``out=``) to parameters; a binding of any other kind to a name that may hold a
parameter's memory, a free name's memory, or a name the effects do not know make it None
(any argument).
"""

from __future__ import annotations

from typing import Any

import gast
from adgen.transforms.analyses.effects import FREE, Effects
from adgen.transforms.analyses.kinds import NUMBER
from adgen.transforms.node_index import nodes_of

__all__ = ["returned_free", "returned_params"]

_VIEW_METHODS = frozenset({"reshape", "ravel", "transpose", "squeeze", "view", "swapaxes"})


def returned_params(fn: gast.FunctionDef, eff: Effects,
                    kinds: dict[str, Any]) -> frozenset[int] | None:
    """The positions of the parameters whose memory a value ``fn`` returns may share (empty:
    it returns only values it made, numbers or nothing), or None when it cannot tell (any
    argument). A name whose buffers hold no parameter's adds none where it holds an ndarray
    or a number (``kinds``, analyses.kinds), or where no name sharing its memory is handed
    to a call other than NumPy's: an object or a list the function made may be given a
    parameter's arrays by a call (``helper(q, p)`` setting ``q.x = p``), which the buffers
    do not follow."""
    params = {a.id: k for k, a in enumerate(fn.args.args)}
    if fn.args.vararg is not None or fn.args.kwarg is not None or fn.args.kwonlyargs:
        return None
    defs: dict[str, list[gast.expr | None]] = {}
    plain: set[int] = set()
    for st in nodes_of(fn, gast.Assign, gast.AugAssign):
        if isinstance(st, gast.Assign) and len(st.targets) == 1 and \
                isinstance(st.targets[0], gast.Name):
            defs.setdefault(st.targets[0].id, []).append(st.value)
            plain.add(id(st.targets[0]))
        elif isinstance(st, gast.AugAssign):
            plain.add(id(st.target))  # in place: the name keeps its memory
    for x in nodes_of(fn, gast.Name):
        if isinstance(x, gast.Name) and isinstance(x.ctx, gast.Store) and id(x) not in plain:
            defs.setdefault(x.id, []).append(None)  # a for target, unpacking: unknown
    handed_memory: set[str] = set()  # the memory of the names handed to a call
    for call in nodes_of(fn, gast.Call):
        f = call.func if isinstance(call, gast.Call) else None
        if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and \
                f.value.id in ("np", "numpy"):
            continue  # NumPy's functions keep no reference to their arguments
        handed = list(call.args) + [k.value for k in call.keywords]
        if isinstance(f, gast.Attribute):
            handed.append(f.value)  # q.put(p): the receiver too
        for a in handed:
            for n in nodes_of(a, gast.Name):
                handed_memory |= eff.buffers.get(n.id, set())
    found: set[int] = set()
    seen: set[str] = set()
    todo: list[str] = []
    for r in nodes_of(fn, gast.Return):
        if not isinstance(r, gast.Return) or r.value is None or \
                isinstance(r.value, gast.Constant):
            continue
        kept = _kept_from(r.value, eff)
        if kept is None:
            return None
        todo += kept
    while todo:
        m = todo.pop()
        if m in seen:
            continue  # a loop's carried name comes back to itself
        seen.add(m)
        bufs = eff.buffers.get(m)
        if bufs is None or FREE in bufs or any(b.startswith("shadows:") for b in bufs):
            return None
        if m in params:
            if "param" in bufs:
                found.add(params[m])
            continue
        if "param" not in bufs and (type(kinds.get(m)) is int or kinds.get(m) == NUMBER or
                                    not bufs & handed_memory):
            continue  # made here only, and filled by no call: no argument's memory
        for v in defs.get(m) or [None]:
            kept = _kept_from(v, eff)
            if kept is None:
                return None
            todo += kept
    return frozenset(found)


def returned_free(fn: gast.FunctionDef, eff: Effects) -> bool:
    """Whether a value ``fn`` returns may be the memory of a global or closure array,
    container or object (the effects' buffer FREE: ``return ONES``, ``return CACHE[n]``,
    ``return cfg.buf[1:]``), which is still there after the call: a caller's in-place write
    into the result writes that (``B = basis(); B *= x``), and a later read of it sees the
    write. The names are followed as :func:`returned_params` follows them; a value made by
    an operator or a call is new (a call's result holds FREE itself when its callee's does,
    in ``eff``)."""
    for r in nodes_of(fn, gast.Return):
        if not isinstance(r, gast.Return) or r.value is None:
            continue
        for n in _kept_from(r.value, eff) or []:
            if FREE in eff.buffers.get(n, set()):
                return True
    if fn.name == "__init__" and fn.args.args:
        # self.x = X0 in a constructor: the object it builds holds the global's memory (s =
        # W(); s.x[:] = v writes X0); what it stores is followed as a returned value is
        me = fn.args.args[0].id
        for a in nodes_of(fn, gast.Assign):
            if isinstance(a, gast.Assign) and any(
                    isinstance(t, gast.Attribute) and isinstance(t.value, gast.Name) and
                    t.value.id == me for t in a.targets) and any(
                    FREE in eff.buffers.get(n, set()) for n in _kept_from(a.value, eff) or []):
                return True
    return False


def _kept_from(v: gast.expr | None, eff: Effects) -> list[str] | None:
    """The names whose memory the value ``v`` bound to a name (or returned) keeps, or None
    (unknown)."""
    if isinstance(v, gast.Name):
        return [v.id]
    if isinstance(v, (gast.Subscript, gast.Attribute)) and isinstance(v.value, gast.Name):
        return [v.value.id]  # an item, a slice, an attribute: of that name's memory
    if isinstance(v, (gast.Tuple, gast.List)):
        # (out, out_dot) (a jvp's pair): a new tuple holding what its items hold
        if not all(isinstance(e, (gast.Name, gast.Constant)) for e in v.elts):
            return None
        return [e.id for e in v.elts if isinstance(e, gast.Name)]
    if not isinstance(v, gast.Call):
        return None
    f = v.func
    outs = [k.value for k in v.keywords if k.arg == "out"]
    if outs:
        if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and \
                f.value.id in ("np", "numpy") and isinstance(outs[0], gast.Name):
            return [outs[0].id]  # np.add(a, b, out=t) is t
        return None
    if not (isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and
            f.attr in _VIEW_METHODS):
        return None
    if any("param" in eff.buffers.get(n.id, {"param"}) for a in v.args + v.keywords
           for n in nodes_of(a, gast.Name)):
        return None  # x.reshape(w) handed another parameter's memory: not a view method
    return [f.value.id]  # x.reshape(n, 2)
