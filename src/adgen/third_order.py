"""Third derivatives: the derivatives of adgen's second-derivative functions.

Every second derivative adgen takes is a first derivative of a plain function that adgen
generated, the directional derivative of ``f`` (``directional.directional``: ``d(x, v) =
jvp(f, (x,), (v,))[1]``, tangent code whose source adgen reads again):

- ``hvp(f)(x, v)`` is ``grad(d)(x, v)``, and column ``e`` of ``hessian(f)(x)`` is
  ``grad(d)(x, e)``; so is column ``e`` of ``jacfwd(grad(f))`` and ``jacrev(grad(f))`` (the
  same matrix: second derivatives are symmetric);
- column ``e`` of ``jacfwd(f)(x)`` (or ``jacrev``, ``jacobian``) is ``d(x, e)`` itself;
- ``grad(f, j)`` of a number ``x_j`` is ``d`` along 1.0, a plain function
  (:func:`plain`), so ``grad(grad(f))`` is ``grad`` of a plain function.

So the derivative of a second-derivative function is a second derivative of a plain
function, which the second-order machinery takes as it takes any: ``jvp(hessian(f))`` is the
jvp of ``grad(d)`` per column (reverse mode over the tangent code of ``d``: reverse over
forward over forward), ``vjp(hessian(f))`` the vjp of ``grad(d)`` per column (reverse over
reverse over forward where the generated code allows, ``second_order``), and
``grad(grad(grad(f)))`` is ``grad(grad(d1))`` with ``d1`` the plain first derivative. Each
level of tangent code is generated from the one below (forward mode over forward mode), so
what the second derivatives refuse, the third ones refuse at the same line.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from adgen.adjoints import add
from adgen.api import GradientFunction, grad, vjp
from adgen.arguments import describe, location_of, normalize_argnums
from adgen.errors import AdgenError, Location, NonDifferentiableError, UnsupportedError

# the builders whose result is a matrix of columns, one per element of an argument
_JACOBIANS = ("jacfwd", "jacrev", "jacobian")


def plain(fun: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
          ) -> Callable[..., Any]:
    """``fun`` at ``args`` as a function adgen compiles (keyword arguments bound): a gradient
    with respect to a number (``grad(f, j)``, ``x_j`` a number) is the directional derivative
    of ``f`` along 1.0 in ``x_j``, generated tangent code; any other function is itself.

    Raises:
        NonDifferentiableError: for a gradient with respect to an array (it is not a number:
            its derivatives are a Jacobian, ``jacfwd`` / ``jacrev`` of it).
        UnsupportedError: for a derivative made by adgen that is not a gradient (a Hessian of
            a Hessian: fourth derivatives) or a gradient of a structured kind.
    """
    from adgen.directional import directional
    from adgen.gradient_derivatives import check_derivable
    from adgen.jacobian_parts import copies

    if isinstance(fun, GradientFunction):
        check_derivable(fun)
        inner, argnums, mutation = fun._adgen_spec[:3]
        j = normalize_argnums(argnums, len(args))[0]
        x = args[j]
        number = isinstance(x, (float, int, np.floating)) and not isinstance(x, bool) or \
            isinstance(x, np.ndarray) and x.ndim == 0 and x.dtype.kind == "f"
        if not number:
            raise NonDifferentiableError(
                f"a derivative of {fun!r} inside another derivative needs it to return a "
                f"number, but argument {j} is {describe(x)}, so it returns an array",
                hint="take third derivatives of a function of an array as adgen.jacfwd("
                     "adgen.hessian(f)) or adgen.jvp(adgen.hessian(f), (x,), (v,))")
        if mutation == "strict":
            fun(*copies(args), **kwargs)  # refused (MutationError) where the gradient is
        return directional(plain(inner, args, kwargs), len(args), (j,), unit=True)
    if getattr(fun, "__adgen_transform__", False):
        raise UnsupportedError(
            f"{fun!r} inside a third derivative: adgen takes third derivatives of hessian, "
            "hvp, jacfwd / jacrev / jacobian of a function or of its gradient, and grad of "
            "grad of grad (no fourth derivatives)",
            hint="adgen.jacfwd(adgen.hessian(f)), adgen.jvp(adgen.hvp(f), (x, v), (w, u)), "
                 "adgen.grad(adgen.grad(adgen.grad(f)))")
    return functools.partial(fun, **kwargs) if kwargs else fun


def lowered(g: GradientFunction, args: tuple[Any, ...], kwargs: dict[str, Any]
            ) -> GradientFunction:
    """``grad(h, k)`` where ``h`` is a gradient function (a second derivative, as in
    ``grad(grad(f))``) as ``grad(plain(h), k)``: the gradient of a plain function."""
    _, argnums, mutation = g._adgen_spec[:3]
    return grad(plain(g._adgen_spec[0], args, kwargs), argnums, mutation=mutation)


def _columns_of(builder: str, fun: Any, argnums: Any, options: dict[str, Any], nargs: int,
                args: tuple[Any, ...] | None = None) -> list[tuple[int, Callable[..., Any]]]:
    """The functions ``L(*args, e)`` giving the columns of a Jacobian-like derivative function
    (``builder(fun, argnums, **options)``), one per argument it differentiates, with its
    number. Each ``L`` is a first derivative of a plain function (or that function itself,
    for the Jacobian of a plain function). ``args``: the arguments, where known (the
    Jacobian's jvp code is compiled for their objects' classes, as jvp's is: m.update(w) of
    a model given was refused as dict.update by jacfwd(jacfwd(f)) alone)."""
    from adgen.directional import directional
    from adgen.gradient_derivatives import check_derivable

    nums = normalize_argnums(argnums, nargs)
    if builder == "hessian":  # column e: hvp(f)(*args, e) = grad(d_n, n)(*args, e)
        return [(nums[0], grad(directional(fun, nargs, (nums[0],), unit=False), nums[0],
                               mutation=options.get("mutation", "save")))]
    if isinstance(fun, GradientFunction):  # jacfwd(grad(f, j), k): column e, grad(d_k, j)
        check_derivable(fun)
        inner, j_argnums, gmutation = fun._adgen_spec[:3]
        j = normalize_argnums(j_argnums, nargs)[0]
        return [(k, grad(directional(inner, nargs, (k,), unit=False), j, mutation=gmutation))
                for k in nums]
    # the Jacobian of a plain function: column e, d_k(*args, e) itself
    return [(k, directional(fun, nargs, (k,), unit=False, args=args)) for k in nums]


def _refuse_other(d: Any) -> None:
    """Refuses a derivative of what the columns do not cover (a derivative of a third
    derivative, a builder of another kind)."""
    builder, fun = d._adgen_spec[:2]
    if builder not in ("hvp", "hessian", *_JACOBIANS):
        raise UnsupportedError(f"a derivative of {d!r} is not supported")
    inner = fun._adgen_spec[0] if isinstance(fun, GradientFunction) else fun
    if getattr(inner, "__adgen_transform__", False):
        raise UnsupportedError(
            f"a derivative of {d!r}: adgen takes up to third derivatives (a derivative of a "
            "Hessian, of hvp, of a Jacobian of a gradient, of grad of grad)",
            hint="adgen.jacfwd(adgen.hessian(f)) is the third derivative of f")


def _bound(fun: Callable[..., Any], kwargs: dict[str, Any]) -> Callable[..., Any]:
    """The function a derivative function differentiates, with keyword arguments bound (they
    get no derivative, as in hvp); for a Jacobian of a gradient, the gradient's function."""
    if not kwargs:
        return fun
    if isinstance(fun, GradientFunction):
        inner, argnums, mutation, has_aux, with_value = fun._adgen_spec
        return GradientFunction(fun.func, functools.partial(inner, **kwargs), argnums,
                                mutation, has_aux, with_value)
    return functools.partial(fun, **kwargs)


