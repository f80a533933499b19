"""Calls adgen resolves at run time: closures, methods, function-valued variables, rrules.

The generated forward calls ``call_forward(f, *args)``; the pullback calls
``call_pullback(saved, out_bar, sh)``. Both live behind :mod:`adgen.runtime`.
"""

from __future__ import annotations

import functools
import types
from typing import Any

import numpy as np

from adgen.errors import AdgenError, MissingRuleError
from adgen.passed_derivatives import (
    closure_positions,
    for_passed,
    partial_mask,
    receiver_first,
    receiver_flags,
    refuse_rule_call,
)
from adgen.random_draws import draw_forward, draw_pullback, is_draw
from adgen.rule_cotangents import (
    NO_COTANGENT,
    by_parameter,
    check_cotangents,
    is_zero,
    mutated_positions,
)
from adgen.rules import registry
from adgen.rules.methods import METHODS, VARARG_METHODS
from adgen.transforms.analyses.number_updates import first_mutable, holds_numbers
from adgen.transforms.analyses.reports import reports
from adgen.transforms.bound_callees import method_for
from adgen.transforms.cached_functions import uncached
from adgen.transforms.keyword_shims import for_keywords
from adgen.transforms.parse import varargs_of


def forward_of(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
               active: Any = None) -> tuple[Any, Any]:
    """Runs ``fn(*args)`` through its rule or its compiled forward; returns (out, saved).
    ``active``: which values the caller passes with a derivative (runtime.call_forward's,
    adgen.passed_derivatives), or None where the caller does not say."""
    if getattr(fn, "__adgen_transform__", False):
        from adgen.derivative_calls import forward_of_derivative

        # gtrain = adgen.grad(train_loss) called in the function: its vjp (second
        # derivatives); another derivative (hessian(f)(x)) is refused by name
        return forward_of_derivative(fn, args, kwargs, _policy())
    if isinstance(fn, np.vectorize):
        from adgen.rules.composites_callbacks import vectorized_call

        # np.vectorize(f)(x): the loop NumPy runs, f called on each item, compiled with f
        # and the output type bound first (their cotangents dropped, as a partial's)
        loop, full = vectorized_call(fn, tuple(args), kwargs)
        fn = functools.partial(loop, *full[:2])
    if isinstance(fn, functools.partial):
        # the function with the partial's arguments first; they were bound where it was made,
        # from values without a gradient (the compiler refuses a partial of one that has one)
        merged = {**fn.keywords, **kwargs}
        out, inner = forward_of(fn.func, fn.args + tuple(args), merged,
                                partial_mask(fn, args, kwargs, active))
        first = len(fn.args) + len(args)  # the inner call's keywords' cotangents follow
        slots = tuple(first + list(merged).index(k) for k in kwargs)
        return out, ("partial", inner, len(fn.args), len(args), slots, first + len(merged))
    rule = registry.lookup(fn)
    if rule is not None and rule.is_rrule:
        with_passed = getattr(rule.rrule, "with_passed", None)
        if active is not None and with_passed is not None:
            # (call_starred's: f(*xs, **kw), whose f it hands on to forward_of)
            out, pullback = with_passed(active, *args, **kwargs)
        else:
            out, pullback = rule.rrule(*args, **kwargs)
        return out, ("rrule", rule, pullback, args, out, kwargs, Passed(args))
    if rule is None and type(fn) is types.BuiltinMethodType and type(fn.__self__) is dict \
            and fn.__name__ in ("values", "items", "keys") and not args:
        # list(d.values()), sum(d.values()): the view's cotangent (a list, one item per key)
        # goes to the dict, the receiver
        return fn(), ("dict view", fn.__self__, fn.__name__)
    if rule is None and type(fn) is types.BuiltinMethodType and type(fn.__self__) is dict \
            and fn.__name__ == "get" and len(args) in (1, 2) and not kwargs:
        # eps = bn_param.get("eps", 1e-5): the value's cotangent goes to the dict's item if
        # the key was there, else to the default
        out = fn(*args)
        return out, ("dict get", fn.__self__, args[0], args[0] in fn.__self__, len(args))
    if rule is None and type(fn) is types.BuiltinMethodType and \
            isinstance(fn.__self__, np.ndarray) and fn.__name__ in METHODS and \
            not (fn.__name__ in VARARG_METHODS and len(args) > 1):
        # x.view(), x.copy() where the compiler did not take x for an ndarray (a receiver
        # of unknown kind, rules.methods.ARRAY_RECEIVER_ONLY, or one that the code reads as an
        # object: analyses.user_methods): the method's rule, the receiver its first argument
        # (a view: the caller takes the result's adjoint out of shadow memory and gets it
        # back as the receiver's cotangent)
        rule = registry.lookup(METHODS[fn.__name__])
        if active is not None:  # (x.var(ddof=d): d's derivative)
            refuse_rule_call(rule, fn, (fn.__self__, *args), kwargs,
                             receiver_first(active, len(args), kwargs))
        out = fn(*args, **kwargs)
        return out, ("rule", rule, out, (fn.__self__, *args), kwargs)
    if rule is None and is_draw(fn):
        # rng.random(shape) in a helper given rng: a constant (random_draws)
        return draw_forward(fn, args, kwargs)
    if rule is not None:
        # op = np.add; op(y, t, y) where the compiler could not see what op holds: run
        # as it is, its output written unseen, and the pullback raised NumPy's TypeError
        registry.check_run_binding(rule, args, kwargs)
        if active is not None:  # f = np.var; f(x, ddof=d): d's derivative
            refuse_rule_call(rule, fn, args, kwargs, active)
        out = fn(*args, **kwargs)
        return out, ("rule", rule, out, args, kwargs)
    if rule is None and registry.reference_of(fn) is not None:
        fn = registry.reference_of(fn)  # a NumPy function compiled from its reference
    if isinstance(fn, type):
        from adgen.transforms.analyses.activity import nondiff_object

        if nondiff_object(fn):
            # np.ndindex(*x.shape): a class NumPy writes in Python, without a derivative
            return fn(*args, **kwargs), ("builtin", fn, len(args) + len(kwargs), True)
        return _construct(fn, args, kwargs, active)
    refused = registry.refusal_of(type(fn))
    if refused is not None:  # an np.frompyfunc object: NumPy runs the function in its loop
        raise MissingRuleError(f"calling a {type(fn).__name__} object "
                               f"({getattr(type(fn), '__module__', '')}."
                               f"{type(fn).__qualname__}) has no derivative rule: {refused}")
    receiver: tuple[Any, ...] = ()
    fn = uncached(fn)  # an lru_cache'd function: the function it wraps (cached_functions)
    target = fn
    call_method = getattr(type(fn), "__call__", None)
    if not isinstance(fn, (types.FunctionType, types.MethodType)) and \
            isinstance(call_method, types.FunctionType):
        # an object with a __call__ of the user's (a layer called as layer(x)): the method,
        # with the object as its receiver, whose attributes get their gradients
        fn = types.MethodType(call_method, fn)
    if isinstance(fn, types.MethodType):
        receiver = (fn.__self__,)
        target = uncached(fn.__func__)
        rule = registry.lookup(target)
        if rule is not None and rule.is_rrule:
            out, pullback = rule.rrule(*receiver, *args, **kwargs)
            return out, ("rrule", rule, pullback, receiver + args, out, kwargs,
                         Passed(receiver + args))
    if isinstance(target, types.FunctionType) and target.__closure__:
        from adgen.transforms.compile_cache import NESTED_CODES

        if target.__code__ in NESTED_CODES:
            return _call_closure(target, receiver + args, kwargs,
                                 receiver_flags(active, len(receiver), len(args), kwargs))
    if isinstance(target, types.BuiltinFunctionType) and (
            getattr(target, "__module__", None) == "builtins" or
            type(getattr(target, "__self__", None)) in (list, dict, str, bytes)) and \
            target.__name__ not in ("setattr", "delattr", "exec", "eval"):
        # (a list's or dict's own method too, record = history.append: it changes its
        # receiver, never the arrays it is given; a str's, name.startswith("W") for a key
        # of a dict of parameters: no number in its result carries a derivative)
        # print, len, ... called through a variable (log = print; log(params)): run as they
        # are; they change no argument, and a gradient through their result is refused
        # where the pullback meets it (an int's, n = f(x) of f = len, is none: zero, as
        # len(x) by name)
        out = fn(*args, **kwargs)
        return out, ("builtin", target, len(args) + len(kwargs), _integral(out))
    if reports(fn):
        # log.info("loss %s", y), warnings.warn(...) reached through a variable or an
        # object: run as print is (analyses.reports)
        return fn(*args, **kwargs), ("builtin", target, len(args) + len(kwargs), False)
    if not isinstance(target, types.FunctionType):
        raise MissingRuleError(
            f"{getattr(fn, '__qualname__', fn)!s} has no derivative rule"
            f"{registry.why_no_rule(target)}", hint="see docs/coverage.md for what adgen "
            "covers, or register a rule with @adgen.rrule")
    from adgen.transforms.pipeline import compile_function

    # def helper(x, **kw): compiled for the keywords this call passes into **kw
    target = for_keywords(target, kwargs)
    try:
        compiled = compile_function(method_for(target, receiver), mutation=_policy())
        # a derivative its code may hand to a rule's argument without one (self.order in
        # np.linalg.norm(x, ord=self.order)): compiled for the values this call passes with
        # one, which refuses as a direct call does
        compiled = for_passed(compiled, lambda wrt: compile_function(
            method_for(target, receiver), mutation=_policy(), wrt=wrt), target, receiver,
            args, kwargs, active, varargs_of(target))
    except AdgenError as err:
        # forward_errors.annotate locates it at the user's call; the outermost call (the
        # user's) sets this last
        err.called = target
        raise
    free_writes = getattr(compiled, "free_writes", ())  # (a rule's compiled form: none)
    if free_writes:
        from adgen.transforms.free_writes import refuse_written_by_callee

        # a method or a function held in a variable that writes a global array in place
        refuse_written_by_callee(getattr(fn, "__qualname__", str(fn)), free_writes,
                                 free_writes[0])
    if getattr(compiled, "mutates_containers", False) or compiled.mutates_params:
        from adgen.transforms.free_writes import written_default
        from adgen.transforms.parse import positional_params

        # def h(y, acc=[]): acc.append(y), held in a variable and called as g(x)
        written_default(target, compiled.mutates_params and compiled.written_params,
                        getattr(compiled, "mutates_containers", False),
                        set(positional_params(target, len(receiver) + len(args))) |
                        set(kwargs))
    if compiled.mutates_params and not holds_numbers(compiled.number_updates,
                                                     receiver + tuple(args)):
        from adgen.errors import UnsupportedError

        # at the call's line when a pullback is running, else at the def of what it calls
        code = target.__code__
        shown = f"{getattr(fn, '__qualname__', fn)} ({code.co_filename}:{code.co_firstlineno})"
        what = f"{shown} writes an array argument (or an array of self)"
        hint = "call a module-level function by its name, a method on self (in a method " \
            "of the object), on an object the function is given or builds, on a global " \
            "object or by its class (Model.step(model, u)), or return the new array " \
            "instead of writing it in place"
        mutable = first_mutable(compiled.number_updates, receiver + tuple(args))
        inner = getattr(target, "__wrapped__", None)
        if mutable is None and callable(inner) and hasattr(inner, "__code__"):
            # a decorator's functools.wraps wrapper: the write is the wrapped function's, run
            # through the wrapper's closure (not a variable of the user's, nor a method call)
            at = f"{inner.__code__.co_filename}:{inner.__code__.co_firstlineno}"
            wrapper = f"{code.co_filename}:{code.co_firstlineno}"
            what = f"{inner.__qualname__} ({at}) writes an array argument (or an array of " \
                "self) in place and is called through the wrapper a decorator made with " \
                f"functools.wraps ({wrapper}), which calls it as a closure: adgen cannot " \
                "follow the write there"
            raise _write_refused(UnsupportedError(
                what, hint=f"return a new array from {inner.__qualname__} instead of writing "
                           "it in place (h = np.tanh(h), not np.tanh(h, out=h)), or leave "
                           "the decorator off a function whose writes are differentiated"),
                shown, code, at_def=True)
        if mutable is not None:  # self.buf += v on an array: name the line and attribute
            u, kind = mutable
            what = f"{getattr(fn, '__qualname__', fn)} updates {u.param}.{u.attr} (a {kind}) " \
                f"in place at {code.co_filename}:{u.line} ({u.text})"
            hint = f"write {u.param}.{u.attr} = {u.param}.{u.attr} {u.op} ... there (a new " \
                "array), or return the new array from the method"
        elif compiled.number_updates is not None and compiled.number_updates.sites:
            # self.calls += 1 where adgen cannot tell it stays a number (a call before it
            # may rebind the attribute, or the method writes arrays too)
            u = compiled.number_updates.sites[0]
            what = f"{getattr(fn, '__qualname__', fn)} updates {u.param}.{u.attr} in place at " \
                f"{code.co_filename}:{u.line} ({u.text}), where adgen cannot tell that it " \
                "holds a number (a call before it may rebind it, or the method writes " \
                "arrays of its object too),"
            hint = f"write {u.param}.{u.attr} = {u.param}.{u.attr} {u.op} ... there, which " \
                "adgen follows whatever it holds"
            mutable = (u, "")  # named at the user's call, as an array's update is
        raise _write_refused(UnsupportedError(
            f"{what} and is called through a variable, a method or a closure, where adgen "
            "cannot follow the write", hint=hint), shown, code, at_def=mutable is None)
    from adgen.runtime import current_scope

    current_scope().dynamic.append(compiled)
    full = receiver + tuple(args)
    slots = keyword_slots(target, kwargs)
    n = varargs_of(target)
    # self.calls += 1 on numbers (checked above): the callee's code was compiled for writes of
    # its parameters, whose adjoints it keeps in its own shadow memory; its pullback runs alone
    # (a fresh ShadowMap, as a gradient of the method itself) and hands back plain cotangents
    kind = "compiled alone" if compiled.mutates_params else "compiled"
    try:
        if n is not None and len(full) < n:  # the named ones to their defaults: xs=() by name
            out, saved = compiled.forward(*full, **kwargs,
                                          **{target.__code__.co_varnames[n]: ()})
            return out, (kind, compiled, saved, len(full), slots)
        if n is not None:  # *xs: the compiled forward takes the extra arguments as one tuple
            out, saved = compiled.forward(*full[:n], tuple(full[n:]), **kwargs)
            return out, (kind, compiled, saved, len(full), slots, n)
        out, saved = compiled.forward(*full, **kwargs)
        return out, (kind, compiled, saved, len(full), slots)
    except AdgenError as err:
        if getattr(err, "at_callee_def", False):
            # a callee it calls through self or a variable refused (above) at its def line:
            # at the line of this function that calls it (self.rhs(u, out=k)), which the
            # caller's own annotation cannot see (this forward is compiled when it runs)
            from adgen.forward_errors import annotate

            annotate(err, compiled)
        raise


