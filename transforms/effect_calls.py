"""Calls made for what they change, of a callable adgen has no rule for and cannot read.

A builtin or C function without a rule whose result carries no derivative has no pullback:
the analyses take it for one that changes nothing. Called for its effect on its arguments
(``operator.setitem(y, 1, v)``, ``heapq.heappush(h, v)``, ``dict.update(d, a=v)``,
``np.ndarray.fill(y, c)``), it changed values the gradient reads, unseen: the derivative of
what it wrote was lost, silently, under both policies (forward mode refused it, having no
tangent for it). The reverse pass asks this module at such a call and raises at the user's
line, naming the function, with what to write instead.

Two cases (read only; the pass that asks rewrites nothing here):

- a call whose result is not used (a statement): refused where a name it is passed has a
  derivative, unless it has none whatever its arguments (``print``, ``warnings.warn``) or is
  one of NumPy's that only read them (``np.save``, ``np.savetxt``: :func:`reads_only`);
- a call whose result is bound but carries no derivative (``_ = operator.setitem(...)``, and
  the temporaries the front end binds for a call inside ``a and f(...)``, an ``if`` test, a
  conditional expression, another call's argument): refused only for the callables known to
  change their arguments (:func:`writes_arguments`), where a value it is passed varies with
  the arguments differentiated; others (``k = bisect.bisect_left(grid, x0)``) only read.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

import gast
import numpy as np
from adgen.transforms.analyses.activity import nondiff_call, passed_names
from adgen.transforms.analyses.changed_parameters import CHANGING_METHODS
from adgen.transforms.reverse_ast import src_text
from adgen.transforms.walk import walk

from adgen.errors import MissingRuleError
from adgen.rules import registry

if TYPE_CHECKING:
    from adgen.transforms.reverse_plan import Plan

HINT = ("write the change in Python (y[i] = v, d[k] = v, lst.append(v), y += v), or register "
        "a rule with @adgen.rrule({name}, mutates=...) that says which argument it writes")

# the standard library's functions that change an argument in place
_WRITING_NAMES = {
    "operator": ("setitem", "delitem", "iadd", "isub", "imul", "imatmul", "itruediv",
                 "ifloordiv", "imod", "ipow", "iand", "ior", "ixor", "ilshift", "irshift",
                 "iconcat"),
    "heapq": ("heappush", "heappop", "heapify", "heapreplace", "heappushpop"),
    "bisect": ("insort", "insort_left", "insort_right"),
}
# the types whose unbound methods (list.append, np.ndarray.fill) may change their receiver
_CONTAINER_TYPES = (list, dict, set, bytearray, np.ndarray)
_WRITING_DUNDERS = frozenset({"__setitem__", "__delitem__", "__setattr__", "__delattr__"})
_NOT_IN_PLACE = frozenset({"__init__", "__index__", "__int__", "__iter__", "__init_subclass__",
                           "__instancecheck__"})


def writes_arguments(obj: Any) -> bool:
    """Whether ``obj`` is a library callable known to change an argument in place: one of
    ``operator``'s in-place and item functions, ``heapq``'s and ``bisect``'s changing ones,
    ``setattr``/``delattr``/``object.__setattr__``, or an unbound method of a list, dict, set,
    deque, bytearray or ndarray that changes its receiver (``list.append``, ``dict.update``,
    ``np.ndarray.fill``, ``np.ndarray.__setitem__``, ``list.__iadd__``)."""
    import builtins
    import collections
    import importlib

    # (by identity: obj may be anything called, an array too, whose == is elementwise)
    if any(obj is f for f in (builtins.setattr, builtins.delattr, object.__setattr__,
                              object.__delattr__)):
        return True
    for module, names in _WRITING_NAMES.items():
        mod = importlib.import_module(module)
        if any(getattr(mod, n, None) is obj for n in names):
            return True
    owner = getattr(obj, "__objclass__", None)
    if isinstance(obj, (types.MethodDescriptorType, types.WrapperDescriptorType)) and \
            any(owner is t for t in (*_CONTAINER_TYPES, collections.deque)):
        name = obj.__name__
        return name in CHANGING_METHODS or name in _WRITING_DUNDERS or (
            name.startswith("__i") and name not in _NOT_IN_PLACE)
    return False


# NumPy's functions called for what they do outside the program (write a file, set an
# option), which read their arguments only (np.save('/tmp/w.npy', w) in a training loop)
_READS_ONLY = ("save", "savez", "savez_compressed", "savetxt", "seterr", "set_printoptions",
               "setbufsize")


def reads_only(obj: Any) -> bool:
    """Whether ``obj`` is one of NumPy's functions that only read their arguments."""
    return any(obj is getattr(np, n, None) for n in _READS_ONLY)


def refuse_unknown_effect(plan: Plan, s: gast.stmt, call: gast.Call, obj: Any, *,
                          result_used: bool) -> None:
    """Raises at ``s`` where ``call`` (of ``obj``, resolved, without a rule, not a function
    adgen compiles) may change an argument adgen then cannot follow (see the module
    docstring); returns otherwise. ``result_used``: its result is bound to a name (without a
    derivative), else the call is a statement."""
    if str(getattr(obj, "__module__", "") or "").startswith("adgen."):
        return  # adgen's own helpers in generated code differentiated again
    if result_used:
        if not writes_arguments(obj) or \
                not any(n in plan.act.varied for n in passed_names(call)):
            return
    elif reads_only(obj) or nondiff_call(call, plan.resolve_or_none) or not any(
            isinstance(a, gast.Name) and (plan.active(a) or (
                # a known writer handed a value with a derivative: its write may make what
                # it writes useful (operator.setitem(self.y, 1, v) in a method returning
                # None, whose write of self.y the caller reads: a silently zero gradient)
                a.id in plan.act.varied and writes_arguments(obj))) for a in walk(call)):
        return
    raise effect_error(plan, s, call, obj)


def effect_error(plan: Plan, s: gast.stmt, call: gast.Call, obj: Any) -> MissingRuleError:
    """The refusal of a call of ``obj`` made for what it changes among its arguments (also
    said by ``reverse_ops.missing_rule`` of a :func:`writes_arguments` callable whose result
    has a derivative)."""
    fname = src_text(call.func)
    return MissingRuleError(
        f"{fname}() has no derivative rule{registry.why_no_rule(obj)}; it is called for what "
        "it changes among its arguments, which adgen cannot follow", plan.loc(s),
        hint=HINT.format(name=fname))
