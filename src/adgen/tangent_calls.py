"""Calls forward mode resolves at run time: the tangent of a call of a function taken from a
variable, a list, an argument or a ``functools.partial`` (``runtime.call_jvp``), through its
rule's jvp or its compiled jvp; and the reverse mode of such a call, for second derivatives
(hessian, hvp) that differentiate tangent code again.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from typing import Any

import numpy as np

from adgen.closure_tangents import ClosureTangent, closure_arguments, made_for, shown_function
from adgen.dispatch import forward_of, pullback_of
from adgen.errors import AdgenError, UnsupportedError
from adgen.passed_derivatives import refuse_rule_tangents
from adgen.rules import registry
from adgen.rules.jvp_evaluation import eval_jvp
from adgen.rules.methods import METHODS, VARARG_METHODS
from adgen.transforms.analyses.reports import reports
from adgen.transforms.bound_callees import method_for
from adgen.transforms.emit import unnumbered
from adgen.transforms.parse import varargs_of


def tangent_of_call(fn: Any, args: tuple[Any, ...], tangents: tuple[Any, ...],
                    kwargs: dict[str, Any], owner: Any = None, owner_dot: Any = None
                    ) -> tuple[Any, Any]:
    """``(out, out_dot)`` of ``fn(*args, **kwargs)`` for a call forward mode resolves when it
    runs (a function taken from a list or passed in, a ``functools.partial``): through the
    function's rule's jvp, or its compiled jvp given the caller's tangents themselves (a
    callee that writes an argument in place writes its tangent in place too). ``tangents``:
    one per positional argument, None for none; keyword arguments get none. A bound method
    or a callable object with a ``__call__`` of the user's is compiled as its function with
    the object as first argument. ``owner`` is the object the caller took the function from
    (``m`` of ``m.step(x)``, ``layer`` of ``layer(x)``) and ``owner_dot`` its tangent (None:
    none): the receiver's tangent when the receiver is ``owner``; with none, nothing
    reached through ``owner`` has one either.

    Raises:
        UnsupportedError: for a method whose receiver's tangent is not known here (taken from
            a list of an object with one), or an ``adgen.rrule``, whose rule forward mode
            cannot follow here.
    """
    if getattr(fn, "__module__", None) in ("adgen.runtime", __name__) and \
            getattr(fn, "__name__", None) in ("call_jvp", "call_jvp_tangent"):
        from adgen.second_forward_calls import jvp_of_call_jvp

        # forward mode's dynamic call in jvp code differentiated again by forward mode
        # (jacfwd(jacfwd(f)) of a function calling m.loss(z)): it was refused
        return jvp_of_call_jvp(fn.__name__ == "call_jvp_tangent", args, tangents)
    if getattr(fn, "__module__", None) in ("adgen.runtime", "adgen.built_inside") and \
            getattr(fn, "__name__", None) == "construct_jvp":
        from adgen.second_forward_calls import jvp_of_construct_jvp

        return jvp_of_construct_jvp(args, tangents)
    if getattr(fn, "__adgen_transform__", False):
        from adgen.derivative_calls import tangent_of_derivative

        # adgen.grad(f)(w) called in the function: jvp of the gradient function
        return tangent_of_derivative(fn, args, tangents, kwargs)
    if type(fn) is types.BuiltinMethodType and type(fn.__self__) is dict and \
            fn.__name__ == "get" and len(args) in (1, 2) and not kwargs:
        # eps = bn_param.get("eps", 1e-5): the item's tangent if the key is there, else the
        # default's (run as a builtin, the result had none: a TypeError further on)
        d, key = fn.__self__, args[0]
        if key in d:
            held = owner_dot if owner is d else None
            return d[key], _float_tangent(d[key], held.get(key) if isinstance(held, dict)
                                          else None)
        out = fn(*args)
        return out, _float_tangent(out, tangents[1] if len(args) == 2 else None)
    if type(fn) is types.BuiltinMethodType and type(fn.__self__) is dict and \
            fn.__name__ in ("values", "items") and not args and not kwargs:
        # sum(p.values()), list(p.items()): the view's tangent is a list, one item per key
        # (a (None, tangent) pair for items), as reverse mode's cotangent of it is
        d = fn.__self__
        held = owner_dot if owner is d and isinstance(owner_dot, dict) else {}
        items = [_float_tangent(v, held.get(k)) for k, v in d.items()]
        return fn(), items if fn.__name__ == "values" else [(None, t) for t in items]
    if type(fn) is types.BuiltinMethodType and type(fn.__self__) is dict and \
            fn.__name__ == "keys" and not args and not kwargs:
        # list(d.keys()): keys carry no derivative, a None per key (the tangent was None:
        # list(None) raised TypeError)
        return fn(), [None] * len(fn.__self__)
    if runs_as_it_is(fn):
        out = fn(*args, **kwargs)
        # a number's zero tangent, as a user function's jvp gives its int result: the
        # caller's tangent code computes with it (f = len; s + f(x): float + None raised
        # TypeError); the function's own result, a str or None (print), has none
        return out, (0.0 if isinstance(out, (int, float, np.number)) else None)
    tangents, kw_dots = keyword_tangents(fn, args, tangents, kwargs)
    call = _jvp_call(fn, args, tangents, kwargs, owner, owner_dot, kw_dots=kw_dots)
    if isinstance(call, _RuleJvp):
        return call.fn(*call.args, **call.kwargs), eval_jvp(
            call.rule, call.args, call.kwargs, call.given)
    return call.target(*call.args, **call.kwargs)


def compiled_jvp_call(fn: Any, args: tuple[Any, ...], tangents: tuple[Any, ...],
                      kwargs: dict[str, Any], owner: Any, owner_dot: Any) -> Any:
    """The compiled jvp :func:`tangent_of_call` would call for ``fn`` (a function with a rule
    as the jvp of a function calling it by name): an object with ``target``, ``args``,
    ``kwargs`` and where each part of the call went (``arg_slots``, ``tangent_slots``,
    ``owner_slot``, ``owner_dot_slot``), for forward mode over that jvp
    (adgen.second_forward_calls)."""
    tangents, kw_dots = keyword_tangents(fn, args, tangents, kwargs)
    return _jvp_call(fn, args, tangents, kwargs, owner, owner_dot, by_name=True,
                     kw_dots=kw_dots)


def keyword_tangents(fn: Any, args: tuple[Any, ...], tangents: tuple[Any, ...],
                     kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any] | None]:
    """The tangents of a call's positional arguments, and those of its keyword arguments by
    name (None where the caller gave none): forward mode's dynamic call passes the keyword
    arguments' tangents after the positional ones, in the order of ``kwargs``, where one has
    a derivative (transforms/tangent_call_forms.dynamic_call: ``Params(w, c=b * 3.0)`` of a
    ``kw_only`` field ``c``; it was refused).

    Raises:
        UnsupportedError: for a keyword tangent given to a closure (a nested def or a lambda
            found when the call runs), whose values are handed on another way.
    """
    if len(tangents) <= len(args):
        return tuple(tangents), None
    kw_dots = dict(zip(kwargs, tangents[len(args):]))
    if isinstance(fn, types.FunctionType) and fn.__closure__ and \
            any(t is not None for t in kw_dots.values()):
        _refuse_keyword_tangents(fn)
    return tuple(tangents[:len(args)]), kw_dots


def _refuse_keyword_tangents(fn: Any) -> None:
    """A value with a derivative passed by keyword to ``fn``, which forward mode follows
    only into a compiled function of the user's (a method, a class's ``__init__``)."""
    from adgen.errors import UnsupportedError

    if isinstance(fn, types.FunctionType) and fn.__closure__:
        shown = "a lambda" if fn.__name__ == "<lambda>" else f"the nested function {fn.__name__}"
    else:
        shown = getattr(fn, "__qualname__", None) or type(fn).__name__
    raise UnsupportedError(
        f"forward mode (jvp) passing a value with a derivative by keyword to {shown}, found "
        "when the call runs (a NumPy function or a closure held in a variable)",
        hint="pass it by position, or take the derivative with adgen.grad / adgen.vjp")


def _float_tangent(value: Any, tangent: Any) -> Any:
    """``tangent``, or a zero one where it is None and ``value`` is a float or a float array
    (the caller's code took the value for one with a tangent)."""
    if tangent is not None:
        return tangent
    if isinstance(value, (float, np.floating)):
        return 0.0
    if isinstance(value, np.ndarray) and value.dtype.kind in "fc":
        return np.zeros_like(value)
    return None


def runs_as_it_is(fn: Any) -> bool:
    """A builtin forward mode calls as it is through a variable (``log = print; log(x)``, a
    list's ``append``, ``log.info``: analyses.reports), as reverse mode's dispatch does (dispatch.forward_of): it changes no
    array it is given, and its result has no tangent. Not one with a rule (``f = max``,
    ``abs``, ``sum``, ``pow`` through a variable, or as ``functools.reduce``'s function: their
    rules' jvps; run as they are, the tangent was None, a silent zero)."""
    return isinstance(fn, types.BuiltinFunctionType) and (
        getattr(fn, "__module__", None) == "builtins" or
        type(getattr(fn, "__self__", None)) in (list, dict, str, bytes)) and \
        fn.__name__ not in ("setattr", "delattr", "exec", "eval") and \
        registry.lookup(fn) is None or reports(fn)


class _RuleJvp:
    """A call of a function with a rule: its jvp is the rule's.

    A plain class (what ``@dataclass`` gave it, written out: a dataclass compiles its
    methods when ``import adgen`` defines it, issue 15's cold start).
    """

    __slots__ = ("fn", "rule", "args", "kwargs", "given")

    def __init__(self, fn: Any, rule: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                 given: dict[str, Any]) -> None:
        self.fn = fn
        self.rule = rule
        self.args = args
        self.kwargs = kwargs
        self.given = given

    def __repr__(self) -> str:
        return (f"_RuleJvp(fn={self.fn!r}, rule={self.rule!r}, args={self.args!r}, "
                f"kwargs={self.kwargs!r}, given={self.given!r})")


class _CompiledJvp:
    """A call of a compiled jvp, ``target(*args, **kwargs)``, and where each part of the
    caller's call went: ``arg_slots[i]`` / ``tangent_slots[i]`` the position of the caller's
    i-th argument / tangent among the target's positional arguments followed by its keyword
    arguments (None: not passed on), likewise ``owner_slot`` / ``owner_dot_slot`` for the
    object the function was taken from and its tangent.

    A plain class (what ``@dataclass`` gave it, written out, as ``_RuleJvp``).
    """

    __slots__ = ("target", "args", "kwargs", "arg_slots", "tangent_slots", "owner_slot",
                 "owner_dot_slot", "closure_slots")

    def __init__(self, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                 arg_slots: tuple[int | None, ...], tangent_slots: tuple[int | None, ...],
                 owner_slot: int | None = None, owner_dot_slot: int | None = None) -> None:
        self.target = target
        self.args = args
        self.kwargs = kwargs
        self.arg_slots = arg_slots
        self.tangent_slots = tangent_slots
        self.owner_slot = owner_slot
        self.owner_dot_slot = owner_dot_slot
        # a nested def's or lambda's call (closure_tangents): for each variable of the
        # enclosing function its tangent holds, the slots of its value and its tangent
        # (None: none), whose cotangents are the owner tangent's
        self.closure_slots: tuple[tuple[int | None, int | None], ...] | None = None

    def __repr__(self) -> str:
        return (f"_CompiledJvp(target={self.target!r}, args={self.args!r}, "
                f"kwargs={self.kwargs!r}, arg_slots={self.arg_slots!r}, "
                f"tangent_slots={self.tangent_slots!r}, owner_slot={self.owner_slot!r}, "
                f"owner_dot_slot={self.owner_dot_slot!r})")


def _jvp_call(fn: Any, args: tuple[Any, ...], tangents: tuple[Any, ...],
              kwargs: dict[str, Any], owner: Any, owner_dot: Any, by_name: bool = False,
              zero_first: bool | None = False, kw_dots: dict[str, Any] | None = None
              ) -> _RuleJvp | _CompiledJvp:
    """What :func:`tangent_of_call` calls (see there). ``by_name``: a function with a rule as
    the compiled jvp of a function that calls it by name (for reverse mode over it).
    ``zero_first``: the first tangent is a symbolic zero (a method's object's, which it
    changes): the jvp is compiled for a constant first parameter, and given that tangent
    for the attributes it stores. None: that tangent is zero in some attributes only (a second
    call of such a method): the same where those are the ones the method reads as constants
    and its stores vary its object (so it reads every other attribute's tangent).
    ``kw_dots``: the keyword arguments' tangents by name (:func:`keyword_tangents`), whose
    slots follow the positional tangents' in the result's ``tangent_slots``."""
    from adgen.errors import UnsupportedError

    if isinstance(owner_dot, ClosureTangent) and owner_dot.fn is fn:
        # a nested def or lambda read as a value ([lambda t: np.exp(t) * x[0]] handed to a
        # helper): the jvp of its code given the enclosing function's values it reads and
        # their tangents, which its tangent holds (it was refused at the value)
        compiled, pos, dots, held = closure_arguments(fn, owner_dot, args, tangents, kwargs)
        call = _compiled_call(compiled, pos, dots, {})
        call.closure_slots = tuple((None, None) if i is None else
                                   (call.arg_slots[i], call.tangent_slots[i]) for i in held)
        call.arg_slots = call.arg_slots[:len(args)]
        call.tangent_slots = call.tangent_slots[:len(args)]
        return call
    if isinstance(fn, types.FunctionType) and fn.__closure__ and made_for(fn):
        # the same function reached where its tangent was not handed on (an attribute, a
        # global): its values would be taken for constants
        raise UnsupportedError(
            f"forward mode (jvp) calling {shown_function(fn)}, which reads values of the "
            "enclosing function that have a derivative, where forward mode did not hand its "
            "tangent on (through an attribute, a global or "
            "another value the function was stored in)",
            hint="pass the function in a list, a tuple, a dict or as an argument, or pass "
                 "those values as arguments; or use adgen.grad / adgen.vjp")
    if isinstance(fn, functools.partial):
        # its arguments were bound where it was made, from values without a derivative
        # (transforms.tangent refuses a partial of one that has one)
        inner = _jvp_call(fn.func, fn.args + tuple(args),
                          (None,) * len(fn.args) + tuple(tangents), {**fn.keywords, **kwargs},
                          None, None, by_name, kw_dots=kw_dots)
        if isinstance(inner, _CompiledJvp):
            k = len(fn.args)
            inner.arg_slots, inner.tangent_slots = inner.arg_slots[k:], inner.tangent_slots[k:]
        return inner
    if isinstance(fn, np.vectorize):
        from adgen.rules.composites_callbacks import vectorized_call

        # np.vectorize(f)(x): the loop NumPy runs, f called on each item (f and the output
        # type, put first, have no tangent)
        loop, full = vectorized_call(fn, tuple(args), kwargs)
        return _jvp_call(functools.partial(loop, *full[:2]), args, tangents, {}, None, None,
                         by_name)
    if type(fn) is types.BuiltinMethodType and fn.__self__ is owner and \
            isinstance(owner, np.ndarray) and fn.__name__ in METHODS and \
            not (fn.__name__ in VARARG_METHODS and len(args) > 1):
        # x.view(), x.copy() where the compiler did not take x for an ndarray (dispatch's
        # forward_of): the method's rule, the receiver and its tangent first (x.view()'s
        # tangent is the same view of x's, so a write through it writes that)
        fn, args, tangents = METHODS[fn.__name__], (owner, *args), (owner_dot, *tangents)
    if kw_dots and any(t is not None for t in kw_dots.values()) and (
            registry.frule_of(fn) is not None or
            registry.lookup(fn) is not None and not by_name):
        _refuse_keyword_tangents(fn)  # (a rule's jvp takes its tangents by position)
    if registry.frule_of(fn) is not None:  # the user's jvp rule (adgen.custom_jvp)
        from adgen.custom_jvp import frule_tangent

        return _compiled_call(frule_tangent(fn, len(args)), args, tangents, kwargs)
    rule = registry.lookup(fn)
    if rule is not None and rule.is_rrule:
        raise UnsupportedError(
            f"forward mode (jvp) through {getattr(fn, '__qualname__', fn)!s}, which has an "
            "adgen.rrule (a reverse-mode rule)", hint="use adgen.grad / adgen.vjp")
    if rule is not None and by_name:
        return _jvp_call(_caller_by_name(fn, len(args), tuple(kwargs)), args, tangents, kwargs,
                         None, None, kw_dots=kw_dots)
    if rule is not None:
        registry.check_run_binding(rule, args, kwargs)  # (op(y, t, y) of op = np.add)
        bound = rule.bind(list(range(len(args))), {})
        refuse_rule_tangents(rule, fn, bound, tangents)  # (f = np.var; f(x, 0, None, None, d))
        given = {p: (tuple(tangents[i] for i in k) if isinstance(k, tuple) else tangents[k])
                 for p, k in bound.items() if p in rule.diff and
                 not isinstance(k, registry.Default)}
        given = {p: t for p, t in given.items() if t is not None}
        return _RuleJvp(fn, rule, tuple(args), kwargs, given)
    ref = registry.reference_of(fn)
    if ref is not None:
        fn = ref
    refused = registry.refusal_of(type(fn))
    if refused is not None:
        # an np.vectorize object (NumPy runs the function in its loop), refused as
        # dispatch.forward_of refuses it in reverse mode (its __call__'s **kwargs was
        # reported)
        from adgen.errors import MissingRuleError

        raise MissingRuleError(
            f"forward mode (jvp) calling a {type(fn).__name__} object "
            f"({getattr(type(fn), '__module__', '')}.{type(fn).__qualname__}): {refused}",
            hint="np.vectorize(f)(x) runs f on each item: write np.array([f(v) for v in x]) "
            "(of x.ravel() for more than one axis)")
    if isinstance(fn, types.FunctionType) and fn.__name__ == "__init__" and args and \
            dataclasses.is_dataclass(args[0]) and fn is getattr(type(args[0]), "__init__"):
        # Params(w, s) built in the function (tangent_call_forms.construction): the
        # __init__ dataclasses wrote, as source (forward mode refused a dataclass built
        # inside the function)
        from adgen.dataclass_init import dataclass_init

        fn = dataclass_init(type(args[0])) or fn
    call_method = getattr(type(fn), "__call__", None)
    if not isinstance(fn, (types.FunctionType, types.MethodType)) and \
            isinstance(call_method, types.FunctionType):
        fn = types.MethodType(call_method, fn)  # a layer called as layer(x)
    method = isinstance(fn, types.MethodType) and \
        isinstance(fn.__func__, types.FunctionType) and registry.lookup(fn.__func__) is None
    # (also where the owner's tangent is still zero, for a method changing its object: a
    # layer keeping running statistics, self.norm(x), set a new tangent object's, which the
    # owner's never saw: jvp 0.0 through m.norm.running_mean before session 23)
    held = _held_as(fn, owner, owner_dot) if method and fn.__self__ is not owner and \
        owner_dot is not None and (not _known_zero(owner_dot) or
                                   not _leaves_arguments(fn.__func__)) else None
    if method and (fn.__self__ is owner or _zero_tangent(owner_dot) or held is not None):
        # the receiver's tangent: the tangent of the object it is (an object of its class
        # holding its attributes' tangents), or none where the object it was read from has
        # none (then nothing reached through it has one)
        own = fn.__self__ is owner
        # a zero tangent of an object the method changes nothing of is no tangent: the
        # method's jvp is compiled without one, so self.gamma stays a constant (with a zero
        # tangent, softmin's gamma_dot * a / gamma ** 2 was 0 * inf = nan next to soft-DTW's
        # infinite border: a Hessian of nan)
        # (a symbolic zero only: the tangent object zero_tangent made, none of it set since.
        # A numeric zero stored into it, n_dot.c = 2 * x0 * v0 at x0 = 0, is a tangent whose
        # derivative is not zero: dropped, hessian's H00 was 0 for 6)
        given = owner_dot if own and not (_known_zero(owner_dot) and
                                          _leaves_arguments(fn.__func__)) else None
        if held is not None:
            # self.fc(x): a layer held in an attribute of the object it was read from: its
            # tangent is that attribute's (it was refused). A method changing its object
            # (self.h = ... in an RNN cell) sets the tangent object's attributes as it sets
            # the object's: that needs a tangent object of its own
            given = getattr(owner_dot, held, None)
            if not _leaves_arguments(fn.__func__):
                if type(given) is not type(fn.__self__):
                    raise UnsupportedError(
                        f"forward mode (jvp) calling {fn.__qualname__} of an object held in "
                        f"an attribute ({held}), which changes its object (an attribute it "
                        "sets, an array it writes), where that object has no tangent object "
                        "of its own here", hint="give the object's tangent as an object of its "
                        "class (jvp(f, (model,), (tangent_model,))), or use adgen.grad / "
                        "adgen.vjp")
            elif _known_zero(given):
                given = None
        # (compiled for the object's class where it calls methods of it: self.step(u)
        # writing u is then followed as a call by name, in reverse mode over this code too)
        from adgen.transforms.keyword_shims import for_keywords

        # a symbolic zero given to a method that changes its object (self.h = np.sqrt(
        # self.data) * w ** 3 of m.keeps(w) called in the function differentiated): the
        # attributes it never stores are constants there, as where jvp gives the object no
        # tangent (analyses.constant_attributes); with the object varied, sqrt(data)'s
        # tangent was 0 / 0, a NaN. The zero tangent object is still given: the attributes
        # the method stores set their tangents in it, which the caller reads after the call
        inner = _jvp_call(method_for(for_keywords(fn.__func__, kwargs), (fn.__self__,)),
                          (fn.__self__,) + tuple(args),
                          (given,) + tuple(tangents), kwargs, None, None,
                          zero_first=given is not None and (_known_zero(given) or None),
                          kw_dots=kw_dots)
        if isinstance(inner, _CompiledJvp):
            if own:
                inner.owner_slot, inner.owner_dot_slot = inner.arg_slots[0], \
                    inner.tangent_slots[0]
            inner.arg_slots, inner.tangent_slots = inner.arg_slots[1:], inner.tangent_slots[1:]
        return inner
    if isinstance(fn, type) and isinstance(getattr(fn, "__init__", None), types.FunctionType):
        # cls(a * 3) in a classmethod, a class held in a variable: "a method or callable
        # object taken from a variable" named no object
        raise UnsupportedError(
            f"forward mode (jvp) building an object of the class {fn.__qualname__} through a "
            "name that holds it when the code runs (cls(...) in a classmethod, a class held "
            "in a variable or passed in)",
            hint=f"build it by the class's name ({fn.__name__}(...)), which forward mode "
            "follows, or use adgen.grad / adgen.vjp, which build it")
    if not isinstance(fn, types.FunctionType):
        raise UnsupportedError(
            f"forward mode (jvp) calling {getattr(fn, '__qualname__', type(fn).__name__)}, a "
            "method or callable object taken from a variable (its object's arrays would get "
            "no tangent)", hint="call a module-level function, or use adgen.grad / adgen.vjp")
    from adgen.transforms.keyword_shims import for_keywords

    shim = for_keywords(fn, kwargs)  # def helper(x, **kw): per keywords of this call
    if shim is not fn:
        from adgen.transforms.pipeline import compile_function

        compiled = compile_function(shim)
        if compiled.mutates_params or compiled.mutates_containers:
            # helper(u, **d), fn = helper; fn(u, r=r): the caller's tangent code was
            # compiled without this write (the jvp was silently wrong through **d)
            raise UnsupportedError(
                f"forward mode (jvp) calling {fn.__qualname__}, which takes **kwargs and "
                "changes its arguments in place, through a variable or with **kwargs: the "
                "caller's code could not see which values it changes",
                hint=f"call {fn.__name__} by its name with the keywords written out "
                     f"({fn.__name__}(u, rate=r)), or return the new values")
    fn = shim
    if varargs_of(fn) is not None:
        # its compiled jvp takes the extra arguments as one tuple, and their tangents as
        # another: not lined up here (the call raised a raw TypeError)
        raise UnsupportedError(
            f"forward mode (jvp) calling {fn.__qualname__}, a function with *args, through a "
            "variable or with *args", hint="call it by its name with the arguments one by "
            "one, or use adgen.grad / adgen.vjp")
    from adgen.transforms.tangent_pipeline import compile_tangent

    # the jvp for the arguments given tangents only: the others are constants (a method's
    # object without one: self.gamma stays a number, not one with a zero tangent, whose
    # terms are 0 * inf = nan next to an infinite value; compile_tangent's wrt)
    by_keyword = _keyword_positions(fn, kw_dots)
    if zero_first is None:
        constant = compile_tangent(fn, wrt=tuple(k for k, t in enumerate(tangents)
                                                 if t is not None and k != 0) + by_keyword)
        varied, reads = getattr(getattr(constant, "jvp", None), "__adgen_first_constants__",
                                (False, ()))
        zero_first = varied and all(_known_zero(getattr(tangents[0], a, None)) for a in reads)
    compiled = compile_tangent(fn, wrt=tuple(k for k, t in enumerate(tangents)
                                             if t is not None and not (zero_first and k == 0))
                               + by_keyword)
    return _compiled_call(compiled, args, tangents, kwargs, kw_dots)


def _keyword_positions(fn: types.FunctionType, kw_dots: dict[str, Any] | None
                       ) -> tuple[int, ...]:
    """The positions among ``fn``'s parameters of the keyword arguments given a tangent."""
    if not kw_dots:
        return ()
    code = fn.__code__
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    given = [k for k, t in kw_dots.items() if t is not None]
    if any(k not in names for k in given):
        _refuse_keyword_tangents(fn)
    return tuple(sorted(names.index(k) for k in given))


def _compiled_call(compiled: Any, args: tuple[Any, ...], tangents: tuple[Any, ...],
                   kwargs: dict[str, Any], kw_dots: dict[str, Any] | None = None
                   ) -> _CompiledJvp:
    """The call of a compiled jvp (a CompiledTangent) on the caller's arguments, tangents
    (None: none) and keywords, and the keywords' tangents by name (``kw_dots``: their slots
    follow the positional tangents', in its order)."""
    named = {p: v for p, v in zip(compiled.tangent_params, tangents) if v is not None}
    of_keyword = {k: compiled.tangent_params[compiled.params.index(k)]
                  for k, v in (kw_dots or {}).items() if v is not None}
    named.update({of_keyword[k]: kw_dots[k] for k in of_keyword})
    order = list(named) + list(kwargs)
    slots = tuple(len(args) + order.index(p) if v is not None else None
                  for p, v in zip(compiled.tangent_params, tangents))
    if kw_dots is not None:
        slots += tuple(len(args) + order.index(of_keyword[k]) if k in of_keyword else None
                       for k in kw_dots)
    return _CompiledJvp(compiled.jvp, tuple(args), {**named, **kwargs},
                        tuple(range(len(args))), slots)


_CALLERS: dict[tuple[int, int, tuple[str, ...]], tuple[Any, Any]] = {}


def _caller_by_name(fn: Any, nargs: int, keywords: tuple[str, ...]) -> Any:
    """A Python function ``caller(a0, .., *, k0, ..)`` that returns ``fn(a0, .., k0=k0, ..)``,
    calling ``fn`` by a global name bound to it, so the compiler resolves the call to ``fn``'s
    rule (one per function, number of arguments and keyword names; each entry holds ``fn``)."""
    from adgen.transforms.emit import compile_source

    key = (id(fn), nargs, keywords)
    hit = _CALLERS.get(key)
    if hit is not None and hit[0] is fn:
        return hit[1]
    names = [f"a{k}" for k in range(nargs)]
    kws = [k if k.isidentifier() and k not in names and k != "target" else None
           for k in keywords]
    if None in kws:
        from adgen.errors import UnsupportedError

        raise UnsupportedError(f"forward mode calling {getattr(fn, '__qualname__', fn)!s} "
                               f"through a variable with the keywords {list(keywords)}",
                               hint="call it by its name")
    title = getattr(fn, "__name__", "function")
    title = title if title.isidentifier() else "function"
    params = ", ".join(names + (["*"] + kws if kws else []))
    passed = ", ".join(names + [f"{k}={k}" for k in kws])
    text = f"def {title}_by_name({params}):\n    return target({passed})\n"
    ns: dict[str, Any] = {"target": fn, "np": np}
    compile_source(text, f"<adgen {title} called by name>", ns)
    caller = ns[f"{title}_by_name"]
    _CALLERS[key] = (fn, caller)
    return caller


def call_jvp_rrule(fn: Any, args: tuple[Any, ...], tangents: tuple[Any, ...],
                    kwargs: dict[str, Any], owner: Any = None, owner_dot: Any = None
                    ) -> tuple[Any, Any]:
    """Reverse mode of forward mode's dynamic call (``runtime.call_jvp``, in tangent code
    that hessian, hvp or a derivative of a jvp differentiates again): the compiled jvp it
    calls, run through its own compiled forward and pullback, whose cotangents go back to
    the parts of the call they came from."""
    return _jvp_rrule(fn, args, tangents, kwargs, owner, owner_dot, False)


def call_jvp_tangent(fn: Any, args: tuple[Any, ...], tangents: tuple[Any, ...],
                     kwargs: dict[str, Any], owner: Any = None, owner_dot: Any = None) -> Any:
    """The tangent of :func:`runtime.call_jvp`'s call only: what tangent-only code
    (transforms/tangent_only.py) calls where nothing reads the call's primal result."""
    return tangent_of_call(fn, args, tangents, kwargs, owner, owner_dot)[1]


def call_jvp_tangent_rrule(fn: Any, args: tuple[Any, ...], tangents: tuple[Any, ...],
                           kwargs: dict[str, Any], owner: Any = None, owner_dot: Any = None
                           ) -> tuple[Any, Any]:
    """Reverse mode of :func:`call_jvp_tangent`: the callee's tangent-only jvp, so that its
    primal result, which nothing reads, has no pullback (given a zero cotangent, a helper's
    ``np.log(y)`` at 0 put 0 / 0 = nan into a Hessian where JAX gives -inf)."""
    return _jvp_rrule(fn, args, tangents, kwargs, owner, owner_dot, True)


def _jvp_rrule(fn: Any, args: tuple[Any, ...], tangents: tuple[Any, ...],
               kwargs: dict[str, Any], owner: Any, owner_dot: Any, only: bool
               ) -> tuple[Any, Any]:
    """:func:`call_jvp_rrule`, or with ``only`` :func:`call_jvp_tangent_rrule`."""
    from adgen.errors import UnsupportedError

    if getattr(fn, "__adgen_transform__", False):
        from adgen.derivative_calls import refuse_third_order

        refuse_third_order(fn)
    if getattr(fn, "__module__", None) in ("adgen.runtime", __name__, "adgen.built_inside") \
            and getattr(fn, "__name__", None) in ("call_jvp", "call_jvp_tangent",
                                                  "construct_jvp"):
        from adgen.second_forward_calls import refuse_reverse_over, reverse_of_call_jvp

        if fn.__name__ == "construct_jvp":
            refuse_reverse_over()  # (it named adgen's helper and its rrule)
        # forward over forward's dynamic call, differentiated again by reverse mode (third
        # derivatives: jacfwd(hessian(f)) of a function calling m.loss(z))
        return reverse_of_call_jvp(fn.__name__ == "call_jvp_tangent", args, tangents, only)
    if type(fn) is types.BuiltinMethodType and isinstance(fn.__self__, np.ndarray):
        from adgen.adjoints import locate

        # x.view() of an array forward mode could not type (rules.methods.ARRAY_RECEIVER_ONLY):
        # its tangent code reads the bound method x.view as a value, which reverse mode
        # took for an attribute of x with an adjoint (a raw TypeError, or a casting error)
        raise locate(UnsupportedError(
            f"second derivatives (hessian, hvp, a gradient of a jvp) through "
            f"x.{fn.__name__}() of an array the compiler did not know to be one are not "
            "supported: forward mode calls the method through adgen's dispatch, which "
            "reverse mode does not differentiate again",
            hint=f"index the array instead (x[...] for x.{fn.__name__}())"))
    if type(fn) is types.BuiltinMethodType and type(fn.__self__) is dict and \
            fn.__name__ in ("values", "items", "keys") and not args and not kwargs and \
            owner is fn.__self__:
        # np.stack(list(p.values())) under hessian: the view and its tangents (a list, one
        # per key) as tangent_of_call gives them; their cotangents go to the dict and its
        # tangent, key by key (run as a builtin, the tangent was None: a TypeError)
        d, view = fn.__self__, fn.__name__

        def view_pullback(out_bar: Any) -> tuple[Any, ...]:
            # (a list where the caller's adjoint of the pair started from zeros_like)
            bars = out_bar if isinstance(out_bar, (tuple, list)) and len(out_bar) == 2 \
                else (None, None)
            return (None, (), (), None, _per_key(bars[0], d, view), _per_key(bars[1], d, view))

        return _tangent_of_pair(only, tangent_of_call(fn, args, tangents, kwargs, owner,
                                                      owner_dot), view_pullback)
    if type(fn) is types.BuiltinMethodType and type(fn.__self__) is dict and \
            fn.__name__ == "get" and len(args) in (1, 2) and not kwargs and \
            owner is fn.__self__:
        # v = cfg.get("w", x) under hessian: the item and its tangent as tangent_of_call
        # gives them; their cotangents go to the dict's item and its tangent's where the key
        # is there, else to the default and its tangent (run as a builtin, the tangent was
        # None: a TypeError before session 21)
        d, key = fn.__self__, args[0]
        held = key in d

        def get_pullback(out_bar: Any) -> tuple[Any, ...]:
            bars = out_bar if isinstance(out_bar, (tuple, list)) and len(out_bar) == 2 \
                else (None, None)
            if held:
                return (None, (None,) * len(args), (None,) * len(tangents), None,
                        _at_key(bars[0], d, key), _at_key(bars[1], d, key))
            if len(args) == 2:  # the default's
                return (None, (None, bars[0]), (None, bars[1]), None, None, None)
            return (None, (None,), (None,) * len(tangents), None, None, None)

        return _tangent_of_pair(only, tangent_of_call(fn, args, tangents, kwargs, owner,
                                                      owner_dot), get_pullback)
    if runs_as_it_is(fn):  # print through a variable: nothing to differentiate
        # (the pair as forward mode has it: len's int with a zero tangent, print's None)
        pair = tangent_of_call(fn, args, tangents, kwargs)
        return _tangent_of_pair(only, pair, lambda out_bar: (
            None, (None,) * len(args), (None,) * len(tangents), None, None, None))
    # a NumPy function (or another with a rule) called through a variable (act = np.tanh;
    # act(x)) is the jvp of a function that calls it by name, which the compiler
    # differentiates again like any tangent code
    call = compiled_jvp_call(fn, args, tangents, kwargs, owner, owner_dot)
    if isinstance(call, _RuleJvp):
        raise UnsupportedError(
            f"second derivatives through {getattr(fn, '__qualname__', fn)!s}, a function "
            "with a derivative rule called through a variable (a list, an argument, a "
            "partial)", hint="call it by its name where the second derivative is taken")
    from adgen.transforms.pipeline import compile_function

    compiled = compile_function(call.target)
    if compiled.mutates_containers and not (
            not compiled.mutates_params and call.owner_slot is not None and
            not any(_container(v) for v in (*args, *tangents, *kwargs.values()))):
        # self.features(x) setting self.h (or appending to a list it is given): its pullback
        # here gets the cotangent of its result only, never that of what it set, which the
        # caller reads afterwards (a silently zero second derivative)
        from adgen.adjoints import locate

        name = getattr(fn, "__qualname__", None) or type(fn).__name__
        # a method is differentiated to second order when it is the function itself
        # (hessian(obj.method): its receiver's attributes are its own state there), which a
        # lambda that only forwards to it (lambda x: obj.method(x)) can be replaced by
        itself = (f"take the derivative of the method itself, adgen.hessian(obj."
                  f"{fn.__name__}) with obj your {type(fn.__self__).__name__} (a lambda "
                  f"x: obj.{fn.__name__}(x) is that method), or "
                  if isinstance(fn, types.MethodType) else "")
        raise locate(UnsupportedError(
            f"second derivatives (hessian, hvp, jacfwd or jacrev of grad) through {name}, "
            "which sets an attribute of its object or changes a list or dict it is given, "
            "called from the function differentiated, are not supported yet: its pullback "
            "here would get the cotangent of its result only, not that of what it set",
            hint=f"{itself}have {name} return the values and set them in the caller "
                 "(self.h = self.features(x)), or call a module-level function by its name"))
    target = call.target
    if only:
        from adgen.transforms.tangent_only import tangent_only

        target = tangent_only(target)
        if target is None:  # (a recursive placeholder: the pair's)
            return _tangent_of_pair(True, *_jvp_rrule(fn, args, tangents, kwargs, owner,
                                                      owner_dot, False))
    try:
        out, saved = forward_of(target, call.args, call.kwargs)
    except AdgenError as err:
        _unlocate(err, fn)
        _in_users_names(err, target, fn)
        raise
    # the arrays it was given, guarded as a compiled caller guards its callee's: the caller
    # may write one in place after the call (y += h * self.rhs(y) under hessian), and the
    # pullback then read the new values (a silently wrong second derivative, through a
    # function held in an attribute or a variable, at the session-28 start)
    guarded = _captured_arguments(fn, saved, call.args, call.kwargs)

    def pullback(out_bar: Any) -> tuple[Any, ...]:
        if out_bar is None:
            # a call whose result nothing reads, run for what the method may set on its
            # object (reverse_pullback: self.setup() in __init__): for that only
            if not compiled.mutates_containers:
                return (None, (None,) * len(args), (None,) * len(tangents), None, None, None)
            from adgen.adjoints import zeros_like

            out_bar = zeros_like(out)
        try:  # a rule refusing the point (np.linalg.norm's at a zero vector)
            cts = pullback_of(_saved_as_read(saved, guarded), out_bar, None)
        except AdgenError as err:
            from adgen.adjoints import locate

            _unlocate(err, fn)
            _closure_in_users_words(err, fn)
            raise locate(err) from None  # the line of the caller's pullback on the stack

        def at(k: int | None) -> Any:
            return None if k is None else cts[k]

        owner_dot_bar = at(call.owner_dot_slot)
        if call.closure_slots is not None:
            # a closure's: (values, tangents) of its tangent (closure_tangents)
            owner_dot_bar = (tuple(at(v) for v, _ in call.closure_slots),
                             tuple(at(t) for _, t in call.closure_slots))
        # (the keyword arguments' cotangents: a value with a derivative passed by keyword,
        # Params(w, c=b * 3.0) of a kw_only field)
        kw_bars = {k: at(len(call.args) + list(call.kwargs).index(k)) for k in kwargs
                   if k in call.kwargs} or None
        return (None, tuple(at(k) for k in call.arg_slots),
                tuple(at(k) for k in call.tangent_slots), kw_bars, at(call.owner_slot),
                owner_dot_bar)

    pullback.runs_without_cotangent = True  # (dispatch.pullback_of: out_bar None too)
    return out, pullback


def _captured_arguments(fn: Any, saved: Any, args: tuple[Any, ...],
                        kwargs: dict[str, Any]) -> list[Any]:
    """Captures (adgen.guards) of the arrays among a call's arguments that its saved values
    hold, named by the function called (its file and first line: the caller's line is the
    generated code's)."""
    from adgen.guards import capture

    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    file = code.co_filename if code is not None else "<adgen>"
    line = code.co_firstlineno if code is not None else 0
    what = f"an argument of {getattr(fn, '__qualname__', None) or type(fn).__name__}"
    # (passed: where the call got it, so a callee whose pullback does not read it, sin(L u)
    # reading only L u, keeps it as the argument its adjoint goes to: guards.callee_reads)
    return [capture(a, file, line, what, within=saved, passed=(k - len(args),))
            for k, a in enumerate(args) if type(a) is np.ndarray] + \
        [capture(a, file, line, what, within=saved, passed=(n,))
         for n, a in kwargs.items() if type(a) is np.ndarray]


def _saved_as_read(saved: Any, guarded: list[Any]) -> Any:
    """``saved`` with the arguments written after the call redirected to their guards'
    copies (adgen.guards.remap_saved)."""
    if not guarded:
        return saved
    from adgen.guards import remap_saved

    return remap_saved(saved, guarded)


def _tangent_of_pair(only: bool, pair: Any, pullback: Any) -> tuple[Any, Any]:
    """A call's ``((out, out_dot), pullback)``, or with ``only`` its tangent's: ``(out_dot,
    pullback)`` of out_dot's cotangent."""
    if not only:
        return pair, pullback
    return pair[1], lambda out_dot_bar: pullback((None, out_dot_bar))


def _per_key(g: Any, d: dict, view: str) -> dict | None:
    """The cotangent of dict ``d`` (or of its tangent) for the cotangent ``g`` of its
    ``values()`` or ``items()`` view (a list, one item per key; an item's a (key, value)
    pair), None for none."""
    if g is None or isinstance(g, (float, int)) and g == 0 or view == "keys":
        return None
    items = list(g)
    if view == "items":
        items = [None if gk is None else gk[1] for gk in items]
    return dict(zip(d, items))


def _at_key(g: Any, d: dict, key: Any) -> dict | None:
    """The cotangent of dict ``d`` (or of its tangent) for the cotangent ``g`` of its item at
    ``key``, None for none."""
    if g is None or isinstance(g, (float, int)) and g == 0:
        return None
    return {k: g if k == key else None for k in d}


def _unlocate(err: AdgenError, fn: Any) -> None:
    """An error located in the caller :func:`_caller_by_name` made (its line is adgen's, not
    the user's) loses its location, which the caller's pullback gives it, and says what the
    variable held."""
    if err.location is None or not unnumbered(err.location.file).endswith(" called by name>"):
        return
    err.location = None
    err.message = (f"{err.message} (reached through {getattr(fn, '__qualname__', fn)!s}, "
                   "called through a variable)")
    err.args = (err.format(),)


def _in_users_names(err: AdgenError, target: Any, fn: Any) -> None:
    """A refusal of the jvp code called for ``fn`` (dispatch: "tri_jvp (<adgen tri jvp>:1)
    writes an array argument", under hessian of a function calling ``cb(y)`` with ``cb``
    tripling ``y``) names ``fn``, the user's function, and its def."""
    shown, code = getattr(err, "callee_shown", (None, None))
    user = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if shown is None or user is None or code is not getattr(target, "__code__", None) or \
            shown not in err.message:
        return
    users = f"{getattr(fn, '__qualname__', fn)!s} ({user.co_filename}:{user.co_firstlineno})"
    err.message = err.message.replace(shown, users)
    err.callee_shown = (users, user)  # type: ignore[attr-defined]
    err.args = (err.format(),)


def _closure_in_users_words(err: AdgenError, fn: Any) -> None:
    """hessian's refusal of an object the compiler took for an array ("an object of class
    Model that may share an array ...") where ``fn`` holds a nested def or lambda closing
    over a parameter of that class (def inner(z): return np.sum(self.w * z) in a method):
    says that construct and what to write, as grad's refusal of it does."""
    if not isinstance(err, UnsupportedError) or "may share an array" not in err.message:
        return
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    owner = getattr(fn, "__self__", None)
    if code is None or owner is None or "an object of class " + type(owner).__name__ + \
            " " not in err.message:
        return
    params = code.co_varnames[:code.co_argcount]
    closed = [(c.co_name, v) for c in code.co_consts if isinstance(c, types.CodeType)
              for v in c.co_freevars if params and v == params[0]]
    if not closed:
        return
    inner, name = closed[0]
    shown = "a lambda" if inner == "<lambda>" else f"the nested def {inner}()"
    err.message = (
        f"second derivatives (hessian, hvp, jacfwd or jacrev of grad) of "
        f"{getattr(fn, '__qualname__', inner)}, where {shown} closes over {name} (an object "
        f"of class {type(owner).__name__}) and reads values of it that have a derivative, "
        "are not supported yet")
    err.hint = (f"make it a method (def {inner if inner != '<lambda>' else 'act'}"
                f"(self, z): ..., called as self.{inner if inner != '<lambda>' else 'act'}(z)), "
                f"or pass the object as an argument (def {inner if inner != '<lambda>' else 'act'}"
                f"(z, {name}): ...): both have second derivatives")
    err.args = (err.format(),)


_LEAVES: dict[tuple[int, int], tuple[Any, bool]] = {}


def _held_as(fn: types.MethodType, owner: Any, owner_dot: Any) -> str | None:
    """The attribute of ``owner`` holding the object of method ``fn`` (a callable object
    ``self.fc`` called as ``self.fc(x)``); else None. An object held in several attributes
    (weight tying, ``self.dec = self.enc``) is taken where ``owner_dot`` holds one tangent
    object for all."""
    found = [k for k, v in getattr(owner, "__dict__", {}).items() if v is fn.__self__]
    if not found or len({id(getattr(owner_dot, k, None)) for k in found}) != 1:
        return None
    return found[0]


def _leaves_arguments(fn: Any) -> bool:
    """Whether no call of the user's function ``fn`` changes a value passed to it, its
    object included (transforms.argument_writes; cached per function and registry
    generation, each entry holding its function)."""
    from adgen.transforms.argument_writes import leaves_arguments

    key = (id(fn), registry.generation())
    hit = _LEAVES.get(key)
    if hit is not None and hit[0] is fn:
        return hit[1]
    if len(_LEAVES) >= 256:
        _LEAVES.clear()
    _LEAVES[key] = (fn, leaves_arguments(fn))
    return _LEAVES[key][1]


def _known_zero(t: Any) -> bool:
    """``t`` is no tangent or a symbolic zero: an object zero_tangent made none of whose
    attributes has been set since (each the very value it was made with, itself zero), or a
    container of such; a number or array there is zero when its values are (an array
    written in place with zeros is not told apart)."""
    if t is None:
        return True
    if isinstance(t, (list, tuple)):
        return all(_known_zero(v) for v in t)
    if isinstance(t, dict):
        return all(_known_zero(v) for v in t.values())
    if isinstance(t, (np.ndarray, int, float, complex, np.number)):
        return _zero_tangent(t)
    from adgen.rules.helpers_tangent import zero_tangent

    entry = zero_tangent.__dict__.get("made", {}).get(id(t))
    if entry is None or entry[0]() is not t or not hasattr(t, "__dict__"):
        return False
    now, made = vars(t), entry[1]
    return now.keys() == made.keys() and all(now[k] is v and _known_zero(v)
                                              for k, v in made.items())


def _zero_tangent(t: Any) -> bool:
    """``t`` is no tangent or a zero one (arrays and numbers of zeros, in containers and
    plain objects)."""
    if t is None:
        return True
    if isinstance(t, np.ndarray):
        return not t.any()
    if isinstance(t, (int, float, complex, np.number)):
        return t == 0
    if isinstance(t, (list, tuple)):
        return all(_zero_tangent(v) for v in t)
    if isinstance(t, dict):
        return all(_zero_tangent(v) for v in t.values())
    if hasattr(t, "__dict__") and not isinstance(t, (types.FunctionType, types.MethodType,
                                                      type)):
        return all(_zero_tangent(v) for v in vars(t).values())
    return False


def _container(v: Any) -> bool:
    """A value a method called through ``call_jvp`` might change as a container (a list, a
    dict, an object of the user's): its adjoint after the call would not reach the method's
    pullback at second order. (The method's own object and its tangent do: reverse_calls
    hands their adjoints over, sh.deposit.)"""
    if v is None or isinstance(v, (np.ndarray, np.generic, float, int, complex, str, bool)):
        return False
    if isinstance(v, tuple) and not hasattr(type(v), "_fields"):
        return any(_container(x) for x in v)
    return True
