"""The user's ``f(*args, **kwargs)`` and ``obj.m(*args, **kwargs)``: the rule of
``runtime.call_starred`` (desugar writes such a call so), which runs the function through
``dispatch.forward_of`` when the call runs, as a call resolved at run time, and hands the
cotangents back to the object, the tuple's items and the dict's values. The caller's compiled
code took the call for one that changes nothing and returns new values: a callee that writes
its arguments in place, or returns one of them or a view, is refused at the user's line.
"""

from __future__ import annotations

import functools
import types
from typing import Any

import numpy as np

from adgen import guards
from adgen.dispatch import forward_of, pullback_of
from adgen.passed_derivatives import starred_mask
from adgen.rule_cotangents import is_zero
from adgen.rules import registry


def call_starred_rrule(fn: Any, method: Any, args: Any, kwargs: Any, line: int = 0
                       ) -> tuple[Any, Any]:
    """The rule of ``runtime.call_starred`` (see :func:`starred_with_passed`), where the
    caller did not say which values carry a derivative."""
    return starred_with_passed(None, fn, method, args, kwargs, line)


def starred_with_passed(passed: Any, fn: Any, method: Any, args: Any, kwargs: Any,
                        line: int = 0) -> tuple[Any, Any]:
    """The rule of ``runtime.call_starred``, the user's ``f(*args, **kwargs)`` or
    ``obj.m(*args, **kwargs)`` (desugar): the function runs through :func:`forward_of`, as a
    call resolved when it runs does, and its cotangents go back to ``obj`` (a method's
    object, an array whose method it is), ``args`` (a list, one per item) and ``kwargs`` (a
    dict, one per key). The caller's compiled code took the call for one that changes
    nothing and returns new values: a callee that writes its arguments in place or returns
    one of them (or a view) is refused here. ``passed``: which of ``fn``, ``args`` and
    ``kwargs`` the caller hands over with a derivative (adgen.passed_derivatives; an item of
    a tuple or dict with one is taken to have one)."""
    from adgen.errors import UnsupportedError
    from adgen.rules.methods import METHODS, VARARG_METHODS
    from adgen.runtime import locate as locate_in_pullback

    def locate(err: Any) -> Any:
        return _at_user_line(err, line)

    args, kwargs = tuple(args), dict(kwargs)
    passed_by = passed
    passed = args  # what the function gets after ``lead``
    owner = fn if method is not None else None
    fn = getattr(owner, method) if method is not None else fn
    what = f"{type(owner).__name__}.{method}" if method is not None and \
        not isinstance(owner, types.ModuleType) else \
        getattr(fn, "__qualname__", None) or type(fn).__name__
    lead: tuple[Any, ...] = ()
    if isinstance(owner, np.ndarray) and method in METHODS:
        fn, lead = METHODS[method], (owner,)  # z.reshape(*s): np.reshape(z, *s)
        if method in VARARG_METHODS and len(args) > 1:
            # z.reshape(3, 2): the shape as one tuple (numbers: no cotangent)
            lead, passed = (owner, args), ()
    elif isinstance(owner, np.ndarray) or isinstance(owner, (list, dict, set, tuple)) and \
            method not in ("index", "count", "get", "keys", "values", "items", "copy"):
        # an array's method without a rule (x.sort, x.fill: in place) or a container's that
        # changes it
        raise locate(UnsupportedError(
            f"{what}(*args) or (**kwargs) on a {type(owner).__name__}: adgen follows an "
            "array's, a list's or a dict's methods called with their arguments one by one",
            hint="pass the arguments one by one"))
    if "out" in kwargs or isinstance(fn, np.ufunc) and len(args) > fn.nin:
        raise locate(UnsupportedError(
            f"{what} is called with *args or **kwargs and an out= array, which it writes in "
            "place where adgen cannot see it", hint="pass the arguments one by one"))
    try:
        _refuse_starred_writer(fn, what, kwargs)
    except UnsupportedError as err:
        raise locate(err) from None
    target = fn.__func__ if isinstance(fn, types.MethodType) else fn
    if not lead and registry.lookup(fn) is None and registry.lookup(target) is None and \
            registry.reference_of(fn) is None and \
            not isinstance(target, (types.FunctionType, type, functools.partial)) and \
            not _is_user_callable_object(fn) and \
            getattr(target, "__module__", None) != "builtins" and \
            not (type(fn) is types.BuiltinMethodType and type(fn.__self__) is dict):
        # a function without a rule (rng.standard_normal(*shape)): a constant where nothing
        # passed to it has float content, as the compiler takes a direct call of it; given
        # floats it may write them in place (np.copyto(*(y, v)), whose result is discarded
        # and whose pullback never runs): refused before it runs
        if _arrays((args, kwargs), floats=True) or _has_float_number((args, kwargs)):
            from adgen.errors import MissingRuleError

            raise locate(MissingRuleError(
                f"{what} has no derivative rule{registry.why_no_rule(fn)}, and it is called "
                "with *args or **kwargs holding floats (which it may use or write)",
                hint="pass the arguments one by one, or register a rule with @adgen.rrule"))
        out = fn(*args, **kwargs)

        def constant(out_bar: Any) -> tuple[Any, ...]:
            return None, None, [None] * len(args), dict.fromkeys(kwargs), None

        return out, constant
    rule = registry.lookup(fn)
    if rule is not None and not rule.is_rrule and not any(p.varargs for p in rule.params) and \
            len(lead + passed) + len(kwargs) > len(rule.params):
        raise locate(UnsupportedError(
            f"{what} is called with {len(lead + passed) + len(kwargs)} arguments through *args "
            f"or **kwargs, and its derivative rule takes {len(rule.params)}",
            hint="pass the arguments one by one (max(*xs) of many values: max(xs))"))
    out, saved = forward_of(fn, lead + passed, kwargs,
                            starred_mask(passed_by, len(lead), len(passed), kwargs))
    try:
        _refuse_starred_alias(out, args + ((owner,) if method is not None else ()), kwargs,
                              what)
    except UnsupportedError as err:
        raise locate(err) from None
    # the object dispatch passed first: a user's method's, a callable object's
    receiver = fn.__self__ if isinstance(fn, types.MethodType) and isinstance(
        fn.__func__, types.FunctionType) else (fn if _is_user_callable_object(fn) else None)
    first = 1 if lead or receiver is not None and registry.lookup(fn) is None else 0
    keys = list(kwargs)

    no_float_result = _integral(out)

    def pullback(out_bar: Any) -> tuple[Any, ...]:
        if no_float_result:  # len(*xs), an int or a bool: no derivative reaches its inputs
            return None, None, [None] * len(args), dict.fromkeys(keys), None
        cts = tuple(pullback_of(saved, out_bar, None))
        owner_ct = None
        if first:
            if lead or receiver is owner:
                owner_ct = cts[0]
            elif not is_zero(cts[0]):
                raise locate_in_pullback(UnsupportedError(
                    f"{what} is called with *args or **kwargs, and the object it is bound "
                    "to (not the one it was read from) gets a gradient through it, which "
                    "adgen does not hand back from such a call",
                    hint="pass the arguments one by one"))
        rest = cts[len(lead) if lead else first:] + (None,) * (len(args) + len(keys))
        at = len(passed)  # the keywords' cotangents follow the positions passed
        return (owner_ct, None, [rest[k] if passed else None for k in range(len(args))],
                {k: rest[at + i] for i, k in enumerate(keys)}, None)

    return out, pullback


