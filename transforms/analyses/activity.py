"""Activity: which names carry a derivative.

Input: a function in SSA form (read only). Output: :class:`Activity`, the set of *varied*
names (they depend on a parameter through a differentiable operation) and *useful* names
(their value may reach the returned value, directly or through a buffer they share).
A name is active when it is both. Ints, bools, shapes, lengths and comparisons never are.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

import gast
import numpy as np
from adgen.transforms.analyses.free_containers import filled_container, logs_into_container
from adgen.transforms.analyses.reports import reports
from adgen.transforms.node_index import loaded_names, nodes_of

# Functions and attributes whose result carries no derivative, whatever their inputs.
# (Not np.arange: arange(start, stop, step) with float bounds is start + i * step, and its
# rule gives start and step their gradients.)
NONDIFF_CALLS = frozenset({
    "len", "range", "int", "bool", "str", "isinstance", "hasattr", "type", "print", "repr", "id",
    "callable",
    "shape", "ndim", "size", "argmax", "argmin", "argsort", "argwhere", "nonzero",
    "isnan", "isinf", "isfinite", "isclose", "allclose", "array_equal", "searchsorted",
    "count_nonzero", "flatnonzero", "sign", "floor", "ceil", "rint", "trunc", "logical_and",
    "logical_or", "logical_not", "logical_xor", "greater", "less", "equal", "not_equal",
    "greater_equal", "less_equal", "any", "all", "ones", "zeros", "empty", "eye", "identity",
    "zeros_like", "ones_like", "empty_like", "loop_sequence_len", "tri", "triu_indices",
    "tril_indices", "diag_indices", "indices", "meshgrid_int", "perf_counter", "time",
    "dict_keys", "diagonal_index", "unpacked_len",
    # np.ndindex(shape) yields tuples of ints (for i in np.ndindex(x.shape): ... x[i] ...;
    # it was differentiated as NumPy's Python class and refused)
    "ndindex",
    # a hash is an int (hash(x.tobytes()) as a cache key); x.tobytes() itself stays active,
    # so np.frombuffer of it is refused (rules/no_gradient.py), never a silent zero
    "hash",
    # an index's slice(None) (np.add.at(out, (i, slice(None)), v)): forward mode gave it no
    # rule (MissingRuleError) where it sits beside an active write
    "slice",
})
NONDIFF_ATTRS = frozenset({"shape", "ndim", "size", "dtype", "itemsize", "nbytes", "strides",
                           # (only arrays have these: y.__array_interface__["shape"])
                           "__array_interface__", "__array_struct__", "__array_priority__"})
# Names the compiler's own passes call (lower_mutation): never a user's function.
_GENERATED_NONDIFF = frozenset({"loop_sequence_len", "dict_keys", "diagonal_index", "unpacked_len",
                                "meshgrid_int", "dataclass_replacer",
                                # (jvp code's check of a callee it runs as it is, kept as a
                                # statement where hessian differentiates it: unseen_calls)
                                "checked_callable"})


def _nondiff_objects() -> tuple[Any, ...]:
    """The objects NONDIFF_CALLS spell: the builtins, NumPy, math and time functions of those
    names. A call is classified by the object its name is bound to, never by its spelling (a
    user's ``def sign(x)`` has a derivative)."""
    import builtins
    import math
    import time

    out = []
    for n in NONDIFF_CALLS:
        for where in (builtins, np, math, time):
            if where is not builtins and hasattr(builtins, n):
                continue  # np.bool, np.str: NumPy's names of the builtin types
            obj = getattr(where, n, None)
            if obj is not None and not isinstance(obj, type(np)):
                out.append(obj)
    # the passes' own helpers (dict_keys of a for loop over d.items()) by identity too: in
    # generated code differentiated again (reverse over a jvp's code, hessian) they are
    # names bound in its module, resolved to these objects
    from adgen import runtime

    out += [getattr(runtime, n) for n in _GENERATED_NONDIFF if hasattr(runtime, n)]
    return tuple(out)


def _random_objects(random: Any) -> tuple[Any, ...]:
    """A random generator made from a seed (np.random.default_rng(seed) in a helper whose
    seed parameter might have held a float): it carries no derivative, so draws from it
    with constant parameters are constants. Kept apart from _nondiff_objects: reading
    ``np.random`` imports numpy.random (36 M instructions, more than a fifth of the first
    gradient), which no function that does not name it needs."""
    r = random
    return (r.default_rng, r.Generator, r.RandomState, r.SeedSequence, r.seed, r.PCG64,
            r.PCG64DXSM, r.MT19937, r.Philox, r.SFC64)


_NONDIFF_IDS: frozenset[int] = frozenset()
_NONDIFF_KEEP: tuple[Any, ...] = ()
_RANDOM_IDS: frozenset[int] = frozenset()
_RANDOM_KEEP: tuple[Any, ...] = ()


def _is_random_constructor(obj: Any) -> bool:
    """Whether ``obj`` is one of :func:`_random_objects`. Before numpy.random is imported
    no object can be (a name bound to one imported it: NumPy imports it on first use of
    ``np.random``), so it is not imported here."""
    global _RANDOM_IDS, _RANDOM_KEEP
    if not _RANDOM_IDS:
        random = sys.modules.get("numpy.random")
        if random is None:
            return False
        _RANDOM_KEEP = _random_objects(random)
        _RANDOM_IDS = frozenset(id(o) for o in _RANDOM_KEEP)
    return id(obj) in _RANDOM_IDS


def nondiff_object(obj: Any) -> bool:
    """Whether ``obj`` is one of the objects NONDIFF_CALLS spell (by identity): the dispatch
    asks it of a callee found when the call runs (``np.ndindex(*x.shape)``)."""
    global _NONDIFF_IDS, _NONDIFF_KEEP
    if not _NONDIFF_IDS:
        _NONDIFF_KEEP = _nondiff_objects()
        _NONDIFF_IDS = frozenset(id(o) for o in _NONDIFF_KEEP)
    return id(obj) in _NONDIFF_IDS


def _module_function(call: gast.Call, obj: Any, resolve: Callable[[gast.expr], Any]) -> bool:
    """``getattr(np, name)`` with a name computed when the code runs (``for name in ["sin",
    "cos"]``, a layer's ``self.act``): a function of a module, which has no derivative (the
    name is a string, whatever its activity says: a layer holding it is active)."""
    import builtins

    return obj is builtins.getattr and len(call.args) == 2 and not call.keywords and \
        isinstance(resolve(call.args[0]), types.ModuleType)


def nondiff_call(call: gast.Call, resolve: Callable[[gast.expr], Any] | None) -> bool:
    """True when ``call`` has no derivative whatever its arguments (``len``, ``np.argmax``).

    ``resolve`` gives the object a global name or attribute chain is bound to (None: a local
    value, or unknown). A resolved object is classified by identity; a method of a local value
    (``x.argmax()``) by the method's name, which the value's type binds at run time; a name the
    passes generated by its spelling. Without ``resolve``, by spelling (the stage dumps).
    """
    global _NONDIFF_IDS, _NONDIFF_KEEP
    name = _call_name(call)
    if name is None:
        return False
    if isinstance(call.func, gast.Name) and name in _GENERATED_NONDIFF:
        # the passes' own (a user's global of that name, called directly, was renamed by
        # rename_reserved): not the user's def diagonal_index(x) beside np.fill_diagonal
        return True
    obj = resolve(call.func) if resolve is not None else None
    if obj is not None:
        if not _NONDIFF_IDS:
            _NONDIFF_KEEP = _nondiff_objects()
            _NONDIFF_IDS = frozenset(id(o) for o in _NONDIFF_KEEP)
        return id(obj) in _NONDIFF_IDS or _is_random_constructor(obj) or \
            _rule_without_gradient(obj) or logs_into_container(call, obj) or reports(obj) or \
            is_stop_gradient(obj) or _module_function(call, obj, resolve)
    if resolve is not None and name == "call_starred" and isinstance(call.func, gast.Name):
        return _starred_nondiff(call, resolve)
    if resolve is None:
        return name in NONDIFF_CALLS
    if isinstance(call.func, gast.Attribute):
        return name in NONDIFF_CALLS
    return name in _GENERATED_NONDIFF


def _starred_nondiff(call: gast.Call, resolve: Callable[[gast.expr], Any]) -> bool:
    """``call_starred(len, None, xs, kw, line)`` (desugar: the user's ``len(*xs)``) of a
    function without a derivative, as its plain call is: forward mode gave the int a tangent
    of None, which the caller's tangent code added (``float + None``, a TypeError)."""
    if len(call.args) < 2 or \
            not (isinstance(call.args[1], gast.Constant) and call.args[1].value is None):
        return False
    fn = resolve(call.args[0])
    return fn is not None and (id(fn) in _NONDIFF_IDS or _rule_without_gradient(fn))


def is_stop_gradient(obj: Any) -> bool:
    """Whether ``obj`` is ``adgen.stop_gradient`` (its module is imported only when a
    function names it: compared by where it is defined)."""
    return isinstance(obj, types.FunctionType) and obj.__module__ == "adgen.stop" and \
        obj.__name__ == "stop_gradient"


def _rule_without_gradient(obj: Any) -> bool:
    """True when ``obj`` is a NumPy function whose rule differentiates none of its parameters
    (``np.result_type``) or a reference implementation's shape and dtype helper
    (``defnondiff``): its result carries no derivative, so what is computed from it
    (``np.finfo(t).eps``) needs no rule. (Not adgen.runtime's helpers without parameters to
    differentiate: a ``shadow_of`` is adjoint memory that second derivatives follow.)"""
    from adgen.rules import registry

    rule = registry.lookup(obj)
    if rule is None or rule.is_rrule or rule.diff:
        return False
    return rule in registry.all_nondiff() or \
        str(getattr(obj, "__module__", "") or "").startswith("numpy")


class Activity:
    """The activity facts of one function (a plain class: ``@dataclass`` compiles its
    generated methods when ``import adgen`` defines it, issue 15's cold start).

    Attributes:
        varied: names depending on a parameter through a differentiable operation.
        useful: names whose value may reach the returned value.
        constant_reads: the reads of a constant object's attributes no statement stores, and
        checked_stores: the stores the code checks for them (analyses.constant_attributes;
            forward mode only), by statement id.
    """

    _fields = ("varied", "useful", "constant_reads", "checked_stores")
    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __init__(self, varied: set[str] | None = None, useful: set[str] | None = None,
                 constant_reads: dict[int, tuple[str, str]] | None = None,
                 checked_stores: dict[int, tuple[str, str]] | None = None) -> None:
        self.varied = set() if varied is None else varied
        self.useful = set() if useful is None else useful
        self.constant_reads = {} if constant_reads is None else constant_reads
        self.checked_stores = {} if checked_stores is None else checked_stores
        # the flows the fixpoint of :func:`activity` ran over (analyses.varied_before)
        self.flow_data: tuple[Any, ...] | None = None

    def _values(self) -> tuple[Any, ...]:
        return (self.varied, self.useful, self.constant_reads, self.checked_stores)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()  # type: ignore[attr-defined]
        return NotImplemented

    def __repr__(self) -> str:
        return ("Activity(varied={!r}, useful={!r}, constant_reads={!r}, "
                "checked_stores={!r})".format(*self._values()))

    def replaced(self, **changes: Any) -> Activity:
        """A new Activity with these fields changed (as ``dataclasses.replace``); the others
        are shared with this one."""
        fields = dict(zip(self._fields, self._values()))
        fields.update(changes)
        return Activity(**fields)

    def active(self, name: str) -> bool:
        return name in self.varied and name in self.useful


def _call_name(call: gast.Call) -> str | None:
    f = call.func
    if isinstance(f, gast.Attribute):
        return f.attr
    if isinstance(f, gast.Name):
        return f.id
    return None


def flows(s: gast.stmt, resolve: Callable[[gast.expr], Any] | None = None,
          leaves_arguments: Callable[[Any], bool] | None = None,
          held_callees: frozenset[str] = frozenset(),
          leaving_defs: frozenset[str] = frozenset(),
          result_free: Callable[[Any], bool] | None = None
          ) -> list[tuple[set[str], set[str]]]:
    """(sources, targets) pairs: the values of the targets may depend on the sources.
    ``leaves_arguments``, ``leaving_defs``, ``result_free``: as :func:`activity`'s;
    ``held_callees``: as :func:`held_callees`."""
    if isinstance(s, gast.Assign):
        t = s.targets[0]
        v = s.value
        if isinstance(v, gast.Compare) or isinstance(v, gast.BoolOp):
            return []
        if isinstance(v, gast.UnaryOp) and isinstance(v.op, gast.Not):
            return []
        if isinstance(v, gast.Call) and nondiff_call(v, resolve):
            return []
        if isinstance(v, gast.Attribute) and v.attr in NONDIFF_ATTRS:
            return []
        if isinstance(t, gast.Name):
            src = loaded_names(v)
            if isinstance(v, gast.Call):
                # out= names the buffer written, not a value the result depends on
                src -= {k.value.id for k in v.keywords if k.arg == "out" and
                        isinstance(k.value, gast.Name)}
                src |= loaded_names(v.func) | {n for a in v.args for n in loaded_names(a)}
            if isinstance(v, gast.Subscript):
                src = loaded_names(v.value)  # the index carries no derivative
            out = [(src, {t.id})]
            if isinstance(v, gast.Call) and result_free is not None and \
                    _result_free(v, resolve, result_free):
                out = []  # n = count(x) of a helper returning len(x): an int
            if isinstance(v, gast.Call):
                # h = cell.step(x), s = helper(o, x): the user's code may store what it
                # computes in its object or arguments (self.h = ..., o.a = 2 * x), which then
                # vary with x as h does; left out, grad(f, argnums=1) dropped o's adjoint and
                # with it x's gradient through o.a (94% off)
                written = _may_write(v, resolve, leaves_arguments, held_callees, leaving_defs)
                if written:
                    out.append((src, written))
            return out
        # x[i] = v / x.a = v: the buffer depends on v
        base = t.value
        while isinstance(base, (gast.Subscript, gast.Attribute)):
            base = base.value
        if isinstance(base, gast.Name):
            return [(loaded_names(v), {base.id})]
        return []
    if isinstance(s, gast.AugAssign):
        return [(loaded_names(s.value) | {s.target.id}, {s.target.id})]
    if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call):
        call = s.value
        if nondiff_call(call, resolve) or filled_container(call, resolve) is not None:
            # (HIST.append(y) into a global list: a log, which the function does not read
            # back after it (analyses.free_containers refuses that), so HIST stays constant)
            return []
        srcs = loaded_names(call)
        # A call whose result is discarded can only matter through what it mutates.
        targets = set(passed_names(call))
        if isinstance(call.func, gast.Attribute) and isinstance(call.func.value, gast.Name):
            if call.func.attr in _LIST_ADDS:
                # lst.append(v) changes lst, not v (v's buffer, now also lst's item, is
                # followed through writes in place): the counter appended by a
                # comprehension over range(a.ndim) took a derivative from the list
                targets = set()
            targets.add(call.func.value.id)
        elif isinstance(call.func, gast.Name) and call.func.id in held_callees:
            targets.add(call.func.id)  # norm(x) changing norm.m (see held_callees)
        return [(srcs, targets)]
    return []


