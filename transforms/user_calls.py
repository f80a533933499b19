"""Which calls are of the user's own functions: ``is_user_call`` (compiled and differentiated
through adgen's dispatch), ``resolved_at_run_time`` (one the dispatch resolves when it runs),
and the refusal of a ``functools.partial`` binding a value with a gradient.

Functions taking the :class:`reverse_plan.Plan` (its ``resolve``, ``kinds``, ``act``,
``user_name`` and ``loc``). Every gradient asks these of its calls; the facts about a user
call once one is found (its compiled summary, what it writes and reads) are
``reverse_plan_calls``', imported where a function has such a call (issue 15's cold start:
a function calling only NumPy does not load them).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import gast
from adgen.transforms.analyses.activity import nondiff_call
from adgen.transforms.analyses.reports import reports
from adgen.transforms.node_index import nodes_of
from adgen.transforms.reverse_ast import (
    MISSING,
    is_callable_object,
    is_python_function,
    is_user_class,
)
from adgen.transforms.reverse_plan_rules import array_method

from adgen.errors import UnsupportedError
from adgen.rules import registry

if TYPE_CHECKING:
    from adgen.transforms.reverse_plan import Plan


def is_user_call(plan: Plan, call: gast.Call) -> bool:
    obj = plan.resolve(call.func)
    if obj is MISSING:
        if isinstance(call.func, gast.Attribute) and isinstance(call.func.value, gast.Name):

            if array_method(plan, call) or call.func.attr == "append":
                return False
            import numpy as np

            if isinstance(plan.kinds.get(call.func.value.id), int) and \
                    hasattr(np.ndarray, call.func.attr):
                return False  # a NumPy method without a rule: said at compile time
        return True
    if str(getattr(obj, "__module__", "")).startswith("adgen.") and \
            not registry.is_reference_impl(obj):
        return False  # adgen's own runtime functions: rules or no derivative
    if isinstance(obj, functools.partial):
        return True  # a partial of a function: called through adgen's dispatch
    if is_user_class(obj) and nondiff_call(call, plan.resolve_or_none):
        return False  # np.ndindex(shape): NumPy's Python class, without a derivative
    return registry.lookup(obj) is None and not reports(obj) and \
        registry.refusal_of(obj) is None and \
        (is_python_function(obj) or is_user_class(obj) or is_callable_object(obj))

def resolved_at_run_time(plan: Plan, call: gast.Call) -> bool:
    """Whether a call of the user's is one the dispatch resolves when it runs (a method of
    an object, a function held in a variable or a parameter, a constructor), not one of a
    function compiled with its caller."""
    obj = plan.resolve(call.func)
    return is_user_call(plan, call) and (obj is MISSING or not is_python_function(obj))


def refuse_active_partial(plan: Plan, s: gast.stmt, v: gast.Call) -> None:
    """Refuses ``functools.partial(f, ...)`` binding a value that has a gradient: the
    partial's pullback gives cotangents to the arguments of its call, not to the ones it
    bound (a silently lost gradient otherwise)."""
    if not isinstance(v, gast.Call) or plan.resolve(v.func) is not functools.partial:
        return
    bound = list(v.args[1:]) + [k.value for k in v.keywords]
    active = sorted({n.id for a in bound for n in nodes_of(a, gast.Name)
                     if plan.act.active(n.id)})
    if active:
        # the user's words (x[0] for the temporary ANF made of it), each once
        what = ", ".join(dict.fromkeys(plan.user_name(n) for n in active))
        raise UnsupportedError(
            f"functools.partial binds {what}, which has a gradient here: adgen follows "
            "gradients through the arguments a partial is called with, not the ones it "
            "binds", plan.loc(s),
            hint=f"pass {what} when calling it, or call the function directly")

