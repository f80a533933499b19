"""Forward mode's calls: the tangent of ``n = f(...)`` for each kind of callee. A rule's
function, or an ndarray method (its rule: ``Tangent.apply_rule``); a user function (its
compiled jvp, ``user_call``), a nested def (its jvp with the enclosing values it reads,
``nested_call``); a function known only when the call runs, a method of a global object or a
callable object (``dynamic_call``: adgen.runtime's ``call_jvp``); ``functools.partial`` of
values without a derivative (``partial_call``) and ``f(*xs)`` (``starred_call``). What forward
mode cannot call (a local value it does not know, an object of the user's class built
inside) is refused at the line.

Functions taking the :class:`tangent.Tangent` (``tg``): they read the tangent code's
``parsed``, ``fn``, ``defs``, ``features``, ``callee``, ``callees``, ``nested`` and
``resolve``, and its ``tangent``, ``tangent_or_zero``, ``dot``, ``refuse`` and
``apply_rule``.
"""

from __future__ import annotations

import copy
import functools
import sys
import types
from typing import TYPE_CHECKING, Any

import gast
import numpy as np
from adgen.transforms.analyses.free_containers import READS_AFTER
from adgen.transforms.desugar import assign, name
from adgen.transforms.parse import varargs_of
from adgen.transforms.reverse_ast import RUNTIME_CALLS
from adgen.transforms.tangent_ast import (
    Replace,
    ReplaceExpr,
    at,
    is_user_function,
    source_of,
)
from adgen.transforms.walk import walk

from adgen.callbacks import checked_at
from adgen.errors import AdgenError, MissingRuleError, installed_file
from adgen.rules import methods, registry
from adgen.rules.helpers_tangent import object_with
from adgen.rules.refusals import makes_derivative, refusal_hint_of

if TYPE_CHECKING:
    from adgen.transforms.tangent import Tangent


def checkpointed_function(obj: Any) -> Any:
    """The function an ``adgen.checkpoint`` wrapper calls, or ``obj``: forward mode keeps no
    tape, so a checkpointed helper is differentiated as the function itself."""
    return getattr(obj, "__adgen_checkpoint__", obj)