def passed_names(call: gast.Call) -> list[str]:
    """The names a call is handed, by position or by keyword (``step(u, out=lap)``: u and
    lap), or as items of a list, tuple or dict display (``sgd_step([W, b], [gW, gb])``): a
    callee may write any of them in place."""
    out: list[str] = []

    def add(e: gast.expr) -> None:
        if isinstance(e, gast.Name):
            out.append(e.id)
        elif isinstance(e, gast.Starred):
            add(e.value)
        elif isinstance(e, (gast.List, gast.Tuple)):
            for item in e.elts:
                add(item)
        elif isinstance(e, gast.Dict):
            for item in e.values:
                add(item)

    for a in [*call.args, *(k.value for k in call.keywords)]:
        add(a)
    return out


# methods of a list that add their arguments to it
_LIST_ADDS = frozenset({"append", "extend", "insert"})


def _may_write(call: gast.Call, resolve: Callable[[gast.expr], Any] | None,
               leaves_arguments: Callable[[Any], bool] | None = None,
               held_callees: frozenset[str] = frozenset(),
               leaving_defs: frozenset[str] = frozenset()) -> set[str]:
    """The names a call of the user's code may change in place: its receiver and arguments,
    for a method NumPy arrays, lists and dicts do not have (``o.m(...)``, known only when it
    runs), a function held in a variable (and the variable, one of ``held_callees``: a
    callable object's ``__call__`` may change it), or a Python function of the user's (none
    where ``leaves_arguments`` says it changes none of them, or a nested def named in
    ``leaving_defs``)."""
    import types

    from adgen.rules import registry

    f = call.func
    obj = resolve(f) if resolve is not None else None
    if isinstance(f, gast.Name) and f.id in held_callees:
        return set(passed_names(call)) | {f.id}  # its __call__ may change it, or them
    if isinstance(f, gast.Name) and f.id in leaving_defs:
        return set()  # inner(y) of def inner(v): return np.log(v) * x: y stays a constant
    if obj is not None and _dynamic_jvp_call(obj):
        # call_jvp(f, args, tangents, kw, owner, owner_dot) in jvp code differentiated again
        # (hessian, jacfwd(jacfwd(f))): f, found when it runs, may set attributes of its
        # object and of the object's tangent, or write the arguments and their tangents (m =
        # Model(c); m.step(x) setting self.h, m.h read after: m_dot.h was taken for a
        # constant, a silently wrong second derivative)
        # (the function's own names only: a global object such a call changes is refused
        # when it runs, and has no tangent here)
        return {n for n in passed_names(gast.Call(func=f, args=call.args[1:], keywords=[]))
                if resolve(gast.Name(n, gast.Load(), None, None)) is None}
    if isinstance(obj, type) and registry.lookup(obj) is None:
        # o = Acc(w, lst) / Cls(w, lst) of a class of the user's whose __init__ (adgen's for
        # a dataclass) appends to lst, or calls a method that does: lst then holds values
        # with a derivative (a constructor was taken to change nothing: sum(lst) after it
        # gave the appended values no gradient, silently); the function's own names only
        init = _init_of(obj) if isinstance(getattr(obj, "__init__", None),
                                           types.FunctionType) else None
        if not isinstance(init, types.FunctionType) or _library(init) or (
                leaves_arguments is not None and leaves_arguments(init)):
            return set()
        return {n for n in passed_names(call) if resolve is None or
                resolve(gast.Name(n, gast.Load(), None, None)) is None}
    if obj is not None:
        user = isinstance(obj, types.FunctionType) and registry.lookup(obj) is None and not str(
            getattr(obj, "__module__", "") or "").startswith(("numpy", "adgen."))
        if not user:
            return set()  # a NumPy function, a rule, a builtin: they write through out= only
        if leaves_arguments is not None and leaves_arguments(obj):
            return set()  # softmin(a, b, c, self.gamma): gamma stays a constant
    elif isinstance(f, gast.Attribute):
        if any(hasattr(t, f.attr) for t in (np.ndarray, list, dict, tuple, str)):
            return set()  # x.reshape(...), lst.index(...): the effects analysis knows these
        if leaves_arguments is not None and resolve is not None and \
                _method_leaves(resolve(f.value), f.attr, leaves_arguments):
            # MODEL.loss(x, y) of a global object whose method changes nothing: y stays a
            # constant (a zero tangent of it gave 0 * inf = nan in a Hessian in x at y = 0)
            return set()
    elif not isinstance(f, gast.Name):
        return set()
    names = set(passed_names(call))
    if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and obj is None:
        names.add(f.value.id)
    return names


