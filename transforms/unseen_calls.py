"""Calls the forward runs as they are, of a function held in a local variable: checked when
they run.

A call whose callee adgen cannot name when it compiles (``cb()`` of a parameter, ``c()`` of
a list's item, ``t1()`` for ``CB["cb"]()``) and through which no derivative flows is left as
it is in the forward: adgen neither differentiates it nor sees what it writes. A callee that
writes an array in place that the call does not pass it (a global scratch array, its
object's buffer) changed values the gradient reads, unseen (src/adgen/callbacks.py). Such a
call's callee is wrapped: ``cb(3.0)`` becomes ``checked_callable(cb)(3.0)``, which refuses
that callee when the call runs and returns it unchanged otherwise.

Input: the finished forward of the reverse pass (a ``gast.FunctionDef``). Output: the same
function, where each call whose callee is a name the forward binds itself (a parameter, a
local; not a ``def``), an item (``hooks["h"]()``) or an attribute of such a name other than a
method of ndarrays, lists, dicts and strings (``opts.hook()``, ``rng.normal(3)``) calls it
through ``checked_callable``, and so does each argument such
a name gives a function of the user's that calls its parameter as it is (``run(cb)``, where
``run`` calls ``cb()``: ``run(checked_callable(cb))``). Calls that go through adgen's
dispatch (``call_forward(cb, x)``), of globals, of attributes and inside nested defs and
lambdas (whose writes are checked where the function differentiated defines them:
free_writes.refuse_unseen_writes) are left alone. A call that analyses.free_containers marked
(``READS_AFTER``: the function reads a global or closure list or dict into its result after
it) passes those containers too: ``checked_callable(cb, None, {'CACHE': (CACHE, 13)},
'file.py')(y)``, also around ``call_forward`` and ``call_jvp`` (``z = cb(y)``), which
refuses a value with a derivative the callee put there, at line 13. Nothing else changes.

Forward mode wraps the same calls in its jvp code (pipeline._compile_tangent), and that code
is itself differentiated (hessian and hvp: reverse over forward; third derivatives):
:func:`unwrap_checked_calls`, run by the front end on generated code, reads
``checked_callable(cb)(3.0)`` there as the call ``cb(3.0)`` (and ``run(checked_callable(cb))``
as ``run(cb)``), which the mode differentiating it wraps again where this module says so.
"""

from __future__ import annotations

import linecache
from collections.abc import Callable
from typing import Any

import gast
import numpy as np
from adgen.transforms.analyses.free_containers import READS_AFTER
from adgen.transforms.walk import body_nodes

from adgen.errors import Location

CHECK = "checked_callable"  # adgen.runtime's (src/adgen/callbacks.py)
# methods of ndarrays and of the builtin containers and strings: a call of one on a local
# (t.sum(), hist.append(v)) writes nothing but its receiver, which adgen sees
_KNOWN_METHODS = frozenset(n for t in (np.ndarray, list, dict, set, tuple, str, float, int)
                           for n in dir(t))


