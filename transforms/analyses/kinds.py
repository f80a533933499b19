"""Kinds: which names hold plain numbers, and which hold arrays of a known rank.

Input: a function in SSA form (read only) and the kinds of its parameters at one call (the
argument signature ``grad`` specialises on). Output: a dict name -> kind, where a kind is

- ``NUMBER``: an immutable number (Python int or float, NumPy scalar). It has rank 0, no
  buffer, and ``x += v`` rebinds it; an index made of numbers is a basic index;
- an ``int`` r >= 0: an ``np.ndarray`` of rank r (mutable, possibly a view);
- ``("shape", r)``: the shape tuple of such an array (its items are numbers);
- absent: not known (a list, an object, a bool, anything the rules below do not cover).

A comparison of arrays (``x > 0.5``) is an array of its operands' rank (of bools), and
``np.where(c, a, b)`` one of the three's rank, even of numbers.

A parameter the signature binds to a ``list`` or a ``dict`` (``LIST`` / ``DICT``) has no kind
here (its items may be anything); the pipeline hands those parameters to the effects analysis
(a store ``ws[0] = v`` into a list argument rebinds an item, where the same store into an
array argument writes its buffer).

What it is for: in a loop over scalars the generic pullback pays for questions it cannot
answer statically (was this operand broadcast? is this element a view?). With kinds known,
``unbroadcast`` between numbers disappears, an element read from an array is a number and not
a view of it, and adjoints add with ``+``. The facts hold for every call with the same
argument signature, which is part of the compile-cache key.

Flow-insensitive and optimistic: every name starts at "no value yet" and rises to the join of
all its definitions (loop headers and merges included) until nothing changes; two different
kinds join to unknown.
"""

from __future__ import annotations

import builtins
import functools
import types
from collections.abc import Callable
from typing import Any

import gast
import numpy as np
from adgen.transforms.node_index import body_nodes_of, memo

NUMBER = "number"
# A signature's entry for a list or dict argument (exactly those types: a subclass may
# redefine item assignment)
LIST = "list"
DICT = "dict"
CONTAINERS = (LIST, DICT)
# A signature's entry for a Python float or a NumPy float64 argument: a number (its kind is
# NUMBER) that is float64 for certain, so values computed from it may go into float64 tape
# columns (analyses.floats); "number" stands for any other number (an int, a float32).
FLOAT_ARG = "float"
# A signature's entry for an object of a user's class (a simulator, a model): ``(OBJECT,
# its class)``. The class is part of the compile-cache key, so a method called on the
# parameter (``model.step(u)`` writing ``u``) is compiled for that class
# (``object_classes.typed_for``, which leaves ``(OBJECT, None)``: an object, of any class);
# the parameter's kind is unknown (:func:`param_kind`). An
# object holding a value of its own under the name of a function of its class
# (``model.step = other``) has no entry (None): its calls run as Python finds them.
OBJECT = "object"
Kind = Any  # NUMBER | int | None
_BOTTOM = "bottom"

# Functions of NumPy whose result, called with one argument and no keywords, is a number.
_TO_NUMBER = frozenset({"sum", "mean", "prod", "max", "min", "amax", "amin", "std", "var",
                        "average", "median", "trace", "vdot", "inner_scalar"})
# Functions that allocate an array from a shape (first argument).
_FROM_SHAPE = frozenset({"zeros", "ones", "empty", "full"})
# Functions whose result is an array of their first argument's rank.
_LIKE = frozenset({"zeros_like", "ones_like", "empty_like", "full_like", "copy", "array",
                   "asarray", "ascontiguousarray"})
_BUILTIN_NUMBER = frozenset({"len", "float", "int", "abs", "round"})
# class -> whether its objects get an OBJECT entry (those of a class of the user's)
_USER_CLASSES: dict[type, bool] = {}
# Values with a __dict__ that are not objects of a user's class (a list subclass: a list)
_NOT_OBJECTS = (type, types.ModuleType, types.FunctionType, types.MethodType,
                functools.partial, list, tuple, dict, set, frozenset, str, bytes, int, float,
                complex, np.ndarray, np.generic)
_ARITH = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.FloorDiv, gast.Mod, gast.Pow)
_ORDER = (gast.Lt, gast.LtE, gast.Gt, gast.GtE, gast.Eq, gast.NotEq)


def rank(k: Kind) -> int | None:
    if k == NUMBER:
        return 0
    return k if isinstance(k, int) else None