class Passed:
    """The arguments a rule was called with, kept in its ``rrule`` record where
    ``guards.remap_saved`` does not look (it redirects the record's own ``args``)."""

    __slots__ = ("args",)

    def __init__(self, args: tuple[Any, ...]) -> None:
        self.args = args


def _put_back(rule: Any, args: tuple[Any, ...], passed: Passed
              ) -> list[tuple[np.ndarray, np.ndarray]]:
    """For the pullback of a user's rule: puts the values its arguments had at the call
    back into the arrays it was passed, where a later write changed them; returns (array,
    its values now), which pullback_of puts back after it. A rule's pullback is a closure, which may read its
    arguments when it runs (``y = mysq(x); x += 1.0`` read the new x: a silently wrong
    gradient under both policies, as no guard can redirect a closure's values). The compiler
    captures a user's rule's arguments where a later in-place write may reach them
    (reverse_captures: the guard at the write copies them, under either policy, as
    ``guards.RuleArgument``s), and the pullback's ``remap_saved`` redirects the record's
    ``args`` to those copies; an argument so redirected holds its copy's values while the
    closure runs. Nothing is copied where no write follows (session 28 gave every user's
    rule copies of all its arrays, at every call)."""
    if str(getattr(rule.primal, "__module__", "") or "").startswith("adgen"):
        return []  # (adgen's own rules redirect their saved values themselves)
    swaps = [(o, a) for o, a in zip(passed.args, args)
             if a is not o and type(o) is np.ndarray and isinstance(a, np.ndarray) and
             a.shape == o.shape]
    for o, _ in swaps:
        if not o.flags.writeable:
            raise AdgenError(
                f"the pullback of {rule.name} may read an argument that was overwritten after "
                "the call, and adgen cannot put its old values back (a read-only view)",
                hint=f"pass {rule.name} a copy of the argument (x.copy())")
    now = [(o, o.copy()) for o, _ in swaps]
    for o, a in swaps:
        o[...] = a
    return now


