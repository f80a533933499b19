"""Where the forward notes that a slot of a list, dict or object may have changed
(``runtime.slots_changed``), so that a record of a container's slots made earlier in the pass
(``runtime.items_at``) is taken again only while none can have (issue 15: a model of N layers
stepped N times was walked once per step, N times N slots).

Called by the forward emitter (``reverse_forward``) for each statement of the user's it
emits: after a statement that may change a slot comes

    slots_changed()             an attribute stored or deleted, an item deleted, a call of
                                code adgen does not compile (a method of a list or a dict,
                                a library function, ``setattr``), any statement not listed
                                below
    slots_changed_by(x)         ``x[i] = v``, ``x += v``: a slot changes unless ``x`` is an
                                array or a number (checked as it runs)
    slots_changed_by_call(s)    after a call found when it runs (``call_forward``), given
                                its saved values: unless the callee was compiled (its own
                                forward notes its changes)

and nothing after a statement that binds names to values computed from names, constants,
operators, attributes and items read, and calls of NumPy, ``math`` and plain builtins, nor
after a direct call of a compiled callee's forward. What adgen assumes of reads, as
``runtime.changes_no_object`` and ``exit_records`` do: reading an attribute or an item runs
no code of the user's that changes a slot (a property of a class the code knows is a call of
its getter: transforms/properties.py; an operator of a user's class that it knows is a call
of the method: operator_methods).
"""

from __future__ import annotations

import builtins
import math
import types
from collections.abc import Callable
from typing import Any

import gast
import numpy as np
from adgen.transforms.analyses.kinds import NUMBER
from adgen.transforms.walk import walk

# builtins that make new values from their arguments and change none of them
_PLAIN_BUILTINS = frozenset(getattr(builtins, n) for n in (
    "abs", "all", "any", "bool", "complex", "divmod", "enumerate", "float", "frozenset", "hash",
    "id", "int", "isinstance", "issubclass", "len", "list", "max", "min", "pow", "range",
    "repr", "reversed", "round", "set", "slice", "sorted", "str", "sum", "tuple", "type",
    "zip", "dict", "callable", "format", "hex", "oct", "bin", "chr", "ord"))

# NumPy functions that call a function they are given (which may change a slot)
_CALLING = frozenset({"apply_along_axis", "apply_over_axes", "vectorize", "frompyfunc",
                      "piecewise", "fromfunction"})

# runtime functions the forward calls that change no slot of the user's
_PLAIN_RUNTIME = frozenset({
    "capture", "before_write", "write_region", "loop_sequence", "dict_keys", "unpacked_len",
    "index_with_derivative", "flat_view", "diagonal_index", "plain_result", "items_at",
    "entry_items", "refuse_shared", "method_of_class", "copy_before_loop", "copy_when_read",
    "slots_changed", "slots_changed_by", "slots_changed_by_call"})


def changes_noted(s: gast.stmt, resolve: Callable[[gast.expr], Any], kinds: dict[str, Any],
                  at: Callable[[gast.stmt], gast.stmt]) -> list[gast.stmt]:
    """The statements to put after the user's statement ``s`` as the forward runs it
    (``resolve``: the object a callee's name is bound to, or None; ``kinds``: the names'
    kinds where the compilation knows them, analyses.kinds; ``at``: locates a new
    statement at ``s``'s line)."""
    if isinstance(s, (gast.Pass, gast.Break, gast.Continue, gast.Return, gast.Raise,
                      gast.Global, gast.Nonlocal)):
        return []  # (Raise: its value is made before; nothing runs after it here)
    if isinstance(s, gast.Assign):
        stores = s.targets
    elif isinstance(s, (gast.AugAssign, gast.AnnAssign)):
        stores = [s.target]
    elif isinstance(s, gast.Expr):
        stores = []
    else:
        return [at(_note("slots_changed"))]
    value = getattr(s, "value", None)
    if value is not None and not _reads_only(value, resolve):
        return [at(_note("slots_changed"))]
    written: list[str] = []
    for t in stores:
        for n in _store_nodes(t):
            if isinstance(n, gast.Name):
                if isinstance(s, gast.AugAssign):
                    written.append(n.id)  # lst += [v] changes lst's items
            elif isinstance(n, gast.Subscript) and isinstance(n.value, gast.Name) and \
                    _reads_only(n.slice, resolve):
                written.append(n.value.id)
            else:  # an attribute, an item of an expression, a starred target
                return [at(_note("slots_changed"))]
    return [at(_note("slots_changed_by", gast.Name(w, gast.Load(), None, None)))
            for w in dict.fromkeys(written) if not _array_or_number(kinds.get(w))]