def tangent_of_call(tg: Tangent, s: gast.Assign, n: str, v: gast.Call
         ) -> tuple[list[gast.stmt], list[gast.stmt]]:
    if isinstance(v.func, gast.Name) and v.func.id in tg.defs:
        return nested_call(tg, s, n, v)
    obj = resolve_call(tg, v)
    if obj is None or isinstance(obj, types.BuiltinMethodType) and \
            isinstance(obj.__self__, np.ndarray):
        # a method of a local array, or of a global one (g(q, P0.copy())): its rule
        f = v.func
        if isinstance(f, gast.Attribute) and f.attr in methods.METHODS and (
                f.attr not in methods.ARRAY_RECEIVER_ONLY or obj is not None) and \
                not tg.user_method(v):
            fn = methods.METHODS[f.attr]
            args = list(v.args)
            if f.attr in methods.VARARG_METHODS and len(args) > 1:
                args = [gast.Tuple(elts=args, ctx=gast.Load())]
            kwargs = {k.arg: k.value for k in v.keywords}
            return tg.apply_rule(s, n, registry.lookup(fn), v, [f.value] + args, kwargs)
        if isinstance(f, gast.Attribute) and f.attr == "copy" and not tg.user_method(v):
            return tg.apply_rule(s, n, registry.lookup(__import__("numpy").copy), v,
                                   [f.value], {})
        if isinstance(f, gast.Name) or isinstance(f, gast.Attribute) and \
                isinstance(f.value, gast.Name) or tg.user_method(v):
            # a function taken from a list or passed in, or a method of a local object
            # (self.features(x)): found when the call runs
            return dynamic_call(tg, s, n, v)
        tg.refuse(s, f"calling {source_of(f)}, a local value or a method forward mode does "
                       "not know", "call a module-level function")
    if obj is functools.partial:
        return partial_call(tg, s, n, v)
    if getattr(obj, "__name__", "") == "call_starred" and \
            getattr(obj, "__module__", "") == "adgen.runtime":
        return starred_call(tg, s, n, v)
    if isinstance(obj, functools.partial):
        # a global partial: refused here when its function writes an array the partial
        # gives it (OP = functools.partial(lap, out=BUF); OP(u): a zero tangent)
        checked_at(obj, tg.parsed.location(s))
        return dynamic_call(tg, s, n, v)
    ref = registry.reference_of(obj)
    if ref is not None:
        obj = ref
    obj = checkpointed_function(obj)
    rule = registry.lookup(obj)
    if rule is None and is_user_function(obj) and registry.refusal_of(obj) is None:
        refuse_global_object_given(tg, s, v, obj)
        return user_call(tg, s, n, v, obj)
    if rule is None and registry.refusal_of(obj) is not None and not (
            isinstance(obj, type) and any("__call__" in vars(k) for k in obj.__mro__[:-1])):
        # refused by name (np.ndenumerate, a class NumPy writes in Python: built as the
        # user's, its values had no tangent, silently); a class whose objects are refused
        # where they are called (np.vectorize) is built, and refused at that call
        raise MissingRuleError(
            f"{source_of(v.func)}() has no derivative rule" + registry.why_no_rule(obj),
            tg.parsed.location(s), hint=refusal_hint_of(obj) or "register one with adgen.rrule")
    if rule is None and (isinstance(obj, types.MethodType) or
                         not isinstance(obj, (types.FunctionType, type)) and
                         isinstance(getattr(type(obj), "__call__", None),
                                    types.FunctionType)):
        # a method of a global object, or a global callable object (layer(x)): compiled
        # when the call runs, its object a constant here
        return dynamic_call(tg, s, n, v)
    if rule is None and isinstance(obj, type) and n is not None and built_plainly(obj):
        return construction(tg, s, n, v)
    if rule is None and isinstance(obj, type) and n is not None and not v.args and \
            not v.keywords and built_empty(obj):
        # act = Tanh() of a class with no __init__ of its own: an object with no attributes,
        # its tangent a zero (a known one: its methods read it as a constant). It was
        # refused as a call without a rule ("register one with adgen.rrule"); grad built it
        return [], [assign(name(tg.dot(n), gast.Store), tg.zero(name(n)), s)]
    if rule is None and isinstance(obj, type) and \
            isinstance(getattr(obj, "__init__", None), types.FunctionType):
        # reverse mode builds them (dispatch._construct); an rrule gives no jvp either
        init = getattr(obj.__init__, "__code__", None)
        whose = "the class" if init is not None and installed_file(init.co_filename) \
            else "your class"  # (threading.Thread is not the user's)
        tg.refuse(s, f"building an object of {whose} {obj.__qualname__} inside the "
                       "function",
                    f"build the {obj.__qualname__} outside and pass it in (its float "
                    "attributes get tangents); reverse mode (adgen.grad, adgen.vjp, "
                    "adgen.jacrev) builds it for first derivatives")
    if rule is None and makes_derivative(obj) and obj.__name__ not in ("jvp", "vjp"):
        # g = adgen.grad(f) in the function: a function, whose calls forward mode takes
        # through their jvp (derivative_calls); a nested def closing over a value with a
        # tangent, passed here, is refused by tg.tangent
        for a in [*v.args, *(k.value for k in v.keywords)]:
            tg.tangent(a)
        return [], [assign(name(tg.dot(n), gast.Store), tg.zero(name(n)), s)]
    if rule is None:
        raise MissingRuleError(
            f"{source_of(v.func)}() has no derivative rule" + registry.why_no_rule(obj),
            tg.parsed.location(s),
            hint="" if makes_derivative(obj) else
            refusal_hint_of(obj) or "register one with adgen.rrule")
    kwargs = {k.arg: k.value for k in v.keywords}
    return tg.apply_rule(s, n, rule, v, list(v.args), kwargs)