def keyword_slots(fn: Any, kwargs: dict[str, Any]) -> tuple[int, ...]:
    """For each keyword argument of a call of the Python function ``fn`` (in the order
    passed), the position of its cotangent in the tuple ``fn``'s compiled pullback returns:
    one per parameter, in the order of the signature (``*xs`` one, as a tuple)."""
    if not kwargs:
        return ()  # (most calls: no signature to read, ~40 us each for a method)
    import inspect

    names = [p.name for p in inspect.signature(fn).parameters.values()
             if p.kind != p.VAR_KEYWORD]
    return tuple(names.index(k) for k in kwargs)


def _call_closure(fn: types.FunctionType, args: tuple[Any, ...],
                  kwargs: dict[str, Any], active: Any = None) -> tuple[Any, Any]:
    """A nested def of a differentiated function: the values it reads from the enclosing
    function are passed as arguments, so their gradients come back too. ``active``: as
    :func:`forward_of`'s, the function's flag its cells'."""
    from adgen.runtime import Unbound, current_scope
    from adgen.transforms.pipeline import compile_closure

    values = []
    for free, cell in zip(fn.__code__.co_freevars, fn.__closure__):
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            value = Unbound
        if value is Unbound:  # the enclosing function has not bound it (as in Python)
            raise NameError(f"cannot access free variable {free!r} where it is not "
                            "associated with a value in enclosing scope")
        values.append(value)
    cells = tuple(values)
    try:
        compiled = compile_closure(fn, mutation=_policy())
    except AdgenError as err:
        # a value reaching a rule's argument without a derivative (lambda y: norm(y,
        # ord=p)): compiled for the values this call passes with one, p's cell among them
        # only if the function value carries one (make(3.0)(x) differentiates)
        wrt = closure_positions(fn, args, kwargs, active) if getattr(
            err, "active_constant", False) else None
        if wrt is None:
            raise
        compiled = compile_closure(fn, mutation=_policy(), wrt=wrt)
    free_writes = getattr(compiled, "free_writes", ())
    if free_writes:
        from adgen.transforms.free_writes import refuse_written_by_callee

        refuse_written_by_callee(fn.__qualname__, free_writes, free_writes[0])
    if compiled.mutates_params:
        # def apply_bc(u): u[0] = left, called where the enclosing function's analyses did
        # not see the write (return g(z), g(z) inside an expression): its pullback leaves u's
        # adjoint in shadow memory, which the caller does not read (a silently wrong
        # gradient). Called as a statement or an assignment's value, the front end wrote it
        # out (inlined_closures) and this is not reached.
        from adgen.errors import UnsupportedError

        code = fn.__code__
        shown = f"{fn.__qualname__} ({code.co_filename}:{code.co_firstlineno})"
        raise _write_refused(UnsupportedError(
            f"{shown}, a nested function, writes an array argument in place, and is called "
            "where adgen cannot write it out, so it cannot follow the write", hint="adgen "
            "writes a nested def or lambda out where it is called when it is bound once, "
            "takes plain parameters (defaults only constants; no *args or keyword-only "
            "ones), returns only on its last line, and each call is a statement or an "
            "assignment's value (g(u), r = g(u, c=2.0)); or return the new array instead of "
            "writing it in place"), shown, code)
    current_scope().dynamic.append(compiled)
    pos, kw = args, kwargs
    if kwargs or fn.__defaults__ or fn.__kwdefaults__:
        # every parameter before the lifted cells, with this def's own defaults (the
        # compiled forward is shared by every closure of the def)
        import inspect

        bound = inspect.signature(fn).bind(*args, **kwargs)
        bound.apply_defaults()
        pos, kw = bound.args, bound.kwargs
    out, saved = compiled.forward(*pos, *cells, **kw)
    if kw:
        from adgen.errors import UnsupportedError

        raise UnsupportedError(
            f"the nested def {fn.__qualname__}() is called with keyword-only argument(s) "
            f"{', '.join(kw)}, whose gradients adgen cannot line up with its cells",
            hint="make them ordinary parameters (before the *), or pass them by position")
    # the keywords were bound to their positions (bound.args): their cotangents are there
    names = list(inspect.signature(fn).parameters) if kwargs else []
    slots = tuple(names.index(k) for k in kwargs)
    return out, ("closure", compiled, saved, len(pos), cells, len(args), slots,
                 fn.__code__.co_freevars)