def _hvp_gradient(d: Any, nargs: int, kwargs: dict[str, Any]) -> GradientFunction:
    """``hvp(f, n)`` with ``nargs`` arguments before the direction as ``grad(d_n, n)``."""
    from adgen.directional import directional

    _, fun, argnums, options = d._adgen_spec
    n = normalize_argnums(argnums, nargs)[0]
    return grad(directional(_bound(fun, kwargs), nargs, (n,), unit=False), n,
                mutation=options.get("mutation", "save"))


def _at_users_function(fun: Any, err: AdgenError) -> AdgenError:
    """``err`` located at the def of the user's ``fun`` where it names adgen's generated
    code (a directional derivative's wrapper has no line of the user's to point at)."""
    import linecache

    where = err.location
    if where is None or not where.file.startswith("<adgen "):
        return err
    inner = fun._adgen_spec[0] if isinstance(fun, GradientFunction) else fun
    at = location_of(inner)
    if at is not None:
        text = linecache.getline(at.file, at.line)
        err.location = Location(at.file, at.line, len(text) - len(text.lstrip()), text)
        err.message = (f"{err.message} (in a third derivative of "
                       f"{getattr(inner, '__qualname__', 'the function')})")
        err.args = (err.format(),)
    return err


def jvp_of_derivative(d: Any, primals: tuple[Any, ...], tangents: tuple[Any, ...],
                      kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """:func:`_jvp_of_derivative`, whose errors name the user's function, not the code
    adgen generated for it."""
    try:
        return _jvp_of_derivative(d, primals, tangents, kwargs)
    except AdgenError as err:
        raise _at_users_function(d._adgen_spec[1], err) from None


def _jvp_of_derivative(d: Any, primals: tuple[Any, ...], tangents: tuple[Any, ...],
                       kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """``jvp`` of a function :func:`adgen.hvp`, :func:`adgen.hessian`, :func:`adgen.jacfwd`,
    :func:`adgen.jacrev` or :func:`adgen.jacobian` returned: its value and its derivative
    along ``tangents`` (third derivatives for hvp, hessian and Jacobians of gradients; second
    derivatives for a Jacobian of a plain function). Each column is the jvp of a first
    derivative of a plain function (module docstring); the arguments end as one plain call
    of the function leaves them."""
    from adgen.higher_order import jvp as jvp_
    from adgen.jacobian_parts import Runs, basis, columns, refuse_aliased_arguments

    _refuse_other(d)
    builder, fun, argnums, options = d._adgen_spec
    if builder == "hvp":  # hvp(f, n)(*args, v) is grad(d_n, n)(*args, v)
        nargs = len(primals) - 1
        refuse_aliased_arguments(primals[:nargs], normalize_argnums(argnums, nargs)[0], fun)
        return jvp_(_hvp_gradient(d, nargs, kwargs), primals, tangents)
    runs = Runs(primals)
    outs, dots = [], []
    for k, column in _columns_of(builder, _bound(fun, kwargs), argnums, options,
                                 len(primals), tuple(primals)):
        refuse_aliased_arguments(primals, k, fun)
        cols, col_dots = [], []
        for e in basis(primals[k]):
            out, dot = jvp_(column, (*runs.next(), e), (*tangents, None))
            cols.append(out)
            col_dots.append(dot)
        outs.append(columns(cols, cols[0], primals[k]))
        dots.append(columns(col_dots, col_dots[0], primals[k]))
    if isinstance(argnums, int) or builder == "hessian":
        return outs[0], dots[0]
    return tuple(outs), tuple(dots)


def vjp_of_derivative(d: Any, args: tuple[Any, ...], mutation: str,
                      kwargs: dict[str, Any]) -> tuple[Any, Callable[[Any], tuple[Any, ...]]]:
    """:func:`_vjp_of_derivative`, whose errors name the user's function, not the code
    adgen generated for it."""
    try:
        return _vjp_of_derivative(d, args, mutation, kwargs)
    except AdgenError as err:
        raise _at_users_function(d._adgen_spec[1], err) from None


def _vjp_of_derivative(d: Any, args: tuple[Any, ...], mutation: str,
                       kwargs: dict[str, Any]) -> tuple[Any, Callable[[Any], tuple[Any, ...]]]:
    """``vjp`` of a function :func:`adgen.hvp`, :func:`adgen.hessian` or a Jacobian
    returned (so ``jacrev(hessian(f))``): its value, and a pullback taking a cotangent of it
    to one cotangent per argument: the sum over the columns of each column's pullback (the
    vjp of a first derivative of a plain function: reverse over reverse over forward where
    the generated code allows, else reverse over forward over forward)."""
    from adgen.arguments import check_cotangent
    from adgen.jacobian_parts import basis, copies, refuse_aliased_arguments

    _refuse_other(d)
    builder, fun, argnums, options = d._adgen_spec
    if builder == "hvp":
        nargs = len(args) - 1
        refuse_aliased_arguments(args[:nargs], normalize_argnums(argnums, nargs)[0], fun)
        return vjp(_hvp_gradient(d, nargs, kwargs), *args, mutation=mutation)
    before = copies(args)
    out = d(*args, **kwargs)  # the arguments end as one plain call leaves them
    blocks = []  # per differentiated argument: its number, one pullback per column
    for k, column in _columns_of(builder, _bound(fun, kwargs), argnums, options, len(args)):
        refuse_aliased_arguments(args, k, fun)
        blocks.append((k, [vjp(column, *copies(before), e, mutation=mutation)[1]
                           for e in basis(args[k])]))
    many = not (isinstance(argnums, int) or builder == "hessian")

    def pullback(ct: Any) -> tuple[Any, ...]:
        check_cotangent(ct, out, "the cotangent", fun)
        total: list[Any] = [None] * len(args)
        for (k, pulls), c in zip(blocks, ct if many else (ct,)):
            c = np.asarray(c, dtype=float)
            lead = c.shape[:c.ndim - np.ndim(args[k])]
            flat = c.reshape(lead + (-1,))
            for i, pull in enumerate(pulls):
                if not np.any(flat[..., i]):
                    continue  # a pullback is linear: a zero cotangent gives zeros (jacrev's
                    # basis cotangents reach one column each: n^2 calls, not n^3)
                got = pull(flat[..., i] if lead else float(flat[..., i]))
                for m in range(len(args)):
                    total[m] = add(total[m], got[m])
        for k, _ in blocks:  # a zero cotangent: zeros, as any pullback gives
            if total[k] is None:
                total[k] = np.zeros(np.shape(args[k])) if np.ndim(args[k]) else 0.0
        return tuple(total)

    return out, pullback