# reverse mode over such jvp code (second derivatives) meets object.__new__ (and then the
# jvp of __init__ setting attributes of objects it is given, which it does not follow)
_BUILT_INSIDE = (
    "second derivatives (hessian, hvp, jacfwd or jacrev of grad) of a function that builds an "
    "object of your class inside it (sim = Heat(dt), which jvp follows) are not supported yet; "
    "build the object outside and pass it in (adgen.hessian(loss, argnums=1)(Heat(dt), u) "
    "works where its methods write u), or take first derivatives (grad, jvp); a frozen scipy "
    "distribution (norm(mu, s).logpdf(x)) is such an object: write norm.logpdf(x, mu, s)")
registry.defrefusal(object.__new__, _BUILT_INSIDE)
registry.defrefusal(object_with, _BUILT_INSIDE)  # (the tangent object: n_dot = object_with(...))


def refuse_global_object_changed(tg: Tangent, s: gast.stmt, v: gast.Call) -> None:
    """Refuses ``O.reset(x)``, a method of a global object given values with a derivative,
    that may change its object (set ``self.w = np.sin(v)``, itself or through a method it
    calls), where the object has no tangent: forward mode kept no tangent for the attributes
    of an object the function is not given, so a later read of ``O.w`` had a zero tangent (a
    silently wrong jvp). Since session 29 such an object gets one at entry
    (:func:`global_object_changed`, ``Tangent.changed_global_objects``), and this is a
    safety net."""
    held = global_object_changed(tg, s, v)
    if held is None:
        return
    f = v.func
    tg.refuse(s, f"{source_of(f)}(...) given a value with a derivative, a method that may "
                 f"change the global object {held} (set its attributes): forward mode "
                 "keeps no tangent for the attributes of an object the function is not given",
              f"pass {held} to the function as an argument (f(x, {held})): its "
              "attributes then get tangents; or use adgen.grad / adgen.vjp")


def global_object_changed(tg: Tangent, s: gast.stmt, v: gast.Call) -> str | None:
    """The global ``O`` of ``O.reset(x)``, a method of a global object (without a tangent)
    given values with a derivative, that may change its object and that the function reaches
    again after the call. A method that changes nothing of its object, or only counts
    (``self.calls += 1`` of a number), is None, and so is a call after which the function does
    not reach the object again (``lambda x: layer.forward(x)``)."""
    f = v.func
    if not isinstance(f, gast.Attribute) or not isinstance(f.value, gast.Name) or \
            tg.parsed.is_local(f.value.id) or tg.tangent(f.value) is not None or \
            all(tg.tangent(a) is None for a in [*v.args, *(k.value for k in v.keywords)]):
        return None
    from adgen.transforms.analyses.number_updates import holds_numbers
    from adgen.transforms.argument_writes import leaves_arguments
    from adgen.transforms.bindings import NOT_FOUND, dotted_object
    from adgen.transforms.object_classes import class_attribute
    from adgen.transforms.pipeline import compile_function

    if not _reached_again(tg, s, f.value.id):
        return None
    held = dotted_object(tg.parsed, f.value)
    if held is NOT_FOUND or isinstance(held, (type, types.ModuleType)) or \
            not isinstance(getattr(held, "__dict__", None), dict) or f.attr in held.__dict__:
        return None
    fn = class_attribute(type(held), f.attr)
    top = str(getattr(fn, "__module__", "") or "").split(".")[0]
    if not isinstance(fn, types.FunctionType) or top in sys.stdlib_module_names or \
            top in ("numpy", "scipy", "adgen"):
        return None  # (a logger's log.info(...): the library's own bookkeeping)

    if leaves_arguments(fn):
        return None
    try:
        if holds_numbers(compile_function(fn).number_updates, (held,)):
            return None
    except AdgenError:
        pass
    return f.value.id


def _reached_again(tg: Tangent, s: gast.stmt, held: str) -> bool:
    """Whether the function reaches the global ``held`` again after the call ``s`` (its
    attributes' tangents matter there): another use, or the call's next turn of a loop
    (``lambda x: layer.forward(x)`` does not)."""
    uses = [m for m in walk(tg.fn) if isinstance(m, gast.Name) and m.id == held]
    return len(uses) > 1 or any(isinstance(loop, (gast.For, gast.While)) and
                                any(m is s for m in walk(loop)) for loop in walk(tg.fn))