_F64 = np.dtype(np.float64)


def of_value(value: Any) -> Kind:
    """The kind of a runtime value (an argument), or None. A numeric array that is not
    float64 has the kind ``("array", rank, dtype)``: the signature tells float64 arrays apart
    (analyses.floats), and :func:`param_kind` gives its rank."""
    t = type(value)
    if t is np.ndarray:
        # numbers inside (not objects, whose elements may be anything; not bools, which
        # index as masks)
        if value.dtype is _F64:
            return value.ndim
        return ("array", value.ndim, value.dtype.str) if value.dtype.kind in "fiu" else None
    if t is float or t is int or t is np.float64 or t is np.float32 or t is np.int64:
        return NUMBER
    if t is list:
        return LIST
    if t is dict:
        return DICT
    return None


def signature(args: tuple[Any, ...]) -> tuple[Kind, ...]:
    """The kinds of a call's positional arguments (part of the compile-cache key); a float64
    number is ``FLOAT_ARG``."""
    if len(args) == 1:  # the common case of one argument, without building a list
        a = args[0]
        return (a.ndim if type(a) is np.ndarray and a.dtype is _F64 else _entry(a),)
    return tuple([a.ndim if type(a) is np.ndarray and a.dtype is _F64 else _entry(a)
                  for a in args])


def _entry(a: Any) -> Kind:
    t = type(a)
    if t is float or t is np.float64:
        return FLOAT_ARG
    k = of_value(a)
    return _object_entry(a, t) if k is None else k


def _object_entry(a: Any, t: type) -> Kind:
    """``(OBJECT, t)`` for an object of a user's class whose own attributes shadow no
    function of its class, else None."""
    own = getattr(a, "__dict__", None)
    if type(own) is not dict:
        return None
    users = _USER_CLASSES.get(t)
    if users is None:  # (what a class is does not change: asked once)
        users = _USER_CLASSES[t] = not issubclass(t, _NOT_OBJECTS) and \
            not str(getattr(t, "__module__", "")).startswith(("numpy", "adgen."))
    if not users:
        return None
    if own:
        mro = t.__mro__
        keys = own.keys()
        # (the names the object and a class both hold: usually none; object, last, holds
        # no function of Python's)
        for k in mro[:-1]:
            for name in keys & k.__dict__.keys():
                if type(_class_attribute(mro, name)) is types.FunctionType:
                    return None  # model.step = other: Python runs that one
    return (OBJECT, t)


def _class_attribute(mro: tuple[type, ...], name: str) -> Any:
    for k in mro:
        found = k.__dict__.get(name, _BOTTOM)
        if found is not _BOTTOM:
            return found
    return None


def is_object_entry(k: Kind) -> bool:
    """Whether a signature's entry is an object's (:data:`OBJECT`)."""
    return type(k) is tuple and k[0] == OBJECT


def defaults_signature(fn: Any, given: int) -> tuple[Kind, ...]:
    """The kinds of the defaults of ``fn``'s positional parameters after the first ``given``
    (a call passing ``given`` arguments by position and none by keyword), up to the first
    default that is not a Python float or int: the rest of that call's :func:`signature`.
    A number cannot share an array's memory: ``dt=0.01`` compiled without its kind may be
    an array a parameter aliases, which ``mutation="strict"`` refused in a velocity Verlet.
    Valid while ``fn.__defaults__`` is the same tuple (the compiled code's guard)."""
    code = getattr(fn, "__code__", None)
    defaults = getattr(fn, "__defaults__", None)
    if code is None or not defaults:
        return ()
    first = code.co_argcount - len(defaults)
    if given < first:
        return ()  # a parameter without a default is missing: Python's TypeError
    out: list[Kind] = []
    for d in defaults[given - first:]:
        t = type(d)
        if t is float:
            out.append(FLOAT_ARG)
        elif t is int:
            out.append(NUMBER)
        else:
            break
    return tuple(out)


def has_unknown(sig: tuple[Kind, ...]) -> bool:
    """Whether a signature has an entry whose values it does not describe (None, a list, a
    dict, an object): they may hold array subclasses or complex arrays."""
    return None in sig or LIST in sig or DICT in sig or any(
        type(k) is tuple and k[0] == OBJECT for k in sig)


