"""``getattr`` with a constant name, written as the attribute read it is.

Input: a statement of a function in A-normal form and the object its callee resolves to.
Output, for ``r = getattr(o, "name")`` and ``r = getattr(o, "name", d)`` where ``getattr`` is
the builtin and ``"name"`` an identifier:

    r = getattr(o, "name")       ->  r = o.name
    r = getattr(o, "name", d)    ->  t = hasattr(o, "name")
                                     if t:
                                         r = o.name
                                     else:
                                         r = d

so that the attribute's adjoint goes to the object (and the default's to ``d``) as for
``o.name`` written out; ``getattr`` itself has no derivative rule. ``hasattr`` catches
AttributeError only, as ``getattr``'s default does; ``d`` is a name or a constant in A-normal
form, evaluated before, as Python evaluates a call's arguments. A name computed at run time
(``getattr(o, key)``) is left as it is: a call without a gradient runs, one with a gradient
is refused at its line.

``setattr(o, "name", v)`` (a statement, or ``r = setattr(...)``) is the store ``o.name = v``
(``r = None``): left a call of a builtin without a rule, adgen took it for a call that
changes nothing, and the attribute's value got no gradient, silently (``setattr(self,
"l0", Lin(w))`` in ``__init__``: a zero gradient for ``w``). With a name computed at run
time (``setattr(self, f"l{k}", layer)``) it is ``o.__setattr__(key, v)``, a method call
found when it runs: one whose value has no gradient runs, one with a gradient is refused at
its line (rules/no_gradient.py says what to write).

``operator.setitem(a, i, v)`` is the store ``a[i] = v`` (the same ``type(a).__setitem__``
call, for an array, a list, a dict or an object): left a call, grad refused it ("no derivative
rule"), while jvp ran it on the value alone and the tangent missed the write, silently (a
helper ``def store(y, v): operator.setitem(y, 1, v)``: 0.075 for -0.925).
"""

from __future__ import annotations

import builtins
import operator
from typing import Any

import gast
from adgen.transforms.desugar import assign, located_at, name
from adgen.transforms.names import Namer
from adgen.transforms.walk import clone

__all__ = ["lower_getattr", "lower_setattr", "lower_setitem"]


def lower_getattr(s: gast.Assign, callee: Any, namer: Namer) -> list[gast.stmt] | None:
    """The statements replacing ``s`` (None: ``s`` is no getattr of a constant name)."""
    call = s.value
    if callee is not builtins.getattr or not isinstance(call, gast.Call) or call.keywords or \
            len(call.args) not in (2, 3) or \
            any(isinstance(a, gast.Starred) for a in call.args):
        return None
    obj, key = call.args[0], call.args[1]
    if not (isinstance(key, gast.Constant) and isinstance(key.value, str) and
            key.value.isidentifier()):
        return None
    read = gast.Attribute(value=obj, attr=key.value, ctx=gast.Load())
    if len(call.args) == 2:
        return [assign(s.targets[0], read, s)]
    flag = namer.fresh("t")
    test = assign(name(flag, gast.Store),
                  gast.Call(func=name("hasattr"), args=[clone(obj), gast.Constant(key.value,
                                                                                 None)],
                            keywords=[]), s)
    target = s.targets[0]
    branch = located_at(gast.If(test=name(flag), body=[assign(target, read, s)],
                                orelse=[assign(clone(target), call.args[2], s)]), s)
    return [test, branch]


# the mark of an attribute store ``o.name = v`` that ``object.__setattr__(o, "name", v)``
# wrote: it bypasses the class's ``__setattr__`` (a frozen dataclass's refuses every store),
# so the code printed for it is that call again (gast_unparse), and its pullback does not
# refuse the class's ``__setattr__`` (runtime.take_attr)
OBJECT_SETATTR = "adgen_object_setattr"


def bypasses_setattr(target: gast.AST) -> bool:
    """Whether ``target`` (a store's target) is ``object.__setattr__``'s, not ``o.name``'s."""
    return getattr(target, OBJECT_SETATTR, False) is True


def lower_setattr(s: gast.stmt, call: gast.Call, callee: Any,
                  result: str | None) -> list[gast.stmt] | None:
    """The statements replacing ``s`` (``call``, or ``result = call``), or None where
    ``call`` is no call of the builtin ``setattr`` with three positional arguments."""
    bypass = callee is object.__setattr__  # object.__setattr__(o, "name", v)
    if (callee is not builtins.setattr and not bypass) or call.keywords or \
            len(call.args) != 3 or any(isinstance(a, gast.Starred) for a in call.args):
        return None
    obj, key, value = call.args
    if isinstance(key, gast.Constant) and isinstance(key.value, str) and \
            key.value.isidentifier():
        target = gast.Attribute(value=obj, attr=key.value, ctx=gast.Store())
        if bypass:
            setattr(target, OBJECT_SETATTR, True)
        out = [assign(target, value, s)]
    elif bypass:
        return None  # a name computed when it runs: refused at its line (no_gradient.py)
    else:
        method = gast.Attribute(value=obj, attr="__setattr__", ctx=gast.Load())
        out = [located_at(gast.Expr(value=gast.Call(func=method, args=[key, value],
                                                    keywords=[])), s)]
    if result is not None:
        out.append(assign(name(result, gast.Store), gast.Constant(None, None), s))
    return out


def lower_setitem(s: gast.stmt, call: gast.Call, callee: Any,
                  result: str | None) -> list[gast.stmt] | None:
    """The statements replacing ``s`` (``call``, or ``result = call``), or None where
    ``call`` is no call of ``operator.setitem`` with three positional arguments."""
    if callee is not operator.setitem or call.keywords or len(call.args) != 3 or \
            any(isinstance(a, gast.Starred) for a in call.args):
        return None
    obj, key, value = call.args
    target = gast.Subscript(value=obj, slice=key, ctx=gast.Store())
    out = [assign(target, value, s)]
    if result is not None:
        out.append(assign(name(result, gast.Store), gast.Constant(None, None), s))
    return out
