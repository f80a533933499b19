"""Whether a call of a user function may change the values passed to it.

Input: a Python function of the user's (a callee forward mode compiles). Output: True when
no call of it changes an argument in place, itself or through a function it calls (no
store into an argument's items or attributes, no in-place operator, append, ``fill`` or
``out=`` on memory an argument may share, no call that may do so), False when one may or
when that cannot be told (a method of an unknown object, a function held in a variable, a
nested def, a recursive call, code the front end refuses).

Forward mode's activity reads this (``activity``'s ``leaves_arguments``): a value passed to
a helper that may write its arguments varies with what the helper computes (``o.a = 2 * x``
in ``helper(o, x)``), so without a summary every argument of every user call is varied,
and a constant such as ``softmin(a, b, c, self.gamma)``'s ``gamma`` got a zero tangent,
where its terms are ``0 * inf = nan`` next to an infinite ``a`` (soft-DTW's border).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import gast
import numpy as np
from adgen.transforms.analyses.activity import nondiff_call
from adgen.transforms.analyses.changed_parameters import (
    VALUE_TYPES,
    object_method_on_parameter,
    reading_method,
)
from adgen.transforms.analyses.effects import effects
from adgen.transforms.front import front, resolve
from adgen.transforms.node_index import nodes_of
from adgen.transforms.tangent_ast import is_user_function

from adgen.errors import AdgenError
from adgen.rules import registry

PARAM = "param"  # the effects analysis's buffer of every parameter

# Builtins that read their arguments and change none of them.
_READING_BUILTINS = frozenset({
    abs, all, any, bool, complex, divmod, enumerate, float, getattr, hasattr, int, isinstance,
    iter, len, list, max, min, pow, print, range, repr, reversed, round, sorted, str, sum,
    tuple, type, zip, dict, id,
})


def leaves_arguments(fn: Any, memo: dict[int, bool] | None = None,
                     lifted: tuple[str, ...] = ()) -> bool:
    """True when no call of ``fn`` changes a value passed to it (see the module docstring).

    ``memo``: the answers so far, by ``id`` of the function (shared across one compilation;
    a function being summarised answers False, so a recursive one is taken to write).
    ``lifted``: for a nested def, its free variables, read as trailing parameters (as
    forward mode compiles it).
    """
    memo = {} if memo is None else memo
    key = id(fn)
    if key in memo:
        return memo[key]
    memo[key] = False  # in progress: a recursive call may write
    try:
        parsed, tree, _, _ = front(fn, lifted=lifted)
    except AdgenError:
        return False  # its own compilation reports it
    # a closure may write a parameter without being passed it: each nested def must leave
    # its arguments and the values it closes over (read as parameters), and a call of one
    # then reads only (the jvp code of a function with a nested def, differentiated again:
    # jacfwd(jacfwd(f)) gave its data a zero tangent, sqrt(data)'s 0 / 0 at a zero)
    defs = _leaving_defs(fn, parsed, tree, memo)
    if defs is None:
        return False
    look = lambda n: resolve(parsed, n)  # noqa: E731 - the resolver of this function
    eff = effects(tree, None, set(), look)
    if any(PARAM in w.buffers for w in eff.writes):
        return False
    for call in nodes_of(tree, gast.Call):
        if _touches_arguments(call, eff.buffers) and \
                not (isinstance(call.func, gast.Name) and call.func.id in defs) and \
                not _reads_only(call, look, memo):
            return False
    memo[key] = True
    return True


def _leaving_defs(fn: Any, parsed: Any, tree: gast.FunctionDef, memo: dict[int, bool]
                  ) -> set[str] | None:
    """The names of ``fn``'s nested defs, where each changes none of its arguments nor the
    values it closes over and is called by that name only; None where one may change them
    (or its code is not found)."""
    from adgen.transforms.nested_defs import nested_function, only_defined

    names = {d.name for d in parsed.nested_defs}
    if only_defined(tree, names) != names:
        return None
    for d in parsed.nested_defs:
        try:
            inner, lifted = nested_function(fn, d, parsed)
        except AdgenError:
            return None
        try:
            if not leaves_arguments(inner, memo, lifted):
                return None
        finally:
            memo.pop(id(inner), None)  # (a new object: its id may be another's later)
    return names


def calls_change_parameters(parsed: Any, tree: gast.FunctionDef, buffers: dict[str, set[str]],
                            memo: dict[int, bool]) -> bool:
    """Whether ``tree`` (``parsed``'s function in SSA form, its effects' ``buffers``) hands
    memory a parameter may share to a user function it calls by name that may change it
    (``square_into(out, v)`` in ``def square_through(out, v)``): the effects analysis of
    forward mode sees the writes of the function itself only, so without this its
    parameters were no outputs and the helper's tangent code was left out (the jvp of
    ``square_through(out, x); np.sum(out * x)`` missed out's tangent)."""
    look = lambda n: resolve(parsed, n)  # noqa: E731 - the resolver of this function
    for call in nodes_of(tree, gast.Call):
        obj = look(call.func)
        # a NumPy function compiled from a reference that writes its argument
        # (np.place(m, ...) in helper(m, v), rules/composites_writes.py: m's tangent was left
        # as it was, a silently wrong jvp)
        obj = (registry.reference_of(obj) or obj) if obj is not None else None
        if obj is not None and is_user_function(obj) and \
                _touches_arguments(call, buffers) and not leaves_arguments(obj, memo):
            return True
        f = call.func
        if obj is None and isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) \
                and object_method_on_parameter(f, tree) and not _reads_only(call, look, memo):
            # a method found when the call runs on a parameter (self.setup(v) in a method,
            # setting self.w; o.reset(x) in helper(x, o)): its tangent was left as it was
            return True
        if obj is None and isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) \
                and PARAM in buffers.get(f.value.id, set()) and \
                not any(hasattr(t, f.attr) for t in VALUE_TYPES) and \
                not _reads_only(call, look, memo):
            # ... or on an object a parameter holds (for layer in self.layers:
            # layer.shrink(c)): the layers' tangents were left as they were (a jvp 1/0.9 of
            # the right one, silently, until session 21)
            return True
    return False


def _touches_arguments(call: gast.Call, buffers: dict[str, set[str]]) -> bool:
    """Whether a name the call is given (argument, keyword or receiver) may share memory
    with a parameter."""
    given = list(call.args) + [k.value for k in call.keywords]
    if isinstance(call.func, gast.Attribute):
        given.append(call.func.value)
    return any(isinstance(n, gast.Name) and PARAM in buffers.get(n.id, set())
               for g in given for n in nodes_of(g, gast.Name))


def _reads_only(call: gast.Call, look: Callable[[gast.expr], Any],
                memo: dict[int, bool]) -> bool:
    """Whether the call changes none of the values it is given (False: it may, or unknown)."""
    obj = look(call.func)
    if obj is not None:
        if is_user_function(obj):
            return leaves_arguments(obj, memo)
        if isinstance(obj, np.ufunc) and (len(call.args) > obj.nin or call.keywords):
            return False  # np.add(a, b, a): out given by position (or out=, where=)
        rule = registry.lookup(obj)
        if rule is not None:
            return not (rule.is_rrule and rule.mutates)
        if nondiff_call(call, look):
            return True  # len, np.argmax, np.zeros: no derivative, no write
        if any(obj is b for b in _READING_BUILTINS):
            return True
        module = str(getattr(obj, "__module__", "") or "")
        return module == "math" or isinstance(obj, np.ufunc) or \
            getattr(math, getattr(obj, "__name__", ""), None) is obj
    return reading_method(call.func)
