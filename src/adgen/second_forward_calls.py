"""Forward mode over forward mode's dynamic call: the jvp of ``runtime.call_jvp`` (and of
``call_jvp_tangent``, its tangent-only form) when tangent code that calls a function found at
run time (a method of an object the function reads, a function from a dict or passed in) is
differentiated again by forward mode: ``jacfwd(jacfwd(f))``, ``jvp`` of a function that calls
``adgen.jvp``'s code, the forward-over-forward part of third derivatives.

``call_jvp(f, args, tangents, kwargs, owner, owner_dot)`` is ``J(args, tangents, owner,
owner_dot)``, with ``J`` the compiled jvp of ``f`` that ``tangent_calls`` picks when the call
runs: its jvp is ``J``'s jvp, which forward mode compiles from ``J``'s own source (generated
tangent code, as it compiles any function) through a caller that takes each of ``J``'s
inputs by position, so each gets its tangent (the arguments', the tangents', the owner's and
its tangent's).
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

from adgen.errors import UnsupportedError

_POSITIONAL: dict[tuple[int, int, tuple[str, ...]], tuple[Any, Any]] = {}


def jvp_of_call_jvp(only: bool, args: tuple[Any, ...], tangents: tuple[Any, ...]
                    ) -> tuple[Any, Any]:
    """``(out, out_dot)`` of ``call_jvp(*args)`` (``only``: of ``call_jvp_tangent(*args)``)
    in the direction ``tangents`` (one per argument of call_jvp, None for none): ``out`` is
    the pair ``(y, y_dot)`` (``only``: ``y_dot``) and ``out_dot`` its tangent.

    Raises:
        UnsupportedError: for a callee whose jvp is not compiled code (a derivative made by
            adgen called inside, a dict's ``get``/``values``/``items`` through a variable).
    """
    from adgen.tangent_calls import runs_as_it_is, tangent_of_call

    fn, f_args, f_tangents, kwargs, owner, owner_dot = (tuple(args) + (None,) * 6)[:6]
    d_args, d_tangents, d_owner, d_owner_dot = (
        _items(tangents[1] if len(tangents) > 1 else None, len(f_args)),
        _items(tangents[2] if len(tangents) > 2 else None, len(f_tangents)),
        tangents[4] if len(tangents) > 4 else None,
        tangents[5] if len(tangents) > 5 else None)
    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    if runs_as_it_is(fn):  # print, len through a variable: no derivative at any order
        pair = tangent_of_call(fn, f_args, f_tangents, kwargs, owner, owner_dot)
        dot = (_zero(pair[0]), _zero(pair[1]))
        return (pair[1], dot[1]) if only else (pair, dot)
    if getattr(fn, "__adgen_transform__", False) or (
            type(fn) is types.BuiltinMethodType and type(fn.__self__) is dict):
        raise UnsupportedError(
            f"forward mode over forward mode (jacfwd of jacfwd, a jvp of a jvp) through "
            f"{name}, called through a variable, is not supported",
            hint="call it by its name, or take the outer derivative by reverse mode "
                 "(adgen.jacrev(adgen.jacfwd(f)), adgen.hessian(f))")
    call, caller, inputs, dots = _second_call(fn, f_args, f_tangents, kwargs, owner,
                                              owner_dot, d_args, d_tangents, d_owner,
                                              d_owner_dot, _keyword_dots(tangents))
    pair, pair_dot = tangent_of_call(caller, inputs, dots, {})
    if not only:
        return pair, pair_dot
    return pair[1], (None if pair_dot is None else pair_dot[1])


def _second_call(fn: Any, f_args: tuple[Any, ...], f_tangents: tuple[Any, ...],
                 kwargs: dict[str, Any], owner: Any, owner_dot: Any, d_args: tuple[Any, ...],
                 d_tangents: tuple[Any, ...], d_owner: Any, d_owner_dot: Any,
                 d_kwargs: dict[str, Any] | None = None
                 ) -> tuple[Any, Any, tuple[Any, ...], tuple[Any, ...]]:
    """The compiled jvp ``call`` of ``fn`` that ``call_jvp`` runs, the generated caller taking
    its inputs by position, those inputs and their tangents (each part of the call's: the
    arguments', the tangents', the owner's and its tangent's, at the slot it went to)."""
    from adgen.tangent_calls import compiled_jvp_call

    call = compiled_jvp_call(fn, f_args, f_tangents, kwargs, owner, owner_dot)
    keywords = tuple(call.kwargs)
    inputs = list(call.args) + [call.kwargs[k] for k in keywords]
    dots: list[Any] = [None] * len(inputs)
    for slots, given in ((call.arg_slots, d_args), (call.tangent_slots, d_tangents),
                         ((call.owner_slot,), (d_owner,)),
                         ((call.owner_dot_slot,), (d_owner_dot,))):
        for k, t in zip(slots, given):
            if k is not None and t is not None:
                dots[k] = t
    for k, t in (d_kwargs or {}).items():
        # (a keyword argument's own tangent: a value with a derivative passed by keyword)
        if k in call.kwargs and t is not None:
            dots[len(call.args) + keywords.index(k)] = t
    caller = _positional_caller(call.target, len(call.args), keywords)
    return call, caller, tuple(inputs), tuple(dots)


def reverse_of_call_jvp(only: bool, args: tuple[Any, ...], tangents: tuple[Any, ...],
                        pair_only: bool) -> tuple[Any, Any]:
    """Reverse mode over :func:`jvp_of_call_jvp` (third derivatives of a function calling a
    function found at run time: ``jacfwd(hessian(f))``, ``jvp`` of ``hvp``): ``(out,
    pullback)`` of ``call_jvp(call_jvp, args, tangents, {}, ...)`` (``pair_only``: of its
    ``call_jvp_tangent`` form; ``only``: the inner call is ``call_jvp_tangent``). The caller's
    jvp :func:`jvp_of_call_jvp` runs is run through its compiled forward and pullback, whose
    cotangents go back to the parts of both calls they came from.

    Raises:
        UnsupportedError: where :func:`jvp_of_call_jvp` refuses, and for a callee that
            changes its object or arguments (its pullback here would miss what it set).
    """
    from adgen.dispatch import forward_of, pullback_of
    from adgen.tangent_calls import compiled_jvp_call, runs_as_it_is
    from adgen.transforms.pipeline import compile_function

    fn, f_args, f_tangents, kwargs, owner, owner_dot = (tuple(args) + (None,) * 6)[:6]
    if runs_as_it_is(fn) or getattr(fn, "__adgen_transform__", False) or (
            type(fn) is types.BuiltinMethodType and type(fn.__self__) is dict) or \
            len(f_tangents or ()) > len(f_args or ()):
        # (also a value with a derivative passed by keyword: its cotangents are not lined
        # up here)
        refuse_reverse_over()
    d_args, d_tangents, d_owner, d_owner_dot = (
        _items(tangents[1] if len(tangents) > 1 else None, len(f_args)),
        _items(tangents[2] if len(tangents) > 2 else None, len(f_tangents)),
        tangents[4] if len(tangents) > 4 else None,
        tangents[5] if len(tangents) > 5 else None)
    call, caller, inputs, dots = _second_call(fn, f_args, f_tangents, kwargs or {}, owner,
                                              owner_dot, d_args, d_tangents, d_owner,
                                              d_owner_dot)
    second = compiled_jvp_call(caller, inputs, dots, {}, None, None)
    if compile_function(second.target).mutates_containers:
        refuse_reverse_over()
    out, saved = forward_of(second.target, second.args, second.kwargs)
    pair, pair_dot = out
    value = (pair[1], pair_dot[1]) if only else (pair, pair_dot)

    def pullback(out_bar: Any) -> tuple[Any, ...]:
        bar, bar_dot = (None, out_bar) if pair_only else _two(out_bar)
        if only:
            bar, bar_dot = (None, bar), (None, bar_dot)
        cts = pullback_of(saved, (bar, bar_dot), None)

        def at(k: int | None) -> Any:
            return None if k is None else cts[k]

        def back(bars: list[Any]) -> tuple[Any, ...]:
            def of(k: int | None) -> Any:
                return None if k is None else bars[k]

            return (None, tuple(of(k) for k in call.arg_slots),
                    tuple(of(k) for k in call.tangent_slots), None, of(call.owner_slot),
                    of(call.owner_dot_slot))

        return (None, back([at(k) for k in second.arg_slots]),
                back([at(k) for k in second.tangent_slots]), None, None, None)

    return (value[1] if pair_only else value), pullback


def _two(bar: Any) -> tuple[Any, Any]:
    """The cotangents of a pair's two items (None: none)."""
    if isinstance(bar, (tuple, list)) and len(bar) == 2:
        return bar[0], bar[1]
    return None, None


def _keyword_dots(tangents: tuple[Any, ...]) -> dict[str, Any] | None:
    """The tangent of a call_jvp's (or construct_jvp's) keyword arguments, a dict (None:
    none): that of values with a derivative passed by keyword (a kw_only field's)."""
    d = tangents[3] if len(tangents) > 3 else None
    return d if isinstance(d, dict) else None


def _items(t: Any, n: int) -> tuple[Any, ...]:
    """The tangents of a tuple of ``n`` items from the tuple's tangent (None: none)."""
    if isinstance(t, (tuple, list)) and len(t) == n:
        return tuple(t)
    return (None,) * n


def _zero(value: Any) -> Any:
    """A zero tangent of a number or float array, None for anything else."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, float, np.number)):
        return 0.0
    if isinstance(value, np.ndarray) and value.dtype.kind in "fc":
        return np.zeros_like(value)
    return None


def _positional_caller(target: Any, nargs: int, keywords: tuple[str, ...]) -> Any:
    """A Python function ``caller(a0, .., k0, ..)`` returning ``target(a0, .., kw0=k0, ..)``
    (``target`` a compiled jvp, called by a global name, so forward mode compiles the jvp of
    its source; every input positional, so each may get a tangent). One per target, number
    of arguments and keyword names; each entry holds its target."""
    from adgen.transforms.emit import compile_source

    key = (id(target), nargs, keywords)
    hit = _POSITIONAL.get(key)
    if hit is not None and hit[0] is target:
        return hit[1]
    if not all(k.isidentifier() for k in keywords):
        raise UnsupportedError(
            f"forward mode over forward mode calling {target.__name__} through a variable "
            f"with the keywords {list(keywords)}", hint="call it by its name")
    names = [f"a{k}" for k in range(nargs)] + [f"k{k}" for k in range(len(keywords))]
    passed = names[:nargs] + [f"{k}=k{j}" for j, k in enumerate(keywords)]
    title = getattr(target, "__name__", "jvp")
    title = title if title.isidentifier() else "jvp"
    text = (f"def {title}_positional({', '.join(names)}):\n"
            f"    return target({', '.join(passed)})\n")
    ns: dict[str, Any] = {"target": target, "np": np}
    compile_source(text, f"<adgen {title} by position>", ns)
    caller = ns[f"{title}_positional"]
    if len(_POSITIONAL) >= 256:
        _POSITIONAL.clear()
    _POSITIONAL[key] = (target, caller)
    return caller


def jvp_of_construct_jvp(args: tuple[Any, ...], tangents: tuple[Any, ...]
                         ) -> tuple[Any, Any]:
    """``(out, out_dot)`` of ``construct_jvp(cls, args, tangents, kwargs)`` (an object built
    inside, in jvp code forward mode differentiates again) in the direction ``tangents``:
    ``out`` the pair ``(n, n_dot)``, the object and its tangent, ``out_dot`` their tangents,
    by forward mode over the construction built_inside generates (the jvp of ``__init__``
    run on both). Where no argument has a second tangent, those are zero objects of the
    class (a later call that sets their attributes gives them values)."""
    from adgen.built_inside import construct_jvp, generated_construction
    from adgen.rules.helpers_tangent import zero_tangent
    from adgen.tangent_calls import tangent_of_call

    cls, f_args, f_tangents, kwargs = (tuple(args) + (None,) * 4)[:4]
    kwargs = kwargs or {}
    d_args = _items(tangents[1] if len(tangents) > 1 else None, len(f_args))
    d_tangents = _items(tangents[2] if len(tangents) > 2 else None, len(f_tangents))
    if all(t is None for t in d_args + d_tangents) and _keyword_dots(tangents) is None:
        n, n_dot = construct_jvp(cls, f_args, f_tangents, kwargs)
        return (n, n_dot), (zero_tangent(n), zero_tangent(n_dot))
    given = tuple(k for k, t in enumerate(f_tangents) if t is not None)
    wrapper = generated_construction(cls, len(f_args), given, tuple(kwargs))
    values = (*f_args, *kwargs.values(), *(f_tangents[k] for k in given))
    # (a keyword argument's own tangent: Params(w, c=b * 3.0) of a kw_only field)
    d_kwargs = _keyword_dots(tangents) or {}
    dots = (*d_args, *(d_kwargs.get(k) for k in kwargs), *(d_tangents[k] for k in given))
    return tangent_of_call(wrapper, values, dots, {})


def refuse_reverse_over() -> None:
    """Reverse mode over the code this module differentiates (third derivatives of a function
    calling a function found at run time: ``jacfwd(hessian(f))``, ``jvp`` of ``hvp``) is
    not supported: refused in the user's words.

    Raises:
        UnsupportedError: always.
    """
    from adgen.adjoints import locate

    raise locate(UnsupportedError(
        "third derivatives (jacfwd or jvp of hessian or hvp, a Jacobian of a Jacobian of a "
        "gradient) of a call adgen finds when it runs (a method of an object the function "
        "reads, m.loss(z) in a lambda; a function held in a variable, a dict or passed in) "
        "are not supported yet; its second derivatives are (hessian, jacfwd(jacfwd(f)))",
        hint="take the third derivative of the method itself (adgen.jacfwd(adgen.hessian("
             "m.loss))), or call a module-level function by its name"))