def _init_of(cls: type) -> Any:
    """The ``__init__`` a call of ``cls`` runs, as adgen compiles it (a dataclass's, the one
    ``adgen.dataclass_init`` writes), or the class's own where that one cannot be written."""
    from adgen.dataclass_init import dataclass_init
    from adgen.errors import AdgenError

    try:
        return dataclass_init(cls) or cls.__init__
    except AdgenError:  # (an InitVar field: refused where the call is differentiated)
        return cls.__init__


def _dynamic_jvp_call(obj: Any) -> bool:
    """``obj`` is forward mode's call of a function found when it runs (adgen.runtime's
    ``call_jvp``, or ``call_jvp_tangent``, its tangent-only form), or of a class of the
    user's built there (``construct_jvp``: its ``__init__`` may append to a list it is given,
    o = B(w, lst); the hessian of sum(lst) * w[2] lost that list's half)."""
    return isinstance(obj, types.FunctionType) and \
        obj.__module__ in ("adgen.runtime", "adgen.tangent_calls") and \
        obj.__name__ in ("call_jvp", "call_jvp_tangent", "construct_jvp")


def _result_free(call: gast.Call, resolve: Callable[[gast.expr], Any] | None,
                 result_free: Callable[[Any], bool]) -> bool:
    """Whether ``call`` calls a Python function of the user's (resolved where the function
    compiles, and guarded there) whose result has no derivative (``result_free``)."""
    if resolve is None:
        return False
    obj = resolve(call.func)
    if obj is None and isinstance(call.func, gast.Attribute):
        obj = _plain_method(resolve(call.func.value), call.func.attr)  # SHAPE.rows(x)
    return isinstance(obj, types.FunctionType) and not _library(obj) and result_free(obj)