def check_unseen_calls(fn: gast.FunctionDef,
                       called: Callable[[gast.Call], tuple[int, ...]]) -> tuple[int, ...]:
    """Wraps, in place, the callee of each call in ``fn``'s own body whose callee is a name
    ``fn`` binds (see the module docstring), and the arguments that are such names at the
    positions ``called(call)`` gives: those a function of the user's called as it is
    (``run(cb)``) calls as it is itself, at any depth (its ``Compiled.calls_parameters``).

    Returns:
        The positions of ``fn``'s parameters it calls that way, directly or through such a
        function: ``fn``'s own ``calls_parameters``.
    """
    # the nodes of fn's body, not those inside a nested def, class or lambda (their headers'
    # names are included)
    own = list(body_nodes(fn.body))
    defs = {n.name for n in own if isinstance(n, (gast.FunctionDef, gast.ClassDef))}
    args = fn.args
    bound = {a.id for a in [*args.args, *args.kwonlyargs, *args.posonlyargs,
                            args.vararg, args.kwarg] if isinstance(a, gast.Name)}
    bound |= {n.id for n in own if isinstance(n, gast.Name) and
              isinstance(n.ctx, gast.Store)}
    bound -= defs
    checked: set[str] = set()
    for node in own:
        if not isinstance(node, gast.Call):
            continue
        f = node.func
        if isinstance(f, gast.Name) and f.id in ("call_forward", "call_jvp") and \
                hasattr(node, READS_AFTER):
            # z = cb(y), differentiated through adgen's dispatch, followed by a read of a
            # global container cb may have stored into (analyses.free_containers)
            node.func = _checked(f, None, getattr(node, READS_AFTER))
            continue
        if isinstance(f, gast.Subscript) or (
                isinstance(f, gast.Attribute) and f.attr not in _KNOWN_METHODS and
                isinstance(f.value, gast.Name) and f.value.id in bound):
            # hooks["h"](), opts.hook(): a function held by a container or an object (for an
            # attribute, the object too: a method of its own, self.reset(), may write it)
            node.func = _checked(f, f.value if isinstance(f, gast.Attribute) else None,
                                 getattr(node, READS_AFTER, None))
            continue
        if (isinstance(f, gast.Name) and f.id in _KEYED) or (
                isinstance(f, gast.Attribute) and f.attr in _KEYED):
            # sorted(xs, key=k) with k a parameter or a local: a key writing what it is
            # given is refused when the call runs (transforms/called_back.py checks those
            # the compiler can name)
            for k in node.keywords:
                if k.arg == "key" and isinstance(k.value, gast.Name) and k.value.id in bound:
                    k.value = _checked(k.value, given=True)
        if isinstance(f, gast.Call) and not (isinstance(f.func, gast.Name) and
                                             f.func.id == CHECK):
            # functools.partial(operator.setitem, y)(1, v), make()(x): a callee a call
            # made (the normal form's temporary folded back), checked as one held in a name
            node.func = _checked(f, None, getattr(node, READS_AFTER, None))
            continue
        if not isinstance(f, gast.Name):
            continue
        if f.id in bound:
            checked.add(f.id)
            node.func = _checked(f, None, getattr(node, READS_AFTER, None))
            continue
        for k in called(node):
            a = node.args[k] if k < len(node.args) else None
            if isinstance(a, gast.Name) and a.id in bound:
                checked.add(a.id)
                node.args[k] = _checked(a)
    params = [a.id if isinstance(a, gast.Name) else None for a in args.args]
    return tuple(k for k, p in enumerate(params) if p in checked)


def unwrap_checked_calls(namespace: dict[str, Any], tree: gast.FunctionDef) -> None:
    """Replaces, in place, each ``checked_callable(f, ...)`` in ``tree`` by ``f``, when the
    function's ``namespace`` binds ``checked_callable`` to adgen's (generated code: the jvp
    code that hessian differentiates; a user's function has no such name). Reverse mode had
    no derivative rule for the wrapper (MissingRuleError 'checked_callable() has no derivative
    rule' for ``checked_callable(self.features, self)(x)``)."""
    from adgen.callbacks import checked_callable

    if namespace.get(CHECK) is not checked_callable:
        return
    checks = _checks_kept(tree)
    for node in gast.walk(tree):
        reads = _user_reads(node.func) if isinstance(node, gast.Call) else None
        if reads:
            # the jvp code's watch of a global container the callee may fill names the
            # user's read: the call is watched again (analyses.free_containers keeps it),
            # where the generated code's line would name the call's (hessian)
            setattr(node, READS_AFTER, reads)
        for field, value in gast.iter_fields(node):
            if isinstance(value, list):
                value[:] = [_unwrapped(v) for v in value]
            elif isinstance(value, gast.AST):
                setattr(node, field, _unwrapped(value))
    checks()


