"""What the function's callees, compiled first, say about a call of them: which arguments the
user function it runs calls as they are (:func:`parameters_called`, for unseen_calls), whether
it reads a global or closure array (:func:`reads_free`, for free_writes), and the methods of
objects the function builds from a user class or a global object's, compiled so explain lists
their sites before any call runs (:func:`method_callees`). Each compiles the callee through
``pipeline.compile_function`` (cached), imported when first needed: the pipeline imports this
module."""

from __future__ import annotations

from typing import Any

import gast
from adgen.transforms.front import is_bound_method, is_user_function, resolve
from adgen.transforms.parse import Parsed
from adgen.transforms.walk import walk

from adgen.errors import AdgenError
from adgen.rules import registry


def parameters_called(parsed: Parsed, mutation: str, call: gast.Call) -> tuple[int, ...]:
    """The positions of ``call``'s arguments that the function of the user's it runs calls
    as it is (its ``calls_parameters``; transforms/unseen_calls.py); () for anything else."""
    obj = resolve(parsed, call.func)
    if obj is None or not is_user_function(obj) or registry.lookup(obj) is not None or \
            str(getattr(obj, "__module__", "")).startswith(("numpy", "adgen.")):
        return ()
    from adgen.transforms.pipeline import compile_function

    try:
        return compile_function(obj, mutation=mutation).calls_parameters
    except AdgenError:
        return ()  # the caller's own compilation reports it (mutating_call)


def reads_free(parsed: Parsed, mutation: str, call: gast.Call) -> str | None:
    """The name of the function of the user's that ``call`` runs, when it (or a function it
    calls) reads a global or closure array; else None (transforms/free_writes.py)."""
    obj = resolve(parsed, call.func)
    if obj is None or not is_user_function(obj) or registry.lookup(obj) is not None or \
            str(getattr(obj, "__module__", "")).startswith(("numpy", "adgen.")):
        return None
    from adgen.transforms.pipeline import compile_function

    try:
        reads = compile_function(obj, mutation=mutation).free_reads
    except AdgenError:
        return None  # the caller's own compilation reports it (mutating_call)
    return getattr(obj, "__qualname__", str(obj)) if reads else None


def method_callees(parsed: Parsed, tree: gast.FunctionDef, mutation: str) -> list[Any]:
    """Methods called on objects the function builds from a user class (``m = Cls(...)``;
    ``m.step(x)``): compiled now, so explain lists their sites before any call runs."""
    from adgen.transforms.pipeline import compile_function

    classes: dict[str, type] = {}
    everything = list(walk(tree))  # walked once for both loops
    for st in everything:
        if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name) and \
                isinstance(st.value, gast.Call):
            cls = resolve(parsed, st.value.func)
            if isinstance(cls, type):
                classes[st.targets[0].id] = cls
    out: list[Any] = []
    for node in everything:
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and \
                isinstance(node.func.value, gast.Name) and \
                not parsed.is_local(node.func.value.id) and is_bound_method(bound := getattr(
                    parsed.namespace.get(node.func.value.id), node.func.attr, None)) and \
                registry.reference_of(bound) is None:
            # sc.scale_inplace(w) of a global object: as one the function builds (not
            # multivariate_normal.logpdf: adgen's reference is compiled for it)
            classes.setdefault(node.func.value.id, type(parsed.namespace[node.func.value.id]))
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and \
                isinstance(node.func.value, gast.Name) and node.func.value.id in classes:
            method = getattr(classes[node.func.value.id], node.func.attr, None)
            if is_user_function(method):
                try:
                    compiled = compile_function(method, mutation=mutation)
                except AdgenError:
                    continue  # reported when the call runs
                out.append(compiled)
                # self.calls += 1: the call checks that the attributes hold numbers, and
                # names the update where it cannot follow it (dispatch)
                if compiled.mutates_params and not (compiled.number_updates is not None and
                                                    compiled.number_updates.sites):
                    from adgen.errors import UnsupportedError

                    # a method call runs through call_forward, which cannot follow the write
                    at = parsed.location(node)
                    who = node.func.value.id
                    if f"{who}.{node.func.attr}(" not in at.source_line:
                        # a temporary of the normal form (Signal(3).power(a)): the class
                        who = f"{classes[who].__name__}(...)"
                    obj = who if who.isidentifier() else "obj"
                    # (an object the function builds, whose method writes an array of it:
                    # passed in as an argument, its class is known and the write followed)
                    passed = f"build the object outside and pass it in (def loss({obj}, ...): " \
                        f"{obj}.{node.func.attr}(...) is followed), or " \
                        if parsed.is_local(node.func.value.id) and obj != "obj" else ""
                    raise UnsupportedError(
                        f"{who}.{node.func.attr}() writes an array of the "
                        "object (or an argument) in place, and adgen cannot follow a write "
                        "through a method call", at,
                        hint=f"{passed}return the new array from the method and assign it "
                             f"({obj}.buf = {obj}.{node.func.attr}(...))" +
                             ("" if passed else ", or write it in this function"))
    for cls in set(classes.values()):
        init = cls.__dict__.get("__init__")
        if is_user_function(init):
            try:
                out.append(compile_function(init, mutation=mutation))
            except AdgenError:
                pass
    return out


