"""Forward mode and higher order: jvp, jacfwd, jacrev, jacobian, hvp, hessian (jvp of a
gradient function goes to :mod:`adgen.gradient_derivatives`, which has its vjp and grad too).

Forward mode runs the tangent code (``pipeline.compile_tangent``); second derivatives are
forward over reverse (hvp, hessian, jacfwd of grad) or reverse over reverse where the
generated code allows (``second_order.py``: jacrev of grad, vjp of grad, grad of grad).
The directional derivative reverse mode differentiates for those is :mod:`adgen.directional`'s;
the pieces Jacobians and Hessians are assembled from, :mod:`adgen.jacobian_parts`'s; the
derivatives of a gradient function, :mod:`adgen.gradient_derivatives`'s.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adgen import runtime
from adgen.aliased_globals import refuse_aliased_tangents
from adgen.api import GradientFunction, grad, vjp, vjp_of_arguments
from adgen.arguments import (
    check_differentiable,
    describe,
    has_complex,
    has_float,
    location_of,
    normalize_argnums,
    refuse_complex_jacobian,
    refuse_foreign_array,
    refuse_subclasses,
)
from adgen.directional import directional, tangent_compiled
from adgen.errors import ArgnumsError, MutationError, NonDifferentiableError
from adgen.gradient_derivatives import jvp_of_gradient
from adgen.jacobian_parts import (
    Runs,
    basis,
    columns,
    copies,
    refuse_aliased_arguments,
    refuse_structured,
    refuse_structured_output,
)
from adgen.jacobian_trees import (
    forward_jacobian,
    is_tree,
    leaves,
    reverse_jacobians,
    structured_output,
    tree_basis,
    tree_hessian,
)
from adgen.repeated_runs import refuse_changed_runs


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
    fast = _numbers_call(fun, primals, tangents, kwargs)
    if fast is not None:
        return fast
    if len(primals) != len(tangents):
        raise ArgnumsError(f"jvp got {len(primals)} primal(s) and {len(tangents)} tangent(s); "
                           "give one tangent per primal (None for none)")
    for n, p in enumerate(primals):
        refuse_foreign_array(p, n)  # a torch tensor, a JAX array (crashed in given_tangent)
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
        return jvp_of_gradient(fun, primals, tangents, kwargs)
    if isinstance(fun, DerivativeFunction):  # jvp of hessian(f), hvp(f), jacfwd(grad(f))...
        _refuse_aux_derivative(fun)
        from adgen.third_order import jvp_of_derivative

        return jvp_of_derivative(fun, primals, tangents, kwargs)
    if isinstance(fun, functools.partial) and not getattr(fun, "__adgen_transform__", False):
        # its arguments get no tangent (a hessian(...) or jacrev(...) is refused by name)
        return jvp(fun.func, (*fun.args, *primals), (None,) * len(fun.args) + tangents,
                   **{**fun.keywords, **kwargs})
    from adgen.rules import registry
    from adgen.rules.jvp_evaluation import eval_jvp

    rule = registry.lookup(getattr(fun, "__adgen_primal__", fun))
    if rule is not None and not rule.is_rrule:  # a NumPy function itself: its rule's jvp
        if isinstance(rule.primal, np.ufunc):
            # a list operand as the array the ufunc takes (its rule's 2.0 * x * d of a list
            # raised TypeError), its tangent too
            original = primals
            primals = tuple(np.asarray(x) if isinstance(x, (list, tuple)) else x
                            for x in primals)
            # (an int item's tangent is zero, as in a list given to a function)
            tangents = tuple(np.asarray(runtime.given_tangent(t, x))
                             if isinstance(x, (list, tuple)) and t is not None else t
                             for t, x in zip(tangents, original))
        bound = rule.bind(list(range(len(primals))), {})
        # (a number's or an array's tangent of its float type, as the tangent code gets it)
        numbers = tuple(runtime.given_tangent(t, x) if t is not None and
                        isinstance(x, (float, np.floating, np.ndarray)) else t
                        for t, x in zip(tangents, primals))
        given = {p: (tuple(numbers[i] for i in k) if isinstance(k, tuple) else numbers[k])
                 for p, k in bound.items() if p in rule.diff and not
                 isinstance(k, registry.Default)}
        given = {p: t for p, t in given.items() if t is not None}
        out = rule.primal(*primals, **kwargs)
        # (eigh's tangent as an EighResult, as in the tangent code)
        return out, runtime.named_like(eval_jvp(rule, primals, kwargs, given), out)
    # the primals given no tangent (None, or an integer) are constants: no tangent flows from
    # them (JAX's symbolic zeros), so sqrt(r) at 0 of an r without one adds no 0 * inf = nan
    given = tuple(k for k, (t, x) in enumerate(zip(tangents, primals))
                  if t is not None and not _integral(x))
    compiled, receiver = tangent_compiled(
        fun, None if len(given) == len(primals) else given, args=primals, keywords=kwargs)
    args = receiver + primals
    _refuse_aliased_tangents(primals, tangents, fun)
    # an argument that is a global the function reads, written in place: refused (as grad)
    refuse_aliased_tangents(compiled, fun, args, (None,) * len(receiver) + tangents,
                            len(receiver))
    # new buffers laid out like the primals: the tangent code writes them where f writes; an
    # array passed twice gets one buffer, so a write through one name reaches the other's
    named: dict[str, Any] = {}
    first: dict[int, str] = {}
    for t, v, x in zip(compiled.tangent_params[len(receiver):], tangents, primals):
        if isinstance(x, np.ndarray) and id(x) in first:
            named[t] = named[first[id(x)]]
            continue
        named[t] = runtime.given_tangent(v, x)
        if type(x) is float and v is not None:
            # a Python float's tangent a Python float: about 3x faster arithmetic than
            # np.float64's, and IEEE's where Python's raises (transforms/ieee_tangents.py)
            named[t] = float(named[t])
        if isinstance(x, np.ndarray):
            first[id(x)] = t
    key = _numbers_key(fun, primals, tangents, kwargs)
    if key is not None and not receiver:
        from adgen.rules.registry import generation

        while len(_NUMBERS) >= 64:  # (each entry holds its function)
            _NUMBERS.pop(next(iter(_NUMBERS)), None)
        _NUMBERS[key] = (fun, compiled, generation())
    return _run(compiled, args, named, kwargs)


def _run(compiled: Any, args: tuple[Any, ...], named: dict[str, Any],
         kwargs: dict[str, Any]) -> Any:
    try:
        return compiled.jvp(*args, **named, **kwargs)
    except Exception as exc:
        from adgen.forward_errors import annotate

        annotate(exc, None)  # the user's line, from the jvp code's "# line N:" comments
        raise


# jvp of a plain function of Python floats and ints (a scalar loop), decided once per
# function, argument types, tangents given and keyword names: its compiled jvp code, checked
# again only as compile_tangent's cache checks it (the registry's generation, the guards).
# Everything else jvp checks depends on these types only (no array, container or object
# to alias, subclass or refuse): about 30 us a call less (bench/experiments/
# forward_scalar_loop.py)
_NUMBERS: dict[tuple[Any, ...], tuple[Any, Any, int]] = {}


def _numbers_key(fun: Any, primals: tuple[Any, ...], tangents: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> tuple[Any, ...] | None:
    """The key of a call :func:`_numbers_call` may take, or None: a plain function, Python
    floats and ints, a number or None as each float's tangent and None as each int's."""
    if type(fun) is not types.FunctionType or len(primals) != len(tangents) or \
            hasattr(fun, "__adgen_primal__"):
        return None
    for x, t in zip(primals, tangents):
        if not (type(x) is float and (t is None or type(t) is float or type(t) is int) or
                type(x) is int and t is None):
            return None
    return (id(fun), tuple(type(x) for x in primals), tuple(t is None for t in tangents),
            tuple(kwargs))


def _numbers_call(fun: Any, primals: tuple[Any, ...], tangents: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> Any:
    """jvp's result by the decision kept for such a call (:data:`_NUMBERS`), or None."""
    if not _NUMBERS:
        return None
    key = _numbers_key(fun, primals, tangents, kwargs)
    hit = _NUMBERS.get(key) if key is not None else None
    if hit is None or hit[0] is not fun:
        return None
    from adgen.rules.registry import generation
    from adgen.transforms.bindings import failed

    compiled = hit[1]
    if hit[2] != generation() or compiled.guards and failed(compiled.guards) is not None:
        del _NUMBERS[key]
        return None
    named = {p: float(t) for p, t in zip(compiled.tangent_params, tangents) if t is not None}
    return _run(compiled, primals, named, kwargs)