def _method_leaves(owner: Any, attr: str, leaves_arguments: Callable[[Any], bool]) -> bool:
    """``owner.attr`` is a plain method of the user's class (looked up on the class, not
    the object) that changes none of its arguments, its object included."""
    found = _plain_method(owner, attr)
    return found is not None and leaves_arguments(found)


def _plain_method(owner: Any, attr: str) -> types.FunctionType | None:
    """The function ``owner.attr`` calls when it is a plain method of ``owner``'s class
    (looked up on the class, not stored on the object), else None."""
    import inspect

    if owner is None or isinstance(owner, (types.ModuleType, type)):
        return None
    if attr in getattr(owner, "__dict__", {}):
        return None  # (a function stored on the object itself)
    found = inspect.getattr_static(type(owner), attr, None)
    return found if isinstance(found, types.FunctionType) else None


def held_callees(fn: gast.FunctionDef,
                 resolve: Callable[[gast.expr], Any] | None = None) -> frozenset[str]:
    """The names ``fn`` binds itself and calls that may hold a callable object whose
    ``__call__`` changes it (``norm = Norm(3); h = norm(x)`` setting ``self.m``, read as
    ``norm.m`` after; a zero gradient through it, silently, until session 23): a call of one
    may change the object called, as ``norm.update(x)`` may change ``norm``. Its parameters,
    loop targets and names bound to a value read (``n = self.norm``, ``b = a``) or built by
    a class of the user's with a ``__call__`` written in Python, or by a function of the
    user's; not nested defs and lambdas, names bound by a call of a library
    (``np.vectorize(...)``), free names (their calls are resolved where the function is
    compiled) or adgen's own helpers the passes call."""
    called = {c.func.id for c in nodes_of(fn, gast.Call) if isinstance(c.func, gast.Name)}
    if not called:
        return frozenset()
    args = fn.args
    params = {a.id for a in [*args.args, *args.kwonlyargs, *args.posonlyargs,
                             *[v for v in (args.vararg, args.kwarg) if v is not None]]
              if isinstance(a, gast.Name)}
    bound = {x.id for x in nodes_of(fn, gast.Name) if isinstance(x.ctx, gast.Store)} | params
    out = called & bound - {d.name for d in nodes_of(fn, gast.FunctionDef) if d is not fn}
    for st in nodes_of(fn, gast.Assign):
        t = st.targets[0]
        if isinstance(t, gast.Name) and t.id in out and not _may_hold_callable(st.value, resolve):
            out.discard(t.id)
    if resolve is not None:
        # a global or closure object of the user's called (NORM(x)), as NORM.update(x)
        for n in called - bound:
            obj = resolve(gast.Name(id=n, ctx=gast.Load(), annotation=None, type_comment=None))
            if obj is not None and _callable_object(obj):
                out.add(n)
    return frozenset(out)