def param_kind(k: Kind) -> Kind:
    """The kind a signature entry gives its parameter (an array of any numeric dtype: its
    rank; a float64 number: a number)."""
    if k == FLOAT_ARG:
        return NUMBER
    if isinstance(k, tuple):
        return k[1] if k[0] == "array" else None  # (an object's: unknown)
    return k


def _join(a: Kind, b: Kind) -> Kind:
    if a == _BOTTOM:
        return b
    if b == _BOTTOM:
        return a
    return a if a == b else None


def _from_rank(r: int | None, scalar: bool = True) -> Kind:
    """An operation's result of rank r: NumPy gives a number for rank 0."""
    if r is None:
        return None
    return NUMBER if r == 0 and scalar else r


def kinds(fn: gast.FunctionDef, params: dict[str, Kind],
          resolve: Callable[[gast.expr], Any],
          callee: Callable[[Any, tuple[Kind, ...]], Kind] | None = None) -> dict[str, Kind]:
    """The known kinds of ``fn``'s names.

    Args:
        fn: the function in SSA form.
        params: parameter name -> kind (missing: unknown).
        resolve: a global name or attribute chain -> the object it denotes (None: unknown).
        callee: (a user function, the kinds of its positional arguments) -> the kind it
            returns for them (None: unknown); without it, a user function's result is unknown.
    """
    defs, unknown = definitions(fn)
    env: dict[str, Kind] = {n: _BOTTOM for n in defs}
    for a in fn.args.args:
        k = params.get(a.id)
        env[a.id] = None if k in CONTAINERS else k
    for n in unknown:
        env[n] = None
    # list displays bound once and read once (t = [a, b]; np.array(t)): their items
    loads: dict[str, int] = {}
    for node in body_nodes_of(fn):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load):
            loads[node.id] = loads.get(node.id, 0) + 1
    displays = {n: v[0] for n, v in defs.items() if len(v) == 1 and n not in unknown and
                isinstance(v[0], (gast.List, gast.Tuple)) and loads.get(n) == 1}
    # tuple displays bound once (a, b = ALPHA, BETA desugars to t = (ALPHA, BETA); a = t[0]):
    # immutable, so an item read by a constant index is the item, however often it is read
    tuples = {n: v[0] for n, v in defs.items() if len(v) == 1 and n not in unknown and
              isinstance(v[0], gast.Tuple) and
              not any(isinstance(e, gast.Starred) for e in v[0].elts)}
    ev = _Eval(env, resolve, callee, displays, tuples)
    # the definitions in about the program's order (``definitions`` lists them from the last
    # statement): a kind then reaches its readers in the same round, where the reverse took
    # one round per link of a chain (adi: 9 evaluations per definition, about 3 now); the
    # fixpoint is the same, every kind only growing from bottom to unknown by joins
    order = list(defs.items())[::-1]
    changed = True
    while changed:
        changed = False
        for n, values in order:
            k = env[n]
            if k is None:
                continue
            for v in values:
                k = _join(k, ev.kind(v))
                if k is None:
                    break
            if k != env[n]:
                env[n] = k
                changed = True
    return {n: k for n, k in env.items() if k is not None and k != _BOTTOM}




def definitions(fn: gast.FunctionDef) -> tuple[dict[str, list[Any]], set[str]]:
    """name -> the values bound to it (an ``x += v`` as ``x + v``, a for loop's target as
    ``("for", iterable)``), and the names also bound by a form not modelled (tuple targets,
    ``with``, ``except``), whose value is unknown. Computed once while ``fn`` is frozen
    (node_index; kinds, floats and the plan ask for it): the result is shared, read only."""
    return memo(fn, "kinds.definitions", lambda: _definitions(fn))


def _definitions(fn: gast.FunctionDef) -> tuple[dict[str, list[Any]], set[str]]:
    defs: dict[str, list[Any]] = {}
    modelled: set[int] = set()  # the Name nodes of the bindings modelled below
    stores: list[gast.Name] = []
    for node in body_nodes_of(fn):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
            stores.append(node)
        if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Name):
            defs.setdefault(node.targets[0].id, []).append(node.value)
            modelled.add(id(node.targets[0]))
        elif isinstance(node, gast.AugAssign) and isinstance(node.target, gast.Name):
            defs.setdefault(node.target.id, []).append(
                gast.BinOp(left=gast.Name(id=node.target.id, ctx=gast.Load(), annotation=None,
                                          type_comment=None), op=node.op, right=node.value))
            modelled.add(id(node.target))
        elif isinstance(node, gast.For) and isinstance(node.target, gast.Name):
            defs.setdefault(node.target.id, []).append(("for", node.iter))
            modelled.add(id(node.target))
    return defs, {s.id for s in stores if id(s) not in modelled}


