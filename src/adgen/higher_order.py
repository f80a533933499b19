"""Forward mode and higher order: jvp, jacfwd, jacrev, jacobian, hvp, hessian, and the
derivatives of a gradient function (grad of grad, its vjp and jvp).

Forward mode runs the tangent code (``pipeline.compile_tangent``); second derivatives are
forward over reverse (hvp, hessian, jacfwd of grad) or reverse over reverse where the
generated code allows (``second_order.py``: jacrev of grad, vjp of grad, grad of grad).
The directional derivative reverse mode differentiates for those is :mod:`adgen.directional`'s;
the pieces Jacobians and Hessians are assembled from, :mod:`adgen.jacobian_parts`'s.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import numpy as np

from adgen import runtime
from adgen.api import GradientFunction, explain, grad, in_notebook, vjp
from adgen.arguments import (
    check_cotangent,
    check_differentiable,
    describe,
    has_complex,
    location_of,
    normalize_argnums,
    refuse_complex_jacobian,
    refuse_subclasses,
    split_receiver,
)
from adgen.directional import directional, tangent_compiled
from adgen.errors import ArgnumsError, MutationError, NonDifferentiableError, UnsupportedError
from adgen.explanation import Explanation
from adgen.jacobian_parts import (
    Runs,
    basis,
    columns,
    copies,
    like_argument,
    refuse_aliased_arguments,
    refuse_structured,
    refuse_structured_output,
)


def jvp(fun: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any],
        has_aux: bool = False, **kwargs: Any) -> Any:
    """Forward mode: ``fun(*primals)`` and its derivative in the direction ``tangents``.

    As ``jax.jvp``. The tangent code is generated from ``fun``'s source (see
    ``adgen.source(fun, mode="forward")``), in-place writes included: a buffer's tangent is a
    buffer written where the buffer is written.

    Args:
        fun: a Python function whose source adgen can read.
        primals: the positional arguments.
        tangents: one tangent per primal, of its structure (an array of its shape, a float for
            a number, a list for a list); None is a zero tangent.
        has_aux: as in ``jax.jvp``: ``fun`` returns a pair ``(out, aux)``, and ``aux`` (any
            value) is returned beside, without a tangent.
        **kwargs: keyword arguments passed to ``fun``; they get no tangent.

    Returns:
        ``(out, out_dot)``: the output and its tangent (of the output's structure);
        ``(out, out_dot, aux)`` with ``has_aux``.

    Raises:
        AdgenError: for code forward mode cannot differentiate, naming the file and line.
    """
    if has_aux:
        both, dots = jvp(fun, primals, tangents, **kwargs)
        if not (isinstance(both, tuple) and len(both) == 2):
            raise NonDifferentiableError(
                "has_aux=True needs the function to return a pair (out, aux), not "
                f"{describe(both)}", location_of(fun))
        return both[0], dots[0], both[1]
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ArgnumsError(f"jvp got {len(primals)} primal(s) and {len(tangents)} tangent(s); "
                           "give one tangent per primal (None for none)")
    refuse_subclasses(primals)
    _refuse_integer_tangents(primals, tangents, fun)
    if has_complex(primals):
        # the tangent rules are written for real tangents: a complex one would be cut to its
        # real part (forward mode has no ComplexWarning net around it)
        raise NonDifferentiableError(
            "jvp of a complex argument is not supported: forward mode propagates real "
            "tangents only", location_of(fun),
            hint="use adgen.grad or adgen.vjp (complex arguments are supported there), or "
                 "pass the real and imaginary parts as two real arguments")
    if isinstance(fun, GradientFunction):  # jvp of grad(f, j): Hessian-vector products
        return _jvp_of_gradient(fun, primals, tangents, kwargs)
    if isinstance(fun, DerivativeFunction):  # jvp of hessian(f), hvp(f), jacfwd(grad(f))...
        from adgen.third_order import jvp_of_derivative

        return jvp_of_derivative(fun, primals, tangents, kwargs)
    if isinstance(fun, functools.partial) and not getattr(fun, "__adgen_transform__", False):
        # its arguments get no tangent (a hessian(...) or jacrev(...) is refused by name)
        return jvp(fun.func, (*fun.args, *primals), (None,) * len(fun.args) + tangents,
                   **{**fun.keywords, **kwargs})
    from adgen.rules import registry

    rule = registry.lookup(getattr(fun, "__adgen_primal__", fun))
    if rule is not None and not rule.is_rrule:  # a NumPy function itself: its rule's jvp
        bound = rule.bind(list(range(len(primals))), {})
        given = {p: (tuple(tangents[i] for i in k) if isinstance(k, tuple) else tangents[k])
                 for p, k in bound.items() if p in rule.diff and not
                 isinstance(k, registry.Default)}
        given = {p: t for p, t in given.items() if t is not None}
        out = rule.primal(*primals, **kwargs)
        # (eigh's tangent as an EighResult, as in the tangent code)
        return out, runtime.named_like(registry.eval_jvp(rule, primals, kwargs, given), out)
    compiled, receiver = tangent_compiled(fun)
    args = receiver + primals
    _refuse_aliased_tangents(primals, tangents, fun)
    # new buffers laid out like the primals: the tangent code writes them where f writes; an
    # array passed twice gets one buffer, so a write through one name reaches the other's
    named: dict[str, Any] = {}
    first: dict[int, str] = {}
    for t, v, x in zip(compiled.tangent_params[len(receiver):], tangents, primals):
        if isinstance(x, np.ndarray) and id(x) in first:
            named[t] = named[first[id(x)]]
            continue
        named[t] = runtime.given_tangent(v, x)
        if isinstance(x, np.ndarray):
            first[id(x)] = t
    try:
        return compiled.jvp(*args, **named, **kwargs)
    except Exception as exc:
        from adgen.forward_errors import annotate

        annotate(exc, None)  # the user's line, from the jvp code's "# line N:" comments
        raise


def _refuse_aliased_tangents(primals: tuple[Any, ...], tangents: tuple[Any, ...],
                             fun: Callable[..., Any]) -> None:
    """Refuses primals that share memory where their tangents cannot: the same array passed
    twice with two different tangents (a buffer has one), or two different arrays over the
    same memory (views of one buffer: a write through one changes the other, and their
    tangents, separate buffers, would not follow), one of them with a tangent.

    Raises:
        NonDifferentiableError: naming the two primals and what to pass instead.
    """
    arrays = [(k, x) for k, x in enumerate(primals) if isinstance(x, np.ndarray)]
    for i, (k, x) in enumerate(arrays):
        for m, y in arrays[i + 1:]:
            t, u = tangents[k], tangents[m]
            if x is y:
                if t is u or (t is not None and u is not None and
                              np.array_equal(np.asarray(t), np.asarray(u))):
                    continue
                problem = ("are the same array with different tangents (a buffer has one "
                           "tangent)")
            elif (t is not None or u is not None) and np.may_share_memory(x, y):
                problem = ("are different arrays over the same memory (views of one buffer): "
                           "their tangents would not follow a write through either")
            else:
                continue
            raise NonDifferentiableError(
                f"jvp: primals {k} and {m} {problem}", location_of(fun),
                hint="pass copies (x.copy()) to differentiate with respect to independent "
                     "arguments, or the one array once with its tangent")


class DerivativeFunction(functools.partial):
    """What :func:`jacfwd`, :func:`jacrev`, :func:`jacobian`, :func:`hvp` and :func:`hessian`
    return: a callable with ``fun``'s name and docstring that pickles, as ``grad(f)`` does,
    as a reference to ``fun`` and the options, built again by the receiving process (Dask,
    ``ProcessPoolExecutor``); a closure in this module did not pickle ("it's not the same
    object as models.rosen"). Differentiating it again is refused by name (third
    derivatives), as for a gradient function."""

    __adgen_transform__ = True  # compile_function refuses derivatives of derivatives

    def __new__(cls, call: Callable[..., Any], builder: str, fun: Callable[..., Any],
                argnums: Any, options: dict[str, Any]) -> DerivativeFunction:
        self = super().__new__(cls, call)
        if hasattr(fun, "__name__"):
            functools.update_wrapper(self, fun)
        self._adgen_spec = (builder, fun, argnums, options)
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_derivative, self._adgen_spec)

    def __repr__(self) -> str:
        builder, fun, argnums, options = self._adgen_spec
        name = repr(fun) if getattr(fun, "__adgen_transform__", False) else \
            getattr(fun, "__qualname__", repr(fun))
        shown = "".join([f", argnums={argnums!r}" if argnums != 0 else "",
                         *(f", {k}={v!r}" for k, v in options.items() if v != "save")])
        return f"<adgen.{builder}({name}{shown})>"


def _rebuild_derivative(builder: str, fun: Callable[..., Any], argnums: Any,
                        options: dict[str, Any]) -> DerivativeFunction:
    """Unpickles a :class:`DerivativeFunction`: ``jacrev(fun, ...)`` (etc.) built again."""
    return globals()[builder](fun, argnums, **options)


def _refuse_integer_tangents(primals: tuple[Any, ...], tangents: tuple[Any, ...],
                             fun: Callable[..., Any]) -> None:
    """Refuses a nonzero tangent for an int or bool primal (a number or an array): the
    tangent code gives integers none, so ``jvp(f, (np.arange(3),), (ones,))`` returned a zero
    derivative where f's is not (jax.jvp refuses it too).

    Raises:
        NonDifferentiableError: naming the argument and what to pass instead.
    """
    for k, (x, t) in enumerate(zip(primals, tangents)):
        integer = isinstance(x, (bool, int, np.integer, np.bool_)) or (
            isinstance(x, np.ndarray) and x.dtype.kind in "biu")
        if not integer or t is None or not np.any(np.asarray(t, dtype=object) != 0):
            continue
        what = f"an array of dtype {x.dtype.name}" if isinstance(x, np.ndarray) else \
            f"{type(x).__name__} {x!r}"
        raise NonDifferentiableError(
            f"jvp: primal {k} is {what}, given a nonzero tangent: integers and bools have "
            "no derivative in adgen (the tangent would be dropped)", location_of(fun),
            hint="pass the primal as floats (x.astype(np.float64), or 3.0 for 3), or None "
                 "as its tangent")


def jacfwd(fun: Callable[..., Any], argnums: int | Sequence[int] = 0,
           **options: Any) -> Callable[..., Any]:
    """The Jacobian by forward mode: one jvp per element of the differentiated argument(s).

    As ``jax.jacfwd``: the Jacobian has the output's shape followed by the argument's; a tuple
    ``argnums`` gives a tuple. A function that writes its arguments in place sees the same
    values in every jvp, and the arguments end as one plain call leaves them (:class:`Runs`).
    """
    def jacobian_fwd(*args: Any, **kwargs: Any) -> Any:
        nums = normalize_argnums(argnums, len(args))
        for n in nums:
            check_differentiable(args[n], n)  # an int argument: refused, as grad does
        out = None
        result = []
        runs = Runs(args)
        for n in nums:
            dots = []
            for e in basis(args[n]):
                tangents = [None] * len(args)
                tangents[n] = e
                out, d = jvp(fun, runs.next(), tangents, **kwargs)
                refuse_structured_output(out, "jacfwd")
                dots.append(d)
            result.append(columns(dots, out, args[n]))
        return result[0] if isinstance(argnums, int) else tuple(result)

    return DerivativeFunction(jacobian_fwd, "jacfwd", fun, argnums, options)


def jacrev(fun: Callable[..., Any], argnums: int | Sequence[int] = 0, *,
           mutation: str = "save") -> Callable[..., Any]:
    """The Jacobian by reverse mode: one forward pass, its pullback called once per element
    of the output (pullbacks are reusable). As ``jax.jacrev``; shapes as :func:`jacfwd`."""
    def jacobian_rev(*args: Any, **kwargs: Any) -> Any:
        nums = normalize_argnums(argnums, len(args))
        for n in nums:
            refuse_structured(args[n])  # as jacfwd does (a raw TypeError of float())
            check_differentiable(args[n], n)  # an int argument: refused, as grad does
        refuse_complex_jacobian(tuple(args[n] for n in nums), "jacrev")
        out, pullback = vjp(fun, *args, mutation=mutation, **kwargs)
        refuse_structured_output(out, "jacrev", stackable=False)
        shape = np.shape(out)
        rows: list[list[Any]] = [[] for _ in nums]
        for k in range(int(np.prod(shape, dtype=int))):
            e = np.zeros(shape)
            e.flat[k] = 1.0
            cts = pullback(e if shape else float(e))
            for r, n in zip(rows, nums):
                r.append(np.asarray(cts[n], dtype=float) if cts[n] is not None
                         else np.zeros(np.shape(args[n])))
        result = [like_argument(np.stack(r).reshape(shape + np.shape(args[n])) if r else
                                np.zeros(shape + np.shape(args[n])), args[n])
                  for r, n in zip(rows, nums)]
        return result[0] if isinstance(argnums, int) else tuple(result)

    return DerivativeFunction(jacobian_rev, "jacrev", fun, argnums, {"mutation": mutation})


def jacobian(fun: Callable[..., Any], argnums: int | Sequence[int] = 0, *,
             mutation: str = "save") -> Callable[..., Any]:
    """The Jacobian: reverse mode (:func:`jacrev`), or forward mode (:func:`jacfwd`) when the
    differentiated arguments have fewer elements than the output."""
    def jacobian_fun(*args: Any, **kwargs: Any) -> Any:
        nums = normalize_argnums(argnums, len(args))
        for n in nums:
            refuse_structured(args[n])
            check_differentiable(args[n], n)
        before = copies(args)
        out = fun(*before, **kwargs)
        refuse_structured_output(out, "jacobian")
        n_in = sum(int(np.size(args[n])) for n in nums)
        if isinstance(out, (list, tuple)) or n_in < int(np.size(out)):
            return jacfwd(fun, argnums)(*args, **kwargs)
        return jacrev(fun, argnums, mutation=mutation)(*args, **kwargs)

    return DerivativeFunction(jacobian_fun, "jacobian", fun, argnums, {"mutation": mutation})


def hvp(fun: Callable[..., Any], argnums: int = 0, *,
        mutation: str = "save") -> Callable[..., Any]:
    """Hessian-vector products of a scalar function, by reverse over forward mode.

    ``adgen.hvp(f)(x, v)`` is the Hessian of ``f`` at ``x`` times ``v``: the gradient of
    ``x -> jvp(f, (x,), (v,))[1]``, where adgen's reverse mode differentiates the generated
    jvp code. With more arguments, ``adgen.hvp(f, argnums=k)(*args, v)``: ``v`` comes last and
    has the structure of argument ``k``.

    Raises:
        AdgenError: for code forward or reverse mode cannot differentiate.
    """
    if not isinstance(argnums, int) or isinstance(argnums, bool):
        raise ArgnumsError(f"hvp takes one argument to differentiate (an int), not {argnums!r}")

    def hessian_vector(*args_and_v: Any, **kwargs: Any) -> Any:
        if len(args_and_v) < 2:
            raise ArgnumsError("hvp(f) is called as hvp(f)(*args, v): the direction comes "
                               "after the function's arguments")
        *args, v = args_and_v
        # keyword arguments (hessian(loss)(w, x=x)) get no derivative: bound as a partial's
        # (its wrapper is cached by the identity of the values bound)
        if isinstance(fun, GradientFunction):  # hessian(grad(f)) of a number: third order
            from adgen.third_order import plain

            f = plain(fun, tuple(args), kwargs)
        else:
            f = functools.partial(fun, **kwargs) if kwargs else fun
        n = normalize_argnums(argnums, len(args))[0]
        refuse_complex_jacobian(tuple(args), "hvp (and hessian)")
        refuse_aliased_arguments(tuple(args), n, fun)
        _check_direction(args[n], v, n)
        d = directional(f, len(args), (n,), unit=False)
        try:
            return grad(d, n, mutation=mutation)(*args, v)
        except MutationError:
            # the refusal names the generated tangent code (x_1_dot *= y, its lines): the
            # gradient's own refusal names the user's code
            grad(fun, n, mutation=mutation)(*args, **kwargs)
            raise

    return DerivativeFunction(hessian_vector, "hvp", fun, argnums, {"mutation": mutation})


def _check_direction(x: Any, v: Any, n: int) -> None:
    """Refuses a direction ``v`` of another shape than argument ``n`` (an argument given
    after ``v``: ``hvp(f)(x, v, data)`` instead of ``hvp(f)(x, data, v)``)."""
    kinds = (float, int, np.ndarray, np.floating, np.integer)
    if isinstance(x, kinds) and not isinstance(x, bool) and isinstance(v, kinds) and \
            np.shape(x) != np.shape(v):
        raise ArgnumsError(
            f"hvp(f)(*args, v): the direction v (the last argument) has shape {np.shape(v)}, "
            f"and argument {n}, the one differentiated, has shape {np.shape(x)}; the direction "
            "comes after all of the function's arguments: adgen.hvp(f)(x, data, v)")


def hessian(fun: Callable[..., Any], argnums: int = 0, *,
            mutation: str = "save") -> Callable[..., Any]:
    """The Hessian of a scalar function with respect to one argument (x's shape twice), one
    Hessian-vector product (:func:`hvp`) per element, each from the same values; the arguments
    end as one plain call leaves them (:class:`Runs`)."""
    if not isinstance(argnums, int) or isinstance(argnums, bool):
        raise ArgnumsError(f"hessian takes one argument to differentiate (an int), not "
                           f"{argnums!r}: take the blocks one by one (hessian(f, argnums=k) "
                           "for the diagonal ones, jacfwd(grad(f, argnums=j), argnums=k) for "
                           "the others)")

    def hessian_fun(*args: Any, **kwargs: Any) -> Any:
        n = normalize_argnums(argnums, len(args))[0]
        refuse_aliased_arguments(tuple(args), n, fun)  # (copies of views share nothing)
        h = hvp(fun, n, mutation=mutation)
        runs = Runs(args)
        cols = [h(*runs.next(), e, **kwargs) for e in basis(args[n])]
        return columns(cols, args[n], args[n])

    return DerivativeFunction(hessian_fun, "hessian", fun, argnums, {"mutation": mutation})


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


def _jvp_of_gradient(g: GradientFunction, primals: tuple[Any, ...],
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
                     unit=False)
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
    program = _second_order_program(fun, j, args, g._adgen_spec[2], mutation)
    if program.reverse:  # reverse over reverse: the generated forward and pullback
        if program.check:  # "strict": refused where the gradient is
            g(*copies(args))
        # on the arguments themselves: they end as one plain call of f leaves them
        out, pull = vjp(program.function, *args, mutation=mutation)

        def pullback_rr(ct: Any) -> tuple[Any, ...]:
            check_cotangent(ct, out, "the cotangent", fun)
            return pull(ct)

        return out, pullback_rr
    before = copies(args)
    out = g(*args)  # the arguments end as one plain call of f leaves them
    d = directional(fun, len(args), (j,), unit=False)
    # the arguments with a gradient (floats, float arrays, containers of them)
    every = tuple(n for n, a in enumerate(args)
                  if not isinstance(a, (bool, int, str, np.integer, np.bool_, type(None))) and
                  not (isinstance(a, np.ndarray) and a.dtype.kind not in "fc"))

    def pullback(ct: Any) -> tuple[Any, ...]:
        check_cotangent(ct, out, "the cotangent", fun)
        got = grad(d, every, mutation=mutation)(*copies(before), ct) if every else ()
        cts: list[Any] = [None] * len(args)
        for n, c in zip(every, got):
            cts[n] = c
        return tuple(cts)

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
            program = _second_order_program(fun, j, args, g._adgen_spec[2], mutation)
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


def _second_order_program(fun: Callable[..., Any], j: int, args: tuple[Any, ...],
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
    program = _second_order_program(fun, j, args, gmutation)
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