def _callable_object(obj: Any) -> bool:
    """An instance of a class of the user's with a ``__call__`` written in Python."""
    if isinstance(obj, (type, types.FunctionType, types.MethodType, types.BuiltinFunctionType)):
        return False
    call = getattr(type(obj), "__call__", None)
    return isinstance(call, types.FunctionType) and not _library(call)


def _may_hold_callable(v: gast.expr, resolve: Callable[[gast.expr], Any] | None) -> bool:
    """Whether a name bound to ``v`` may hold a callable object of the user's (see
    :func:`held_callees`)."""
    if isinstance(v, gast.Lambda):
        return False
    if not isinstance(v, gast.Call):
        return True
    obj = resolve(v.func) if resolve is not None else None
    if obj is None:
        return True
    if isinstance(obj, type):
        call = getattr(obj, "__call__", None)
        return isinstance(call, types.FunctionType) and not _library(call)
    return isinstance(obj, types.FunctionType) and not _library(obj)


def _library(fn: Any) -> bool:
    module = str(getattr(fn, "__module__", "") or "")
    return module.startswith(("numpy", "scipy", "adgen.", "functools"))


def activity(fn: gast.FunctionDef, aliases: dict[str, set[str]] | None = None,
             outputs: set[str] | None = None,
             closures: list[tuple[set[str], set[str]]] | None = None,
             wrt: set[str] | None = None,
             resolve: Callable[[gast.expr], Any] | None = None,
             writes: set[int] | None = None,
             leaves_arguments: Callable[[Any], bool] | None = None,
             leaving_defs: frozenset[str] = frozenset(),
             attribute_constants: bool = False,
             result_free: Callable[[Any], bool] | None = None) -> Activity:
    """Computes varied and useful names by fixpoint over all statements (flow-insensitive).

    Args:
        fn: the function in SSA form.
        aliases: name -> names that may share its buffer (from the effects analysis); a write
            through one name makes all of them varied, and usefulness spreads across them.
        outputs: names whose final value is an output besides the return value (parameters
            written in place: a caller sees them).
        closures: (free variables, def name) of nested defs: calling the def reads them.
        wrt: the parameters differentiated (None: all of them).
        resolve: a global name or attribute chain -> the object it is bound to (None: local
            or unknown); calls are classified by that object (``nondiff_call``).
        writes: ids of the statements that write a buffer in place (the effects analysis's
            write sites, mutating calls included). Given, a plain binding ``t = e`` that is
            none of them varies ``t`` alone: binding a name changes no buffer, so the names
            that may share ``t``'s buffer keep their values (an argument that may alias
            another is not varied by a solve that reads it). None: every flow varies the
            names sharing its target's buffer.
        leaves_arguments: for a user function called, whether it changes none of the values
            passed to it (transforms.argument_writes); then its call varies its result only.
            None: every argument of a user function's call varies with what it computes.
        leaving_defs: the names of the nested defs whose calls change none of the values
            passed to them (forward mode's summary of each, ``argument_writes``): their
            calls vary their result only.
        attribute_constants: whether a read of an attribute of a parameter given no tangent
            that no statement stores takes no variation from a store of another attribute
            (``analyses.constant_attributes``; forward mode, with ``wrt`` and ``writes``).
        result_free: for a user function called by name, whether what it returns has no
            derivative whatever its arguments (``return len(x)``; forward mode's
            ``result_derivatives.returns_no_derivative``): its result is then a constant (an
            int's zero tangent made ``x ** float(n)``'s exponent term 0 * nan).
    """
    aliases = aliases or {}
    stmts = list(nodes_of(fn, gast.stmt))
    pairs: list[tuple[set[str], set[str]]] = []
    owners: list[gast.stmt | None] = []  # the statement of each pair
    bindings: set[int] = set()  # indices of the pairs of plain bindings (see writes)
    callees = held_callees(fn, resolve)
    local = {s.targets[0].id for s in stmts if isinstance(s, gast.Assign) and
             isinstance(s.targets[0], gast.Name)}
    spread_pairs: list[int] = []
    for s in stmts:
        for p in flows(s, resolve, leaves_arguments, callees, leaving_defs, result_free):
            if writes is not None and isinstance(s, gast.Assign) and \
                    isinstance(s.targets[0], gast.Name) and id(s) not in writes:
                spread = set() if p[1] == {s.targets[0].id} else \
                    _spread_by_call(s.value, p[1], resolve, local)
                if spread:
                    # h = g.add(x) of an object g the function made, g.add appending to a list
                    # g holds: what the call changes varies the function's own names sharing
                    # it (the list given to g's constructor; taken for a binding, the list
                    # stayed a constant and its items' gradient was lost, silently), not a
                    # global (a global object's array would be taken for one with a
                    # derivative)
                    spread_pairs.append(len(pairs))
                    pairs.append((p[0], spread))
                    owners.append(s)
                    p = (p[0], p[1] - spread)
                bindings.add(len(pairs))
            pairs.append(p)
            owners.append(s)
    pairs += list(closures or [])
    owners += [None] * len(closures or [])
    act = Activity()
    act.varied = {a.id for a in fn.args.args if wrt is None or a.id in wrt}
    leave: dict[int, set[str]] = {}  # pair -> the names its write leaves as they were
    if attribute_constants and wrt is not None and writes is not None:
        from adgen.transforms.analyses.constant_attributes import constant_attributes

        found = constant_attributes(fn, pairs, owners, bindings, aliases, set(act.varied),
                                    list(closures or []), callees, resolve,
                                    frozenset(NONDIFF_ATTRS))
        act.constant_reads, act.checked_stores = found.reads, found.stores
        for k, s in enumerate(owners):
            if s is not None and id(s) in found.reads:
                pairs[k] = (set(), pairs[k][1])  # t = p.a: p's variation does not reach t
            elif s is not None and id(s) in found.stores:
                leave[k] = found.kept[found.stores[id(s)][0]]
    for k in spread_pairs:
        leave[k] = leave.get(k, set()) | {
            n for d in pairs[k][1] for n in aliases.get(d, set()) if n not in local}
    # (dt = 0.01 handed to a helper that writes its array arguments: no call changes a
    # number, and strict refused the helper's caller, taking dt for a value with a derivative)
    constants = constant_numbers(fn) | dtype_names(fn, resolve) | range_indices(fn, resolve)
    # (what the fixpoint starts from, for analyses.varied_before)
    act.flow_data = (pairs, owners, bindings, aliases, leave, constants, set(act.varied))
    changed = True
    while changed:
        changed = False
        for k, (src, dst) in enumerate(pairs):
            if src & act.varied:
                for d in dst:
                    for n in {d} if k in bindings else {d} | aliases.get(d, set()) - \
                            leave.get(k, set()):
                        if n not in act.varied and n not in constants:
                            act.varied.add(n)
                            changed = True
    returns = [s for s in stmts if isinstance(s, gast.Return) and s.value is not None]
    for r in returns:
        act.useful |= loaded_names(r.value)
    act.useful |= outputs or set()
    changed = True
    while changed:
        changed = False
        # usefulness flows from a reader back to what it reads: the statements last first
        # reach the fixpoint in a round or two (first first took a round per link)
        for src, dst in reversed(pairs):
            if dst & act.useful:
                for n in src:
                    for m in {n} | aliases.get(n, set()):
                        if m not in act.useful:
                            act.useful.add(m)
                            changed = True
        for n in list(act.useful):
            for m in aliases.get(n, set()):
                if m not in act.useful:
                    act.useful.add(m)
                    changed = True
    return act


