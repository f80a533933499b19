"""The reverse plan's facts about a call of a user function (one ``user_calls.is_user_call``
finds; imported where a function has one): how its forward takes the arguments, the callee's
compiled summary with its errors located at the call (``info_at``), whether it may write its
arguments in place (``mutating_call``, so its pullback is forced; a list or tuple display
handed to such a callee is named before the call by the front end, display_arguments.py, and
one left inline is refused), which arguments its pullback
reads, and whether its result may be a value it made.

Functions taking the :class:`reverse_plan.Plan`: they read its ``parsed``, ``fn``, ``act``,
``kinds``, ``numeric`` and ``callee_info``, and its ``resolve``, ``user_name`` and ``loc``
(and ``reverse_plan_rules.array_method``).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import gast
from adgen.transforms.analyses.activity import passed_names
from adgen.transforms.analyses.kinds import NUMBER
from adgen.transforms.hoist_defs import free_names
from adgen.transforms.node_index import loaded_names, nodes_of
from adgen.transforms.parse import positional_params, varargs_of
from adgen.transforms.reverse_ast import (
    MISSING,
    is_callable_object,
    is_python_function,
    is_user_class,
    src_text,
    user_name_of,
)

from adgen.callbacks import checked_at
from adgen.errors import UnsupportedError
from adgen.rules import registry

if TYPE_CHECKING:
    from adgen.transforms.reverse_plan import Plan


def call_args(plan: Plan, call: gast.Call, obj: Any) -> list[gast.expr]:
    """The positional arguments of a call of user function ``obj`` as its compiled forward
    takes them: with ``*xs``, the extra ones packed into one tuple (parse.varargs_of)."""
    n = varargs_of(obj)
    args = list(call.args)
    if n is None or len(args) < n:
        return args  # fewer than the named ones: the tuple goes by keyword (packed_keyword)
    return args[:n] + [gast.Tuple(elts=args[n:], ctx=gast.Load())]

def packed_keyword(plan: Plan, call: gast.Call, obj: Any) -> list[gast.keyword]:
    """``xs=()`` for a call of ``def g(x, c=2.0, *xs)`` that passes fewer positional
    arguments than the named parameters (``g(z)``, ``g(z, c=0.7)``): the named ones left
    to their defaults or keywords (the empty tuple was passed in c's place: a raw
    broadcasting error, or 'multiple values for argument c')."""
    n = varargs_of(obj)
    if n is None or len(call.args) >= n:
        return []
    return [gast.keyword(arg=obj.__code__.co_varnames[n],
                         value=gast.Tuple(elts=[], ctx=gast.Load()))]

def info_at(plan: Plan, obj: Any, node: gast.AST) -> Any:
    """The compiled callee, with its compile errors located at the call."""
    from adgen.errors import AdgenError

    if isinstance(obj, functools.partial):
        inner = obj.func
        while isinstance(inner, functools.partial):
            inner = inner.func
        if not (is_python_function(inner) or is_user_class(inner) or
                is_callable_object(inner)):
            # a partial of a library's class or builtin (partial(np.ma.masked_array,
            # mask=m)): nothing to compile, it runs as it is, as its function called
            # directly does (compiling the partial raised an internal AttributeError)
            return None
    try:
        return plan.callee_info(obj)
    except AdgenError as err:
        if err.location is None or err.location.file != plan.parsed.file:
            err.at_call(plan.loc(node), obj)
        raise

def result_made_by_callee(plan: Plan, call: gast.Call) -> bool:
    """Whether a call of a user function may return values the callee made, which its
    saved values may hold (tanh's output): unless its summary says its results may view
    its arguments (``Compiled.returns_fresh`` false), whose captures cover them."""
    obj = plan.resolve(call.func)
    if obj is not MISSING and is_user_class(obj) and registry.lookup(obj) is None:
        return _init_reads_object(plan, obj, call)
    if obj is MISSING or not is_python_function(obj):
        return True  # a function known at run time only (a variable, a nested def)
    info = info_at(plan, obj, call)
    return info is None or (info.compiled.returns_fresh and
                            getattr(info.compiled, "reads_result", True))

def _init_reads_object(plan: Plan, cls: type, call: gast.Call) -> bool:
    """Whether the pullback of ``Cls(args)`` may read the new object's arrays: the call runs
    ``Cls.__init__`` on it (dispatch._construct), whose pullback reads ``self`` only where
    its summary says so (``self.data = np.zeros(n)`` reads nothing: ``g = Grid(4); g[1:] =
    v`` overwrites no value a gradient reads, which strict refused). Anything else that may
    build the object (a ``__new__``, a metaclass's ``__call__``, a dataclass's generated
    ``__init__``): it may."""
    init = getattr(cls, "__init__", None)
    if cls.__new__ is not object.__new__ or type(cls).__call__ is not type.__call__ or \
            hasattr(cls, "__dataclass_fields__") or not is_python_function(init):
        return True
    info = info_at(plan, init, call)
    reads = info.compiled.reads_params if info is not None else True
    params = positional_params(init, 1)
    return reads is True or not params or params[0] in reads

def args_callee_reads(plan: Plan, call: gast.Call, fact: str = "reads_params") -> set[str]:
    """The argument names whose values a callee's pullback may read (unknown: all), and
    for a nested def, every version of the enclosing names it reads. (``fact``
    "reads_uncaptured": those it reads where no capture of its own watches them.)"""
    everything = loaded_names(call)
    if isinstance(call.func, gast.Name):
        everything |= _closure_reads(plan, {call.func.id})
    obj = plan.resolve(call.func)
    if obj is MISSING or not is_python_function(obj):
        return everything | _closure_reads(plan, everything)
    info = info_at(plan, obj, call)
    reads = getattr(info.compiled, fact, True) if info is not None else True
    if reads is True:
        return everything | _closure_reads(plan, everything)

    params = positional_params(obj, len(call.args))
    out: set[str] = set()
    for k, a in enumerate(call.args):
        if k < len(params) and params[k] in reads:
            out |= loaded_names(a)
    for kw in call.keywords:
        if kw.arg in reads:
            out |= loaded_names(kw.value)
    return out | _closure_reads(plan, out)


def _closure_reads(plan: Plan, names: set[str]) -> set[str]:
    """Every version of the enclosing names read by the nested defs among ``names``, or held
    in a list, tuple or dict display bound to one of them (``apply1(g, x)``, ``apply([g,
    sq], x)``): the callee's pullback reads them through the def's cells, as a call of the
    def by name does (an array the def reads, written in place between two such calls, gave
    the first call's pullback its new contents: grad 1.8 off, under both policies)."""
    defs = {d.name: d for d in plan.parsed.nested_defs}
    if not defs:
        return set()
    held = set(names)
    for n in names:
        v = plan.defs.get(n)
        if isinstance(v, (gast.List, gast.Tuple)):
            held |= {e.id for e in v.elts if isinstance(e, gast.Name)}
        elif isinstance(v, gast.Dict):
            held |= {e.id for e in v.values if isinstance(e, gast.Name)}
    free: set[str] = set()
    for n in held & set(defs):
        free |= free_names(defs[n], plan.parsed.closure_free)
    if not free:
        return set()
    return {x.id for x in nodes_of(plan.fn, gast.Name) if user_name_of(x.id) in free}

def mutating_call(plan: Plan, call: gast.Call) -> bool:
    obj = plan.resolve(call.func)
    if isinstance(obj, functools.partial):
        # OP(u) with a global OP = functools.partial(lap, out=BUF): refused here when its
        # function writes an array the partial gives it, as a partial held in a local
        # variable is when it is called (callbacks); otherwise a call of a function held
        # in a variable (compiling the partial itself raised an internal AttributeError)
        checked_at(obj, plan.loc(call))
        obj = MISSING
    elif isinstance(call.func, gast.Name) and is_callable_object(obj) and \
            not is_user_class(obj):
        # NORM(x) of a global object with a __call__, run through the dispatch as a
        # variable's is (compiling the object itself raised an internal AttributeError)
        obj = MISSING
    if obj is MISSING and isinstance(call.func, gast.Name):
        # f(o, s) with f a variable (f = setter, a parameter, a list's item): whether it
        # writes its arguments is known only when it runs, so its pullback runs (the
        # dispatch follows a list, dict or object it changes, and refuses an array write);
        # skipped, a write of o.val was silently left out of the gradient; and so is one
        # of an object with a __call__ changing itself (norm(x) setting self.m: one the
        # function builds, or a global one), whose state has a gradient
        passed = passed_names(call)
        if any(plan.act.active(n) and n not in plan.numeric for n in passed):
            return True
        if plan.act.active(call.func.id) and _callable_object_called(plan, call):
            return True
        if any(plan.act.active(n) and plan.kinds.get(n) != NUMBER for n in passed):
            # an array it may write in place (f = sc.scale_inplace; f(w)): the dispatch
            # refuses that write when it runs (elided, the write was silently left out)
            return True
        params = {a.id for a in plan.fn.args.args}
        handed = [n for n in passed if n in params and n not in plan.numeric]
        if handed and len(set(passed)) > 1 and any(
                n in params or plan.act.active(n) for n in passed if n != handed[0]):
            # a parameter handed to a function held in a variable with other values
            # (init = Base.__init__; init(self, s), or f(o, s) in a helper): whether it
            # writes the parameter (o.val = 2 * s) is known only when it runs, and the
            # parameter is not known to change here, so its gradient would be lost
            raise UnsupportedError(
                f"{src_text(call)} passes {handed[0]} to a function held in a variable, "
                "which may change it in place: adgen cannot follow that write here",
                plan.loc(call), hint="call the function by its name (Base.__init__(self, "
                "...), helper(o, ...)), or have it return the new value")
        return False
    if obj is MISSING and isinstance(call.func, gast.Attribute):
        # o.method(w) of an object whose type is known only when it runs (a parameter, a
        # global model, sc.scale_inplace(w)): its pullback runs, so the dispatch refuses
        # a write of w or of o's arrays; elided, that write was silently left out
        passed = [call.func.value.id] if isinstance(call.func.value, gast.Name) else []
        passed += passed_names(call)
        return any(plan.act.active(n) and n not in plan.numeric for n in passed)
    if registry.refusal_of(obj) is not None:
        return False  # refused with its reason where the call is differentiated
    if is_user_class(obj) and registry.lookup(obj) is None:
        # Cls(args): what its __init__ writes besides the new object (compiling the class
        # itself fails: a class has no source of its own to compile); a dataclass's, the one
        # adgen.dataclass_init writes as source (its own has none: a frozen one was refused
        # as 'defined at the interactive prompt ... or by exec'), or its refusal at the call
        from adgen.dataclass_init import dataclass_init
        from adgen.errors import AdgenError

        try:
            obj = dataclass_init(obj) or obj.__init__
        except AdgenError as err:
            err.at_call(plan.loc(call), obj)
            raise
    info = info_at(plan, obj, call)
    # a callee that writes an argument in place: an array, or a list, dict or object
    # (whose adjoint it takes over from the caller: ShadowMap.deposit / withdraw)
    writes = bool(info and (info.mutates_params or
                            getattr(info.compiled, "mutates_containers", False)))
    if writes and info.mutates_params:
        refuse_displays_written(plan, obj, call, info.compiled.written_params)
    if not writes and info is not None and \
            hands_parameters_on(getattr(info, "compiled", None), set()):
        # def apply(f, a, b): return f(a, b), called for its effect (apply(bump, acc, v)):
        # whether f writes a is known only when it runs, in the callee's forward (the
        # dispatch refuses an array write, follows a container's); elided, the plain call
        # ran instead and bump's write of acc was silently left out of the gradient
        writes = True
    return writes and any(plan.act.active(n) for n in passed_names(call))


def hands_parameters_on(compiled: Any, seen: set[int]) -> bool:
    """Whether a compiled function's forward hands one of its parameters to a callee found
    when the call runs (``call_forward(f, a, b)``, ``call_starred(...)``), itself or through
    a function of the user's it calls (its ``callees``), where that callee may write it."""
    trees = getattr(compiled, "trees", None)
    if not trees or id(compiled) in seen:
        return False
    seen.add(id(compiled))
    forward = trees[0]
    params = {a.id for a in forward.args.args if isinstance(a, gast.Name)}
    callees = getattr(compiled, "callees", None) or {}
    for call in nodes_of(forward, gast.Call):
        f = call.func
        if not isinstance(f, gast.Name):
            continue
        args = [a for a in [*call.args, *(k.value for k in call.keywords)]
                if isinstance(a, gast.Name)]
        if not any(a.id in params for a in args[1:] if f.id in RUN_TIME_CALLS) and \
                not (f.id.endswith("_forward") and any(a.id in params for a in args)):
            continue
        if f.id in RUN_TIME_CALLS:
            return True
        inner = callees.get(f.id[:-len("_forward")])
        if inner is not None and hands_parameters_on(inner, seen):
            return True
    return False


# the runtime's calls of a callee found when the call runs (src/adgen/dispatch.py)
RUN_TIME_CALLS = frozenset({"call_forward", "call_starred"})

def _callable_object_called(plan: Plan, call: gast.Call) -> bool:
    """Whether ``call`` (``f(...)``, f a name) calls a global object with a ``__call__`` of
    the user's, or a name the function binds to a new object of a class of the user's."""
    f = call.func.id
    if is_callable_object(plan.resolve(call.func)):
        return True
    for st in nodes_of(plan.fn, gast.Assign):
        t = st.targets[0]
        if isinstance(t, gast.Name) and t.id == f and isinstance(st.value, gast.Call) and \
                is_user_class(plan.resolve(st.value.func)):
            return True
    return False

def refuse_displays_written(plan: Plan, obj: Any, call: gast.Call,
                            written: set[str] | bool) -> None:
    """Refuses arrays with a derivative handed to a callee inside a list, tuple or dict
    display it may write in place, left inline (``sgd_step([W, b], [gW, gb])`` with ``p -=
    lr * g`` over the items): the front end names such a display before the call
    (display_arguments.py, where argument_writes says the callee may write), after which
    the analyses follow the list into its arrays; one it did not name would leave the
    caller's own values as they were, a silently wrong gradient, so this stays the net."""
    names = positional_params(obj, len(call.args))
    handed = [(names[k] if k < len(names) else None, a) for k, a in enumerate(call.args)]
    handed += [(k.arg, k.value) for k in call.keywords]
    for param, a in handed:
        if not isinstance(a, (gast.List, gast.Tuple, gast.Dict)) or \
                not (written is True or param in written):
            continue
        inner = [n for n in passed_names(gast.Call(func=a, args=[a], keywords=[]))
                 if plan.act.active(n) and plan.kinds.get(n) != NUMBER]
        if not inner:
            continue
        fname = getattr(obj, "__name__", "the function")
        kind = {gast.List: "list", gast.Tuple: "tuple", gast.Dict: "dict"}[type(a)]
        users = list(dict.fromkeys(plan.user_name(n) for n in inner))
        shown = ", ".join(users)
        raise UnsupportedError(
            f"the call of {fname} hands {shown} to it inside a {kind} whose items "
            f"{fname} may write in place: adgen follows an array a function writes when "
            "the array itself is passed to it, not inside a list, tuple or dict made at "
            "the call", plan.loc(call),
            hint=f"pass each array itself to a function that writes one (step({users[0]}, "
                 f"...)), or have {fname} return the new arrays and assign them ({shown} = "
                 f"{fname}(...))")
