"""Functions a library function calls back itself (a ``key=`` of ``sorted``, ``min``, ``max``,
``list.sort``, ``heapq.nsmallest``; the function ``filter`` or ``functools.reduce`` is
given): refused, when the enclosing function is compiled, where they write in place.

``sorted(xs, key=k)`` runs ``k`` on each item inside ``sorted``: adgen differentiates the
call by its rule (a permutation of the items) and never sees into ``k``. A key that writes
what it is given (``def key(a): a[0] *= 3; return a[1]``), or an array of its object, or a
global or closure array, changed values the gradient reads, unseen: every mode (reverse
under both policies, jvp, hessian) dropped the write, a silently wrong derivative. Such a
call is refused at the user's line, naming the function called back and its write.

Input: a function's lowered tree, its ``Parsed`` (for its nested defs and lambdas, set aside
by hoist_defs, and to resolve names). Read only. Checked: a callback that is a nested def or
a lambda of the function (its parameters' writes, read from its tree: those of the enclosing
function's names are nested_defs' refusal), or one the compiler can name (a module-level
function, a method of a global object, a ``functools.partial`` of one: compiled, and refused
when it writes a parameter, an attribute or item of its object, or a global or closure
array). A callback the function is given as a parameter is not known when it compiles, and
not checked here.
"""

from __future__ import annotations

import builtins
import functools
import itertools
import linecache
import sys
import types
from typing import Any

import gast
from adgen.transforms.feature_names import CALLBACK_CALLERS
from adgen.transforms.parse import Parsed
from adgen.transforms.walk import walk

# the library functions that call a function given by keyword key= on items they are given
_KEYED = (builtins.sorted, builtins.min, builtins.max, itertools.groupby)
# and those of these modules, read from them once imported (code holding heapq.nsmallest
# imported heapq): the first gradient imports neither (issue 15's cold start)
_KEYED_IN = {"heapq": ("nsmallest", "nlargest", "merge"),
             "bisect": ("bisect_left", "bisect_right", "insort_left", "insort_right")}
# those that call the function given as their first argument
_FIRST = (builtins.filter, builtins.map, functools.reduce, itertools.starmap,
          itertools.filterfalse, itertools.takewhile, itertools.dropwhile)


# the last names of their callees (pipeline imports this module only where a call has one:
# feature_names; tests/test_lazy_syntax_modules.py checks it names all of the above)
_NAMES = CALLBACK_CALLERS


def _named(f: gast.expr) -> str | None:
    """The last name of a dotted callee (``heapq.nsmallest``: ``nsmallest``)."""
    return f.id if isinstance(f, gast.Name) else f.attr if isinstance(f, gast.Attribute) \
        else None


def _keyed(callee: Any) -> bool:
    """Whether ``callee`` is one of ``_KEYED`` or ``_KEYED_IN``'s."""
    if any(callee is f for f in _KEYED):
        return True
    for module, names in _KEYED_IN.items():
        held = sys.modules.get(module)
        if held is not None and any(callee is getattr(held, n, None) for n in names):
            return True
    return False


def callbacks_of(call: gast.Call, callee: Any) -> list[gast.expr]:
    """The arguments of ``call`` (of ``callee``, resolved; None: not known) that the callee
    calls itself: a ``key=`` of ``sorted``/``min``/``max``/heapq's/bisect's/``.sort()``, the
    first argument of ``filter``/``map``/``functools.reduce``/itertools', ``func=`` (or the
    second argument) of ``itertools.accumulate``."""
    keyed = _keyed(callee) or (
        isinstance(call.func, gast.Attribute) and call.func.attr == "sort")
    out = [k.value for k in call.keywords if keyed and k.arg == "key"]
    if any(callee is f for f in _FIRST) and call.args:
        out.append(call.args[0])
    if callee is itertools.accumulate:
        out += [k.value for k in call.keywords if k.arg == "func"] + call.args[1:2]
    return [e for e in out if not (isinstance(e, gast.Constant) and e.value is None)]


def refuse_writing_callbacks(tree: gast.FunctionDef, parsed: Parsed) -> None:
    """Raises at the call where a callback of a library function (:func:`callbacks_of`)
    writes in place what adgen cannot follow (see the module docstring)."""
    from adgen.transforms.front import resolve

    defs = {d.name: d for d in parsed.nested_defs}
    stores: dict[str, list[gast.expr]] = {}
    for s in walk(tree):
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and \
                isinstance(s.targets[0], gast.Name):
            stores.setdefault(s.targets[0].id, []).append(s.value)
        elif isinstance(s, (gast.AugAssign, gast.For, gast.NamedExpr)):
            t = s.target
            if isinstance(t, gast.Name):
                stores.setdefault(t.id, []).extend([t, t])  # (bound more than once)
    bound = {n: v[0] for n, v in stores.items() if len(v) == 1}
    for call in walk(tree):
        if not isinstance(call, gast.Call) or _named(call.func) not in _NAMES:
            continue
        given = callbacks_of(call, resolve(parsed, call.func) if not (
            isinstance(call.func, gast.Attribute) and call.func.attr == "sort") else None)
        for e in given:
            what = _write_of(e, defs, bound, parsed)
            if what is not None:
                _refuse(call, bound.get(e.id, e) if isinstance(e, gast.Name) and
                        e.id not in defs and resolve(parsed, e) is None else e, what, parsed)