def _spread_by_call(v: gast.expr, written: set[str],
                    resolve: Callable[[gast.expr], Any] | None, local: set[str]) -> set[str]:
    """Of the names the call ``v`` may change (``written``), those whose change varies the
    names sharing their memory: the receiver of a method of an object the function made
    (``g.add(x)``), and the objects handed to jvp code adgen generated (``add_jvp(g, x, g_dot,
    x_dot)``, differentiated again). Not the arguments of other calls (a keyword constant a
    forwarder hands on, ``f(*args, **kwargs)``, or a global object's: they stay as they were,
    as before session 29)."""
    if not isinstance(v, gast.Call):
        return set()
    f = v.func
    if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and \
            f.value.id in local:
        return written & {f.value.id}
    if isinstance(f, gast.Attribute) and v.args and isinstance(v.args[0], gast.Name) and \
            v.args[0].id in local and resolve is not None and \
            isinstance(resolve(f.value), type):
        return written & {v.args[0].id}  # Given.add(g, x), as the compiler writes g.add(x)
    obj = resolve(f) if resolve is not None and isinstance(f, gast.Name) else None
    code = getattr(obj, "__code__", None)
    if code is not None and str(code.co_filename).startswith("<adgen") and \
            not _dynamic_jvp_call(obj):
        return written & local
    return set()