def _integral(x: Any) -> bool:
    """An integer or a bool (a number or an array): it carries no derivative."""
    return isinstance(x, (bool, int, np.integer, np.bool_)) or (
        isinstance(x, np.ndarray) and x.dtype.kind not in "fc")


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


def jacfwd(fun: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False,
           **options: Any) -> Callable[..., Any]:
    """The Jacobian by forward mode: one jvp per element of the differentiated argument(s).

    As ``jax.jacfwd``: the Jacobian has the output's shape followed by the argument's; a tuple
    ``argnums`` gives a tuple. A function that writes its arguments in place sees the same
    values in every jvp, and the arguments end as one plain call leaves them (:class:`Runs`).
    With ``has_aux``, ``fun`` returns a pair ``(out, aux)``: the result is ``(jacobian,
    aux)``, the Jacobian of ``out`` (as JAX's). With respect to a dict, list or tuple the
    Jacobian has its structure (:mod:`adgen.jacobian_trees`): ``jac["W"]``, the output's shape
    followed by W's; of a function returning a dict, one per item (``jacfwd(grad(loss))
    (params)["W"]["b"]``, JAX's Hessian).
    """
    def jacobian_fwd(*args: Any, **kwargs: Any) -> Any:
        nums = normalize_argnums(argnums, len(args))
        for n in nums:
            check_differentiable(args[n], n)  # an int argument: refused, as grad does
        out = aux = None
        result = []
        runs = Runs(args)
        for n in nums:
            # a dict, list or tuple: the Jacobian has its structure (one column per element
            # of its float leaves)
            pairs = tree_basis(args[n]) if is_tree(args[n]) else \
                [(0, e) for e in basis(args[n])]
            cols, outs = [], []
            for k, e in pairs:
                tangents = [None] * len(args)
                tangents[n] = e
                got = jvp(fun, runs.next(), tangents, has_aux=has_aux, **kwargs)
                out, d = got[:2]
                aux = got[2] if has_aux else None
                if not structured_output(out):  # a dict output: a Jacobian per item
                    refuse_structured_output(out, "jacfwd")
                cols.append((k, d))
                outs.append(out)
            # (a counter the function's runs change: each column from another state)
            refuse_changed_runs(outs, fun, "jacfwd", location_of(fun))
            result.append(forward_jacobian(out, args[n], cols))
        jac = result[0] if isinstance(argnums, int) else tuple(result)
        return (jac, aux) if has_aux else jac

    return DerivativeFunction(jacobian_fwd, "jacfwd", fun, argnums,
                              {**options, "has_aux": True} if has_aux else options)


