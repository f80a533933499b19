"""Calls of a derivative adgen made, inside a function adgen differentiates.

``gtrain = adgen.grad(train_loss)`` called in ``val_loss(lr)`` (unrolled gradient descent,
meta-learning, a hyperparameter by its gradient, Newton steps ``t - grad(phi)(t) /
hessian(phi)(t)``): reverse mode through the call is the vjp of the derivative function, one
order higher (:func:`adgen.api.vjp` of a gradient or Hessian function: reverse over the
generated code or over its tangent code), and forward mode is its jvp, as ``jax.grad`` and
``jax.jvp`` of a function calling ``jax.grad(f)`` are. ``value_and_grad`` and a tuple of
``argnums`` are the sum of the vjps of their parts. One derivative of such a call is taken:
a Hessian of a function calling ``adgen.grad(f)`` (third derivatives of ``f``) is refused.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

# what a derivative function's pullback gives back: one cotangent per positional argument
Pullback = Callable[[Any], tuple[Any, ...]]


def forward_of_derivative(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                          mutation: str) -> tuple[Any, Any]:
    """Runs ``fn(*args, **kwargs)`` for a derivative function ``fn`` made by adgen; returns
    ``(out, saved)`` for :func:`adgen.dispatch.pullback_of` (kind ``"derivative"``).

    Raises:
        UnsupportedError: for ``grad(f, has_aux=True)``, a function ``f`` that writes its
            arguments in place, or a derivative the vjp of which adgen does not take (of a
            Jacobian of a Jacobian: fourth derivatives).
    """
    from adgen.api import vjp
    from adgen.gradient_function import GradientFunction
    from adgen.jacobian_parts import copies

    _refuse_writes(fn, mutation)
    n = len(args)
    # keyword arguments by their positions: grad(loss)(w, lam=lam) gives lam its cotangent
    placed = _by_position(fn, args, kwargs)
    slots: tuple[int, ...] = ()
    if placed is not None:
        args, slots, kwargs = placed[0], placed[1], {}
    else:
        _refuse_keywords_with_derivatives(fn, kwargs)
    # its pullback reads the arguments when the caller's pullback runs, after the caller may
    # have written them in place (w -= lr * g(w)): it gets copies (the function writes none
    # of them: _refuse_writes)
    args = copies(args)
    if isinstance(fn, GradientFunction):
        out, pull = _vjp_of_gradient_parts(fn, args, kwargs, mutation)
    else:
        out, pull = vjp(fn, *args, mutation=mutation, **kwargs)
    return out, ("derivative", pull, n, slots, len(kwargs))


def pullback_of_derivative(saved: Any, out_bar: Any) -> tuple[Any, ...]:
    """The cotangents of the arguments of a call :func:`forward_of_derivative` made: one per
    argument passed, positions then keywords in the order passed."""
    _, pull, n, slots, nkw = saved
    if out_bar is None:
        return (None,) * (n + len(slots) + nkw)
    cts = tuple(pull(out_bar))
    return cts[:n] + tuple(cts[k] for k in slots) + (None,) * nkw


def tangent_of_derivative(fn: Any, args: tuple[Any, ...], tangents: tuple[Any, ...],
                          kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """``(out, out_dot)`` of a call of a derivative function made by adgen, in forward mode
    (``jvp`` of a function calling ``adgen.grad(f)``): :func:`adgen.jvp` of it."""
    from adgen.api import grad
    from adgen.gradient_function import GradientFunction
    from adgen.higher_order import jvp

    _refuse_writes(fn, "save")
    if not isinstance(fn, GradientFunction):
        return jvp(fn, args, tangents, **kwargs)
    fun, argnums, gmutation, has_aux, with_value = fn._adgen_spec
    if has_aux:
        _refuse_aux(fn)
    if isinstance(argnums, int) and not with_value:
        return jvp(fn, args, tangents, **kwargs)
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    parts = [jvp(grad(fun, k, mutation=gmutation), args, tangents, **kwargs) for k in nums]
    if isinstance(argnums, int):
        grads, grads_dot = parts[0]
    else:
        grads, grads_dot = tuple(o for o, _ in parts), tuple(t for _, t in parts)
    if not with_value:
        return grads, grads_dot
    value, value_dot = jvp(fun, args, tangents, **kwargs)
    return (value, grads), (value_dot, grads_dot)


def refuse_third_order(fn: Any) -> None:
    """Refuses reverse mode over forward mode through a call of a derivative function (a
    Hessian of a function that calls ``adgen.grad(f)``: third derivatives of ``f``)."""
    from adgen.adjoints import locate
    from adgen.errors import UnsupportedError

    raise locate(UnsupportedError(
        f"second derivatives of a function that calls {fn!r} (third derivatives of the "
        "function it differentiates) are not supported: adgen differentiates a call of a "
        "derivative once, in reverse or forward mode",
        hint="take the first derivative (adgen.grad, adgen.jvp) of the function that calls "
             "it, or write the inner derivative by hand"))


def _vjp_of_gradient_parts(g: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                           mutation: str) -> tuple[Any, Pullback]:
    """The vjp of ``grad(f, argnums)`` or ``value_and_grad(f, argnums)``: of
    ``grad(f, k)`` for each ``k`` of a tuple of argnums, and of ``f`` itself for the value,
    their cotangents summed."""
    from adgen.adjoints import add
    from adgen.api import grad, vjp

    fun, argnums, gmutation, has_aux, with_value = g._adgen_spec
    if has_aux:
        _refuse_aux(g)
    if isinstance(argnums, int) and not with_value:
        return vjp(g, *args, mutation=mutation, **kwargs)
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    parts = [vjp(grad(fun, k, mutation=gmutation), *args, mutation=mutation, **kwargs)
             for k in nums]
    grads = parts[0][0] if isinstance(argnums, int) else tuple(o for o, _ in parts)
    if with_value:
        value, pull_value = vjp(fun, *args, mutation=mutation, **kwargs)
        out: Any = (value, grads)
    else:
        out = grads

    def pullback(ct: Any) -> tuple[Any, ...]:
        ct_value, ct_grads = ct if with_value else (None, ct)
        if ct_grads is None:
            ct_grads = (None,) * len(nums)
        elif isinstance(argnums, int):
            ct_grads = (ct_grads,)
        total: list[Any] = [None] * len(args)
        pulled = [pull(c) for (_, pull), c in zip(parts, ct_grads) if c is not None]
        if with_value and ct_value is not None:
            pulled.append(pull_value(ct_value))
        for cts in pulled:
            total = [add(a, b) for a, b in zip(total, cts)]
        return tuple(total)

    return out, pullback


def _refuse_writes(fn: Any, mutation: str) -> None:
    """Refuses a derivative of a function that writes its arguments (or objects, lists or
    dicts they hold) in place: the call writes them as a plain call of the function would,
    which the function differentiated here does not see (a silently wrong gradient)."""
    from adgen.errors import AdgenError, UnsupportedError
    from adgen.transforms.pipeline import compile_function

    base = _differentiated(fn)
    try:
        compiled = compile_function(base, mutation=mutation)
    except AdgenError:
        return  # refused where it is differentiated, by the derivative's own call
    if compiled.mutates_params or getattr(compiled, "mutates_containers", False):
        name = getattr(base, "__qualname__", repr(base))
        raise UnsupportedError(
            f"{fn!r} is called in a function adgen differentiates, and {name} writes its "
            "arguments (or what they hold) in place: the call changes them as a plain call "
            f"of {name} does, and the derivative taken through it would not see that",
            hint=f"have {name} work on a copy (w = w.copy() first), or return the new "
                 "values instead of writing them in place")


def _refuse_aux(g: Any) -> None:
    from adgen.errors import UnsupportedError

    raise UnsupportedError(
        f"a call of {g!r} in a function adgen differentiates is not supported: the "
        "derivative of its auxiliary output is not taken",
        hint="call adgen.grad(f) without has_aux there, and compute the auxiliary values "
             "with a plain call of f")


def _differentiated(fn: Any) -> Any:
    """The user's function under a derivative function (of grad of grad, of a partial)."""
    base = fn
    while getattr(base, "__adgen_transform__", False) or isinstance(base, functools.partial):
        spec = getattr(base, "_adgen_spec", None)
        if spec is None:
            base = base.func
        else:  # (fun, argnums, ...) of grad; (builder, fun, ...) of jacfwd, hessian, ...
            base = spec[0] if callable(spec[0]) else spec[1]
    return base