def range_indices(fn: gast.FunctionDef, resolve: Callable[[gast.expr], Any] | None
                  ) -> set[str]:
    """The names bound only as the variable of a loop over the builtin ``range``: ints, which
    no call changes in place, whatever their names are handed to (``for i in range(2):
    worker(x, out, i)`` with ``worker`` writing ``out``: forward mode took ``i`` for a value
    with a derivative and refused the loop)."""
    if resolve is None:
        return set()
    stores: dict[str, int] = {}
    for x in nodes_of(fn, gast.Name):
        if isinstance(x.ctx, (gast.Store, gast.Del)):
            stores[x.id] = stores.get(x.id, 0) + 1
    loops: dict[str, int] = {}
    for st in nodes_of(fn, gast.For):
        if isinstance(st.target, gast.Name) and isinstance(st.iter, gast.Call) and \
                resolve(st.iter.func) is range:
            loops[st.target.id] = loops.get(st.target.id, 0) + 1
    args = fn.args
    params = {a.id for a in [*args.args, *args.kwonlyargs, *args.posonlyargs]
              if isinstance(a, gast.Name)}
    return {n for n, k in loops.items() if stores.get(n) == k and n not in params}


def dtype_names(fn: gast.FunctionDef, resolve: Callable[[gast.expr], Any] | None
                ) -> set[str]:
    """The names bound once, to a number type or a dtype the resolver finds (``t =
    np.float64``, ``float``, ``np.dtype("f8")`` held globally): they hold no derivative, also
    where they are handed to a call whose result may share memory with its arguments and is
    then written in place (``y = np.astype(z, np.float64, copy=False); y[1:] = v`` varied the
    dtype, whose zero tangent's adjoint raised NumPy's casting error in hessian)."""
    if resolve is None:
        return set()
    stores: dict[str, int] = {}
    for x in nodes_of(fn, gast.Name):
        if isinstance(x.ctx, (gast.Store, gast.Del)):
            stores[x.id] = stores.get(x.id, 0) + 1
    out = set()
    for st in nodes_of(fn, gast.Assign):
        t = st.targets[0] if len(st.targets) == 1 else None
        if not isinstance(t, gast.Name) or stores.get(t.id) != 1 or \
                not isinstance(st.value, (gast.Name, gast.Attribute)):
            continue
        obj = resolve(st.value)
        if isinstance(obj, np.dtype) or any(obj is k for k in (float, int, bool, complex)) or (
                isinstance(obj, type) and issubclass(obj, np.generic)):
            out.add(t.id)
    return out