def jacrev(fun: Callable[..., Any], argnums: int | Sequence[int] = 0, *,
           mutation: str = "save", has_aux: bool = False) -> Callable[..., Any]:
    """The Jacobian by reverse mode: one forward pass, its pullback called once per element
    of the output (pullbacks are reusable). As ``jax.jacrev``; shapes as :func:`jacfwd`, and
    ``has_aux`` as there."""
    def jacobian_rev(*args: Any, **kwargs: Any) -> Any:
        nums = normalize_argnums(argnums, len(args))
        for n in nums:
            if not is_tree(args[n]):
                refuse_structured(args[n])  # an object (a raw TypeError of float())
            check_differentiable(args[n], n)  # an int argument: refused, as grad does
        refuse_complex_jacobian(tuple(args[n] for n in nums), "jacrev")
        if has_aux:
            out, pullback, *aux = vjp(fun, *args, mutation=mutation, has_aux=True, **kwargs)
        else:  # (the other arguments' cotangents are not computed)
            out, pullback = vjp_of_arguments(fun, tuple(args), nums, mutation, **kwargs)
            aux = []
        if not structured_output(out):  # (a dict, a gradient's: one Jacobian per item)
            refuse_structured_output(out, "jacrev", stackable=False)
        result = reverse_jacobians(out, pullback, args, nums)
        jac = result[0] if isinstance(argnums, int) else tuple(result)
        return (jac, aux[0]) if has_aux else jac

    return DerivativeFunction(jacobian_rev, "jacrev", fun, argnums,
                              _options(mutation, has_aux))