def _array_or_number(kind: Any) -> bool:
    """Whether a kind (analyses.kinds) is a number's or an array's (its rank, or an array of
    known parts): writing into one changes no slot (the check would be a no-op)."""
    return kind == NUMBER or (isinstance(kind, int) and not isinstance(kind, bool)) or \
        (isinstance(kind, tuple) and bool(kind) and kind[0] == "array")


def changes_noted_by_call(fcall: gast.Call, saved: str,
                          at: Callable[[gast.stmt], gast.stmt]) -> list[gast.stmt]:
    """After ``out, saved = fcall``: ``slots_changed_by_call(saved)`` where the call is
    found when it runs (``call_forward``); nothing after a compiled callee's forward."""
    if isinstance(fcall.func, gast.Name) and fcall.func.id == "call_forward":
        return [at(_note("slots_changed_by_call", gast.Name(saved, gast.Load(), None, None)))]
    return []


def _note(helper: str, *args: gast.expr) -> gast.stmt:
    return gast.Expr(value=gast.Call(func=gast.Name(helper, gast.Load(), None, None),
                                     args=list(args), keywords=[]))


def _store_nodes(t: gast.expr) -> list[gast.expr]:
    if isinstance(t, (gast.Tuple, gast.List)):
        return [n for e in t.elts for n in _store_nodes(e)]
    return [t]


def _reads_only(e: gast.expr, resolve: Callable[[gast.expr], Any]) -> bool:
    """Whether evaluating ``e`` changes no slot: every call in it is of a plain function."""
    for n in walk(e):
        if isinstance(n, gast.Call) and not _plain_callee(n, resolve):
            return False
        if isinstance(n, (gast.Yield, gast.YieldFrom, gast.Await)):
            return False
    return True


def _plain_callee(call: gast.Call, resolve: Callable[[gast.expr], Any]) -> bool:
    f = call.func
    if isinstance(f, gast.Name) and f.id in _PLAIN_RUNTIME:
        # (a name the passes call: adgen's own function, the user's being renamed)
        obj = resolve(f)
        return obj is None or str(getattr(obj, "__module__", "")).startswith("adgen")
    obj = resolve(f)
    if obj is None:
        return False
    if isinstance(obj, (types.BuiltinFunctionType, type)) and obj in _PLAIN_BUILTINS:
        return not any(k.arg == "key" for k in call.keywords)  # (sorted(xs, key=f))
    module = getattr(obj, "__module__", None) or ""
    if isinstance(obj, types.BuiltinFunctionType) and getattr(obj, "__self__", None) is math:
        return True
    if isinstance(obj, np.ufunc):
        return True
    return module.split(".")[0] == "numpy" and not module.startswith("numpy.random") and \
        callable(obj) and not isinstance(obj, type) and \
        getattr(obj, "__name__", "") not in _CALLING


def changes_noted_by_raise(at: Callable[[gast.stmt], gast.stmt]) -> list[gast.stmt]:
    """At the top of an ``except`` handler: the statement that raised may have changed a
    slot before it did (a call of code adgen does not compile), its note not reached."""
    return [at(_note("slots_changed"))]