def _write_refused(err: AdgenError, shown: str, code: types.CodeType, at_def: bool = True
                   ) -> AdgenError:
    """``err``, a refusal of a callee that writes its arguments, located at the user's call
    where a pullback is running, else (``at_def``) at the callee's def, which
    forward_errors.annotate moves to the user's call where the forward knows it."""
    import linecache

    from adgen.errors import Location
    from adgen.runtime import locate

    err = locate(err)
    if err.location is None and at_def:
        # (an update's refusal names its own line: forward_errors.annotate puts it at the
        # user's call)
        err.location = Location(code.co_filename, code.co_firstlineno, 0,
                                linecache.getline(code.co_filename, code.co_firstlineno))
        err.args = (err.format(),)
        # moved to the user's call where the forward knows it (forward_errors.annotate:
        # self.rhs(u, out=k) was shown at rhs's def line, in the same file)
        err.at_callee_def = True  # type: ignore[attr-defined]
    # a def or lambda of the function differentiated is named by its generated forward
    # (f_forward.<locals>.g, <adgen f save>:4): annotate names it in the user's source
    err.callee_shown = (shown, code)  # type: ignore[attr-defined]
    return err


def _construct(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any],
               active: Any = None) -> tuple[Any, Any]:
    """``cls(*args)`` for a user class: its ``__init__`` is differentiated like a method (for
    a dataclass, the ``__init__`` dataclasses wrote, as source: ``adgen.dataclass_init``).
    ``active``: as :func:`forward_of`'s."""
    from adgen.dataclass_init import dataclass_init

    init = dataclass_init(cls) or cls.__dict__.get("__init__") or getattr(cls, "__init__",
                                                                          None)
    if not isinstance(init, types.FunctionType) or cls.__new__ is not object.__new__:
        raise MissingRuleError(f"adgen cannot see how {cls.__qualname__} builds its objects",
                               hint=f"register a rule with @adgen.rrule({cls.__name__})")
    from adgen.transforms.pipeline import compile_function

    compiled = compile_function(init, mutation=_policy())
    # (an __init__ handing a derivative to a rule's argument without one: as forward_of)
    compiled = for_passed(compiled, lambda wrt: compile_function(
        init, mutation=_policy(), wrt=wrt), init, (cls,), args, kwargs, active,
        varargs_of(init), fresh_receiver=True)
    if compiled.mutates_params:
        from adgen.errors import UnsupportedError

        # (name the parameter and the write: "writes an array argument" was said of a list)
        written = sorted(compiled.written_params) \
            if isinstance(compiled.written_params, (set, frozenset)) else []
        site = next((m for m in compiled.sites if any(
            m.construct.startswith((f"{n}[", f"{n} ", f"{n}.")) for n in written)), None)
        what = f"its argument {', '.join(written)}" if written else "an argument"
        where = f" ({site.construct}, at {site.file}:{site.line})" if site is not None else ""
        raise UnsupportedError(
            f"{cls.__qualname__}.__init__ writes {what} in place{where}: adgen follows a "
            "constructor's writes into the object it builds, not into what it is given",
            hint="make the change in the function differentiated, before or after "
                 f"{cls.__name__}(...), or write into a copy in __init__ (self.x = x.copy(), "
                 "self.items = list(items))")
    from adgen.runtime import current_scope

    current_scope().dynamic.append(compiled)
    obj = cls.__new__(cls)
    slots = keyword_slots(init, kwargs)
    n = varargs_of(init)
    full = (obj, *args)
    if n is not None and len(full) < n:  # the named ones to their defaults: xs=() by name
        _, saved = compiled.forward(*full, **kwargs, **{init.__code__.co_varnames[n]: ()})
    elif n is not None:
        # def __init__(self, *layers): the compiled forward takes the extra arguments as one
        # tuple (Sequential(Dense(w1), Dense(w2)) raised TypeError: it was given them apart)
        _, saved = compiled.forward(*full[:n], tuple(full[n:]), **kwargs)
        return obj, ("init", compiled, saved, obj, len(args), slots, n)
    else:
        _, saved = compiled.forward(*full, **kwargs)
    return obj, ("init", compiled, saved, obj, len(args), slots)