def jacobian(fun: Callable[..., Any], argnums: int | Sequence[int] = 0, *,
             mutation: str = "save", has_aux: bool = False) -> Callable[..., Any]:
    """The Jacobian: reverse mode (:func:`jacrev`), or forward mode (:func:`jacfwd`) when the
    differentiated arguments have fewer elements than the output."""
    def jacobian_fun(*args: Any, **kwargs: Any) -> Any:
        nums = normalize_argnums(argnums, len(args))
        for n in nums:
            if not is_tree(args[n]):
                refuse_structured(args[n])
            check_differentiable(args[n], n)
        before = copies(args)
        out = fun(*before, **kwargs)
        if has_aux:
            out = _main_output(out, fun)
        if not structured_output(out):  # (a dict: one Jacobian per item, by jacfwd)
            refuse_structured_output(out, "jacobian")
        n_in = sum(int(np.size(leaf)) for n in nums for leaf in leaves(args[n])
                   if has_float(leaf))
        if isinstance(out, (list, tuple, dict)) or n_in < int(np.size(out)):
            return jacfwd(fun, argnums, has_aux=has_aux)(*args, **kwargs)
        return jacrev(fun, argnums, mutation=mutation, has_aux=has_aux)(*args, **kwargs)

    return DerivativeFunction(jacobian_fun, "jacobian", fun, argnums,
                              _options(mutation, has_aux))


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
    return DerivativeFunction(_hessian_vector(fun, argnums, mutation, False), "hvp", fun,
                              argnums, {"mutation": mutation})


def _hessian_vector(fun: Callable[..., Any], argnums: int, mutation: str, aux: bool,
                    rows: tuple[int, ...] | None = None) -> Callable[..., Any]:
    """:func:`hvp`'s function; with ``aux``, of ``out`` where ``fun`` returns ``(out, aux)``
    (hessian's ``has_aux``). ``rows``: the arguments whose gradient is differentiated along
    the direction of argument ``argnums`` (a tuple of products, the Hessian's blocks in
    those rows); ``argnums``'s own by default."""
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
        d = directional(f, len(args), (n,), unit=False, aux=aux, args=tuple(args))
        try:
            return grad(d, n if rows is None else rows, mutation=mutation)(*args, v)
        except MutationError:
            # the refusal names the generated tangent code (x_1_dot *= y, its lines): the
            # gradient's own refusal names the user's code
            grad(fun, n, mutation=mutation, has_aux=aux)(*args, **kwargs)
            raise

    return hessian_vector


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
            mutation: str = "save", has_aux: bool = False) -> Callable[..., Any]:
    """The Hessian of a scalar function with respect to one argument (x's shape twice), one
    Hessian-vector product (:func:`hvp`) per element, each from the same values; the arguments
    end as one plain call leaves them (:class:`Runs`). A tuple ``argnums`` gives the blocks
    as JAX's: ``H[j][k]``, argument j's shape followed by argument k's; so does one dict, list
    or tuple argument, in its structure twice (``H["W"]["b"]``). With ``has_aux`` (as
    ``jax.hessian``),
    ``fun`` returns a pair ``(out, aux)``: the result is ``(hessian of out, aux)``, ``aux``
    from the first run."""
    if isinstance(argnums, bool) or not isinstance(argnums, (int, tuple, list)):
        raise ArgnumsError(f"hessian takes an int or a tuple of ints as argnums, not "
                           f"{argnums!r}")

    def hessian_fun(*args: Any, **kwargs: Any) -> Any:
        nums = normalize_argnums(argnums, len(args))
        for n in nums:
            refuse_aliased_arguments(tuple(args), n, fun)  # (copies of views share nothing)
        runs = Runs(args)
        result, aux = _hessian_columns(runs, *args, **kwargs)
        # two plain runs after the columns (adgen's refusals first): values that differ are
        # a function reading state its runs change, each column from another state
        first = _plain_value(fun, runs, nums, has_aux, kwargs)
        if first is not None:
            refuse_changed_runs([first, _plain_value(fun, runs, nums, has_aux, kwargs)], fun,
                                "hessian", location_of(fun))
        return (result, aux) if has_aux else result

    def _hessian_columns(runs: Runs, *args: Any, **kwargs: Any) -> Any:
        nums = normalize_argnums(argnums, len(args))
        aux = None
        if has_aux:  # aux of one plain run (the first); the Hessian's start from the same values
            pair = fun(*runs.next(), **kwargs)
            _main_output(pair, fun)
            aux = pair[1]
        if isinstance(argnums, int) and is_tree(args[nums[0]]):
            result = tree_hessian(_hessian_vector(fun, nums[0], mutation, has_aux),
                                   args[nums[0]], runs, kwargs)
            return result, aux
        if not isinstance(argnums, int) and any(is_tree(args[n]) for n in nums):
            raise NonDifferentiableError(
                "hessian with a tuple of argnums takes numbers and arrays; a dict, list or "
                "tuple argument is taken alone (argnums=k): its Hessian has its structure "
                "twice", location_of(fun),
                hint="put the arguments into one dict (hessian(lambda p: f(p['a'], p['b']))"
                     "({'a': a, 'b': b})), or differentiate with respect to each alone")
        if isinstance(argnums, int):
            h = _hessian_vector(fun, nums[0], mutation, has_aux)
            cols = [h(*runs.next(), e, **kwargs) for e in basis(args[nums[0]])]
            return columns(cols, args[nums[0]], args[nums[0]]), aux
        # a tuple (as jax.hessian): blocks[j][k], x_j's shape then x_k's; column e of the
        # blocks in column k from one gradient, for every j, of the derivative along e
        blocks: list[list[Any]] = [[None] * len(nums) for _ in nums]
        for c, k in enumerate(nums):
            h = _hessian_vector(fun, k, mutation, has_aux, tuple(nums))
            cols = [h(*runs.next(), e, **kwargs) for e in basis(args[k])]
            for r, j in enumerate(nums):
                blocks[r][c] = columns([col[r] for col in cols], args[j], args[k]) if cols \
                    else np.zeros(np.shape(args[j]) + np.shape(args[k]))
        return tuple(tuple(row) for row in blocks), aux

    return DerivativeFunction(hessian_fun, "hessian", fun, argnums,
                              _options(mutation, has_aux))