# (dispatch.forward_of, given what the caller passes with a derivative)
call_starred_rrule.with_passed = starred_with_passed  # type: ignore[attr-defined]


def _at_user_line(err: Any, line: int) -> Any:
    """``err`` located at ``line`` of the user's file of the generated code that runs the
    call (its ``__adgen_file__``), where no pullback is running to say it."""
    import linecache
    import sys

    from adgen.errors import Location

    frame = sys._getframe(1)
    while frame is not None and "__adgen_file__" not in frame.f_globals:
        frame = frame.f_back
    if frame is None or not line or getattr(err, "location", True) is not None:
        return err
    file = frame.f_globals["__adgen_file__"]
    text = linecache.getline(file, line)
    err.location = Location(file, line, len(text) - len(text.lstrip()), text)
    err.args = (err.format(),)
    return err


def _is_user_callable_object(fn: Any) -> bool:
    call = getattr(type(fn), "__call__", None)
    return not isinstance(fn, (types.FunctionType, types.MethodType, type)) and \
        isinstance(call, types.FunctionType)


def _refuse_starred_writer(fn: Any, what: str, kwargs: Any = ()) -> None:
    """A callee of ``f(*xs)`` that writes its arguments in place: the caller's analyses did
    not see which (they are items of a tuple), so its guards and adjoints would be wrong."""
    from adgen.errors import UnsupportedError
    from adgen.runtime import locate

    while isinstance(fn, functools.partial):
        fn = fn.func
    target = fn.__func__ if isinstance(fn, types.MethodType) else (
        type(fn).__call__ if _is_user_callable_object(fn) else fn)
    rule = registry.lookup(target)
    writes = bool(rule.mutates) if rule is not None else False
    if rule is None and isinstance(target, types.FunctionType) and \
            registry.reference_of(target) is None:
        from adgen.transforms.keyword_shims import for_keywords
        from adgen.transforms.pipeline import compile_function

        # (def helper(x, **kw): compiled for the keywords of this call)
        compiled = compile_function(for_keywords(target, kwargs),
                                    mutation=guards.current_scope().policy)
        writes = compiled.mutates_params or compiled.mutates_containers
    if writes:
        raise locate(UnsupportedError(
            f"{what} changes its arguments in place and is called with *args or **kwargs, "
            "where adgen cannot tell which values it changes",
            hint="pass the arguments one by one, or return the new values instead of "
                 "writing them in place"))


