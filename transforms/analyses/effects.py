"""Effects: which buffers each name may view, and which statements write them in place.

Input: a function in SSA form after lower_mutation (read only), and, when it is compiled for
an argument signature, which parameters it binds to lists or dicts. Output: :class:`Effects`.

Abstract buffers are allocation sites (``new:<n>``, one per statement that makes a fresh
value) and ``param`` (every parameter: arguments may alias each other). A name may view the
buffers of whatever it was copied, sliced, transposed, reshaped or read from. Writes are
``x[i] = v`` stores and ``x op= v`` on names (in place for an ndarray). Flow-insensitive:
the sets only grow, over all statements, until nothing changes.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import gast
import numpy as np
from adgen.transforms.analyses.activity import NONDIFF_ATTRS, nondiff_call
from adgen.transforms.node_index import nodes_of

# Calls whose result may view their first argument's memory.
VIEW_CALLS = frozenset({"reshape", "ravel", "transpose", "swapaxes", "moveaxis", "squeeze",
                        "expand_dims", "broadcast_to", "view", "diagonal", "flip", "fliplr",
                        "flipud", "atleast_1d", "atleast_2d", "atleast_3d", "asarray",
                        "real", "loop_sequence", "T", "flat_view",
                        # references (rules/composites.py) that return views, as numpy does
                        "rot90", "split", "array_split", "hsplit", "vsplit", "dsplit",
                        "unstack", "trim_zeros", "matrix_transpose", "rollaxis"})
# Calls without a derivative whose result holds no array.
_NUMBER_CALLS = frozenset({"len", "range", "int", "bool", "str", "isinstance", "type", "print",
                           "repr", "id", "shape", "ndim", "size", "count_nonzero",
                           "array_equal", "allclose", "perf_counter", "time",
                           "loop_sequence_len", "unpacked_len", "dataclass_replacer"})
# ndarray methods whose result is a new array or a number, never a view of the receiver
_NEW_FROM_METHODS = frozenset({"sum", "mean", "max", "min", "prod", "std", "var", "cumsum",
                               "cumprod", "argmax", "argmin", "all", "any", "dot", "trace"})
# Calls whose result may be any of their arguments (containers and user functions).
PASS_CALLS = frozenset({"list", "tuple", "dict", "loop_sequence"})
# The buffer of the free names bound to arrays, containers or objects (globals, closure
# cells): not an identifier, so no name's buffers can be taken for it.
FREE = "global"


def _runtime_result(obj: Any) -> str | None:
    """What a runtime helper that generated code calls returns, for the code that adgen
    differentiates again (pullbacks in adgen.second_order, jvps in hessian): "shadow" for
    ``shadow_of(sh, x)`` (the shadow of x in map sh), "fresh" for ``zeros_like(x)`` and
    ``zeros_for(shape, g)`` (a new zero adjoint), ``kept_copy(x)`` (a copy) and
    ``zero_tangent(x)`` (the jvp code's zero tangent of an argument), "first" for
    ``float_part(d, kind)`` (d itself or a new array), "none" for ``dtype_kind(x)`` (a
    string); else None."""
    if not isinstance(obj, types.FunctionType) or obj.__name__ not in (
            "shadow_of", "zeros_like", "zeros_for", "kept_copy", "float_part", "dtype_kind",
            "zero_tangent", "new_object", "new_tangent_object"):
        return None
    from adgen import built_inside, runtime

    if obj is built_inside.new_object or obj is built_inside.new_tangent_object:
        return "fresh"  # (an object built inside, at second order: adgen.built_inside)

    if obj is runtime.shadow_of:
        return "shadow"
    if obj is runtime.float_part:
        return "first"
    if obj is runtime.dtype_kind:
        return "none"
    return "fresh" if any(obj is f for f in (runtime.zeros_like, runtime.zeros_for,
                                              runtime.kept_copy, runtime.zero_tangent)) \
        else None


class Write:
    """An in-place write: ``target[index] = value`` or ``target op= value``.

    A plain class (what ``@dataclass`` gave it, written out: a dataclass compiles its
    methods when ``import adgen`` defines it, issue 15's cold start).
    """

    stmt: gast.stmt
    target: str
    buffers: frozenset[str]
    # a store into a list/dict/object (append, d[k] = v, obj.a = v): it replaces element
    # references and never changes the values a pullback captured
    container: bool

    def __init__(self, stmt: gast.stmt, target: str, buffers: frozenset[str],
                 container: bool = False) -> None:
        self.stmt = stmt
        self.target = target
        self.buffers = buffers
        self.container = container

    def _values(self) -> tuple[Any, ...]:
        return (self.stmt, self.target, self.buffers, self.container)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()  # type: ignore[attr-defined]
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # as @dataclass's eq without frozen

    def __repr__(self) -> str:
        return (f"Write(stmt={self.stmt!r}, target={self.target!r}, "
                f"buffers={self.buffers!r}, container={self.container!r})")


class Effects:
    """Buffers per name, kinds of containers, and write sites.

    A plain class (what ``@dataclass`` gave it, written out, as ``Write``).
    """

    buffers: dict[str, set[str]]
    kinds: dict[str, str]  # "list" | "dict" | "object"
    writes: list[Write]
    written: set[str]  # buffers written anywhere
    containers_written: set[str]
    free: set[str]  # the free names given the buffer FREE
    # names that hold no array whatever buffer they view (_not_arrays): called (f(x)), with
    # an attribute arrays lack (self.state), and the containers those are read from
    not_arrays: set[str]

    def __init__(self, buffers: dict[str, set[str]] | None = None,
                 kinds: dict[str, str] | None = None, writes: list[Write] | None = None,
                 written: set[str] | None = None, containers_written: set[str] | None = None,
                 free: set[str] | None = None) -> None:
        self.buffers = {} if buffers is None else buffers
        self.kinds = {} if kinds is None else kinds
        self.writes = [] if writes is None else writes
        self.written = set() if written is None else written
        self.containers_written = set() if containers_written is None else containers_written
        self.free = set() if free is None else free
        self.not_arrays: set[str] = set()

    def _values(self) -> tuple[Any, ...]:
        return (self.buffers, self.kinds, self.writes, self.written, self.containers_written,
                self.free, self.not_arrays)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()  # type: ignore[attr-defined]
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # as @dataclass's eq without frozen

    def __repr__(self) -> str:
        return (f"Effects(buffers={self.buffers!r}, kinds={self.kinds!r}, "
                f"writes={self.writes!r}, written={self.written!r}, "
                f"containers_written={self.containers_written!r}, free={self.free!r})")

    def aliases(self) -> dict[str, set[str]]:
        """name -> the other names that may share a buffer with it."""
        by_buf: dict[str, set[str]] = {}
        for n, bufs in self.buffers.items():
            for b in bufs:
                by_buf.setdefault(b, set()).add(n)
        return {n: set().union(*(by_buf[b] for b in bufs)) - {n} if bufs else set()
                for n, bufs in self.buffers.items()}

    def tracked(self, name: str) -> bool:
        """True when ``name`` may view a buffer that some statement writes in place."""
        return bool(self.buffers.get(name, set()) & self.written) and \
            self.kinds.get(name) not in ("list", "dict", "object") and name not in self.not_arrays


def effects(fn: gast.FunctionDef,
            mutating_call: Callable[[gast.Call], list[gast.expr]] | None = None,
            scalars: set[str] | frozenset[str] = frozenset(),
            resolve: Callable[[gast.expr], Any] | None = None,
            containers: dict[str, str] | None = None,
            arrays: set[str] | frozenset[str] = frozenset(),
            fresh_call: Callable[[gast.Call], bool] | None = None,
            free: bool = False,
            call_views: Callable[[gast.Call], list[gast.expr] | None] | None = None,
            free_result: Callable[[gast.Call], bool] | None = None
            ) -> Effects:
    """Computes the effects of ``fn``.

    Args:
        fn: the function in SSA form.
        mutating_call: for a call of a user function, the arguments it writes in place (from
            the callee's own effects: an interprocedural summary).
        scalars: names known to hold immutable numbers (analyses.kinds): they hold no
            buffer, and ``x op= v`` on them rebinds.
        containers: parameters the argument signature binds to a list or a dict (name ->
            ``kinds.LIST`` / ``kinds.DICT``).
        resolve: a global name or attribute chain -> the object it is bound to (None: local
            or unknown): a call of a Python function is a user call whatever its name.
        arrays: names known to hold an ndarray at every call (analyses.kinds): a reduction
            method of one (``z.max(axis=1)``) returns a new array, never a view of ``z``.
        fresh_call: for a call of a user function, whether it returns only values it made
            (its summary, ``returns_fresh``): its result, when it is one of ``arrays``, views
            none of the arguments.
        free: give the free names bound to arrays, containers and objects (globals,
            closure cells; ``resolve`` tells them) the buffer :data:`FREE` (reverse mode).
        call_views: for a call of a user function, the arguments whose memory its result
            may share (its summary, ``returns_params``; None: any of them).
        free_result: for a call of a user function, whether its result may be memory that
            outlives the call (a global array it returns, a cached function's result, a
            default it returns): the result gets the buffer :data:`FREE` (with ``free``).
    """
    eff = Effects()
    stmts = list(nodes_of(fn, gast.stmt))
    for a in fn.args.args:
        # a parameter bound to a number (analyses.kinds) holds no buffer: it cannot alias an
        # array argument, nor be written in place
        eff.buffers[a.id] = set() if a.id in scalars else {"param"}
    for n, kind in _free_data(fn, resolve) if free else ():
        # a global or closure array, container or object: written in place through the
        # function (WORK[:] = p, cfg.buf[1:] = v, BUFS["w"] *= 2), it changes what a
        # pullback read from it. They share one buffer: two globals may view each other.
        eff.buffers[n] = {FREE}
        eff.free.add(n)
        if kind is not None:
            eff.kinds[n] = kind
    for i, s in enumerate(stmts):
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
            v = s.value
            t = s.targets[0].id
            if isinstance(v, gast.List) or (isinstance(v, gast.Call) and
                                            isinstance(v.func, gast.Name) and
                                            v.func.id in ("list", "list_snapshot")) or \
                    _sorted_call(v, resolve):
                eff.kinds[t] = "list"
            elif isinstance(v, gast.Dict) or (isinstance(v, gast.Call) and
                                              isinstance(v.func, gast.Name) and
                                              v.func.id == "dict"):
                eff.kinds[t] = "dict"
            elif isinstance(v, gast.Tuple) or (isinstance(v, gast.Call) and
                                               _tuple_result(v, resolve)):
                eff.kinds[t] = "tuple"
    # a parameter the argument signature binds to a list or a dict (analyses.kinds): a store
    # ws[0] = v rebinds an item of it, which the caller's list keeps
    for p, k in (containers or {}).items():
        eff.kinds.setdefault(p, k)
    eff.not_arrays = _not_arrays(fn, stmts, resolve)
    for s in stmts:
        # a parameter that receives ws.append(v) (or extend, insert) is a list whatever the
        # signature says (without one: adgen.source(f), a callee)
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) and \
                isinstance(s.value.func, gast.Attribute) and \
                s.value.func.attr in ("append", "extend", "insert") and \
                isinstance(s.value.func.value, gast.Name) and \
                s.value.func.value.id in eff.buffers and s.value.func.value.id not in eff.kinds:
            eff.kinds[s.value.func.value.id] = "list"
    for s in fn.body:
        # a name indexed by a string (p["w"]) is a dict: a parameter too, whose kind nothing
        # else tells (an ndarray takes a string index only as a structured array's field);
        # the nested statements are in their top-level statement's nodes (each walked once)
        for node in nodes_of(s, gast.Subscript):
            if isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name) and \
                    isinstance(node.slice, gast.Constant) and isinstance(node.slice.value, str) \
                    and node.value.id not in eff.kinds:
                eff.kinds[node.value.id] = "dict"
    # kinds follow copies (d = comp1) and loop sequences
    changed = True
    while changed:
        changed = False
        for s in stmts:
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                v, t = s.value, s.targets[0].id
                src = v.id if isinstance(v, gast.Name) else (
                    v.args[0].id if isinstance(v, gast.Call) and isinstance(v.func, gast.Name)
                    and v.func.id == "loop_sequence" and v.args and
                    isinstance(v.args[0], gast.Name) else _container_copied(v, eff.kinds))
                joined = _sequences_joined(v, eff.kinds, arrays, counted=True)
                if src is None and joined:
                    src = min(joined)  # a + b of lists: a list
                if src is None and isinstance(v, gast.Subscript) and \
                        isinstance(v.slice, gast.Slice) and isinstance(v.value, gast.Name) and \
                        eff.kinds.get(v.value.id) in ("list", "tuple"):
                    src = v.value.id  # xs[::-1] of a list: a list holding its items
                if src in eff.kinds and t not in eff.kinds:
                    eff.kinds[t] = eff.kinds[src]
                    changed = True
    constructed = _constructed_pairs(stmts, resolve)
    changed = True
    while changed:
        changed = False
        for i, s in enumerate(stmts):
            for dst, src in _edges(s, i, eff.kinds, resolve, arrays, fresh_call,
                                   eff.free, call_views, free_result if free else None):
                if dst in scalars:
                    continue
                cur = eff.buffers.setdefault(dst, set())
                add = set()
                for x in src:
                    if x.startswith(("new:", "cnew:", "shadows:")) or x in ("param", FREE):
                        add.add(x)
                    elif x.startswith("items:"):
                        # an element read from a container: what it holds, not the container
                        # (but the lists held by the object and tangent object construct_jvp
                        # made: g, g_dot = construct_jvp(C, (lst,), (lst_dot,), {}) hold lst
                        # and lst_dot, which g.add changing g_dot.lst changes)
                        add |= {b for b in eff.buffers.get(x[6:], set())
                                if not b.startswith("cnew:") or x[6:] in constructed}
                    else:
                        add |= eff.buffers.get(x, set())
                if not add <= cur:
                    cur |= add
                    changed = True
    made: dict[str, str] | None = None
    for s in stmts:
        target = written_name(s)
        if target is not None and isinstance(s, gast.AugAssign) and target in scalars:
            target = None  # a number: x op= v rebinds x
        if target is not None:
            bufs = frozenset(eff.buffers.get(target, set()))
            if _is_container_write(s, eff.kinds):
                eff.writes.append(Write(s, target, bufs, container=True))
                if made is None:
                    from adgen.transforms.analyses.made_containers import displays

                    made = displays(fn, resolve or (lambda _: None), {})
                # a list or dict the function made itself (xs = [x0]; xs.append(v)) holds
                # the parameters' arrays, but changing it changes no container a caller
                # gave (taken for one, a starred call of the function was refused)
                eff.containers_written |= {b for b in bufs if b.startswith("cnew:")} \
                    if target in made else bufs
                continue
            eff.writes.append(Write(s, target, bufs))
            eff.written |= bufs
        call = _call_of(s)
        written_args = mutating_call(call) if call is not None and mutating_call else []
        if written_args:
            # aliasing between the arguments is the buffers' business: a write to one reaches
            # every name that shares its buffer
            for a in written_args:
                if isinstance(a, gast.Name):
                    bufs = frozenset(eff.buffers.get(a.id, set()))
                    eff.writes.append(Write(s, a.id, bufs))
                    eff.written |= bufs
    return eff


def _free_data(fn: gast.FunctionDef,
               resolve: Callable[[gast.expr], Any] | None) -> list[tuple[str, str | None]]:
    """The free names of ``fn`` (globals, closure cells: read, never bound in it) bound to a
    value that may hold an array (not a number or a string, not a function, class or
    module), each with its container kind ("list", "dict", "tuple",
    "object"; None for an array). Their buffer is :data:`FREE`."""
    if resolve is None:
        return []
    bound = {a.id for a in fn.args.args}
    loaded: set[str] = set()
    for node in nodes_of(fn, gast.Name):
        if isinstance(node.ctx, gast.Load):
            loaded.add(node.id)
        else:
            bound.add(node.id)
    out = []
    for n in sorted(loaded - bound):
        obj = resolve(gast.Name(n, gast.Load(), None, None))
        if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes,
                                           types.FunctionType, types.BuiltinFunctionType,
                                           types.MethodType, types.ModuleType, np.ufunc,
                                           np.generic)):
            # (a module too: copy in copy.deepcopy(p) would make the copy a global's view)
            continue
        if isinstance(obj, type) and (obj.__module__ in ("builtins", "numpy") or
                                      issubclass(obj, (np.ndarray, np.generic))):
            continue  # a class of the user's holds class attributes (Cfg.buf), these none
        if callable(obj) and not isinstance(obj, (np.ndarray, list, dict, tuple, type)):
            continue  # a callable object: model(x)'s result is not taken for its view
        kind = None if isinstance(obj, np.ndarray) else "list" if isinstance(obj, list) else \
            "dict" if isinstance(obj, dict) else "tuple" if isinstance(obj, tuple) else "object"
        out.append((n, kind))
    return out


def _is_container_write(s: gast.stmt, kinds: dict[str, str]) -> bool:
    if isinstance(s, gast.Expr):
        f = s.value.func
        return isinstance(f, gast.Attribute) and f.attr == "append"
    if isinstance(s, gast.Assign):
        t = s.targets[0]
        if isinstance(t, gast.Attribute):
            return True
        return isinstance(t, gast.Subscript) and isinstance(t.value, gast.Name) and \
            kinds.get(t.value.id) in ("list", "dict", "tuple")
    return False


def _call_of(s: gast.stmt) -> gast.Call | None:
    if isinstance(s, (gast.Expr, gast.Assign)) and isinstance(s.value, gast.Call):
        return s.value
    return None


def written_name(s: gast.stmt) -> str | None:
    if isinstance(s, gast.Assign) and isinstance(s.value, gast.Call):
        out = [k.value for k in s.value.keywords if k.arg == "out"]
        if out and isinstance(out[0], gast.Name):
            return out[0].id
    if isinstance(s, gast.Assign):
        t = s.targets[0]
        if isinstance(t, gast.Subscript) and isinstance(t.value, gast.Name):
            return t.value.id
        if isinstance(t, gast.Attribute) and isinstance(t.value, gast.Name):
            return t.value.id
    if isinstance(s, gast.AugAssign):
        return s.target.id
    if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call):
        f = s.value.func
        if isinstance(f, gast.Attribute) and f.attr in ("at",) and s.value.args and \
                isinstance(s.value.args[0], gast.Name):
            return s.value.args[0].id
        if isinstance(f, gast.Attribute) and f.attr == "append" and \
                isinstance(f.value, gast.Name):
            return f.value.id
    return None


def _tuple_result(v: gast.Call, resolve: Callable[[gast.expr], Any] | None) -> bool:
    """A call of a NumPy decomposition that returns a tuple of new arrays (``w, V =
    np.linalg.eigh(A)``): its items are arrays of their own, read by index."""
    import numpy as np

    obj = resolve(v.func) if resolve is not None else None
    if obj is np.linalg.eigh or obj is np.linalg.slogdet:  # `is`: obj may be an array
        return True
    from adgen import runtime

    if obj is runtime.construct_jvp:  # an object built inside and its tangent (two new ones)
        return True
    keywords = {k.arg: k.value for k in v.keywords}
    if obj is np.linalg.svd:  # compute_uv=False returns the values alone
        return len(v.args) < 3 and _constant(keywords.get("compute_uv", True)) is True
    if obj is np.linalg.qr:  # mode="r" returns R alone
        return len(v.args) < 2 and \
            _constant(keywords.get("mode", "reduced")) in ("reduced", "complete")
    return False


def _constructed_pairs(stmts: list[gast.stmt], resolve: Callable[[gast.expr], Any] | None
                       ) -> set[str]:
    """The names bound to ``construct_jvp(...)``'s (object, tangent object) pair."""
    if resolve is None:
        return set()
    from adgen import runtime

    return {s.targets[0].id for s in stmts
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and
            isinstance(s.value, gast.Call) and resolve(s.value.func) is runtime.construct_jvp}


def _constructed(v: gast.Call, obj: Any) -> gast.Call | None:
    """For ``construct_jvp(cls, (a, b), tangents, {"k": c})`` (``obj`` the function called),
    the construction it runs, ``cls(a, b, k=c)`` (its arguments as written where they are a
    tuple and a dict display, else none); else None."""
    from adgen import runtime

    if obj is not runtime.construct_jvp or not v.args:
        return None
    args = v.args[1].elts if len(v.args) > 1 and isinstance(v.args[1], gast.Tuple) else []
    kw = v.args[3] if len(v.args) > 3 and isinstance(v.args[3], gast.Dict) else None
    keywords = [gast.keyword(arg=k.value, value=val) for k, val in
                zip(kw.keys, kw.values) if isinstance(k, gast.Constant)] if kw else []
    return gast.Call(func=v.args[0], args=list(args), keywords=keywords)


# the attributes of arrays and numbers
_ARRAY_ATTRIBUTES = frozenset().union(*(dir(t) for t in (np.ndarray, np.float64, np.complex128,
                                                         float, complex, int, bool)))


def _not_arrays(fn: gast.FunctionDef, stmts: list[gast.stmt],
                resolve: Callable[[gast.expr], Any] | None) -> set[str]:
    """The parameters and locals called (``l(h)``) or read or set an attribute of that
    neither an array nor a number has (``self.state``, ``l.forward(h)``), and the names one
    of those is a copy or an item of (``l = layers[0]``, ``for l in layers``): none holds an
    array (an ndarray is not callable, holds no callables, and has NumPy's attributes only).
    Taken for arrays viewing memory a method writes in place (``for l in self.layers: h =
    l(h)`` beside ``self.state += h``), a layer went to shadow memory, which refused it when
    the pullback ran."""
    bound = {a.id for a in fn.args.args + fn.args.kwonlyargs if isinstance(a, gast.Name)} | {
        s.targets[0].id for s in stmts
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)}
    out = {c.func.id for c in nodes_of(fn, gast.Call)
           if isinstance(c, gast.Call) and isinstance(c.func, gast.Name) and c.func.id in bound}
    # an attribute neither an array nor a number has (self.state, l.forward): reading it
    # from an array would raise
    out |= {a.value.id for a in nodes_of(fn, gast.Attribute)
            if isinstance(a, gast.Attribute) and isinstance(a.value, gast.Name) and
            a.value.id in bound and a.attr not in _ARRAY_ATTRIBUTES}
    if resolve is not None:
        from adgen import runtime

        # call_jvp(l, (h,), (h_dot,), {}, l, l_dot) of forward mode's code (differentiated
        # again by the hessian) calls l, a method of its owner l (an object) whose tangent
        # object is l_dot
        out |= {a.id for c in nodes_of(fn, gast.Call)
                if isinstance(c, gast.Call) and resolve(c.func) is runtime.call_jvp
                for k, a in enumerate(c.args)
                if k in (0, 4, 5) and isinstance(a, gast.Name) and a.id in bound}
    changed = True
    while changed:  # back through copies, items, loop sequences (for l in self.layers)
        # and the tangents of those (forward mode's code)
        changed = False
        for s in stmts:
            if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and
                    s.targets[0].id in out):
                continue
            v = s.value
            src = v.value if isinstance(v, gast.Subscript) else v.args[0] if (
                isinstance(v, gast.Call) and isinstance(v.func, gast.Name) and
                v.func.id in ("loop_sequence", "view_tangent") and v.args) else v
            if isinstance(src, gast.Name) and src.id in bound and src.id not in out:
                out.add(src.id)
                changed = True
    return out


def _sorted_call(v: gast.expr, resolve: Callable[[gast.expr], Any] | None) -> bool:
    """A call of the builtin ``sorted``: a new list holding the iterable's items (which an
    item written in place, ``ys = sorted(xs, key=f); ys[0][1:] *= 2``, shares)."""
    import builtins

    return isinstance(v, gast.Call) and resolve is not None and \
        resolve(v.func) is builtins.sorted


def _constant(v: Any) -> Any:
    """The value of a constant written in the code (``mode="reduced"``), ``v`` itself for a
    default given as a value, or None for anything else (a name: not known)."""
    if isinstance(v, gast.Constant):
        return v.value
    return None if isinstance(v, gast.AST) else v


def _sequences_joined(v: gast.expr, kinds: dict[str, str],
                      arrays: set[str] | frozenset[str] = frozenset(),
                      counted: bool = False) -> set[str]:
    """The lists or tuples whose items ``v`` holds where it joins them (``a + b``,
    ``a * 2``, ``2 * a``), else an empty set. A list with an ndarray (``W * v``, ``v + w``)
    is NumPy's arithmetic, a new array: no join. ``counted``: a product joins only where its
    other operand is an int written in the code (``W * v`` with ``v`` not known to be an
    array may be either: its result is not known to be a list)."""
    if not (isinstance(v, gast.BinOp) and isinstance(v.op, (gast.Add, gast.Mult))):
        return set()
    if any(isinstance(o, gast.Name) and o.id in arrays for o in (v.left, v.right)):
        return set()
    if counted and isinstance(v.op, gast.Mult) and not any(
            isinstance(o, gast.Constant) and type(o.value) is int for o in (v.left, v.right)):
        return set()
    return {o.id for o in (v.left, v.right)
            if isinstance(o, gast.Name) and kinds.get(o.id) in ("list", "tuple")}


def _snapshot_of(v: gast.expr) -> set[str]:
    """The list ``list_snapshot(L)`` copies (transforms/grown_list_reads.py), else empty: a
    new list holding L's items as they are now, as ``L + []`` would."""
    if isinstance(v, gast.Call) and isinstance(v.func, gast.Name) and \
            v.func.id == "list_snapshot" and len(v.args) == 1 and \
            isinstance(v.args[0], gast.Name):
        return {v.args[0].id}
    return set()


def _container_copied(v: gast.expr, kinds: dict[str, str]) -> str | None:
    """The list or dict ``v`` is a shallow copy of (``lst.copy()``, ``d.copy()``,
    ``copy.copy(lst)``), or None."""
    if not (isinstance(v, gast.Call) and isinstance(v.func, gast.Attribute) and
            v.func.attr == "copy" and not v.keywords and isinstance(v.func.value, gast.Name)):
        return None
    src = v.args[0] if len(v.args) == 1 and v.func.value.id == "copy" else \
        v.func.value if not v.args else None
    if isinstance(src, gast.Name) and kinds.get(src.id) in ("list", "dict"):
        return src.id
    return None


def _names(node: gast.AST) -> set[str]:
    return {n.id for n in nodes_of(node, gast.Name) if isinstance(n.ctx, gast.Load)}


def _call_names(v: gast.Call, free: set[str] | frozenset[str]) -> set[str]:
    """The names a call's result may hold: its arguments' and the function's (a local
    ``get = m.weights; W = get()``), but not a class of the user's called by its global name
    (``Params(w)``: not a view of the class, whose buffer is FREE)."""
    if isinstance(v.func, gast.Name) and v.func.id in free:
        return set().union(set(), *(_names(a) for a in v.args),
                           *(_names(k.value) for k in v.keywords))
    return _names(v)


def _edges(s: gast.stmt, i: int, kinds: dict[str, str],
           resolve: Callable[[gast.expr], Any] | None = None,
           arrays: set[str] | frozenset[str] = frozenset(),
           fresh_call: Callable[[gast.Call], bool] | None = None,
           free: set[str] | frozenset[str] = frozenset(),
           call_views: Callable[[gast.Call], list[gast.expr] | None] | None = None,
           free_result: Callable[[gast.Call], bool] | None = None
           ) -> list[tuple[str, set[str]]]:
    """(name, sources): the buffers of name include the sources' (or fresh ``new:i``)."""
    new = f"new:{i}"
    if isinstance(s, gast.For):
        return [(s.target.id, set())]
    if isinstance(s, gast.AugAssign):
        return [(s.target.id, {s.target.id})]
    if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call):
        f = s.value.func
        if isinstance(f, gast.Attribute) and f.attr == "append" and \
                isinstance(f.value, gast.Name):
            return [(f.value.id, _names(s.value.args[0]) if s.value.args else set())]
        return []
    if not isinstance(s, gast.Assign):
        return []
    t = s.targets[0]
    v = s.value
    if not isinstance(t, gast.Name):
        if isinstance(t, (gast.Subscript, gast.Attribute)) and isinstance(t.value, gast.Name):
            # storing a value into a container or object: it may hold v's buffer
            # (an ndarray store copies the data: the array does not hold v's buffer)
            holds = not isinstance(t, gast.Subscript) or kinds.get(t.value.id) in ("list",
                                                                                   "dict")
            return [(t.value.id, _names(v) if holds else set())]
        return []
    name = t.id
    if isinstance(v, gast.Name):
        return [(name, {v.id})]
    if isinstance(v, gast.Constant):
        return [(name, set())]
    joined = _sequences_joined(v, kinds, arrays) or _snapshot_of(v)
    if joined:
        # c = a + b, c = a * 2 of lists or tuples: a new container holding the same items,
        # so a write through an item of it (c[0] *= 3.0) writes a's item too
        return [(name, {f"cnew:{i}"} | joined)]
    if isinstance(v, gast.Subscript):
        if isinstance(v.value, gast.Name) and kinds.get(v.value.id) in ("list", "dict",
                                                                       "tuple"):
            return [(name, {"items:" + v.value.id})]
        parts = v.slice.elts if isinstance(v.slice, gast.Tuple) else [v.slice]
        if any(isinstance(p, gast.List) or (isinstance(p, gast.Name) and
                                            kinds.get(p.id) == "list") for p in parts):
            return [(name, {new})]  # x[[0, 2]]: a list index is advanced indexing, a copy
        return [(name, {new} | _names(v.value))]
    if isinstance(v, gast.Attribute):
        if v.attr in NONDIFF_ATTRS:
            return [(name, set())]
        return [(name, {new} | _names(v.value))]
    if isinstance(v, (gast.List, gast.Tuple, gast.Dict)):
        return [(name, {f"cnew:{i}"} | _names(v))]
    if isinstance(v, gast.Compare):
        # a new bool array (or a bool): a pullback may read it (a mask, where's condition),
        # so a later write to it must be seen
        return [(name, {new})]
    if isinstance(v, gast.BoolOp):
        return [(name, {new} | _names(v))]  # one of its operands
    if isinstance(v, gast.Call) and any(k.arg == "out" for k in v.keywords):
        out = [k.value for k in v.keywords if k.arg == "out"][0]
        return [(name, {out.id} if isinstance(out, gast.Name) else set())]
    if isinstance(v, gast.Call):
        f = v.func
        fname = f.attr if isinstance(f, gast.Attribute) else f.id if isinstance(
            f, gast.Name) else None
        obj = resolve(f) if resolve is not None else None
        made = _runtime_result(obj)
        if made == "shadow" and v.args:
            # a shadow (generated pullbacks, differentiated again: adgen.second_order) is
            # memory of the shadow map: it may alias every other shadow, never the buffer
            # (the memory, "shadows:<map>", not the map object: writing a shadow changes
            # no array the map itself is taken for)
            return [(name, {new} | {f"shadows:{m}" for m in _names(v.args[0])})]
        if made == "fresh":
            return [(name, {new})]
        if made == "none":
            return [(name, set())]
        if made == "first" and v.args:
            return [(name, {new} | _names(v.args[0]))]
        constructed = _constructed(v, obj)
        if constructed is not None:
            # net, net_dot = construct_jvp(Net3, (3,), (None,), {}) of the jvp code (hessian):
            # a new object and its tangent, holding what the arguments and tangents hold, not
            # the class (a global whose buffer is FREE: net.acts[i] = h was refused as a
            # global's write, naming the generated code); FREE where Net3(3) holds a global's
            # memory (its __init__ stores self.x = X0), as for the call in the primal
            held = set().union(set(), *(_names(a) for a in v.args[1:]),
                               *(_names(k.value) for k in v.keywords))
            if free_result is not None and free_result(constructed):
                return [(name, {new, FREE} | held)]
            return [(name, {new} | held)]
        # (not a reference implementation's shape / dtype helper: a new value, below)
        if isinstance(obj, type) and free_result is not None and free_result(v):
            # s = W() whose __init__ stores a global array (self.x = X0): s.x[:] = v writes it
            return [(name, {new, FREE} | _call_names(v, free))]
        if isinstance(obj, types.FunctionType) and not str(
                getattr(obj, "__module__", "")).startswith("numpy") and \
                not nondiff_call(v, resolve):
            if free_result is not None and free_result(v):
                # B = basis(n) of an lru_cache'd helper, get() returning a global array:
                # B *= x writes memory a later call or read of the global sees
                return [(name, {new, FREE} | _call_names(v, free))]
            if name in arrays and fresh_call is not None and fresh_call(v):
                return [(name, {new})]  # an array the callee made (its summary)
            viewed = call_views(v) if call_views is not None else None
            if viewed is not None:  # laplace(u, out): out's memory, never u's (its summary)
                return [(name, {new}.union(*(_names(a) for a in viewed)))]
            return [(name, {new} | _call_names(v, free))]  # a user function, whatever its name
        if nondiff_call(v, resolve) and fname not in ("zeros", "ones", "empty", "zeros_like",
                                                    "ones_like", "empty_like", "eye",
                                                    "identity", "arange"):
            # no derivative, but a new array a pullback may read (indices, a mask), so a
            # later write to it must be seen; numbers and tuples of numbers have no buffer
            return [(name, {new} if fname not in _NUMBER_CALLS else set())]
        if _numpy_object(obj):
            return [(name, {new} | _numpy_result_views(obj, v))]
        if fname in VIEW_CALLS or fname in PASS_CALLS:
            first: set[str] = set()
            if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and \
                    f.value.id not in ("np", "numpy"):
                first = {f.value.id}
            elif v.args:
                first = _names(v.args[0])
            return [(name, {new} | first)]
        if _container_copied(v, kinds) is not None:
            # lst.copy(), d.copy(): a new container holding the same arrays, so a write
            # through an item of the copy (m[0] *= 3) writes the original's item too
            return [(name, {new, _container_copied(v, kinds)})]
        if fname in ("copy", "array", "zeros", "ones", "empty", "full", "zeros_like",
                     "ones_like", "empty_like", "full_like", "arange", "linspace", "eye"):
            return [(name, {new})]
        if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and \
                f.value.id in ("np", "numpy", "math"):
            return [(name, {new})]
        if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and \
                f.value.id in arrays and fname in _NEW_FROM_METHODS:
            return [(name, {new})]  # an ndarray's reduction: a new array (or a number)
        if _fresh_from_array_method(obj, v):
            return [(name, {new})]  # W.dot(x), E0.astype(float) of a global array W, E0
        # a user function or method: its result may hold any argument
        return [(name, {new} | _call_names(v, free))]
    return [(name, {new})]