def refuse_global_object_given(tg: Tangent, s: gast.stmt, v: gast.Call, fn: Any) -> None:
    """Refuses ``helper(x, O)``, a global object of a class of the user's (without a tangent)
    handed with values with a derivative to a function of the user's that may change what it
    is given (``def helper(x, o): o.reset(x)``, setting ``o.w``): forward mode kept no tangent
    for the attributes of an object the function is not given, so a later read of ``O.w`` had
    a zero tangent (a silently wrong jvp), as for ``O.reset(x)``
    (:func:`refuse_global_object_changed`; since session 29 a safety net)."""
    for held in global_objects_given(tg, s, v, fn):
        tg.refuse(s, f"{source_of(v.func)}(...) given a value with a derivative and the global "
                     f"object {held}, which it may change (set its attributes): forward mode "
                     "keeps no tangent for the attributes of an object the function is not "
                     "given", f"pass {held} to the function as an argument (f(x, {held})): "
                  "its attributes then get tangents; or use adgen.grad / adgen.vjp")


def global_objects_given(tg: Tangent, s: gast.stmt, v: gast.Call, fn: Any) -> list[str]:
    """The globals ``O`` of ``helper(x, O)``: objects of a class of the user's without a
    tangent, handed with values with a derivative to ``fn``, a function of the user's that may
    change what it is given, and reached again by the function after the call."""
    given = [*v.args, *(k.value for k in v.keywords)]
    if all(tg.tangent(a) is None for a in given):
        return []
    from adgen.transforms.argument_writes import leaves_arguments
    from adgen.transforms.bindings import NOT_FOUND, dotted_object

    out: list[str] = []
    for a in given:
        if not isinstance(a, gast.Name) or tg.parsed.is_local(a.id) or \
                tg.tangent(a) is not None:
            continue
        held = dotted_object(tg.parsed, a)
        top = str(getattr(type(held), "__module__", "") or "").split(".")[0]
        if held is NOT_FOUND or isinstance(held, (type, types.ModuleType)) or \
                not isinstance(getattr(held, "__dict__", None), dict) or \
                top in sys.stdlib_module_names or top in ("numpy", "scipy", "adgen", "builtins"):
            continue
        if not _reached_again(tg, s, a.id) or leaves_arguments(fn):
            continue
        out.append(a.id)
    return out


def built_plainly(cls: type) -> bool:
    """Whether Python builds an object of ``cls`` by running its ``__init__`` (a function of
    the user's) on a new object whose attributes are stored as set: no metaclass ``__call__``,
    ``__new__``, ``__setattr__``, property or other descriptor of the class's own (a setter
    storing ``np.exp(v)`` would get its tangent as ``np.exp(v_dot)``). A dataclass's
    ``__init__`` (no source) is compiled as ``adgen.dataclass_init`` writes it again
    (tangent_calls): a frozen one's stores are ``object.__setattr__`` calls, which bypass its
    ``__setattr__`` on the object and its tangent, as are those of a class whose ``__init__``
    stores only that way (:func:`_stores_past_setattr`)."""
    if type(cls).__call__ is not type.__call__ or cls.__new__ is not object.__new__ or \
            (cls.__setattr__ is not object.__setattr__ and
             "__dataclass_fields__" not in dir(cls) and not _stores_past_setattr(cls)) or \
            not isinstance(getattr(cls, "__init__", None), types.FunctionType):
        return False
    # (a slot, __dict__ and __weakref__ store as set; a property without a setter or a
    # deleter stores nothing: a store of its name raises, on the object first)
    return not any((hasattr(type(a), "__set__") or hasattr(type(a), "__delete__")) and
                   not isinstance(a, types.MemberDescriptorType) and
                   name not in ("__dict__", "__weakref__") and
                   not (type(a) is property and a.fset is None and a.fdel is None)
                   for k in cls.__mro__[:-1] for name, a in vars(k).items())


def built_empty(cls: type) -> bool:
    """Whether ``cls()`` builds an object with no attributes: a class of the user's with no
    ``__init__`` (``object.__init__``), ``__new__`` or metaclass ``__call__`` of its own (a
    callable layer ``class Tanh: def __call__(self, x): ...``)."""
    return cls.__module__ != "builtins" and type(cls).__call__ is type.__call__ and \
        cls.__new__ is object.__new__ and cls.__init__ is object.__init__


