"""Which parameters of a function a call inside it may change, where the function itself
writes nothing of them.

Input: a function's tree in SSA form and its parameters. Output: the parameters a call may
change — a parameter as the object of a method found when the call runs (``self.setup(v)``
in a method, setting ``self.w``; ``o.reset(x)`` in ``def helper(x, o)``), and an argument of a
user function called by name that changes what it is given, or holding a list, dict or
object handed to one (``push(self.cache, h)``: :func:`held_changed_by_calls`). Reverse mode
makes them outputs (pipeline) and hands them to the call's pullback (reverse_pullback);
forward mode's summary of a callee (argument_writes) reads the same two facts about a method
call.

Kept apart from argument_writes, which forward mode needs: every reverse compilation asks
this, and a first gradient should not import forward mode's modules (issue 15's cold start).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import gast
import numpy as np
from adgen.transforms.analyses.reports import reports
from adgen.transforms.front import resolve
from adgen.transforms.node_index import nodes_of

from adgen.rules import registry

# Methods of ndarrays, lists and dicts that change their receiver (or, for a list or dict,
# what it holds); the others only read it.
CHANGING_METHODS = frozenset({
    "fill", "sort", "partition", "put", "resize", "itemset", "setfield", "setflags",
    "byteswap", "append", "extend", "insert", "pop", "remove", "clear", "reverse", "update",
    "setdefault", "popitem",
})

# values whose methods change no object of the user's (an array's, a list's writes are
# lower_mutation's): a method of one of these names on a parameter is not taken for one
VALUE_TYPES = (list, dict, set, tuple, str, bytes, int, float, complex, np.ndarray, np.generic)


def parameters_changed_by_calls(parsed: Any, tree: gast.FunctionDef, params: set[str],
                                changes: Callable[[Any], bool]) -> set[str]:
    """The parameters of ``tree`` (``parsed``'s function in SSA form) that a call may change
    where the function itself writes nothing of them: a parameter as the object of a method
    found when the call runs (``self.setup(v)`` in a method, setting ``self.w``; ``o.reset(x)``
    in ``def helper(x, o)``, where only the first parameter counted: a silent zero), or holding
    that object (``for layer in self.layers: x = layer.forward(x)`` setting ``layer.z``, read
    back through ``self.layers``: a silent zero until session 19), and
    an argument of a user function called by name that changes the objects, lists or dicts
    it is given (``changes``: its compiled code's ``mutates_containers``; ``outer(o, x)``,
    whose helper sets ``o.w``). A caller reads them after the call: reverse mode makes them
    outputs (they were not, and ``reset``'s pullback, ``def reset(self, v): self.setup(v)``,
    gave nothing: a silently zero gradient)."""
    out: set[str] = set()
    bound: dict[str, list[gast.expr]] | None = None
    for call in nodes_of(tree, gast.Call):
        f = call.func
        obj = resolve(parsed, f)
        if obj is None:
            if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and \
                    f.value.id in params and object_method_on_parameter(f, tree) and \
                    not reading_method(f):
                out.add(f.value.id)
                # and the lists, dicts and objects it is given, where the method is known
                # by the object's class and changes what it is given (self.reset(lst) in
                # __init__, reset appending to lst: __init__'s pullback started lst's
                # adjoint from none, and its caller's, at the list's final length, met the
                # shorter one reset's pullback gave: refused as "a list read by a position
                # counted from its end")
                method = _method_of_parameter(parsed, tree, f)
                if method is not None and changes(method):
                    out |= {a.id for a in [*call.args, *(k.value for k in call.keywords)]
                            if isinstance(a, gast.Name) and a.id in params}
            elif (isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and
                  f.value.id not in params and not reading_method(f) and
                  not any(hasattr(t, f.attr) for t in VALUE_TYPES)) or \
                    (isinstance(f, gast.Name) and f.id not in params):
                # l.forward(x) or layer(x) on an object read out of a parameter (for l in
                # self.layers, t = self.inner): the call may change that object, a part of
                # the parameter (l.z = ..., read back through self.layers after the call)
                if bound is None:
                    bound = _single_bindings(tree)
                holder = _holding_parameter(f.value.id if isinstance(f, gast.Attribute)
                                            else f.id, bound, params)
                if holder is not None:
                    out.add(holder)
        else:
            given = {a.id for a in [*call.args, *(k.value for k in call.keywords)]
                     if isinstance(a, gast.Name) and a.id in params} - out
            if given and _compiled_callee(obj) and changes(obj):
                # (not adgen's own rule helpers, which change no object of the user's: the
                # vjp of np.linalg.norm handing g to expand_reduced was refused under hessian)
                out |= given
    return out | held_changed_by_calls(parsed, tree, params, changes)


def held_changed_by_calls(parsed: Any, tree: gast.FunctionDef, holders: set[str],
                          changes: Callable[[Any], bool]) -> set[str]:
    """The names of ``holders`` holding a list, dict or object that ``tree`` hands to a user
    function called by name that changes what it is given: ``push(self.cache, h)``, SSA's
    ``t = self.cache; push(t, h)`` with ``def push(lst, v): lst.append(v)``. The holder is
    changed: its adjoint was not taken over, and what the caller read back through
    ``self.cache`` lost its gradient (silently, until session 29)."""
    out: set[str] = set()
    bound: dict[str, list[gast.expr]] | None = None
    for call in nodes_of(tree, gast.Call):
        names = {a.id for a in [*call.args, *(k.value for k in call.keywords)]
                 if isinstance(a, gast.Name) and a.id not in holders}
        if not names:
            continue
        if bound is None:
            bound = _single_bindings(tree)
        held = {h for n in names if (h := _holding_parameter(n, bound, holders)) is not None}
        if held - out:
            obj = resolve(parsed, call.func)
            if obj is not None and _compiled_callee(obj) and changes(obj):
                out |= held
    return out


def _method_of_parameter(parsed: Any, tree: gast.FunctionDef,
                         f: gast.Attribute) -> types.FunctionType | None:
    """The function ``p.m`` runs (``p`` a parameter of ``tree``) where the class of ``p`` is
    known: the class a copy of the function is compiled for (object_classes.param_classes),
    or, for the first parameter of a method, the class that defines it; else None (and None
    for a static or class method, or an attribute that is not a function)."""
    import inspect

    from adgen.transforms.object_classes import param_classes

    fn = parsed.fn
    names = [a.id for a in tree.args.args]
    k = names.index(f.value.id)
    cls = param_classes(fn).get(k)
    if cls is None and k == 0 and "<locals>" not in getattr(fn, "__qualname__", "<locals>"):
        owner: Any = inspect.getmodule(fn)
        for part in fn.__qualname__.split(".")[:-1]:
            owner = getattr(owner, part, None)
        cls = owner if isinstance(owner, type) else None
    if cls is None:
        return None
    method = inspect.getattr_static(cls, f.attr, None)
    return method if isinstance(method, types.FunctionType) and \
        _compiled_callee(method) else None


def _single_bindings(tree: gast.FunctionDef) -> dict[str, list[gast.expr]]:
    """name -> the values of the plain assignments that bind it."""
    out: dict[str, list[gast.expr]] = {}
    for st in nodes_of(tree, gast.Assign):
        if len(st.targets) == 1 and isinstance(st.targets[0], gast.Name):
            out.setdefault(st.targets[0].id, []).append(st.value)
    return out


def _holding_parameter(n: str, bound: dict[str, list[gast.expr]],
                       params: set[str]) -> str | None:
    """The parameter ``n`` was read out of, through names bound once by an item, an
    attribute or a loop's sequence (``l = seq1[i1]``, ``seq1 = loop_sequence(t1)``,
    ``t1 = self.layers``), or None."""
    for _ in range(16):
        values = bound.get(n, [])
        if len(values) != 1:
            return None
        v = values[0]
        if isinstance(v, (gast.Subscript, gast.Attribute)) and isinstance(v.value, gast.Name):
            n = v.value.id
        elif isinstance(v, gast.Call) and isinstance(v.func, gast.Name) and \
                v.func.id == "loop_sequence" and v.args and isinstance(v.args[0], gast.Name):
            n = v.args[0].id
        else:
            return None
        if n in params:
            return n
    return None


def object_method_on_parameter(f: gast.Attribute, tree: gast.FunctionDef) -> bool:
    """Whether ``f`` (``p.m`` of a call ``p.m(...)``, ``p`` a name) is a method found when the
    call runs on a parameter that may be an object of the user's: the first parameter
    (``self``) whatever the method, another one where no array, container, string or number
    has a method of that name (``o.reset(x)`` in ``def helper(x, o)``; not ``g.reshape(...)`` in a
    rule's vjp, whose writes, ``x.sort()``, lower_mutation sees)."""
    params = [a.id for a in tree.args.args]
    if not params or f.value.id not in params:
        return False
    return f.value.id == params[0] or \
        not any(hasattr(t, f.attr) for t in VALUE_TYPES)


def reading_method(f: gast.expr) -> bool:
    """Whether ``f``, the callee of a call whose object is not known before it runs, is a
    method that only reads its receiver: ``x.sum()``, ``x.reshape(...)``, ``d.get(k)``, a
    method arrays, lists or dicts have (a user object's method of such a name is read the
    same way by activity's flows); not ``fill``, ``append`` nor a dunder (``a.__setitem__(i,
    v)``, ``a.__iadd__(b)`` write)."""
    return isinstance(f, gast.Attribute) and f.attr not in CHANGING_METHODS and \
        not f.attr.startswith("__") and \
        any(hasattr(t, f.attr) for t in (np.ndarray, list, dict, tuple, str))


def _compiled_callee(obj: Any) -> bool:
    """A plain Python function of the user's, compiled where it is called (not NumPy's, not
    adgen's own rule helpers, not one with a rule, not logging's)."""
    return isinstance(obj, types.FunctionType) and not reports(obj) and \
        registry.lookup(obj) is None and \
        not str(getattr(obj, "__module__", "") or "").startswith(("numpy", "adgen."))
