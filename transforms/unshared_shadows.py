"""Shadows no other lookup reaches: a plain zero adjoint, so the array is kept for its shape.

The pullback takes the adjoint of an array written in place from shadow memory
(``q_bar = sh.of(q)``), which finds the same adjoint for every view of the buffer. When that
lookup is the pullback's only read of ``q``, and nothing else can look up ``q``'s buffer (no
other shadow lookup of a name that may share it, no callee's pullback that gets the map, no
caller that may hold it, no nested function or lambda), the shadow is a zero array of
``q``'s shape: ``zeros_like(q)``, which ``Pullback.shapes_not_arrays`` then turns into a zero
of the saved shape, and the forward no longer keeps ``q`` alive for the backward pass (ADI's
``q`` and ``v``: 3.2 kB each).

Input: the emitted pullback body (before its saved values are listed) and the plan. Output:
the body with such ``x_bar = sh.of(x)`` statements rewritten in place.

``x`` qualifies when it is not a parameter, is bound once at the function's top level to a
new float64 array (``np.zeros``/``empty``/``ones``/``full`` or their ``_like`` forms, or
``.copy()``), and every name that may share its buffers (analyses.effects) is only indexed,
sliced, an operand of arithmetic or a comparison, an argument of a NumPy function, read for
``.shape``/``.T``/``.copy()``, stored into an array (a copy of its values), or bound to
another such name: never returned, put into a
container, stored as an attribute, or handed to another function (whose pullback, or the
caller's, could look it up). The pullback must not hand the map on (``sh`` read other than
as ``sh.of(...)`` and the lines that make it).
"""

from __future__ import annotations

import gast
from adgen.transforms.node_index import nodes_of
from adgen.transforms.reverse_plan import Plan
from adgen.transforms.walk import children, walk

__all__ = ["unshared_shadows"]

_NEW = {"zeros", "empty", "ones", "full", "zeros_like", "empty_like", "ones_like", "full_like"}
_ATTRS = {"shape", "T", "copy", "ndim", "size", "dtype"}


def unshared_shadows(body: list[gast.stmt], plan: Plan) -> list[str]:
    """Rewrites ``x_bar = sh.of(x)`` into ``x_bar = zeros_like(x)`` at the top level of the
    pullback ``body`` where no other lookup can reach ``x``'s shadow (see the module's
    docstring).

    Args:
        body: the pullback's statements after the lines that make the map.
        plan: the function's plan (kinds, float64 arrays, effects).

    Returns:
        The names whose shadow became a plain zero.
    """
    if not plan.kinds or plan.parsed.nested_defs or nodes_of(plan.fn, gast.Lambda):
        return []  # (a closure reads names the walks below do not see)
    singles: dict[str, gast.Assign] = {}
    for st in body:
        if isinstance(st, gast.Assign) and len(st.targets) == 1 and \
                isinstance(st.targets[0], gast.Name) and _lookup_of(st.value) is not None:
            singles[_lookup_of(st.value)] = st
    if not singles:
        return []
    # one walk of the body: how often each name is read, and the calls that read the map
    loads: dict[str, int] = {}
    lookups: list[gast.Call] = []
    calls: dict[int, gast.Call] = {}  # id(call.func) -> call
    for st in body:
        for node in walk(st):
            if isinstance(node, gast.Call):
                calls[id(node.func)] = node
            for child in children(node):
                if isinstance(child, gast.Name) and isinstance(child.ctx, gast.Load):
                    loads[child.id] = loads.get(child.id, 0) + 1
                    if child.id == "sh":
                        if not (isinstance(node, gast.Attribute) and node.value is child):
                            return []  # the map is handed on (a callee's pullback)
                        lookups.append(node)
    for i, attr in enumerate(lookups):
        if id(attr) not in calls:
            return []  # sh.method read but not called where it is read: handed on
        lookups[i] = calls[id(attr)]
    parents: dict[int, gast.AST] | None = None
    done = []
    for x, st in sorted(singles.items()):
        if loads.get(x, 0) != 1 or not _fresh_float64(plan, x):
            continue
        bufs = plan.eff.buffers.get(x, set())
        if not bufs or any(c is not st.value and _shares(plan, c, bufs) for c in lookups):
            continue
        if parents is None:
            parents = _parents(plan.fn)
        if not _stays_inside(plan, bufs, parents):
            continue
        st.value = gast.Call(func=gast.Name("zeros_like", gast.Load(), None, None),
                             args=[gast.Name(x, gast.Load(), None, None)], keywords=[])
        done.append(x)
    return done