def _stores_past_setattr(cls: type) -> bool:
    """Whether ``cls.__init__`` (a class defining ``__setattr__``, a frozen one's refusing
    every store) sets attributes only with ``object.__setattr__(self, "w", w)``, which the
    compiled code calls too, on the object and on its tangent: no ``self.w = w`` (which runs
    the class's ``__setattr__``, on the tangent too: ``np.exp(v)`` stored as ``np.exp(v_dot)``)
    and no call of a method or ``super()`` that might."""
    import ast
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls.__init__)))
    except (OSError, TypeError, SyntaxError):
        return False
    fn = tree.body[0]
    if not isinstance(fn, ast.FunctionDef) or not fn.args.args:
        return False
    me = fn.args.args[0].arg
    for node in ast.walk(fn):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
            return False
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, (ast.Name, ast.Call)) and (
                    getattr(node.func.value, "id", None) == me or
                    isinstance(node.func.value, ast.Call)):
            return False  # self.reset(), super().__init__(...)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("setattr", "vars"):
            return False
    return True


def construction(tg: Tangent, s: gast.Assign, n: str, v: gast.Call
                 ) -> tuple[list[gast.stmt], list[gast.stmt]]:
    """``n = Heat(dt)`` of a class of the user's that Python builds the usual way (its
    ``__init__`` on a new object): the object and its tangent, an object of the same class,
    both new, from one call (``runtime.construct_jvp``, adgen.built_inside), which runs the
    jvp of ``__init__`` on them and sets the tangent's attributes where ``__init__`` sets the
    object's::

        n, n_dot = construct_jvp(Heat, (dt,), (dt_dot,), {})

    One call returning new objects: reverse mode over this code (second derivatives)
    differentiates it by its rule. Arguments given by keyword with a tangent
    (``Params(w=w, b=b)``) are passed by position where every parameter before them is
    given (its jvp takes the tangents by position)."""
    v = _by_position(tg, v, resolve_call(tg, v))
    stmts, _ = dynamic_call(tg, s, n, v)
    call = stmts[0].value
    call.func = name("construct_jvp")
    del call.args[4:]  # (no object the class is taken from)
    return stmts, []