def _by_position(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
                 ) -> tuple[tuple[Any, ...], tuple[int, ...]] | None:
    """``(arguments, slots)``: ``args`` followed by the keyword arguments at their
    parameters' positions (defaults between them), and the position of each keyword argument
    in the order passed; None where a keyword names no positional parameter (keyword-only,
    ``**kwargs``) or ``fn`` is not a plain function of its parameters (``*args``)."""
    if not kwargs:
        return None
    base = fn.func if isinstance(fn, functools.partial) and \
        not getattr(fn, "__adgen_transform__", False) else _differentiated(fn)
    if base is not _differentiated(fn) or isinstance(base, functools.partial):
        return None  # (a partial's own arguments come first: not by position here)
    try:
        params = list(inspect.signature(base).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    named = [p for p in params if p.kind is p.POSITIONAL_OR_KEYWORD][len(args):]
    if len([p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]) < \
            len(args) + len(named) or not set(kwargs) <= {p.name for p in named}:
        return None
    full, at = list(args), {}
    for p in named:
        if not set(kwargs) - set(at):
            break
        if p.name in kwargs:
            at[p.name] = len(full)
            full.append(kwargs[p.name])
        elif p.default is not p.empty:
            full.append(p.default)
        else:
            return None  # (a plain call raises TypeError: left to it)
    return tuple(full), tuple(at[k] for k in kwargs)


def _refuse_keywords_with_derivatives(fn: Any, kwargs: dict[str, Any]) -> None:
    """Refuses a keyword argument that may carry a derivative where it cannot be passed by
    position (a keyword-only parameter): a derivative function gives keyword arguments no
    cotangent, which would make its derivative silently zero."""
    import numpy as np

    from adgen.errors import UnsupportedError

    for k, value in kwargs.items():
        if isinstance(value, (bool, int, str, type(None), np.integer, np.bool_)) or \
                isinstance(value, np.ndarray) and value.dtype.kind not in "fc" or \
                callable(value):
            continue
        raise UnsupportedError(
            f"{k}= passed by keyword to {fn!r} in a function adgen differentiates: adgen "
            "gives a derivative function's keyword arguments no derivative, and this one "
            "may have one",
            hint=f"make {k} a positional parameter and pass it by position")