def _plain_value(fun: Callable[..., Any], runs: Runs, nums: list[int], has_aux: bool,
                 kwargs: dict[str, Any]) -> Any:
    """The value of a plain run of ``fun`` on copies of the arguments' values from before the
    Hessian's runs, two of which hessian compares after its columns
    (:mod:`adgen.repeated_runs`); None where there is one column (nothing to compare)."""
    if sum(int(np.size(leaf)) for n in nums for leaf in leaves(runs.before[n])) < 2:
        return None
    try:
        out = fun(*copies(runs.before), **kwargs)
    except Exception:
        # a function Python cannot run as written on these values, which adgen
        # differentiates as the code it wraps (a functools.cache'd callee given an array:
        # "unhashable type"): no plain value to compare (its columns ran as compiled)
        return None
    return _main_output(out, fun) if has_aux else out


def _options(mutation: str, has_aux: bool) -> dict[str, Any]:
    """A derivative function's options (kept for pickling and its repr): has_aux only when
    given, as before it was taken."""
    return {"mutation": mutation, "has_aux": True} if has_aux else {"mutation": mutation}


def _main_output(pair: Any, fun: Any) -> Any:
    """``out`` of the pair ``(out, aux)`` a function differentiated with ``has_aux`` returns."""
    if not (isinstance(pair, tuple) and len(pair) == 2):
        raise NonDifferentiableError(
            "has_aux=True needs the function to return a pair (out, aux), not "
            f"{describe(pair)}", location_of(fun))
    return pair[0]


def _refuse_aux_derivative(d: Any) -> None:
    """Derivatives of a derivative taken with ``has_aux`` (its aux has no derivative): refused
    by name."""
    options = d._adgen_spec[3]
    if isinstance(options, dict) and options.get("has_aux"):
        raise ArgnumsError(
            f"{d!r} was taken with has_aux=True and returns (derivative, aux): adgen does not "
            "differentiate it again; take the derivative of a function returning the main "
            "output only (lambda x: f(x)[0])")
