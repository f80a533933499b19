"""Derivatives of a gradient function (``grad(f, j)``, a scalar argument ``j``): its jvp
(``jacfwd(grad(f))`` is the Hessian), its vjp (``jacrev(grad(f))``), ``grad`` of it, and
``explain`` of it, which says the path second derivatives take. Reverse over reverse where the
generated forward and pullback of ``grad(f)`` allow it (``adgen.second_order``), else reverse
mode over the generated tangent code (:mod:`adgen.directional`), as for ``hvp``; of
``grad(grad(f))``, third derivatives (``adgen.third_order``). The API's ``vjp``, ``grad``,
``value_and_grad`` and ``explain`` call these for a gradient function; ``higher_order.jvp``
calls :func:`jvp_of_gradient`.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TextIO

import numpy as np

from adgen import runtime
from adgen.api import GradientFunction, explain, grad, in_notebook, value_and_grad, vjp
from adgen.arguments import (
    check_cotangent,
    describe,
    has_complex,
    location_of,
    normalize_argnums,
    refuse_complex_jacobian,
    split_receiver,
)
from adgen.directional import directional
from adgen.errors import NonDifferentiableError, UnsupportedError
from adgen.explanation import Explanation
from adgen.jacobian_parts import Runs, copies, refuse_aliased_arguments
from adgen.repeated_runs import refuse_changed_direction, same_kind

__all__ = ["check_derivable", "explain_gradient", "grad_of_grad", "jvp_of_gradient",
           "second_order_program", "vjp_of_gradient"]


def check_derivable(g: GradientFunction) -> None:
    """Refuses a derivative of what grad of grad does not cover (value_and_grad, has_aux, a
    tuple of argnums)."""
    _, argnums, _, has_aux, with_value = g._adgen_spec
    if has_aux or with_value or not isinstance(argnums, int) or isinstance(argnums, bool):
        from adgen.errors import UnsupportedError

        raise UnsupportedError(
            "a derivative of value_and_grad, of grad(..., has_aux=True) or of grad with a tuple "
            "of argnums is not supported",
            hint="differentiate grad(f, argnums=k) of a scalar argument k, or use adgen.hessian")


def jvp_of_gradient(g: GradientFunction, primals: tuple[Any, ...],
                     tangents: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """``jvp(grad(f, j), x, v)``: the gradient and its derivative along v, the sum over the
    arguments n with a tangent of the second derivatives d2f/dx_j dx_n v_n. That is the
    gradient with respect to x_j of the derivative of f along v (second derivatives are
    symmetric), which adgen computes as for :func:`hvp`: reverse mode over the generated
    tangent code. So ``jacfwd(grad(f))`` is the Hessian, as in JAX."""
    check_derivable(g)
    if isinstance(g._adgen_spec[0], GradientFunction):  # of grad(grad(f)): third derivatives
        from adgen.third_order import lowered

        g, kwargs = lowered(g, primals, kwargs), {}
    fun, argnums, mutation = g._adgen_spec[0], g._adgen_spec[1], g._adgen_spec[2]
    j = normalize_argnums(argnums, len(primals))[0]
    refuse_aliased_arguments(primals, j, fun)
    runs = Runs(primals)  # the gradient's run writes the arguments as a plain call does
    out = g(*runs.next(), **kwargs)
    wrt = tuple(n for n, v in enumerate(tangents) if v is not None)
    if not wrt:
        return out, runtime.zeros_like(out)
    # keyword arguments (jacfwd(grad(f))(w, x=data)) get no derivative: bound, as in hvp
    d = directional(functools.partial(fun, **kwargs) if kwargs else fun, len(primals), wrt,
                     unit=False, args=primals)
    if wrt == (j,) and same_kind(out, tangents[j]):
        # a second run: one of a function reading state its runs change (a counter, a global
        # object its method updates, kf.update(z)) is refused, not the derivative of the
        # gradient at the state the first run left (it was returned: [9, 0] for [6, 0])
        value, dot = value_and_grad(d, j, mutation=mutation)(*runs.next(), tangents[j])
        refuse_changed_direction(value, out, tangents[j], fun, location_of(fun),
                                 "jvp(grad(f)) (the gradient, then its derivative)",
                                 unit="part")
        return out, dot
    dot = grad(d, j, mutation=mutation)(*runs.next(), *[tangents[n] for n in wrt])
    return out, dot


def vjp_of_gradient(g: GradientFunction, args: tuple[Any, ...], mutation: str,
                     kwargs: dict[str, Any]) -> tuple[Any, Callable[[Any], tuple[Any, ...]]]:
    """``vjp(grad(f, j), x)``: the gradient, and a pullback taking a cotangent c of it to the
    gradients with respect to every argument of the derivative of f along c (on x_j), by
    reverse mode over the generated tangent code. So ``jacrev(grad(f))`` is the Hessian."""
    check_derivable(g)
    if isinstance(g._adgen_spec[0], GradientFunction):  # of grad(grad(f)): third derivatives
        from adgen.third_order import lowered

        g, kwargs = lowered(g, args, kwargs), {}
    fun, argnums = g._adgen_spec[0], g._adgen_spec[1]
    if kwargs:
        # keyword arguments (jacrev(grad(f))(w, x=data)) get no derivative: bound, as in
        # jvp_of_gradient and hvp (it was refused, where jacfwd(grad(f)) took them)
        fun = functools.partial(fun, **kwargs)
        g = grad(fun, argnums, mutation=g._adgen_spec[2])
    j = normalize_argnums(argnums, len(args))[0]
    refuse_complex_jacobian(args, "vjp of a gradient")
    refuse_aliased_arguments(tuple(args), j, fun)
    program = second_order_program(fun, j, args, g._adgen_spec[2], mutation)
    before = copies(args)
    # the arguments with a gradient (floats, float arrays, containers of them)
    every = tuple(n for n, a in enumerate(args)
                  if not isinstance(a, (bool, int, str, np.integer, np.bool_, type(None))) and
                  not (isinstance(a, np.ndarray) and a.dtype.kind not in "fc"))

    first: list[Any] = []  # the gradient of the first run (a row's run is compared with it)

    def over_forward(ct: Any) -> tuple[Any, ...]:
        """Reverse over forward: the gradient of the derivative of f along ``ct``."""
        d = directional(fun, len(args), (j,), unit=False, args=before)  # (cached per function)
        if not every:
            got: Any = ()
        elif first and same_kind(first[0], ct):
            # a run per row: one of a function reading state its runs change (a counter in a
            # default, a global, an attribute it increments) is refused, not a Hessian whose
            # rows come from other states (adgen.repeated_runs)
            value, got = value_and_grad(d, every, mutation=mutation)(*copies(before), ct)
            refuse_changed_direction(value, first[0], ct, fun, location_of(fun))
        else:
            got = grad(d, every, mutation=mutation)(*copies(before), ct)
        cts: list[Any] = [None] * len(args)
        for n, c in zip(every, got):
            cts[n] = c
        return tuple(cts)

    if program.reverse:  # reverse over reverse: the generated forward and pullback
        if program.check:  # "strict": refused where the gradient is
            g(*copies(args))
        # on the arguments themselves: they end as one plain call of f leaves them
        out, pull = vjp(program.function, *args, mutation=mutation)
        first.append(out)
        refused: list[UnsupportedError] = []

        def pullback_rr(ct: Any) -> tuple[Any, ...]:
            check_cotangent(ct, out, "the cotangent", fun)
            if not refused:
                try:
                    return pull(ct)
                except UnsupportedError as err:
                    # a construct of the generated code that its pullback refuses when it
                    # runs (an RK4 step's saved tuple taken for an array: jacrev(grad(f))
                    # raised where hessian(f) gives the values): reverse over forward, as
                    # where the program does not compile
                    refused.append(err)
            return over_forward(ct)

        return out, pullback_rr
    out = g(*args)  # the arguments end as one plain call of f leaves them
    first.append(out)
    directional(fun, len(args), (j,), unit=False, args=args)  # what forward mode refuses: here

    def pullback(ct: Any) -> tuple[Any, ...]:
        check_cotangent(ct, out, "the cotangent", fun)
        return over_forward(ct)

    return out, pullback


def grad_of_grad(outer: Callable[..., Any], g: GradientFunction, argnums: Any, mutation: str,
                  has_aux: bool, with_value: bool) -> Callable[..., Any]:
    """``grad(grad(f, j), k)``: the gradient of the generated function that computes
    ``df/dx_j`` by forward mode (a scalar argument j: grad(f, j) returns a number)."""
    fun, inner_argnums = g._adgen_spec[0], g._adgen_spec[1]
    check_derivable(g)  # refuses what it cannot do, now

    def second(*args: Any, **kwargs: Any) -> Any:
        if isinstance(fun, GradientFunction):  # grad(grad(grad(f))): third derivatives
            from adgen.third_order import lowered

            return grad_of_grad(outer, lowered(g, args, kwargs), argnums, mutation, has_aux,
                                with_value)(*args)
        j = normalize_argnums(inner_argnums, len(args))[0]
        # a 0-d float array is a number too (np.array(0.7), as JAX takes it)
        scalar = isinstance(args[j], np.ndarray) and args[j].ndim == 0 and \
            args[j].dtype.kind == "f"
        if not scalar and (not isinstance(args[j], (float, int, np.floating)) or
                           isinstance(args[j], bool)):
            raise NonDifferentiableError(
                f"grad(grad(f)) needs grad(f) to return a number, but argument {j} is "
                f"{describe(args[j])}, so grad(f) returns an array",
                hint="use adgen.hessian(f) or adgen.hvp(f) for the second derivatives of a "
                     "function of an array")
        refuse_complex_jacobian(args, "grad of a gradient")
        if not kwargs:
            program = second_order_program(fun, j, args, g._adgen_spec[2], mutation)
            if program.reverse:  # reverse over reverse: the generated forward and pullback
                if program.check:  # "strict": refused where the gradient is
                    g(*copies(args))
                return outer(program.function, argnums, mutation=mutation,
                             has_aux=has_aux)(*args)
        # keyword arguments get no derivative: bound (the directional function takes the
        # positional ones only: grad(grad(f))(0.7, c=2.0) raised a raw TypeError)
        d = directional(functools.partial(fun, **kwargs) if kwargs else fun, len(args), (j,),
                         unit=True)
        return outer(d, argnums, mutation=mutation, has_aux=has_aux)(*args)

    return second


def second_order_program(fun: Callable[..., Any], j: int, args: tuple[Any, ...],
                          mutation: str, outer: str | None = None) -> Any:
    """``grad(fun, j)`` at ``args``'s signature as a function adgen's reverse mode compiles
    (adgen.second_order), or the reason it cannot: then derivatives of the gradient take the
    forward-over-reverse path. Decided when compiling, before anything runs."""
    from adgen.second_order import Program, reverse_program

    target, receiver = split_receiver(getattr(fun, "__adgen_primal__", fun))
    if receiver or isinstance(fun, functools.partial) or has_complex(args):
        return Program(None, "a method, a functools.partial or a complex argument takes the "
                             "forward-over-reverse path")
    return reverse_program(fun, j, args, mutation, outer)


def explain_gradient(g: GradientFunction, args: tuple[Any, ...], mutation: str,
                      file: TextIO | None, kwargs: dict[str, Any]) -> Explanation:
    """``explain(grad(f), *args)``: which path second derivatives of ``grad(f)`` take at
    ``args`` (reverse over reverse, or forward over reverse and why), printed first, then the
    mutation sites of the code that is differentiated again (``result.route`` holds the
    path)."""

    check_derivable(g)
    if not args or kwargs:
        raise UnsupportedError("explain(grad(f)) needs example arguments (positional only): "
                               "the path second derivatives take depends on their kinds",
                               hint="adgen.explain(adgen.grad(f), x)")
    third = isinstance(g._adgen_spec[0], GradientFunction)
    if third:  # grad(grad(f)): its derivatives are those of grad(d), d the first derivative
        from adgen.third_order import lowered

        g = lowered(g, args, {})
    fun, argnums, gmutation = g._adgen_spec[0], g._adgen_spec[1], g._adgen_spec[2]
    j = normalize_argnums(argnums, len(args))[0]
    program = second_order_program(fun, j, args, gmutation)
    order = ("third derivatives, as second derivatives of the generated first derivative: "
             if third else "")
    if program.reverse:
        route = (f"{order}second derivatives: reverse over reverse (adgen differentiates the "
                 "generated forward and pullback of grad(f))")
        import os

        # (the sites of the program's code, not of adgen's runtime classes it constructs)
        internal = os.path.dirname(os.path.abspath(runtime.__file__))
        result = Explanation(s for s in explain(program.function, *copies(args),
                                                mutation=gmutation, file=None)
                             if not os.path.abspath(s.file).startswith(internal))
    else:
        route = (f"{order}second derivatives: forward over reverse (Hessian-vector "
                 f"products), because {program.reason}")
        target, receiver = split_receiver(getattr(fun, "__adgen_primal__", fun))
        result = explain(target, *receiver, *copies(args), mutation=gmutation, file=None)
    result.route = route
    printing = file is not None and not (
        (file is sys.stdout or file is explain.__kwdefaults__["file"]) and in_notebook())
    if printing:
        print(route, file=file)
        print(str(result), file=file)
    return result
