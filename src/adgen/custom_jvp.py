"""User jvp rules: ``@adgen.custom_jvp`` with ``.defjvp`` (as ``jax.custom_jvp``) and
``@adgen.frule(f)`` (as :func:`adgen.rrule`, for a function defined elsewhere).

A rule ``rule(primals, tangents) -> (out, out_dot)`` takes the primal's positional arguments
as a tuple and their tangents as a tuple of the same length (a zero tangent, not None, for an
argument without one, as JAX instantiates its symbolic zeros for such rules), and returns
the primal output and its tangent, linear in the tangents.

- Forward mode (jvp, jacfwd, the forward part of hessian, hvp and jacfwd(grad)): the jvp of
  the primal is the rule (:func:`frule_tangent`, a jvp compiled from a two-line wrapper that
  calls it, so reverse mode can differentiate it again for second derivatives).
- Reverse mode (grad, vjp, jacrev): where the primal has no rrule of the user's, the rule's
  tangent, linear in the tangents, is transposed (:func:`transposed_rrule`: adgen's reverse
  mode over ``rule(primals, tangents)[1]`` in the tangents, as JAX transposes a custom_jvp).
  A tangent that is not linear, or code reverse mode cannot differentiate, needs an rrule
  (``@adgen.rrule(f)``): the error says so.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from adgen.errors import AdgenError, RuleError, UnsupportedError
from adgen.rules import registry

__all__ = ["custom_jvp", "frule", "frule_tangent", "transposed_rrule"]


def frule(primal: Callable[..., Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Registers a jvp rule for ``primal``:

        @adgen.frule(cbrt)
        def _(primals, tangents):
            (x,), (x_dot,) = primals, tangents
            y = cbrt(x)
            return y, x_dot / (3.0 * y * y)

    ``primals`` are the positional arguments of a call (an argument passed by keyword
    included, in the order of ``primal``'s parameters), ``tangents`` their tangents (zeros
    for an argument without one). The rule returns ``(out, out_dot)``, ``out_dot`` linear in
    the tangents. jvp, jacfwd and second derivatives use it; grad, vjp and jacrev use an
    rrule of ``primal`` where there is one (:func:`adgen.rrule`), else the rule transposed.
    A rule takes effect at the next call of any compiled function.
    """
    _plain_parameters(primal)

    def register(rule: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(rule):
            raise RuleError(f"adgen.frule({_name(primal)}): the rule must be a function "
                            "rule(primals, tangents) -> (out, out_dot)")
        registry.deffrule(primal, rule)
        current = registry.lookup(primal)
        if current is None or (current.is_rrule and
                               getattr(current.rrule, "__adgen_frule__", None) is not None):
            registry.defrrule(primal, transposed_rrule(primal, rule))
        return rule

    return register


def custom_jvp(fun: Callable[..., Any]) -> Callable[..., Any]:
    """``fun`` with a ``defjvp`` method, as ``jax.custom_jvp``:

        @adgen.custom_jvp
        def f(x, y):
            return np.sin(x) * y

        @f.defjvp
        def f_jvp(primals, tangents):
            (x, y), (x_dot, y_dot) = primals, tangents
            return f(x, y), np.cos(x) * x_dot * y + np.sin(x) * y_dot

    ``fun`` itself is returned (called, it runs as before); ``f.defjvp(rule)`` is
    ``adgen.frule(f)(rule)`` and returns the rule."""
    _plain_parameters(fun)
    fun.defjvp = lambda rule: frule(fun)(rule)  # type: ignore[attr-defined]
    return fun


def _tuple_text(names: list[str]) -> str:
    """The source of a tuple display of ``names``."""
    return f"({names[0]},)" if len(names) == 1 else f"({', '.join(names)})"


def _name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def _plain_parameters(primal: Any) -> list[str] | None:
    """The names of ``primal``'s positional parameters (None where it has no signature:
    a builtin); refuses ``*args``, ``**kwargs`` and keyword-only parameters, which a rule
    of positional tuples cannot take."""
    try:
        sig = inspect.signature(primal)
    except (TypeError, ValueError):
        return None
    names = []
    for p in sig.parameters.values():
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise RuleError(
                f"a jvp rule for {_name(primal)}, which takes {p}: the rule takes the "
                "positional arguments as one tuple",
                hint="give the function positional parameters only (a keyword-only "
                     "constant can be bound with functools.partial outside)")
        names.append(p.name)
    return names


def _primals(primal: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """The call's arguments as the positional tuple the rule takes (defaults filled)."""
    if not kwargs:
        try:
            bound = inspect.signature(primal).bind(*args)
        except (TypeError, ValueError):
            return tuple(args)
    else:
        bound = inspect.signature(primal).bind(*args, **kwargs)
    bound.apply_defaults()
    return tuple(bound.args)


# --------------------------------------------------------------------------------------------
# Forward mode: the rule as the primal's jvp

_TANGENTS: dict[int, tuple[Any, Any, Any]] = {}  # id(primal) -> (primal, rule, compiled)


def frule_tangent(primal: Any, nargs: int | None = None) -> Any:
    """The primal's jvp as forward mode compiles one (a CompiledTangent): ``def f_jvp(x, y,
    x_dot=None, y_dot=None)`` returning ``rule((x, y), (x_dot, y_dot))``, a tangent given as
    None made a zero one; compiled through linecache, so reverse mode reads it (and the
    user's rule, a callee) for second derivatives. ``nargs``: the number of arguments of
    the call, for a primal without a signature (a C function through ctypes)."""
    from adgen import runtime
    from adgen.transforms.compiled import CompiledTangent
    from adgen.transforms.emit import compile_source

    rule = registry.frule_of(primal)
    params = _plain_parameters(primal)
    if params is None and nargs is None:  # a builtin given as the function differentiated
        raise UnsupportedError(f"forward mode of {_name(primal)} itself, a function without "
                               "a signature with a jvp rule",
                               hint=f"differentiate a function calling it: adgen.jvp(lambda "
                                    f"x: {getattr(primal, '__name__', 'f')}(x), ...)")
    if params is None:
        params = [f"a{k}" for k in range(nargs or 0)]
    hit = _TANGENTS.get(id(primal))
    if hit is not None and hit[0] is primal and hit[1] is rule and \
            hit[2].params == params:
        return hit[2]
    title = getattr(primal, "__name__", "f")
    title = title if title.isidentifier() else "f"
    # (parameter names of the user's, which cannot clash with the rule's own names here)
    names = [f"{p}" for p in params]
    dots = [f"{p}_dot" for p in params]
    lines = [f"def {title}_jvp({', '.join(names + [d + '=None' for d in dots])}):",
             f"    # the jvp rule registered for {_name(primal)} (adgen.custom_jvp / "
             "adgen.frule)"]
    for n, d in zip(names, dots):
        lines += [f"    if {d} is None:", f"        {d} = zero_tangent({n})"]
    lines.append(f"    return {title}__jvp_rule({_tuple_text(names)}, {_tuple_text(dots)})")
    text = "\n".join(lines) + "\n"
    ns: dict[str, Any] = {"np": np, "zero_tangent": runtime.zero_tangent,
                          f"{title}__jvp_rule": rule}
    compile_source(text, f"<adgen {_name(primal)} jvp rule>", ns)
    jvp = ns[f"{title}_jvp"]
    compiled = CompiledTangent(f"{title}_jvp", jvp, text, text, list(names), list(dots))
    _TANGENTS[id(primal)] = (primal, rule, compiled)
    return compiled


# --------------------------------------------------------------------------------------------
# Reverse mode: the rule transposed

# the primals whose rule is being transposed: inside, the pullback of the primal's own call
# (the rule's ``out = f(x)``) feeds only the primals' cotangents, which the transposition
# does not ask for (zeros; and no endless transposition of the transposition)
_TRANSPOSING: set[int] = set()
_MAPS: dict[tuple[int, int], tuple[Any, Any]] = {}


def transposed_rrule(primal: Any, rule: Any) -> Callable[..., Any]:
    """An rrule for ``primal`` from its jvp rule: the forward runs the primal, the pullback
    maps the cotangent g of the output to the transposed tangent map, the cotangent of each
    tangent of ``t -> rule(primals, t)[1]`` (reverse mode over the rule, in the tangents)."""
    def rrule(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        out = primal(*args, **kwargs)
        primals = _primals(primal, args, kwargs)

        passed = len(args) + len(kwargs)  # (one cotangent per argument passed)

        def pullback(out_bar: Any) -> tuple[Any, ...]:
            if id(primal) in _TRANSPOSING:
                return (None,) * passed
            return _transpose(primal, rule, primals, out_bar)[:passed]

        return out, pullback

    rrule.__adgen_frule__ = rule  # type: ignore[attr-defined]
    try:  # (the registry checks its arity against the primal's)
        rrule.__signature__ = inspect.signature(primal)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        pass
    return rrule


def _tangent_map(rule: Any, n: int) -> Any:
    """``def tangent_map(p0, .., t0, ..): return rule((p0, ..), (t0, ..))[1]`` (one per rule
    and number of arguments)."""
    from adgen.transforms.emit import compile_source

    hit = _MAPS.get((id(rule), n))
    if hit is not None and hit[0] is rule:
        return hit[1]
    ps = [f"p{k}" for k in range(n)]
    ts = [f"t{k}" for k in range(n)]
    title = getattr(rule, "__name__", "rule")
    title = title if title.isidentifier() else "rule"
    text = (f"def {title}_tangent({', '.join(ps + ts)}):\n"
            f"    out, out_dot = jvp_rule({_tuple_text(ps)}, {_tuple_text(ts)})\n"
            f"    return out_dot\n")
    ns: dict[str, Any] = {"np": np, "jvp_rule": rule}
    compile_source(text, f"<adgen {_name(rule)} tangent map>", ns)
    _MAPS[(id(rule), n)] = (rule, ns[f"{title}_tangent"])
    return ns[f"{title}_tangent"]


def _transpose(primal: Any, rule: Any, primals: tuple[Any, ...], out_bar: Any
               ) -> tuple[Any, ...]:
    from adgen import runtime
    from adgen.api import vjp_of_arguments

    n = len(primals)
    floats = tuple(k for k, p in enumerate(primals) if _has_float(p))
    if not floats:
        return (None,) * n
    tangents = tuple(runtime.zero_tangent(p) for p in primals)
    _TRANSPOSING.add(id(primal))
    try:
        _, pull = vjp_of_arguments(_tangent_map(rule, n), (*primals, *tangents),
                                   tuple(n + k for k in floats))
        cts = pull(out_bar)
    except AdgenError as err:
        from adgen.adjoints import locate

        raise locate(UnsupportedError(
            f"the gradient of {_name(primal)} transposes its jvp rule ({_name(rule)}, "
            f"adgen.custom_jvp / adgen.frule), which reverse mode could not differentiate: "
            f"{err.message}",
            hint=f"register a reverse-mode rule too: @adgen.rrule({_name(primal)}) (grad, "
                 "vjp and jacrev use it; jvp keeps the jvp rule)")) from err
    finally:
        _TRANSPOSING.discard(id(primal))
    return tuple(cts[n + k] if k in floats else None for k in range(n))


def _has_float(x: Any) -> bool:
    if isinstance(x, (bool, np.bool_, int, np.integer, str)) or x is None:
        return False
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "fc"
    if isinstance(x, (list, tuple)):
        return any(_has_float(v) for v in x)
    if isinstance(x, dict):
        return any(_has_float(v) for v in x.values())
    return isinstance(x, (float, complex, np.floating, np.complexfloating))