# ndarray methods that return a new array (or a number) whatever the receiver
_FRESH_METHODS = _NEW_FROM_METHODS | frozenset({
    "copy", "flatten", "astype", "clip", "round", "repeat", "take", "compress", "argsort",
    "nonzero", "tolist", "item", "searchsorted", "ptp", "cumsum", "cumprod"})


def _fresh_from_array_method(obj: Any, v: gast.Call) -> bool:
    """Whether ``v`` calls a method of an ndarray the name resolves to (a global array:
    ``W.dot(x)``, ``E0.astype(float)``) that returns a new array: the bound method, not
    known by its name as a local array's method is, was taken for a user's method whose
    result may hold its receiver (a global's memory, written in place after)."""
    import numpy as np

    if type(getattr(obj, "__self__", None)) is not np.ndarray or \
            getattr(obj, "__name__", None) not in _FRESH_METHODS:
        return False
    for k in v.keywords:
        if k.arg == "out" or (k.arg == "copy" and not (
                isinstance(k.value, gast.Constant) and k.value.value is True)):
            return False  # (x.astype(float, copy=False) may be x itself)
    return True


# NumPy functions without a derivative rule that always return a new array (or numbers)
_FRESH_NUMPY = frozenset({"zeros", "ones", "empty", "full", "zeros_like", "ones_like",
                          "empty_like", "full_like", "arange", "linspace", "logspace",
                          "geomspace", "eye", "identity", "copy", "tri", "indices",
                          "argsort", "argwhere", "nonzero", "flatnonzero", "searchsorted",
                          "count_nonzero", "shape", "ndim", "size", "array_equal", "allclose",
                          "isclose", "unravel_index", "ravel_multi_index", "diag_indices",
                          "tril_indices", "triu_indices", "histogram", "bincount", "digitize",
                          "result_type", "promote_types", "can_cast", "iscomplexobj",
                          "isrealobj", "isscalar", "may_share_memory", "shares_memory"})