def _refuse_starred_alias(out: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                          what: str) -> None:
    """A result of ``f(*xs)`` that is one of its arguments or a view of one: the caller took
    the result for a new value (a later write to it would change the argument unseen)."""
    from adgen.errors import UnsupportedError
    from adgen.runtime import locate

    given = [a for a in _arrays((args, list(kwargs.values())))]
    for r in _arrays(out):
        if any(np.may_share_memory(r, a) for a in given):
            raise locate(UnsupportedError(
                f"{what} is called with *args or **kwargs and returns one of its arguments, "
                "its object's arrays or a view of one, which adgen does not follow through "
                "such a call", hint="pass the arguments one by one (a shape as one tuple: "
                "z.reshape((*x.shape, 2))), or return a copy"))


def _arrays(x: Any, depth: int = 0, floats: bool = False) -> list[np.ndarray]:
    """The arrays in ``x`` (``floats``: of float or complex dtype): itself, the items of
    lists, tuples and dicts, the attributes of objects (a few levels down)."""
    if isinstance(x, np.ndarray):
        return [x] if not floats or x.dtype.kind in "fc" else []
    if depth > 4:
        return []
    if isinstance(x, (list, tuple)):
        return [a for v in x for a in _arrays(v, depth + 1, floats)]
    if isinstance(x, dict):
        return [a for v in x.values() for a in _arrays(v, depth + 1, floats)]
    attrs = getattr(x, "__dict__", None)
    if isinstance(attrs, dict) and not isinstance(x, (type, types.ModuleType)) and \
            not callable(x):
        return [a for v in attrs.values() for a in _arrays(v, depth + 1, floats)]
    return []


def _integral(x: Any) -> bool:
    """Whether ``x`` holds no float at all: an int, a bool, a string, None, an integer or
    boolean array, or a list or tuple of those (an object may hold floats: False)."""
    if x is None or isinstance(x, (bool, int, str, np.integer, np.bool_)):
        return True
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "biuSU"
    if isinstance(x, (list, tuple)):
        return all(_integral(v) for v in x)
    return False


def _has_float_number(x: Any) -> bool:
    if isinstance(x, (float, complex, np.floating, np.complexfloating)):
        return True
    if isinstance(x, (list, tuple)):
        return any(_has_float_number(v) for v in x)
    if isinstance(x, dict):
        return any(_has_float_number(v) for v in x.values())
    return False