def _checks_kept(tree: gast.FunctionDef) -> Any:
    """The checks :func:`unwrap_checked_calls` keeps: each simple statement calling
    ``checked_callable(cb)(x)`` gets ``checked_callable(cb)`` as a statement of its own just
    before it, a call without a derivative (analyses.activity), after the unwrapping (the
    returned function puts them in). The check refuses a callee the jvp code runs as it is
    that changes its object (step = m.fit_step; step(x) setting self.h): unwrapped, hessian
    differentiated that jvp code, which keeps no tangent for what the call sets (a silently
    wrong Hessian), where jvp refused it."""
    import copy

    found: list[tuple[list[gast.stmt], gast.stmt, list[gast.stmt]]] = []
    for node in gast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if not isinstance(stmts, list):
                continue
            for st in stmts:
                if not isinstance(st, (gast.Expr, gast.Assign, gast.AugAssign, gast.Return)):
                    continue
                kept = [gast.Expr(value=copy.deepcopy(c.func)) for c in gast.walk(st)
                        if isinstance(c, gast.Call) and isinstance(c.func, gast.Call) and
                        isinstance(c.func.func, gast.Name) and c.func.func.id == CHECK and
                        c.func.args and not c.func.keywords]
                if kept:
                    found.append((stmts, st, [gast.copy_location(k, st) for k in kept]))

    def put() -> None:
        for stmts, st, kept in found:
            k = next(i for i, x in enumerate(stmts) if x is st)
            stmts[k:k] = kept

    return put


def _unwrapped(node: Any) -> Any:
    while isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and \
            node.func.id == CHECK and node.args and not node.keywords:
        node = node.args[0]
    return node


def _user_reads(f: gast.expr) -> dict[str, Location] | None:
    """The reads :func:`_checked` wrote into ``f``, a ``checked_callable(cb, None,
    {'CACHE': (CACHE, 13)}, 'file.py')`` of generated code: ``{'CACHE': file.py:13}``."""
    if not (isinstance(f, gast.Call) and isinstance(f.func, gast.Name) and
            f.func.id == CHECK and len(f.args) == 4):
        return None
    watched, file = f.args[2], f.args[3]
    if not (isinstance(watched, gast.Dict) and isinstance(file, gast.Constant) and
            isinstance(file.value, str)):
        return None
    out = {}
    for k, v in zip(watched.keys, watched.values):
        if not (isinstance(k, gast.Constant) and isinstance(v, gast.Tuple) and
                len(v.elts) == 2 and isinstance(v.elts[1], gast.Constant)):
            return None
        line = v.elts[1].value
        text = linecache.getline(file.value, line)
        out[k.value] = Location(file.value, line, len(text) - len(text.lstrip()), text)
    return out


# the callees that call a function given as key= on the values they are given
_KEYED = frozenset({"sorted", "min", "max", "sort", "nsmallest", "nlargest", "merge",
                    "groupby"})


def _checked(callee: gast.expr, receiver: gast.expr | None = None,
             reads: dict[str, Location] | None = None, given: bool = False) -> gast.Call:
    """``checked_callable(cb)``, ``checked_callable(opts.hook, opts)``; with ``reads`` (the
    global or closure containers the function reads into its result after the call:
    analyses.free_containers), ``checked_callable(cb, None, {'CACHE': (CACHE, 13)},
    'file.py')``, which refuses at line 13 a value with a derivative put into CACHE."""
    extra: list[gast.expr] = [gast.Name(receiver.id, gast.Load(), None, None)] \
        if isinstance(receiver, gast.Name) else []
    if reads:
        file = next(iter(reads.values())).file
        watched = gast.Dict(
            keys=[gast.Constant(g, None) for g in reads],
            values=[gast.Tuple([gast.Name(g, gast.Load(), None, None),
                                gast.Constant(where.line, None)], gast.Load())
                    for g, where in reads.items()])
        extra = [extra[0] if extra else gast.Constant(None, None), watched,
                 gast.Constant(file, None)]
    if given:  # checked_callable(k, None, None, '', True): its own arguments' writes too
        extra = [gast.Constant(None, None), gast.Constant(None, None), gast.Constant("", None),
                 gast.Constant(True, None)]
    return gast.Call(func=gast.Name(CHECK, gast.Load(), None, None), args=[callee, *extra],
                     keywords=[])