_ARITHMETIC = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.FloorDiv, gast.Mod, gast.Pow)


def constant_numbers(fn: gast.FunctionDef) -> set[str]:
    """The names whose every binding is ``n = e``, ``e`` arithmetic of number constants and
    such names (``dt = 0.01``, ``h = dt / 2``, a loop's ``dt_1 = dt_2 * 0.5``): Python
    numbers, which no call changes in place and no parameter reaches, whatever their names
    are handed to."""
    args = fn.args
    params = {a.id for a in [*args.args, *args.kwonlyargs, *args.posonlyargs,
                             *[v for v in (args.vararg, args.kwarg) if v is not None]]
              if isinstance(a, gast.Name)}
    stores: dict[str, int] = {}
    values: dict[str, list[gast.expr]] = {}
    for x in nodes_of(fn, gast.Name):
        if isinstance(x.ctx, (gast.Store, gast.Del)):
            stores[x.id] = stores.get(x.id, 0) + 1
    for st in nodes_of(fn, gast.Assign):
        if len(st.targets) == 1 and isinstance(st.targets[0], gast.Name):
            values.setdefault(st.targets[0].id, []).append(st.value)
    declared = {n for st in nodes_of(fn, gast.Global, gast.Nonlocal) for n in st.names}
    found = {n for n, vs in values.items() if len(vs) == stores.get(n) and
             n not in params and n not in declared}

    def constant(e: gast.expr) -> bool:
        if isinstance(e, gast.Constant):
            return type(e.value) in (int, float)
        if isinstance(e, gast.Name):
            return e.id in found
        if isinstance(e, gast.BinOp):
            return isinstance(e.op, _ARITHMETIC) and constant(e.left) and constant(e.right)
        if isinstance(e, gast.UnaryOp):
            return isinstance(e.op, (gast.USub, gast.UAdd)) and constant(e.operand)
        return False

    changed = True
    while changed:  # (the greatest set: a loop's names bound to each other stay in it)
        changed = False
        for n in sorted(found):
            if not all(constant(v) for v in values[n]):
                found.discard(n)
                changed = True
    return found