class _Eval:
    def __init__(self, env: dict[str, Kind], resolve: Callable[[gast.expr], Any],
                 callee: Callable[[Any, tuple[Kind, ...]], Kind] | None = None,
                 displays: dict[str, gast.expr] | None = None,
                 tuples: dict[str, gast.Tuple] | None = None) -> None:
        self.env = env
        self.resolve = resolve
        self.callee = callee
        self.displays = displays or {}
        self.tuples = tuples or {}

    def kind(self, v: Any) -> Kind:
        if isinstance(v, tuple):  # ("for", iterable)
            it = v[1]
            if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and \
                    it.func.id == "range" and it.func.id not in self.env:
                return NUMBER
            return None
        if isinstance(v, gast.Constant):
            if isinstance(v.value, bool):
                return None
            return NUMBER if isinstance(v.value, (int, float)) else None
        if isinstance(v, gast.Name):
            if v.id in self.env:
                return self.env[v.id]
            # a free name (a global, a closure cell) bound to a number or an array: its
            # binding's guard (transforms/bindings.py, mode "kind" or "value") recompiles
            # when the type, rank or dtype changes, so the kind holds at every call
            k = of_value(self.resolve(v))
            return k if k == NUMBER or isinstance(k, int) else None
        if isinstance(v, gast.UnaryOp):
            if isinstance(v.op, (gast.USub, gast.UAdd)):
                return self.kind(v.operand)
            return None
        if isinstance(v, gast.BinOp):
            return self.binop(v)
        if isinstance(v, gast.Compare) and len(v.ops) == 1 and \
                isinstance(v.ops[0], _ORDER):
            # x > 0.5 of an array: a bool array of the operands' broadcast rank (of
            # numbers, a bool: no kind)
            a, b = self.kind(v.left), self.kind(v.comparators[0])
            if a == _BOTTOM or b == _BOTTOM:
                return _BOTTOM
            if rank(a) is None or rank(b) is None:
                return None
            r = max(rank(a), rank(b))
            return r if r >= 1 else None
        if isinstance(v, gast.Subscript):
            return self.subscript(v)
        if isinstance(v, gast.Attribute) and isinstance(v.value, gast.Name) and \
                v.value.id not in self.env and \
                isinstance(self.resolve(v.value), types.ModuleType):
            # a module's constant (np.inf, np.pi, math.e): a number
            return NUMBER if type(self.resolve(v)) in (float, int) else None
        if isinstance(v, gast.Attribute):
            k = self.kind(v.value)
            if k == _BOTTOM:
                return _BOTTOM
            if not isinstance(k, int):
                return None
            if v.attr in ("T", "mT"):
                return k
            if v.attr == "shape":
                return ("shape", k)  # a tuple of k numbers
            if v.attr in ("ndim", "size"):
                return NUMBER
            return None
        if isinstance(v, gast.Call):
            return self.call(v)
        return None

    def display(self, node: gast.expr) -> list[gast.expr] | None:
        """The items of a list or tuple display, or of a name bound once to one and read only
        here (None: anything else)."""
        if isinstance(node, gast.Name):
            node = self.displays.get(node.id)
        if isinstance(node, (gast.List, gast.Tuple)) and \
                not any(isinstance(e, gast.Starred) for e in node.elts):
            return list(node.elts)
        return None

    def joined(self, fname: str, items: list[gast.expr], keywords: list[gast.keyword]) -> Kind:
        """The kind of ``np.concatenate`` / ``stack`` / ``hstack`` / ``vstack`` of a literal
        sequence of arrays of one rank (``axis=`` an int constant, or absent)."""
        opts = {k.arg: k.value for k in keywords}
        axis = opts.pop("axis", None)
        if opts or not (axis is None or isinstance(axis, gast.Constant) and
                        type(axis.value) is int or isinstance(axis, gast.UnaryOp) and
                        isinstance(axis.op, gast.USub) and isinstance(axis.operand,
                                                                      gast.Constant)):
            return None
        ks = [self.kind(e) for e in items]
        if _BOTTOM in ks:
            return _BOTTOM
        if not all(isinstance(k, int) and k != NUMBER for k in ks) or len(set(ks)) != 1:
            return None  # numbers, unknowns, or ranks that differ (an error in NumPy)
        r = ks[0]
        if fname == "stack":
            return r + 1
        if fname == "vstack":
            return max(r, 2)
        if fname == "hstack":
            return r if r >= 1 else 1
        return r if r >= 1 else None  # concatenate: 0-d arrays are an error

    def reduction(self, r: int, keywords: list[gast.keyword]) -> Kind:
        """The kind of a reduction of a rank-r array with ``axis=`` / ``keepdims=``."""
        opts = {k.arg: k.value for k in keywords}
        if set(opts) - {"axis", "keepdims"}:
            return None
        axis = opts.get("axis")
        keep = opts.get("keepdims")
        if keep is not None and not (isinstance(keep, gast.Constant) and
                                     isinstance(keep.value, bool)):
            return None
        keepdims = bool(keep is not None and keep.value)
        if axis is None or (isinstance(axis, gast.Constant) and axis.value is None):
            return r if keepdims else NUMBER
        if isinstance(axis, gast.Constant) and type(axis.value) is int:
            dropped = 1
        elif isinstance(axis, gast.UnaryOp) and isinstance(axis.op, gast.USub) and \
                isinstance(axis.operand, gast.Constant) and type(axis.operand.value) is int:
            dropped = 1
        else:
            return None
        if r < 1:
            return None
        return r if keepdims else _from_rank(r - dropped)

    def binop(self, v: gast.BinOp) -> Kind:
        a, b = self.kind(v.left), self.kind(v.right)
        if a is None or b is None:
            return None
        if a == _BOTTOM or b == _BOTTOM:
            return _BOTTOM
        if isinstance(v.op, _ARITH):
            return _from_rank(max(rank(a), rank(b)))
        if isinstance(v.op, gast.MatMult):
            return _matmul(rank(a), rank(b), allow_number=False)
        return None

    def subscript(self, v: gast.Subscript) -> Kind:
        held = self.tuples.get(v.value.id) if isinstance(v.value, gast.Name) else None
        if held is not None and isinstance(v.slice, gast.Constant) and \
                type(v.slice.value) is int and -len(held.elts) <= v.slice.value < len(held.elts):
            return self.kind(held.elts[v.slice.value])
        base = self.kind(v.value)
        if base == _BOTTOM:
            return _BOTTOM
        if isinstance(base, tuple):  # an item of a shape
            return NUMBER if self.kind(v.slice) == NUMBER else None
        if not isinstance(base, int) or base == NUMBER:
            return None
        idx = v.slice
        elts = idx.elts if isinstance(idx, gast.Tuple) else [idx]
        consumed = 0
        kept = 0
        for e in elts:
            if isinstance(e, gast.Slice):
                consumed += 1
                kept += 1
                continue
            if isinstance(e, gast.Constant) and e.value is None:
                kept += 1
                continue
            k = self.kind(e)
            if k == _BOTTOM:
                return _BOTTOM
            if k != NUMBER:
                return None  # an array or a bool: advanced indexing
            consumed += 1
        if consumed > base:
            return None
        r = base - consumed + kept
        if r == 0 and kept == 0:
            return NUMBER  # every axis taken by an integer: a NumPy scalar
        return r

    def call(self, v: gast.Call) -> Kind:
        f = v.func
        args = [self.kind(a) for a in v.args]
        if any(a == _BOTTOM for a in args):
            return _BOTTOM
        if isinstance(f, gast.Attribute) and f.attr in ("ravel", "flatten") and not v.args and \
                not v.keywords and not isinstance(self.resolve(f.value), type(np)):
            recv = self.kind(f.value)
            if recv == _BOTTOM:
                return _BOTTOM
            # an array's items in a vector (a number's ravel is an array too: rank 1)
            return 1 if isinstance(recv, int) and recv != NUMBER else None
        if isinstance(f, gast.Attribute) and f.attr in ("copy", "sum", "mean", "max", "min",
                                                        "prod") and not v.args and \
                not (v.keywords and f.attr == "copy") and \
                not isinstance(self.resolve(f.value), type(np)):
            recv = self.kind(f.value)
            if recv == _BOTTOM:
                return _BOTTOM
            if not isinstance(recv, int) or recv == NUMBER:
                return None
            # an array's reduction method: as np.sum(x, axis=..., keepdims=...)
            return recv if f.attr == "copy" else self.reduction(recv, v.keywords)
        out = [k.value for k in v.keywords if k.arg == "out"]
        if out and isinstance(out[0], gast.Name):
            k = self.kind(out[0])  # f(..., out=o) returns o
            return k if isinstance(k, int) or k == _BOTTOM else None
        if isinstance(f, gast.Name) and f.id not in self.env and is_builtin(f, self.resolve):
            if f.id == "loop_sequence" and len(args) == 1:
                # what a for loop indexes (adgen.runtime): an array as it is
                return args[0] if isinstance(args[0], int) else None
            if f.id == "concatenator_piece" and len(args) == 2 and not v.keywords:
                return _concatenator_piece(v.args[0], args[1])
            if f.id in ("max", "min") and len(args) >= 2 and not v.keywords and \
                    all(a == NUMBER for a in args):
                return NUMBER  # max(a, b): one of the numbers
            if f.id in _BUILTIN_NUMBER and len(v.args) == 1 and not v.keywords:
                if f.id == "abs" and args[0] != NUMBER:
                    return None
                return NUMBER
            return None
        obj = self.resolve(f)
        if obj is None:
            return None
        if isinstance(obj, np.ufunc):
            if v.keywords or obj.nout != 1 or len(args) != obj.nin:
                return None
            ranks = [rank(a) for a in args]
            if any(r is None for r in ranks):
                return None
            if all(t.endswith("?") for t in obj.types):
                # np.isfinite(x), np.logical_and(a, b) of arrays: a bool array of their
                # broadcast rank, as a comparison (of numbers, a bool: no kind)
                return max(ranks) if max(ranks) >= 1 else None
            return _from_rank(max(ranks))
        mod = getattr(obj, "__module__", "") or ""
        if mod == "math" or getattr(obj, "__self__", None) is _math():
            return NUMBER if not v.keywords else None
        if not mod.startswith("numpy"):
            if self.callee is None or v.keywords or None in args:
                return None
            return self.callee(obj, tuple(args))  # a user function: its own kinds
        fname = getattr(obj, "__name__", "")
        if isinstance(obj, type) and issubclass(obj, np.number) and len(args) == 1 and \
                args[0] == NUMBER and not v.keywords:
            return NUMBER  # np.float32(0.0), np.float64(n): a NumPy scalar (an array: not)
        if fname in _TO_NUMBER and len(args) == 1 and rank(args[0]) is not None:
            return self.reduction(rank(args[0]), v.keywords)
        if fname in ("argmax", "argmin") and len(args) == 1 and not v.keywords and \
                rank(args[0]) is not None:
            return NUMBER  # the flat index of an extreme: an int
        if fname == "searchsorted" and len(args) == 2 and rank(args[1]) is not None and \
                all(k.arg in ("side", "sorter") for k in v.keywords):
            # np.searchsorted(edges, v): an int for a number v (a bin to index with:
            # b = np.searchsorted(edges, v) - 1), an int array of v's shape for an array
            return _from_rank(rank(args[1]))
        if fname == "dot" and len(args) == 2 and not v.keywords:
            ra, rb = rank(args[0]), rank(args[1])
            if ra is None or rb is None:
                return None
            if ra == 0 or rb == 0:
                return _from_rank(max(ra, rb))
            return _matmul(ra, rb, allow_number=True)
        if (obj is np.eye or obj is np.identity) and 1 <= len(args) <= 2 and \
                all(a == NUMBER for a in args) and \
                all(k.arg in ("k", "dtype") for k in v.keywords):
            return 2  # np.eye(n), np.eye(n, m), np.identity(n): a matrix
        if (obj is np.linalg.inv or obj is np.linalg.det) and len(args) == 1 and not v.keywords and \
                isinstance(args[0], int) and args[0] != NUMBER and args[0] >= 2:
            # a stack of square matrices: inverses of the same shape, one determinant each
            return args[0] if obj is np.linalg.inv else _from_rank(args[0] - 2)
        if obj is np.linalg.solve and len(args) == 2 and not v.keywords and args[0] == 2 and \
                args[1] in (1, 2):
            return args[1]  # one matrix: x has b's shape
        if obj is np.linalg.cholesky and len(args) == 1 and not v.keywords and \
                isinstance(args[0], int) and args[0] != NUMBER and args[0] >= 2:
            return args[0]  # a factor per square matrix (anything else raises)
        if obj is np.diag and 1 <= len(args) <= 2 and args[0] in (1, 2) and \
                all(a == NUMBER for a in args[1:]) and all(k.arg == "k" for k in v.keywords):
            return 3 - args[0]  # a vector's diagonal matrix, a matrix's diagonal
        if fname == "outer" and obj is np.outer and len(args) == 2 and not v.keywords and \
                all(rank(a) is not None for a in args):
            return 2  # both flattened: a matrix whatever their ranks
        if obj is np.where and len(args) == 3 and not v.keywords:
            # np.where(c, a, b): an ndarray of the three's broadcast rank (of numbers too:
            # np.where(True, 1.0, 2.0) has rank 0)
            ranks = [rank(a) for a in args]
            return None if None in ranks else max(ranks)
        if fname in _FROM_SHAPE and v.args and all(k.arg == "dtype" for k in v.keywords):
            shape = v.args[0]
            if isinstance(shape, gast.Tuple):
                dims = [self.kind(e) for e in shape.elts]
                if _BOTTOM in dims:
                    return _BOTTOM
                # one axis per item, whatever the items hold (what is not an integer
                # raises): np.empty((x.shape[0], 3)) is a matrix for any x
                return None if any(isinstance(e, gast.Starred) for e in shape.elts) else \
                    len(dims)
            if isinstance(args[0], tuple):
                return args[0][1]  # np.zeros(x.shape)
            return 1 if args[0] == NUMBER else None
        items = self.display(v.args[0]) if len(v.args) == 1 else None
        if fname in _JOIN and items:
            # a display, or a name bound once to one and read only here (np.r_'s pieces,
            # transforms/index_tricks.py: t8 = [t4, t5]; t3 = np.concatenate(t8, axis=0))
            return self.joined(fname, items, v.keywords)
        if fname in ("array", "asarray") and items is not None and \
                all(k.arg == "dtype" for k in v.keywords):
            # np.array([a, b, ...]) of numbers, or of arrays of one rank
            ks = [self.kind(e) for e in items]
            if _BOTTOM in ks:
                return _BOTTOM
            if items and all(k == NUMBER for k in ks):
                return 1
            if items and all(isinstance(k, int) and k != NUMBER for k in ks) and \
                    len(set(ks)) == 1:
                return ks[0] + 1
            return None
        if fname in _LIKE and len(args) == 1 and all(k.arg == "dtype" for k in v.keywords):
            r = rank(args[0])
            return r  # an ndarray, even of a number (np.zeros_like(3.0) has rank 0)
        return None