def _write_of(e: gast.expr, defs: dict[str, gast.FunctionDef], bound: dict[str, gast.expr],
              parsed: Parsed, depth: int = 4) -> str | None:
    """What the callback ``e`` writes in place, said for the refusal; None: nothing adgen
    can see, or ``e`` is not known when compiling. ``bound``: the names the function binds
    once, to their values (``t1 = KEYER.key``, ``t2 = functools.partial(scale, 3.0)`` of the
    normal form), followed ``depth`` times."""
    from adgen.transforms.front import resolve

    if isinstance(e, gast.Name) and e.id not in defs and e.id in bound and depth and \
            resolve(parsed, e) is None:
        return _write_of(bound[e.id], defs, bound, parsed, depth - 1)
    if isinstance(e, gast.Call) and e.args and depth and \
            resolve(parsed, e.func) is functools.partial:
        return _write_of(e.args[0], defs, bound, parsed, depth - 1)
    d = defs.get(e.id) if isinstance(e, gast.Name) else e if isinstance(e, gast.Lambda) \
        else None
    if d is not None:
        params = {a.id for a in [*d.args.args, *d.args.kwonlyargs, *d.args.posonlyargs,
                                 d.args.vararg, d.args.kwarg] if isinstance(a, gast.Name)}
        from adgen.transforms.nested_defs import first_write  # (a callback defined inside)

        found = first_write(d, params, parsed)
        if found is None:
            return None
        node, name, _ = found
        return f"its argument {name} (line {parsed.location(node).line})"
    from adgen.transforms.bindings import NOT_FOUND, dotted_object

    # (a bound method too, KEYER.key of a global object: front.resolve leaves it None)
    obj = dotted_object(parsed, e, builtin_names=True)
    return _compiled_writes(obj) if obj is not NOT_FOUND and obj is not None else None


def _compiled_writes(obj: Any) -> str | None:
    """What a Python function (a bound method, a partial of one) writes in place of its
    arguments, its object, or a global or closure array; None: nothing, or not a Python
    function adgen compiles."""
    inner = obj
    while isinstance(inner, functools.partial):
        inner = inner.func
    if isinstance(inner, types.MethodType):
        inner = inner.__func__
    if not isinstance(inner, types.FunctionType) or \
            str(getattr(inner, "__module__", "") or "").startswith(("numpy", "adgen.")):
        return None
    from adgen.rules import registry

    if registry.lookup(inner) is not None:
        return None
    from adgen.transforms.pipeline import compile_function

    from adgen.errors import AdgenError

    try:
        compiled = compile_function(inner)
    except AdgenError:
        return None  # refused where it is compiled for a call adgen follows
    if compiled.free_writes:
        w = compiled.free_writes[0]
        return f"a global or closure array ({w})"
    written = compiled.written_params if compiled.mutates_params else ()
    if written:
        names = "an argument" if written is True else ", ".join(sorted(written))
        return f"{names} (its parameters)"
    if getattr(compiled, "mutates_containers", False):
        return "an attribute or item of an object or container it is given"
    return None


def _refuse(call: gast.Call, e: gast.expr, what: str, parsed: Parsed) -> None:
    from adgen.errors import UnsupportedError

    shown = gast.unparse(e).strip()
    if isinstance(e, gast.Lambda) or shown.startswith("lambda_"):
        shown = "the lambda"
    elif isinstance(e, gast.Name) and shown[:1] == "t" and shown[1:].isdigit():
        shown = "the function given"  # (a temporary of the normal form)
    callee = gast.unparse(call.func).strip()
    line = linecache.getline(parsed.file, parsed.location(call).line)
    if callee == "sorted" and "sorted" not in line:
        # max(xs, key=k) / min(xs, key=k), which desugar writes as sorted(...)[0]
        callee = "max" if "max(" in line else "min" if "min(" in line else \
            "list.sort" if ".sort(" in line else callee
    raise UnsupportedError(
        f"{callee}() calls {shown} itself, on the items it is given, and {shown} writes "
        f"{what} in place: adgen differentiates {callee}() by its rule and cannot follow "
        "that write", parsed.location(call),
        hint=f"have {shown} only read what it is given (return a[1]) and make the change "
             f"before or after the {callee}() call, where adgen follows it (for a in xs: "
             "a[0] *= 3)")