def returns_free_memory(parsed: Parsed, mutation: str, call: gast.Call) -> bool:
    """Whether ``call``, of a function of the user's, may return memory that outlives the
    call, which a write into its result changes for every later reader: a helper returning a
    global or closure array (``Compiled.returns_free``: ``return ONES``, ``return
    CACHE[n]``), one returning a parameter ``call`` leaves to its array default, and a
    function cached by ``functools.lru_cache`` / ``functools.cache`` (each call with the
    same arguments returns the same object), and a class whose ``__init__`` stores such
    memory in the object (``self.x = X0``)."""
    import inspect
    import types

    import numpy as np

    obj = resolve(parsed, call.func)
    if obj is None or registry.lookup(obj) is not None:
        return False
    if _cached(parsed, call.func) and not _library_function(obj):
        return True
    if isinstance(obj, type) and isinstance(obj.__dict__.get("__init__"), types.FunctionType) \
            and not _library_function(obj.__init__):
        # s = W() whose __init__ stores a global array (self.x = X0): s holds its memory
        obj = obj.__init__
        call = gast.Call(func=call.func, args=[gast.Name("self", gast.Load(), None, None),
                                               *call.args], keywords=call.keywords)
    if not isinstance(obj, types.FunctionType) or _library_function(obj) or \
            hasattr(obj, "__wrapped__"):
        return False
    from adgen.transforms.pipeline import compile_function

    try:
        compiled = compile_function(obj, mutation=mutation)
    except AdgenError:
        return False  # the caller's own compilation reports it (mutating_call)
    if getattr(compiled, "returns_free", False):
        return True
    if not compiled.returns_params or any(isinstance(a, gast.Starred) for a in call.args) \
            or any(k.arg is None for k in call.keywords):
        return False
    params = list(inspect.signature(obj).parameters.values())
    passed = {k.arg for k in call.keywords}
    return any(len(call.args) <= k < len(params) and params[k].name not in passed and
               isinstance(params[k].default, (np.ndarray, list, dict))
               for k in compiled.returns_params)


def _cached(parsed: Parsed, func: gast.expr) -> bool:
    """Whether ``func`` names a ``functools.lru_cache`` / ``functools.cache`` wrapper (which
    :func:`resolve` and the namespace give as the function it wraps: adgen runs that, so its
    array result is a new one each time under adgen, the cache's one object in Python)."""
    import functools

    from adgen.transforms.bindings import NOT_FOUND, dotted_object

    fn = parsed.fn
    if isinstance(func, gast.Name):
        code = getattr(fn, "__code__", None)
        free = code.co_freevars if code is not None else ()
        if func.id in free and fn.__closure__:
            try:
                raw = fn.__closure__[free.index(func.id)].cell_contents
            except ValueError:
                return False
        else:
            raw = getattr(fn, "__globals__", {}).get(func.id)
    else:
        raw = dotted_object(parsed, func, builtin_names=True)
    return raw is not NOT_FOUND and isinstance(raw, functools._lru_cache_wrapper)  # noqa: SLF001


def _library_function(obj: Any) -> bool:
    """A function of NumPy, SciPy, adgen, the standard library or an installed package: its
    summary is not asked for (None: any argument, as before). Compiling it for one walked
    into scipy.special.logsumexp's array-API helpers and from there into jax's dtype code,
    thousands of compilations (the hvp of a loss calling logsumexp hung CI)."""
    import sys

    root = str(getattr(obj, "__module__", "") or "").split(".")[0]
    if root in ("numpy", "scipy", "adgen", "jax", "torch") or root in sys.stdlib_module_names:
        return True
    file = getattr(getattr(obj, "__code__", None), "co_filename", "") or ""
    return "site-packages" in file or "dist-packages" in file


def viewed_arguments(parsed: Parsed, mutation: str, call: gast.Call) -> list[gast.expr] | None:
    """The arguments of ``call`` whose memory its result may share, when it runs a function
    of the user's whose summary says which of its parameters it may return
    (``Compiled.returns_params``: ``laplace(u, out=lap)`` returns ``lap``, never ``u``);
    None for any other call, a parameter left to its default, ``*xs`` or ``**kw``."""
    import types

    obj = resolve(parsed, call.func)
    if not isinstance(obj, types.FunctionType) or registry.lookup(obj) is not None or \
            _library_function(obj) or \
            any(isinstance(a, gast.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords) or hasattr(obj, "__wrapped__"):
        return None
    from adgen.transforms.pipeline import compile_function

    try:
        returned = compile_function(obj, mutation=mutation).returns_params
    except AdgenError:
        return None  # the caller's own compilation reports it (mutating_call)
    if returned is None:
        return None
    import inspect

    names = list(inspect.signature(obj).parameters)
    by_name = {k.arg: k.value for k in call.keywords}
    out: list[gast.expr] = []
    for k in sorted(returned):
        if k < len(call.args):
            out.append(call.args[k])
        elif k < len(names) and names[k] in by_name:
            out.append(by_name[names[k]])
        else:
            return None  # its default: memory the call does not show
    return out