def _numpy_object(obj: Any) -> bool:
    """Whether ``obj`` (what a call's function resolved to) is one of NumPy's functions."""
    import numpy as np

    # (a NumPy scalar type called on an array casts it: np.float64(w) is w itself for a
    # float64 array)
    if obj is None or (isinstance(obj, type) and not issubclass(obj, np.generic)):
        return False

    return isinstance(obj, np.ufunc) or str(getattr(obj, "__module__", "") or "").startswith(
        "numpy")


def _numpy_result_views(obj: Any, call: gast.Call) -> set[str]:
    """The names whose buffers the result of NumPy function ``obj`` may view: none for a
    ufunc (a new array), the first argument's for a rule with ``view=True`` (``np.diag``,
    ``np.diff`` with n=0), none for another rule or a function that always allocates, and
    every argument's for the rest: ``np.ascontiguousarray``, ``np.asfortranarray``,
    ``np.require``, ``np.real_if_close``, ``np.broadcast_arrays`` ... return an argument itself
    or a view of it, and a write through the result writes the argument."""
    import numpy as np

    from adgen.rules import registry

    if isinstance(obj, np.ufunc):
        return set()
    copies = [k.value for k in call.keywords if k.arg == "copy"]
    rule = registry.lookup(obj)
    if rule is not None and (not copies or any(p.name == "copy" for p in rule.params)):
        # np.array(x, copy=False) is x itself, np.array(x) a copy (Rule.may_view)
        if rule.may_view(copies[0] if copies else None) and call.args:
            return _names(call.args[0])
        return set()
    if getattr(obj, "__name__", "") in _FRESH_NUMPY and not copies:
        return set()
    if copies and all(isinstance(c, gast.Constant) and c.value is True for c in copies):
        return set()  # copy=True: a new array whatever else the function does
    return set().union(*(_names(a) for a in call.args), *(_names(k.value) for k in call.keywords))


def returns_fresh(fn: gast.FunctionDef, eff: Effects) -> bool:
    """Whether every value ``fn`` returns is one it made: a name whose buffers are all its
    own allocations (no parameter's, no container display's, no free name's), a constant,
    or nothing."""
    for node in nodes_of(fn, gast.Return):
        if not isinstance(node, gast.Return) or node.value is None or \
                isinstance(node.value, gast.Constant):
            continue
        if not isinstance(node.value, gast.Name):
            return False
        bufs = eff.buffers.get(node.value.id)
        if not bufs or not all(b.startswith("new:") for b in bufs) or \
                eff.kinds.get(node.value.id) is not None:
            return False
    return True
