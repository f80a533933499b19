"""The parameters of a compiled jvp (forward mode, ``tangent_pipeline.compile_tangent``): their
defaults (:func:`jvp_defaults`: the function's, flattened, then the lifted closure values and
the tangents) and, at a call of a user function, which of the callee's parameters may be
given a tangent (:func:`given_tangents`), for its jvp compiled for those only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast
from adgen.transforms.parse import varargs_of
from adgen.transforms.walk import walk

MISSING_DEFAULT = object()  # a parameter without a default


def jvp_defaults(fn: Any, params: list[str], lifted: int, ntangents: int, *,
                  every: bool = False) -> tuple[Any, ...]:
    """The jvp's ``__defaults__``: its parameters are the function's, flattened (positional,
    then ``*xs`` as a tuple, then keyword-only: parse._flatten_parameters), then the lifted
    closure values and the tangents (None). Python's defaults cover a suffix of the
    parameters: the longest one where every parameter has a default. With ``every``, one
    value per parameter (``MISSING_DEFAULT`` where there is no default)."""
    missing = MISSING_DEFAULT
    code = fn.__code__
    positional = list(getattr(fn, "__defaults__", None) or ())
    npos = code.co_argcount  # positional-only ones included
    values: list[Any] = [missing] * (npos - len(positional)) + positional
    if varargs_of(fn) is not None:
        values.append(())
    kwdefaults = getattr(fn, "__kwdefaults__", None) or {}
    values += [kwdefaults.get(n, missing)  # co_varnames: positional, keyword-only, *xs, ...
               for n in code.co_varnames[npos:npos + code.co_kwonlyargcount]]
    values = values[:len(params) - lifted] if len(values) > len(params) - lifted else values
    values += [None] * lifted + [None] * ntangents
    if every:
        return tuple(values)
    suffix: list[Any] = []
    for v in reversed(values):
        if v is missing:
            break
        suffix.append(v)
    return tuple(reversed(suffix))


def given_tangents(stmt: gast.AST, obj: Any, varies: Callable[[gast.Name], bool]
                    ) -> tuple[int, ...] | None:
    """The positions of the parameters of ``obj`` whose arguments in the call in ``stmt``
    may carry a tangent (a name among those they read ``varies``: an active local, not a
    global, whose tangent the jvp never passes: Tangent.tangent), for the callee's jvp
    compiled for them only (compile_tangent's ``wrt``). A keyword argument counts at its
    parameter's position (``table(C, gamma=self.gamma)``; a keyword-only parameter's is
    after the positional ones, as the tree flattens them: ``f_jvp(x, x_dot=t)`` of the jvp
    code ``def f_jvp(x, *, p, x_dot, p_dot)`` under a second jvp, where a zero tangent of
    ``p`` made ``x ** p``'s ``p_dot * xlogy(x ** p, x)`` a NaN at a negative x), a
    keyword-only one given a constant not at all; None (all) for another keyword that
    names no parameter, or ``*xs`` / ``**kw`` in the call. A callee taking ``*xs`` gets its
    extra arguments as one tuple, one position after its positional parameters (a keyword
    naming one of those: None)."""
    call = getattr(stmt, "value", None)
    if not isinstance(call, gast.Call):
        return None
    if any(isinstance(a, gast.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords):
        return None

    def varied(e: gast.expr) -> bool:
        return any(isinstance(n, gast.Name) and varies(n) for n in walk(e))

    code = getattr(obj, "__code__", None)
    star = code is not None and varargs_of(obj) is not None
    # (with *xs, the arguments after the positional parameters are one: the tuple the tree
    # packs them into, at the position after those parameters)
    out = sorted({min(k, code.co_argcount) if star else k
                  for k, a in enumerate(call.args) if varied(a)})
    if call.keywords:
        if code is None:
            return None
        names = list(code.co_varnames[:code.co_argcount])
        # keyword-only parameters: a constant given to one takes no tangent (compile_tangent's
        # wrt leaves them constants; given a zero one, power=2 made x ** power's jvp
        # p_dot * log(x) * x ** p = 0 * nan at a negative x)
        kwonly = list(code.co_varnames[code.co_argcount:code.co_argcount +
                                       code.co_kwonlyargcount])
        for k in call.keywords:
            if k.arg in kwonly:
                if varied(k.value):
                    out.append(len(names) + star + kwonly.index(k.arg))
                continue
            if star or k.arg not in names[len(call.args):]:
                return None
            if varied(k.value):
                out.append(names.index(k.arg))
    return tuple(sorted(out))