def _parents(fn: gast.FunctionDef) -> dict[int, gast.AST]:
    """Each node's parent in ``fn``, by the child's id."""
    parents: dict[int, gast.AST] = {}
    for node in nodes_of(fn):
        for child in children(node):
            parents[id(child)] = node
    return parents


def _lookup_of(e: gast.expr) -> str | None:
    """``x`` of ``sh.of(x)``."""
    if isinstance(e, gast.Call) and isinstance(e.func, gast.Attribute) and \
            e.func.attr == "of" and isinstance(e.func.value, gast.Name) and \
            e.func.value.id == "sh" and len(e.args) == 1 and not e.keywords and \
            isinstance(e.args[0], gast.Name):
        return e.args[0].id
    return None


def _shares(plan: Plan, call: gast.Call, bufs: set) -> bool:
    """Whether a use of the map may reach one of ``bufs`` (a lookup of a name that may share
    them, or any other use of the map, whose arguments are not followed)."""
    x = _lookup_of(call)
    if x is None:
        return True
    return bool(plan.eff.buffers.get(x, set()) & bufs) or x not in plan.eff.buffers


def _fresh_float64(plan: Plan, x: str) -> bool:
    """``x``: bound once at the function's top level to a new float64 array."""
    if x in {a.id for a in plan.fn.args.args} or plan.def_count.get(x) != 1 or \
            x not in plan.f64_arrays:
        return False
    at = plan.def_stmt.get(x)
    if not (isinstance(at, gast.Assign) and plan.loops_of.get(id(at)) == () and
            plan.block_of.get(id(at)) == id(plan.fn.body) and isinstance(at.value, gast.Call)):
        return False
    f = at.value.func
    if isinstance(f, gast.Attribute) and f.attr == "copy" and not at.value.args:
        return True
    return isinstance(f, gast.Attribute) and f.attr in _NEW and \
        isinstance(f.value, gast.Name) and f.value.id == "np"


def _stays_inside(plan: Plan, bufs: set, parents: dict[int, gast.AST]) -> bool:
    """Every load of a name that may share ``bufs`` is one the module's docstring allows."""
    sharing = {n for n, b in plan.eff.buffers.items() if b & bufs}
    for n in nodes_of(plan.fn, gast.Name):
        if n.id not in sharing or not isinstance(n.ctx, gast.Load):
            continue
        p = parents.get(id(n))
        if isinstance(p, gast.Subscript) and p.value is n or \
                isinstance(p, (gast.BinOp, gast.UnaryOp, gast.Compare)) or \
                isinstance(p, gast.Attribute) and p.attr in _ATTRS or \
                isinstance(p, gast.Assign) and p.value is n and \
                all(isinstance(t, (gast.Name, gast.Subscript)) for t in p.targets) or \
                isinstance(p, gast.AugAssign) and p.value is n:
            continue
        if isinstance(p, gast.Call) and n in p.args and _numpy_function(plan, p.func):
            continue
        return False
    return True


def _numpy_function(plan: Plan, f: gast.expr) -> bool:
    """``f`` resolves to a function of the numpy package (never a user function)."""
    obj = plan.resolve_or_none(f)
    module = getattr(obj, "__module__", None) or ""
    return module == "numpy" or module.startswith("numpy.") or \
        type(obj).__name__ == "ufunc"
