"""Spell out the ``*`` and ``**`` arguments of a call whose items are known when it compiles.

Input: a validated FunctionDef (before desugar, which turns any call with starred arguments
into ``call_starred(...)``, run through adgen's dispatch). Output: the same function where a
call of a function of the user's that may write its arguments in place
(``transforms.argument_writes``) takes the items of its ``*`` and ``**`` arguments one by one
when they are known:

    step(*(u, v))                  -> step(u, v)            (a tuple or list display)
    step(**{'a': u, 'v': v})       -> step(a=u, v=v)        (a dict display of names as keys)
    args = (u, v)                  -> args = (u, v)
    step(*args)                    -> step(args[0], args[1])

the last where ``args`` is a local bound once in the function, to a tuple display (a tuple
never changes, so its items at the call are those it was made with, and an unbound
``args`` raises at ``args[0]`` as at ``*args``). The same Python; the call is then an
ordinary call, whose writes the analyses follow. Through ``call_starred`` the dispatch could
not tell which argument the helper writes, and refused the call.

A call of NumPy or of a helper that writes nothing keeps its form. A call of a helper that
may write its arguments whose ``*``/``**`` items are not known (``def run(u, *args):
step(u, *args)``, a list or a dict held by a name) is refused at its line: nothing saw
which argument the helper writes, and the helper's write was left out of the gradient and
of forward mode's tangent, silently (the call of ``run`` ran as a plain call).
"""

from __future__ import annotations

import keyword
from collections.abc import Callable

import gast
from adgen.transforms.walk import walk

from adgen.errors import Location, UnsupportedError


def spell_out_star_arguments(fn: gast.FunctionDef,
                             writes_arguments: Callable[[gast.expr], bool],
                             surely_writes: Callable[[gast.expr], bool],
                             location: Callable[[gast.AST], Location]) -> gast.FunctionDef:
    """Rewrites the calls described in the module docstring (fn changed in place).

    Args:
        fn: the function, as parsed.
        writes_arguments: whether a call's ``func`` denotes a function of the user's that may
            write an argument in place.
        surely_writes: whether its compilation writes an argument (what refuses the call).
        location: the user's file and line of a node.

    Raises:
        UnsupportedError: for a call of such a function whose starred items are not known.
    """
    starred = [n for n in walk(fn) if n.__class__ is gast.Call and _starred(n)]
    if not starred:
        return fn  # (most functions: one walk)
    tuples = _tuples_bound_once(fn)
    for call in starred:
        if writes_arguments(call.func):
            call.args = _spelled_args(call.args, tuples)
            call.keywords = _spelled_keywords(call.keywords)
            if _starred(call) and surely_writes(call.func):
                _refuse(call, location(call))
    return fn


def _starred(call: gast.Call) -> bool:
    return any(isinstance(a, gast.Starred) for a in call.args) or \
        any(k.arg is None for k in call.keywords)


def _refuse(call: gast.Call, where: Location) -> None:
    f = call.func
    what = f.id if isinstance(f, gast.Name) else f.attr if isinstance(f, gast.Attribute) \
        else "the function"
    raise UnsupportedError(
        f"{what} changes its arguments in place and is called with *args or **kwargs "
        "whose items adgen cannot see when it compiles (a parameter *args, a list or dict "
        "held by a name), so it cannot tell which values it changes", where,
        hint=f"pass the arguments one by one ({what}(u, v)), or as a tuple bound once "
             f"(args = (u, v); {what}(*args)) or a dict display ({what}(**{{'u': u}})); a "
             "helper forwarding *args to it can name the parameters it forwards")


def _spelled_args(args: list[gast.expr], tuples: dict[str, int]) -> list[gast.expr]:
    out: list[gast.expr] = []
    for a in args:
        if isinstance(a, gast.Starred) and isinstance(a.value, (gast.Tuple, gast.List)) and \
                not any(isinstance(e, gast.Starred) for e in a.value.elts):
            out.extend(a.value.elts)
        elif isinstance(a, gast.Starred) and isinstance(a.value, gast.Name) and \
                a.value.id in tuples:
            out.extend(gast.copy_location(gast.Subscript(
                value=gast.Name(id=a.value.id, ctx=gast.Load(), annotation=None,
                                type_comment=None),
                slice=gast.Constant(k, None), ctx=gast.Load()), a)
                for k in range(tuples[a.value.id]))
        else:
            out.append(a)
    return out


def _spelled_keywords(keywords: list[gast.keyword]) -> list[gast.keyword]:
    named = {k.arg for k in keywords if k.arg is not None}
    out: list[gast.keyword] = []
    for k in keywords:
        keys = _identifier_keys(k.value) if k.arg is None else None
        if keys is None or named & set(keys) or len(set(keys)) != len(keys):
            out.append(k)  # Python's own error for a repeated keyword stays its own
            continue
        named |= set(keys)
        out.extend(gast.copy_location(gast.keyword(arg=key, value=v), k)
                   for key, v in zip(keys, k.value.values))
    return out


def _identifier_keys(node: gast.expr) -> list[str] | None:
    """The keys of a dict display whose keys are all strings that are identifiers."""
    if not isinstance(node, gast.Dict) or any(key is None for key in node.keys):
        return None
    keys = [key.value for key in node.keys
            if isinstance(key, gast.Constant) and isinstance(key.value, str)]
    if len(keys) != len(node.keys) or \
            not all(key.isidentifier() and not keyword.iskeyword(key) for key in keys):
        return None
    return keys


def _tuples_bound_once(fn: gast.FunctionDef) -> dict[str, int]:
    """The locals bound exactly once in ``fn`` (nested defs included), by ``name = (a, b,
    ...)`` with a tuple display of no starred item: name -> the tuple's length."""
    stores: dict[str, int] = {}  # (a parameter, of fn or of a nested def, is a binding)
    lengths: dict[str, int] = {}
    for node in walk(fn):
        if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Del, gast.Param)):
            stores[node.id] = stores.get(node.id, 0) + 1
        elif isinstance(node, (gast.Global, gast.Nonlocal)):
            for n in node.names:
                stores[n] = stores.get(n, 0) + 2  # rebound elsewhere: never taken
        elif isinstance(node, gast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], gast.Name) and \
                isinstance(node.value, gast.Tuple) and \
                not any(isinstance(e, gast.Starred) for e in node.value.elts):
            lengths[node.targets[0].id] = len(node.value.elts)
    return {n: k for n, k in lengths.items() if stores.get(n) == 1}