def _dict_view_cotangent(g: Any, d: dict, view: str) -> dict:
    """The cotangent of dict ``d`` for the cotangent ``g`` (a list, one item per key, or None)
    of ``d.values()``, ``d.items()`` (an item's is a (key, value) pair) or ``d.keys()``."""
    items = list(g) if g is not None and view != "keys" else [None] * len(d)
    if view == "items":
        return {k: (None if gk is None else gk[1]) for k, gk in zip(d, items)}
    return dict(zip(d, items))


def _integral(value: Any) -> bool:
    """An int or a bool (not a float): no derivative flows through it."""
    return isinstance(value, (int, np.integer, np.bool_))


def pullback_of(saved: Any, out_bar: Any, sh: Any) -> tuple[Any, ...]:
    """The cotangents of the arguments of a call made by :func:`forward_of`."""
    kind = saved[0]
    if kind == "derivative":
        from adgen.derivative_calls import pullback_of_derivative

        return pullback_of_derivative(saved, out_bar)
    if kind == "partial":
        _, inner, bound, ncalled, slots, given = saved
        cts = pullback_of(inner, out_bar, sh)
        # a partial of a bound method (functools.partial(model.loss)): the method's
        # cotangents come with its receiver's first (taken for the first argument's, the
        # gradient was an object adjoint: TypeError)
        skip = len(cts) - given if len(cts) == given + 1 else 0
        return tuple(cts[skip + bound:skip + bound + ncalled]) + \
            tuple(cts[skip + k] for k in slots)
    if kind == "builtin":
        _, target, n, integral = saved
        if not integral and not is_zero(out_bar):
            from adgen.runtime import locate

            raise locate(MissingRuleError(
                f"{target.__name__}() has no derivative rule, and its result has a gradient "
                "here", hint=f"register one with @adgen.rrule({target.__name__})"))
        return (None,) * n
    if kind == "draw":
        return draw_pullback(saved, out_bar, is_zero)
    if kind == "dict get":
        from adgen.runtime import getitem_adjoint

        _, d, key, found, n = saved
        if found:  # (the dict, the key, the default)
            return (getitem_adjoint(d, key, out_bar), None) + (None,) * (n - 1)
        return (None, None) + ((out_bar,) if n == 2 else ())
    if kind == "dict view":
        _, d, view = saved
        return (_dict_view_cotangent(out_bar, d, view),)
    if kind == "closure":
        _, compiled, inner, nargs, cells, ncalled, slots, names = saved
        cts = compiled.pullback(inner, out_bar, sh)
        for name, value, ct in zip(names, cells, cts[nargs:]):
            if ct is None or sh is None:
                continue
            if isinstance(value, (bool, int, np.integer, np.bool_, str)) or (
                    isinstance(value, np.ndarray) and value.dtype.kind not in "fc"):
                continue  # an int (a loop counter it reads) has no gradient
            if isinstance(value, (np.ndarray, float, np.floating)):
                # the enclosing function keeps this value's adjoint in shadow memory
                shadow = sh.of(value)
                shadow += np.asarray(ct) if isinstance(value, np.ndarray) else np.sum(ct)
            elif not isinstance(value, (list, dict, tuple)) and sh.hand_back(value, ct):
                continue  # (its pullback took over what the caller deposited for it)
            elif is_zero(ct) or (not isinstance(value, (list, dict, tuple)) and
                                 sh.add_deposited(value, ct)):
                continue
            else:
                # an object (self of self.act = lambda z: self.scale * np.tanh(z)) goes to
                # the adjoint the caller handed over for it (a method calling self.act(h));
                # where no caller did (act = self.act; act(h), or m.act(x) as the last use
                # of m), its gradient has nowhere to go
                from adgen.errors import UnsupportedError
                from adgen.runtime import locate

                # (a lambda is lifted as lambda_8: the user wrote no such name)
                shown = "a lambda" if compiled.name.startswith("lambda_") else \
                    f"the nested def {compiled.name}()"
                if isinstance(value, (list, dict, tuple)):
                    raise locate(UnsupportedError(
                        f"{shown} reads a {type(value).__name__} {name} of the enclosing "
                        "function (a variable it closes over) that has a gradient; adgen "
                        "follows closures over floats, arrays and objects only",
                        hint=f"pass it as an argument (lambda z, {name}: ...), or read the "
                             f"arrays it needs into names first (s = {name}['scale']; "
                             "lambda z: z * s)"))
                owner = getattr(value, "__self__", None)
                if isinstance(owner, np.ndarray) and callable(value):
                    # g = M.dot; lambda v: g(v): a method of an array with a gradient (it
                    # said "hands that gradient to a method of the object ... self.act(h)")
                    method = getattr(value, "__name__", "method")
                    raise locate(UnsupportedError(
                        f"{shown} closes over {name}, the method {method} of an array that "
                        "has a gradient: adgen follows an array's method where it is called "
                        "on the array, not through a variable holding the method",
                        hint=f"for {name} = A.{method}, call A.{method}(v) where {name}(v) is "
                             "called (A a name the function binds), or pass the array as an "
                             "argument (lambda v, A: ...)"))
                raise locate(UnsupportedError(
                    f"{shown} closes over {name} (an object of class "
                    f"{type(value).__name__}) and reads values of it that have a gradient; "
                    f"adgen hands that gradient to a method of the object calling it "
                    f"through the object (self.act(h) in forward), and this call is not one",
                    hint=f"call it from a method of the object (def forward(self, x): ... "
                         f"self.act(h)), make it a method (def act(self, z): ...), or pass the "
                         f"object as an argument (lambda z, {name}: ...)"))
        return tuple(cts[:ncalled]) + tuple(cts[k] for k in slots)
    if kind == "init":
        _, compiled, inner, obj, ncalled, slots, *packed = saved
        from adgen.runtime import ShadowMap

        sh = sh if sh is not None else ShadowMap()
        if out_bar is not None:
            sh.deposit(obj, out_bar)  # the new object's adjoint seeds self in __init__
        cts = compiled.pullback(inner, None, sh)
        by_keyword = tuple(cts[k] for k in slots)  # as the signature has them (*xs: one)
        if packed:  # *layers: the tuple's cotangent, one per argument it packed
            n = packed[0]
            rest = cts[n] if cts[n] is not None else [None] * (1 + ncalled - n)
            cts = tuple(cts[:n]) + tuple(rest) + tuple(cts[n + 1:])
        return tuple(cts[1:1 + ncalled]) + by_keyword
    if kind in ("compiled", "compiled alone"):
        _, compiled, inner, ncalled, slots, *packed = saved
        cts = compiled.pullback(inner, out_bar, sh if kind == "compiled" else None)
        by_keyword = tuple(cts[k] for k in slots)  # as the signature has them (*xs: one)
        if packed:  # *xs: the tuple's cotangent, one per argument it packed
            n = packed[0]
            rest = cts[n] if cts[n] is not None else [None] * (ncalled - n)
            cts = tuple(cts[:n]) + tuple(rest) + tuple(cts[n + 1:])
        # one cotangent per argument passed, positions then keywords in the order passed
        # (parameters left to their defaults get none); the keywords' were dropped, and
        # lay.apply(x=x) gave x no gradient
        return tuple(cts[:ncalled]) + by_keyword
    if kind == "rrule":
        _, rule, pullback, args, _, kwargs, passed = saved
        put_back = _put_back(rule, args, passed)
        if put_back:
            try:
                return pullback_of(saved[:3] + (passed.args,) + saved[4:], out_bar, sh)
            finally:
                for o, now in put_back:
                    o[...] = now
        written = mutated_positions(rule, len(args))
        if not written:
            if out_bar is None and not getattr(pullback, "runs_without_cotangent", False):
                return (None,) * (len(args) + len(kwargs))
            if kwargs:
                return by_parameter(rule, pullback(out_bar), args, kwargs)
            return check_cotangents(rule.name, pullback(out_bar), args)
        # a C function that wrote arguments in place: its pullback gets the adjoints of their
        # new contents and gives those of the old ones, which take their place in sh
        from adgen.runtime import ShadowMap, zeros_like

        sh = sh if sh is not None else ShadowMap()
        after = [sh.pop(args[k]) for k in written]
        cts = check_cotangents(rule.name, pullback(out_bar if out_bar is not None else
                                                   zeros_like(saved_out(saved)), *after), args)
        out = list(cts)
        for k in written:
            if cts[k] is not None:
                shadow = sh.of(args[k])
                shadow += cts[k]
            out[k] = None
        return tuple(out) + (NO_COTANGENT,) * len(kwargs)
    _, rule, out, args, kwargs = saved
    if out_bar is None:
        return (None,) * (len(args) + len(kwargs))
    bound = rule.bind(list(args), dict(kwargs))
    values = {p.name: (bound[p.name].value if isinstance(bound[p.name], registry.Default)
                       else bound[p.name]) for p in rule.params}
    cts = rule.vjp(out_bar, out, **values)
    if len(rule.diff) == 1:
        cts = (cts,)
    by_name = dict(zip(rule.diff, cts))
    out: list[Any] = []
    for p in rule.params:
        if p.varargs:
            got = by_name.get(p.name)
            out.extend(got if got is not None else [None] * len(bound[p.name]))
        elif not p.kwonly and p.name not in kwargs:
            out.append(by_name.get(p.name))
    return tuple(out[:len(args)]) + tuple(by_name.get(k) for k in kwargs)


def saved_out(saved: Any) -> Any:
    return saved[4]


def _policy() -> str:
    """The mutation policy of the forward pass running (guards.GuardScope.policy): a call
    resolved when it runs compiles under it, so that mutation="strict" copies nothing there
    either (it compiled under "save" and copied, silently breaking strict's promise)."""
    from adgen import guards

    return guards.current_scope().policy