def _by_position(tg: Tangent, v: gast.Call, cls: Any) -> gast.Call:
    """``cls(a, w=x, b=y)`` with ``x`` or ``y`` carrying a tangent, as ``cls(a, x, y)`` where
    ``w`` and ``b`` are the parameters of ``__init__`` after the ones given by position (in
    the order of the signature); ``v`` itself otherwise."""
    import inspect

    from adgen.dataclass_init import dataclass_init

    if not any(tg.tangent(k.value) is not None for k in v.keywords) or \
            any(k.arg is None for k in v.keywords):
        return v
    try:
        params = list(inspect.signature(dataclass_init(cls) or cls.__init__).parameters.values())
    except (TypeError, ValueError):
        return v
    named = [p.name for p in params[1:] if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    given = {k.arg: k.value for k in v.keywords}
    args = list(v.args)
    for p in named[len(args):]:
        if p not in given:
            break
        args.append(given.pop(p))
    return gast.Call(func=v.func, args=args,
                     keywords=[k for k in v.keywords if k.arg in given])


def partial_call(tg: Tangent, s: gast.Assign, n: str, v: gast.Call
            ) -> tuple[list[gast.stmt], list[gast.stmt]]:
    """``n = functools.partial(f, ...)`` of values without a derivative: a function value
    with no tangent of its own (its calls go through :meth:`dynamic_call`). A bound value
    the analyses take to have one (an array built in the function, ``np.ones(3)``, which a
    call through the partial might write) is checked when the code runs: a nonzero tangent
    is refused there (``partial_binds_no_tangent``), a zero one loses nothing."""
    bound = list(v.args[1:]) + [k.value for k in v.keywords]
    tangents = [t for t in (tg.tangent(a) for a in bound) if t is not None]
    check = [at(gast.Expr(value=gast.Call(
        func=name("partial_binds_no_tangent"),
        args=[gast.Tuple(elts=tangents, ctx=gast.Load())], keywords=[])), s)] \
        if tangents else []
    return check, [assign(name(tg.dot(n), gast.Store), gast.Constant(value=None, kind=None),
                          s)]

def dynamic_call(tg: Tangent, s: gast.Assign, n: str, v: gast.Call
                 ) -> tuple[list[gast.stmt], list[gast.stmt]]:
    """``n = f(a, b)`` where ``f`` is a value known only when the call runs (a function
    from a list, a ``functools.partial``, a function passed in, a method of a local
    object): ``n, n_dot = call_jvp(f, (a, b), (a_dot, b_dot), {...}, obj, obj_dot)``
    (runtime.call_jvp; ``obj`` the object ``f`` is taken from, ``obj_dot`` its tangent or
    None)."""
    if any(isinstance(a, gast.Starred) for a in v.args) or any(k.arg is None
                                                               for k in v.keywords):
        tg.refuse(s, "a call with *args or **kwargs", "pass the arguments by name")
    refuse_global_object_changed(tg, s, v)
    args = gast.Tuple(elts=copy.deepcopy(v.args), ctx=gast.Load())
    # the keyword arguments' tangents follow the positional ones', in the keywords' order,
    # where one has a derivative (a kw_only dataclass field, Params(w, c=b * 3.0): it was
    # refused; tangent_calls.keyword_tangents)
    passed = list(v.args) + ([k.value for k in v.keywords]
                             if any(tg.tangent(k.value) is not None for k in v.keywords)
                             else [])
    tangents = gast.Tuple(elts=[tg.tangent(a) or gast.Constant(value=None, kind=None)
                                for a in passed], ctx=gast.Load())
    keywords = gast.Dict(keys=[gast.Constant(value=k.arg, kind=None) for k in v.keywords],
                         values=[copy.deepcopy(k.value) for k in v.keywords])
    # the object the function value is taken from and its tangent: a method's receiver
    # gets that tangent when it is that object (self.features(x), layer(x))
    root = v.func.value if isinstance(v.func, gast.Attribute) else v.func
    owner_dot = tg.tangent(root) or gast.Constant(value=None, kind=None)
    call = gast.Call(func=name("call_jvp"), args=[copy.deepcopy(v.func), args, tangents,
                                                  keywords, copy.deepcopy(root),
                                                  owner_dot], keywords=[])
    if hasattr(v, READS_AFTER):  # (checked as it runs: unseen_calls)
        setattr(call, READS_AFTER, getattr(v, READS_AFTER))
    tup = gast.Tuple(elts=[name(n, gast.Store), name(tg.dot(n), gast.Store)],
                     ctx=gast.Store())
    return [at(Replace(targets=[tup], value=call, type_comment=None), s)], []

def starred_call(tg: Tangent, s: gast.Assign, n: str, v: gast.Call
                 ) -> tuple[list[gast.stmt], list[gast.stmt]]:
    """``n = call_starred(f, None, args, kwargs)`` or ``call_starred(obj, 'm', args,
    kwargs)`` (desugar: the user's ``f(*xs, **kw)``, ``obj.m(*xs)``): ``n, n_dot =
    call_jvp(f, args, args_dot, kwargs, obj, obj_dot)``, the tuple's tangent (or ``(None,)
    * len(args)``) lined up with its items when the call runs; a method's object passes
    its tangent as the owner's (runtime.call_jvp)."""
    head, method, packed, kwargs = v.args[:4]
    none = gast.Constant(value=None, kind=None)
    m = method.value if isinstance(method, gast.Constant) else None
    if m is None:
        fn, owner, owner_dot = copy.deepcopy(head), none, gast.Constant(None, None)
    else:
        fn = gast.Attribute(value=copy.deepcopy(head), attr=m, ctx=gast.Load())
        owner, owner_dot = copy.deepcopy(head), tg.tangent(head) or gast.Constant(
            None, None)
        if tg.tangent(head) is not None and m in methods.METHODS:
            tg.refuse(s, f"{source_of(fn)}(*args) on a value with a derivative",
                        "pass the arguments one by one (a shape as a tuple: "
                        "z.reshape((*x.shape, 2)))")
    made = {st.targets[0].id: st.value for st in walk(tg.fn) if isinstance(st, gast.Assign)
            and isinstance(st.targets[0], gast.Name)}
    values = made.get(kwargs.id, kwargs) if isinstance(kwargs, gast.Name) else kwargs
    kw_dot = None
    if not (isinstance(values, gast.Dict) and all(tg.tangent(x) is None
                                                  for x in values.values)):
        kw_dot = tg.tangent(kwargs)
    tangents = tg.tangent(packed) or gast.BinOp(
        left=gast.Tuple(elts=[gast.Constant(value=None, kind=None)], ctx=gast.Load()),
        op=gast.Mult(), right=gast.Call(func=name("len"), args=[copy.deepcopy(packed)],
                                        keywords=[]))
    if kw_dot is not None:
        # f(x, **kw) with values with a derivative in kw: their tangents follow the
        # positional ones, in kw's order (tangent_calls.keyword_tangents, as dynamic_call's)
        given = gast.parse("tuple([d.get(k) for k in kw])").body[0].value
        given.args[0].elt.func.value = copy.deepcopy(kw_dot)
        given.args[0].generators[0].iter = copy.deepcopy(kwargs)
        tangents = gast.BinOp(left=tangents, op=gast.Add(), right=given)
    call = gast.Call(func=name("call_jvp"), args=[fn, copy.deepcopy(packed), tangents,
                                                  copy.deepcopy(kwargs), owner, owner_dot],
                     keywords=[])
    tup = gast.Tuple(elts=[name(n, gast.Store), name(tg.dot(n), gast.Store)],
                     ctx=gast.Store())
    return [at(Replace(targets=[tup], value=call, type_comment=None), s)], []

def resolve_call(tg: Tangent, v: gast.Call) -> Any:
    """The object a call calls; the runtime functions earlier passes write
    (``loop_sequence``, ``flat_view``) resolve to adgen.runtime's, also where the user's
    module has a function of that name (``def ufunc_at(x)`` beside ``np.multiply.at(...)``:
    the user's was called, a TypeError), as in reverse_plan's resolve."""
    if isinstance(v.func, gast.Name) and v.func.id in RUNTIME_CALLS and \
            not tg.parsed.is_local(v.func.id):
        from adgen import runtime

        return getattr(runtime, v.func.id)
    return tg.resolve(v.func)

def nested_call(tg: Tangent, s: gast.stmt, n: str | None, v: gast.Call
                ) -> tuple[list[gast.stmt], list[gast.stmt]]:
    """``n = g(a)`` for a nested def g reading x, y of this function: ``n, n_dot =
    g_jvp(a, x=x, y=y, a_dot=..., x_dot=..., y_dot=...)``."""
    assert tg.nested is not None
    if any(isinstance(a, gast.Starred) for a in v.args) or any(k.arg is None
                                                               for k in v.keywords):
        tg.refuse(s, "a call with *args or **kwargs", "pass the arguments by name")
    d = tg.defs[v.func.id]
    own = [a.id for a in d.args.args]
    info, lifted = tg.nested(d, _given(tg, d, v),
                             lambda f: tg.tangent(name(f)) is not None)
    keywords = list(v.keywords) + [gast.keyword(arg=info.params[info.params.index(f)],
                                                value=name(f)) for f in lifted]
    # a parameter left to its default (a constant: run checks) is passed: the jvp of a
    # nested def takes every parameter (its lifted values follow them)
    first = len(own) - len(d.args.defaults)
    given = {k.arg for k in v.keywords}
    keywords += [gast.keyword(arg=p, value=copy.deepcopy(d.args.defaults[i - first]))
                 for i, p in enumerate(own)
                 if i >= max(first, len(v.args)) and p not in given]
    values = {k.arg: k.value for k in keywords}
    for k, a in enumerate(v.args):
        t = tg.tangent(a)
        if t is not None:
            keywords.append(gast.keyword(arg=info.tangent_params[k], value=t))
    for p, a in values.items():
        t = tg.tangent(a)
        if t is not None:
            keywords.append(gast.keyword(arg=info.tangent_params[info.params.index(p)],
                                         value=t))
    call = gast.Call(func=name(f"{info.symbol}_jvp"), args=copy.deepcopy(v.args),
                     keywords=copy.deepcopy(keywords))
    if n is None:
        return [at(ReplaceExpr(value=call), s)], []
    tup = gast.Tuple(elts=[name(n, gast.Store), name(tg.dot(n), gast.Store)],
                     ctx=gast.Store())
    return [at(Replace(targets=[tup], value=call, type_comment=None), s)], []

def _given(tg: Tangent, d: gast.FunctionDef, v: gast.Call) -> tuple[int, ...] | None:
    """The positions of the own parameters of the nested def ``d`` whose arguments in its
    call ``v`` carry a tangent (its jvp is compiled for them and the free variables with
    one alone); None (all) where it has keyword-only parameters."""
    if d.args.kwonlyargs:
        return None
    own = [a.id for a in d.args.args]
    given = {k for k, a in enumerate(v.args) if tg.tangent(a) is not None}
    for k in v.keywords:
        if tg.tangent(k.value) is not None:
            if k.arg not in own:
                return None
            given.add(own.index(k.arg))
    return tuple(sorted(given))


def user_call(tg: Tangent, s: gast.stmt, n: str | None, v: gast.Call, obj: Any
              ) -> tuple[list[gast.stmt], list[gast.stmt]]:
    """``n = g(a, b)`` -> ``n, n_dot = g_jvp(a, b, a_dot=..., b_dot=...)``."""
    info = tg.callee(obj, s)
    tg.callees[info.symbol] = obj
    keywords = list(v.keywords)
    if any(isinstance(a, gast.Starred) for a in v.args) or any(k.arg is None
                                                               for k in keywords):
        tg.refuse(s, "a call with *args or **kwargs", "pass the arguments by name")
    pos = list(v.args)
    packed = varargs_of(obj)
    if packed is not None and len(pos) >= packed:
        # *xs: the extra arguments as one tuple (parse.varargs_of)
        pos = pos[:packed] + [gast.Tuple(elts=pos[packed:], ctx=gast.Load())]
    elif packed is not None:  # fewer than the named ones: the empty tuple by keyword
        keywords.append(gast.keyword(arg=obj.__code__.co_varnames[packed],
                                     value=gast.Tuple(elts=[], ctx=gast.Load())))

    def tangent_of(a: gast.expr) -> gast.expr | None:
        if isinstance(a, gast.Tuple):
            if all(tg.tangent(e) is None for e in a.elts):
                return None
            return gast.Tuple(elts=[tg.tangent_or_zero(e) for e in a.elts],
                              ctx=gast.Load())
        return tg.tangent(a)

    for k, a in enumerate(pos):
        t = tangent_of(a)
        if t is not None and k < len(info.tangent_params):
            keywords.append(gast.keyword(arg=info.tangent_params[k], value=t))
    for kw in v.keywords:
        t = tg.tangent(kw.value)
        if t is not None and kw.arg not in info.params:
            tg.refuse(s, f"passing a value with a derivative to the keyword-only "
                           f"parameter {kw.arg} of {source_of(v.func)}",
                        "make it a positional-or-keyword parameter")
        if t is not None:
            keywords.append(gast.keyword(
                arg=info.tangent_params[info.params.index(kw.arg)], value=t))
    args = copy.deepcopy(pos)
    if len(pos) == len(info.params) and not v.keywords:
        # every parameter passed by position: the tangents too (None: zero)
        args += [tangent_of(a) or gast.Constant(value=None, kind=None) for a in pos]
        keywords = []
    call = gast.Call(func=name(f"{info.symbol}_jvp"), args=args,
                     keywords=copy.deepcopy(keywords))
    if n is None:  # the jvp runs the primal too: it replaces the primal statement
        return [at(ReplaceExpr(value=call), s)], []
    tup = gast.Tuple(elts=[name(n, gast.Store), name(tg.dot(n), gast.Store)],
                     ctx=gast.Store())
    # the jvp computes the primal too: it replaces the primal statement
    return [at(Replace(targets=[tup], value=call, type_comment=None), s)], []
