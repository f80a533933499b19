"""The attributes of an object that a class's ``__init__`` fills with global or closure memory,
and whether a function's in-place writes through an object it builds miss all of them.

``s = Holder(); s.x[:] = v`` with ``Holder.__init__`` storing ``self.x = X0`` writes the
global ``X0``, which the rest of the function reads as a constant: ``free_writes
.refuse_kept_results`` refuses it at the call. The effects analysis gives the whole object the
global's memory, so writes into its other arrays (``self.h = np.zeros(n)``) were refused too.
:func:`writes_miss_global_slots` tells those apart: every in-place write the function makes
through the object goes to an attribute ``__init__`` fills with memory of its own (an array a
NumPy function makes, a copy), the function hands the object to no call (a method may store a
global's array into another slot) and stores into it only what it read from the same slot
(``s.y += v`` as lowered: ``t = s.y; t += v; s.y = t``). Anything unknown (a base class's
``__init__``, ``setattr``, a helper's result, a local of ``__init__``) counts as global memory.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
from typing import Any

import gast
import numpy as np
from adgen.transforms.node_index import nodes_of

__all__ = ["writes_miss_global_slots"]


def writes_miss_global_slots(tree: gast.FunctionDef, cls: type, call: gast.Call,
                             written: list[gast.stmt]) -> bool:
    """Whether every statement of ``written`` (the function's in-place writes of what may be
    global memory) writes an array of the object ``call`` builds (``s = cls(...)``) that
    ``cls.__init__`` does not fill from global or closure memory (see the module)."""
    owner = _bound_to(tree, call)
    held = _global_slots(cls)
    if owner is None or held is None or not written:
        return False
    for c in nodes_of(tree, gast.Call):
        if c is call:
            continue
        f = c.func
        if (isinstance(f, gast.Attribute) and _is(f.value, owner)) or any(
                _is(a, owner) for a in [*c.args, *(k.value for k in c.keywords)]):
            return False  # a method or a helper may give a slot a global's array
    bindings: dict[str, list[gast.expr]] = {}
    for st in nodes_of(tree, gast.Assign):
        for t in st.targets:
            if isinstance(t, gast.Name):
                bindings.setdefault(t.id, []).append(st.value)
            elif isinstance(t, gast.Attribute) and _is(t.value, owner) and \
                    _slot_of(st.value, owner, bindings) != t.attr:
                return False  # s.y = s.x (or anything but its own slot's array back)
            elif not isinstance(t, (gast.Attribute, gast.Subscript)):
                return False
    for st in written:
        target = st.targets[0] if isinstance(st, gast.Assign) and len(st.targets) == 1 else \
            st.target if isinstance(st, gast.AugAssign) else None
        if isinstance(target, gast.Subscript):
            target = target.value
        slot = _slot_of(target, owner, bindings) if target is not None else None
        if slot is None or slot in held:
            return False
    return True


def _is(e: Any, n: str) -> bool:
    return isinstance(e, gast.Name) and e.id == n


def _bound_to(tree: gast.FunctionDef, call: gast.Call) -> str | None:
    """The name bound once to ``call``'s result."""
    found = [st.targets[0].id for st in nodes_of(tree, gast.Assign)
             if st.value is call and len(st.targets) == 1 and isinstance(st.targets[0], gast.Name)]
    if len(found) != 1:
        return None
    n = found[0]
    stores = [x for x in nodes_of(tree, gast.Name) if x.id == n and isinstance(x.ctx, gast.Store)]
    return n if len(stores) == 1 else None


def _slot_of(e: Any, owner: str, bindings: dict[str, list[gast.expr]]) -> str | None:
    """The attribute of ``owner`` whose array ``e`` is (or views), through names bound once."""
    seen: set[str] = set()
    while True:
        while isinstance(e, gast.Subscript):
            e = e.value
        if isinstance(e, gast.Attribute) and _is(e.value, owner):
            return e.attr
        if not isinstance(e, gast.Name) or e.id in seen or len(bindings.get(e.id, ())) != 1:
            return None
        seen.add(e.id)
        e = bindings[e.id][0]


def _global_slots(cls: type) -> set[str] | None:
    """The attributes ``cls.__init__`` may fill with global or closure memory (None: unknown)."""
    init = cls.__dict__.get("__init__")
    if not isinstance(init, types.FunctionType):
        return None
    try:
        fn = ast.parse(textwrap.dedent(inspect.getsource(init))).body[0]
    except (OSError, TypeError, SyntaxError, IndentationError, IndexError):
        return None
    if not isinstance(fn, ast.FunctionDef) or not fn.args.args:
        return None
    me = fn.args.args[0].arg
    params = {a.arg for a in [*fn.args.args, *fn.args.kwonlyargs, *fn.args.posonlyargs]}
    local = {x.id for x in ast.walk(fn) if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store)}
    stores: list[tuple[list[str], ast.expr]] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "setattr":
            return None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "__init__":
            return None  # super().__init__(...), Base.__init__(self, ...)
        if isinstance(node, ast.Assign):
            attrs = [t.attr for target in node.targets for t in ast.walk(target)
                     if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and
                     t.value.id == me]
            if attrs:
                stores.append((attrs, node.value))
    names = {**init.__globals__, **_cells(init)}
    held: set[str] = set()
    changed = True
    while changed:
        changed = False
        for attrs, value in stores:
            if not set(attrs) <= held and _may_hold_free(value, me, params, local, names, held):
                held |= set(attrs)
                changed = True
    return held


def _cells(fn: types.FunctionType) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for n, c in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            out[n] = c.cell_contents
        except ValueError:
            pass
    return out


def _may_hold_free(e: ast.expr, me: str, params: set[str], local: set[str],
                   names: dict[str, Any], held: set[str]) -> bool:
    """Whether the value of ``e`` (in ``__init__``) may be or hold global or closure memory."""
    if isinstance(e, ast.Constant):
        return False
    if isinstance(e, ast.Call):
        f = e.func
        if isinstance(f, ast.Attribute) and f.attr == "copy" and not e.args:
            return False  # X0.copy(): memory of its own
        root = f
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and names.get(root.id) is np and \
                not isinstance(f, ast.Name):
            return _numpy_may_view(f, e, me, params, local, names, held)
        return True  # a helper's result, a method's
    for x in ast.walk(e):
        if isinstance(x, ast.Attribute) and isinstance(x.value, ast.Name) and \
                x.value.id == me and x.attr in held:
            return True
        if isinstance(x, ast.Name) and x.id != me and x.id not in params:
            if x.id in local:
                return True  # a local of __init__: whatever it holds
            value = names.get(x.id)
            if isinstance(value, (np.ndarray, list, tuple, dict)) or (
                    hasattr(value, "__dict__") and not isinstance(
                        value, (type, types.ModuleType, types.FunctionType))):
                return True
        if isinstance(x, ast.Call) and x is not e:
            return True
    return False


def _numpy_may_view(f: ast.expr, e: ast.Call, me: str, params: set[str], local: set[str],
                    names: dict[str, Any], held: set[str]) -> bool:
    """np.zeros(n), np.ones_like(a), np.array(X0) make memory of their own; other NumPy calls
    (np.asarray(X0), a reshape) may return a view of an argument."""
    if isinstance(f, ast.Attribute) and f.attr in _FRESH:
        return False
    return any(_may_hold_free(a, me, params, local, names, held)
               for a in [*e.args, *(k.value for k in e.keywords)])


_FRESH = frozenset({"zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
                    "full_like", "eye", "identity", "arange", "linspace", "array", "copy"})