# joining a literal sequence of arrays (analyses.kinds._Eval.joined)
_JOIN = frozenset({"concatenate", "stack", "hstack", "vstack"})


def _concatenator_piece(concatenator: gast.expr, item: Kind) -> Kind:
    """The kind of ``runtime.concatenator_piece("r_" | "c_", item)`` (``np.r_[item]``,
    transforms/index_tricks.py) for an item of kind ``item``: an ndarray of at least one
    axis (``r_``) or two (``c_``; a vector becomes a column), whatever the number or the
    ndarray's rank (a subclass has no kind here; a slice, a list: unknown)."""
    if item == _BOTTOM:
        return _BOTTOM
    if not (isinstance(concatenator, gast.Constant) and concatenator.value in ("r_", "c_")):
        return None
    r = rank(item)
    if r is None:
        return None
    return max(r, 1 if concatenator.value == "r_" else 2)


def _matmul(ra: int | None, rb: int | None, *, allow_number: bool) -> Kind:
    if ra is None or rb is None or ra == 0 or rb == 0:
        return None
    if ra == 1 and rb == 1:
        return NUMBER
    if ra == 1 or rb == 1:
        return max(ra, rb) - 1
    return max(ra, rb)


def _math() -> Any:
    import math

    return math


def expr_kind(expr: gast.expr, known: dict[str, Kind],
              resolve: Callable[[gast.expr], Any]) -> Kind:
    """The kind of an expression over names of known kinds (None: unknown)."""
    k = _Eval(dict(known), resolve).kind(expr)
    return None if k == _BOTTOM else k


def is_builtin(f: gast.expr, resolve: Callable[[gast.expr], Any]) -> bool:
    """True when ``f`` names the builtin of its name (``len``, ``range``): not a global or a
    cell that shadows it, and not something else."""
    if not isinstance(f, gast.Name):
        return False
    obj = resolve(f)
    return obj is None or obj is getattr(builtins, f.id, _NO_BUILTIN)


_NO_BUILTIN = object()
