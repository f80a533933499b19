"""The public API: grad, value_and_grad, vjp, source, explain, differentiable, rrule.

Names and behaviour follow JAX (``argnums``, ``value_and_grad``, ``vjp``) where JAX has them.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import numpy as np

from adgen import runtime
from adgen.aliased_globals import refuse_aliased_globals
from adgen.arguments import (
    check_cotangent,
    check_policy,
    describe,
    has_complex,
    location_of,
    primal_function,
    refuse_foreign_array,
    refuse_subclasses,
    split_receiver,
)
from adgen.compiled_calls import (
    compile_fun,
    gradient_compilation,
    refuse_nondiff_reached,
    run_forward,
)
from adgen.errors import (
    MutationError,
    NonDifferentiableError,
)
from adgen.explanation import Explanation, as_measured, merge_sites
from adgen.gradient_function import GradientFunction, gradient_function, with_checkpoint
from adgen.held_arrays import argument_snapshots, free_snapshots, held_snapshots
from adgen.pullback_runs import as_received, cotangents_of, may_be_complex, run_pullback
from adgen.transforms.analyses.kinds import signature
from adgen.transforms.keyword_shims import for_keywords


def vjp(fun: Callable[..., Any], *args: Any, mutation: str = "save",
        backend: str = "default", has_aux: bool = False, **kwargs: Any) -> Any:
    """Runs ``fun(*args)`` and returns its output with a pullback.

    Args:
        fun: a Python function whose source adgen can read (or that has a rule).
        *args: the positional arguments; cotangents are returned for each of them.
        mutation: "save" (default) keeps what the backward pass needs before it is overwritten;
            "strict" raises MutationError instead.
        backend: "default", "numba" or "auto", as for :func:`grad`.
        has_aux: as in ``jax.vjp``: ``fun`` returns a pair ``(out, aux)``; the pullback takes
            a cotangent of ``out`` only, and ``aux`` is returned third, without a gradient.
        **kwargs: keyword arguments passed to ``fun``; they get no cotangent.

    Returns:
        ``(out, pullback)``. ``pullback(out_bar)`` returns a tuple with one cotangent per
        positional argument, each of the argument's structure (None for arguments without a
        floating-point value). It may be called any number of times. With ``has_aux``:
        ``(out, pullback, aux)``.

    Raises:
        AdgenError: for code adgen cannot differentiate, naming the file and line.
    """
    if has_aux:
        both, pull_both = vjp(fun, *args, mutation=mutation, backend=backend, **kwargs)
        if not (isinstance(both, tuple) and len(both) == 2):
            raise NonDifferentiableError(
                "has_aux=True needs the function to return a pair (out, aux), not "
                f"{describe(both)}", location_of(fun))
        aux_zero = runtime.zeros_like(both[1])  # aux takes no part in the gradient
        return both[0], lambda out_bar: pull_both((out_bar, aux_zero)), both[1]
    if isinstance(fun, GradientFunction):  # vjp of grad(f, j): Hessian-vector products
        from adgen.gradient_derivatives import vjp_of_gradient

        return vjp_of_gradient(fun, args, mutation, kwargs)
    if getattr(fun, "__adgen_transform__", False):
        from adgen.higher_order import DerivativeFunction

        if isinstance(fun, DerivativeFunction):  # of hessian(f), ...: third derivatives
            from adgen.third_order import vjp_of_derivative

            return vjp_of_derivative(fun, args, mutation, kwargs)
    if isinstance(fun, functools.partial) and not getattr(fun, "__adgen_transform__", False):
        # its arguments get no cotangent (a jacrev(...) or hessian(...) is refused by name)
        out, pull = vjp(fun.func, *fun.args, *args, mutation=mutation, backend=backend,
                        **{**fun.keywords, **kwargs})
        return out, lambda out_bar: pull(out_bar)[len(fun.args):]
    target, receiver = split_receiver(getattr(fun, "__adgen_primal__", fun))
    if receiver:  # a method or callable object: no cotangent for the receiver
        out, pull = vjp(target, *receiver, *args, mutation=mutation, backend=backend,
                        **kwargs)
        return out, lambda out_bar: pull(out_bar)[len(receiver):]
    shim = for_keywords(target, kwargs)
    if shim is not target:  # def f(x, **kw): compiled for the keywords given (constants)
        return vjp(shim, *args, mutation=mutation, backend=backend, **kwargs)
    return _vjp_compiled(fun, args, kwargs, mutation, backend)


def vjp_of_arguments(fun: Callable[..., Any], args: tuple[Any, ...], nums: tuple[int, ...],
                     mutation: str = "save", **kwargs: Any) -> Any:
    """:func:`vjp` whose pullback computes the cotangents of the arguments at ``nums`` only
    (None for the others; jacrev's): no work the caller did not ask for, and none of its
    warnings (``1 / (2 sqrt(y))`` of an argument ``y`` not differentiated, at 0). A callable
    other than a plain function (a gradient function, a method, a partial, ``**kwargs``):
    :func:`vjp`'s, every argument's."""
    target, receiver = split_receiver(getattr(fun, "__adgen_primal__", fun))
    if isinstance(fun, (GradientFunction, functools.partial)) or receiver or \
            getattr(fun, "__adgen_transform__", False) or \
            for_keywords(target, kwargs) is not target:
        return vjp(fun, *args, mutation=mutation, **kwargs)
    return _vjp_compiled(fun, args, kwargs, mutation, "default", tuple(sorted(set(nums))))


def _vjp_compiled(fun: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                  mutation: str, backend: str, wrt: tuple[int, ...] | None = None) -> Any:
    """:func:`vjp` of a plain function: compiled for ``wrt`` (None: every argument)."""
    for n, a in enumerate(args):
        refuse_foreign_array(a, n)  # a torch tensor, a JAX array (was a TypeError in f)
    refuse_subclasses(args, kwargs)
    compiled = compile_fun(fun, mutation, wrt=wrt, sig=signature(args), backend=backend)
    refuse_nondiff_reached(compiled)
    # an argument that is (or views) a global array the function reads, written in place
    refuse_aliased_globals(compiled, fun, args)
    received = as_received(args) if compiled.mutates_containers else args
    complex_values = may_be_complex(compiled) or has_complex(args)
    out, saved = run_forward(compiled, args, kwargs)
    # the pullback reads the arguments (and the output) where they are, not copies: a change
    # made to them in place before it runs would give a wrong gradient, so it is detected
    snapshots = argument_snapshots(fun, args, out, compiled.reads_params) + free_snapshots(compiled)
    # and the arrays of global and closure objects it saved (cfg.A, a view of one)
    snapshots += held_snapshots(compiled, saved, {id(now) for _, now, _ in snapshots})

    def pullback(out_bar: Any) -> tuple[Any, ...]:
        for what, now, then in snapshots:
            if now.shape != then.shape or not np.array_equal(
                    now, then, equal_nan=now.dtype.kind in "fc"):
                raise MutationError(
                    f"{what} was changed in place after adgen.vjp returned, and the pullback "
                    "reads its values: the cotangents would be wrong",
                    location_of(fun),
                    hint="call the pullback before changing it, or pass a copy to adgen.vjp")
        check_cotangent(out_bar, out, "the cotangent", fun)
        return cotangents_of(run_pullback(compiled.pullback, saved, out_bar, complex_values),
                           received)

    return out, pullback


def value_and_grad(fun: Callable[..., Any], argnums: int | Sequence[int] = 0, *,
                   mutation: str = "save", has_aux: bool = False,
                   backend: str = "default", checkpoint: int | bool | None = None
                   ) -> Callable[..., Any]:
    """Like :func:`grad`, but the returned function gives ``(value, gradient)``.

    With ``has_aux=True`` ``fun`` returns ``(value, aux)`` and the result is
    ``((value, aux), gradient)``, as in JAX.
    """
    if isinstance(fun, GradientFunction):  # a derivative of a derivative: reverse over forward
        from adgen.gradient_derivatives import grad_of_grad
        return GradientFunction(grad_of_grad(value_and_grad, fun, argnums, mutation, has_aux,
                                              True), fun, argnums, mutation, has_aux, True)
    return with_checkpoint(GradientFunction(
        gradient_function(fun, argnums, mutation, has_aux, with_value=True, backend=backend,
                           checkpoint=checkpoint),
        fun, argnums, mutation, has_aux, True), checkpoint)


def grad(fun: Callable[..., Any], argnums: int | Sequence[int] = 0, *,
         mutation: str = "save", has_aux: bool = False,
         backend: str = "default", checkpoint: int | bool | None = None
         ) -> Callable[..., Any]:
    """The gradient of a scalar-valued function, as a function.

    Args:
        fun: a Python function whose source adgen can read.
        argnums: which positional argument(s) to differentiate; an int gives one gradient, a
            tuple gives a tuple.
        mutation: "save" (default) or "strict"; see the mutation guide.
        has_aux: ``fun`` returns ``(value, aux)``; the result is ``(gradient, aux)``.
        backend: "default", "numba" (the generated code compiled in numba's nopython mode;
            see docs/numba.md) or "auto" (numba where it can, else the default, with a
            ``adgen.backends.NumbaFallbackWarning``).
        checkpoint: for a long loop at the top level of ``fun`` (``for t in range(...)``): the
            number of iterations per segment (or True: about the square root of the loop's
            length). The forward pass keeps the state at the start of each segment instead of
            every iteration's tape, and the backward pass recomputes one segment's tape at a
            time (docs/forward-and-higher-order.md, "Checkpointing").

    Returns:
        A function with ``fun``'s arguments returning the gradient(s), each of the structure of
        its argument. Calling it has the same effects on the arguments as calling ``fun``.

    Raises:
        NonDifferentiableError: for a non-scalar output or an integer argument.
        MutationError: under "strict", when an in-place write overwrites a needed value.
    """
    if isinstance(fun, GradientFunction):  # a derivative of a derivative: reverse over forward
        from adgen.gradient_derivatives import grad_of_grad
        return GradientFunction(grad_of_grad(grad, fun, argnums, mutation, has_aux, False),
                                fun, argnums, mutation, has_aux, False)
    return with_checkpoint(GradientFunction(
        gradient_function(fun, argnums, mutation, has_aux, with_value=False, backend=backend,
                           checkpoint=checkpoint),
        fun, argnums, mutation, has_aux, False), checkpoint)


def source(fun: Callable[..., Any], *args: Any, mutation: str = "save",
           mode: str = "reverse", backend: str = "default",
           single_use: bool | None = None, **kwargs: Any) -> str:
    """The generated forward and pullback functions of ``fun`` (and its callees), as source.

    The text is a module: it starts with its imports and runs as it is. It is a ``str`` that
    a notebook displays highlighted (:class:`adgen.display.SourceView`), not quoted.

    Args:
        fun: the function.
        *args: optional example arguments: the code shown is then the one ``grad`` compiles
            for arguments of their kinds (numbers, arrays of each rank), specialised to them;
            without them, the code that serves any arguments.
        mutation: the policy.
        mode: "reverse" (the forward and pullback of grad and vjp) or "forward" (the tangent
            code of jvp: ``f_jvp(x, ..., x_dot=None, ...) -> (out, out_dot)``).
        backend: "numba" shows the nopython module ``grad(..., backend="numba")`` compiles
            for arguments of the types of ``args`` (which it needs); "auto" shows that, or
            the default backend's code where numba is refused (with the warning).
        single_use: which pullback, with example arguments. None (the default): the one
            ``grad`` and ``value_and_grad`` run for them, which may write saved arrays in
            place since it runs once per forward (a comment at the top says so where it
            differs from the reusable one). False: the reusable pair ``vjp`` returns, whose
            pullback may be called many times (without example arguments, the only one).
            True: the single-use one, or a ValueError saying why ``grad`` does not use one.
        **kwargs: for a function with a ``**kwargs`` parameter, example keyword arguments:
            the code shown is the one compiled for their names (none: for a call without
            them). Other functions ignore them.

    Raises:
        ValueError: an unknown ``mode``, or ``single_use=True`` without example arguments or
            for arguments ``grad`` compiles no single-use pullback for.
    """
    from adgen.display import SourceView

    if mode not in ("reverse", "forward"):
        raise ValueError(f'mode must be "reverse" or "forward", not {mode!r}')
    target, receiver = split_receiver(getattr(fun, "__adgen_primal__", fun))
    shim = for_keywords(target, kwargs) if not receiver else target
    if shim is not target:  # def f(x, **kw): the code compiled for these keywords' names
        return source(shim, *args, mutation=mutation, mode=mode, backend=backend,
                      single_use=single_use)
    if mode == "forward":
        from adgen.higher_order import tangent_compiled

        return SourceView("import numpy as np\nfrom adgen.runtime import *\n\n\n" +
                          tangent_compiled(fun)[0].source)
    if backend != "default":  # the nopython module of these arguments' types
        from adgen.backends import check_backend, numba_source

        check_backend(backend)
        check_policy(mutation)
        return SourceView(numba_source(primal_function(fun), mutation, args, backend))
    # (a method's object is its first argument: the code grad runs for model.loss(x))
    receiver = split_receiver(getattr(fun, "__adgen_primal__", fun))[1]
    header = "import numpy as np\nfrom adgen.runtime import *\n\n\n"
    if single_use and not args:
        raise ValueError("single_use=True needs example arguments: grad compiles its "
                         "single-use pullback per kind of argument, as adgen.source(f, x) shows")
    sig = signature(receiver + args) if args else None
    compiled = compile_fun(fun, mutation, sig=sig)
    if sig is None or single_use is False:
        return SourceView(header + compiled.source)
    grads = gradient_compilation(fun, mutation, None, sig)
    if not getattr(grads, "single_use", False):
        if single_use:
            raise ValueError("grad runs the reusable pullback for these arguments (a list, a "
                             "dict, an object such as a method's self, an array subclass or a "
                             "complex value among them, or code that may compute complex "
                             "values): adgen.source(f, *args) shows it")
        return SourceView(header + compiled.source)
    if grads.source == compiled.source:
        return SourceView(header + grads.source)
    kept = ", ".join(sorted(getattr(grads, "consumes", ())))
    what = f", which writes {kept} (saved by the forward) in place" if kept else ""
    note = (f"# What grad runs for these arguments: a single-use pullback{what}.\n"
            "# It runs once per forward. vjp's reusable pair: "
            "adgen.source(f, *args, single_use=False)\n# (adgen FILE --args ... --reusable)\n")
    return SourceView(note + header + grads.source)


def show(fun: Callable[..., Any], *, mutation: str = "save") -> None:
    """Displays :func:`source` highlighted: as HTML in a notebook, with pygments in a
    terminal, as plain text elsewhere."""
    from adgen import display

    text = source(fun, mutation=mutation)
    if display.in_notebook():
        from IPython.display import display as show_object  # type: ignore[import-not-found]

        show_object(display.SourceView(text))  # its _repr_html_
        return
    from adgen.cli import highlight

    print(highlight(text, sys.stdout))


def standalone_source(fun: Callable[..., Any], *, mutation: str = "save") -> str:
    """A module that defines ``fun``'s forward and pullback with no import of adgen.

    The module imports numpy and the module ``fun`` was defined in; the few runtime helpers it
    needs are written into it.
    """
    from adgen.transforms.standalone import standalone_module

    check_policy(mutation)
    return standalone_module(primal_function(fun), mutation=mutation)


def explain(fun: Callable[..., Any], *args: Any, mutation: str = "save",
            file: TextIO | None = sys.stdout, **kwargs: Any) -> Explanation:
    """Lists every mutation site of ``fun`` (and its callees) with what adgen decided there.

    Args:
        fun: the function.
        *args: optional example arguments: when given, the forward pass runs once on them and
            each guarded site reports the bytes it saved.
        mutation: the policy to explain.
        file: where to print the table (None: do not print). In a notebook the default
            prints nothing: the returned list renders as an HTML table.

    Returns:
        An :class:`Explanation`, a list of :class:`MutationSite`. For a gradient function
        (``explain(adgen.grad(f), x)``, example arguments required), the path its derivatives
        take at them (reverse over reverse, or forward over reverse and why) is printed first
        and kept in ``route``; the sites are those of the code differentiated again.
    """
    if isinstance(fun, GradientFunction):  # which path its derivatives take, and its sites
        from adgen.gradient_derivatives import explain_gradient

        return explain_gradient(fun, args, mutation, file, kwargs)
    # with example arguments, the compilation grad would use for them (kinds.signature); a
    # method's object is its first argument (explain(model.loss, x) ran it without)
    target, receiver = split_receiver(getattr(fun, "__adgen_primal__", fun))
    shim = for_keywords(target, kwargs) if not receiver else target
    if shim is not target:  # def f(x, **kw): the code compiled for these keywords' names
        return explain(shim, *args, mutation=mutation, file=file, **kwargs)
    compiled = compile_fun(fun, mutation, sig=signature(receiver + args) if args else None)
    sites = compiled.sites
    if args:
        from adgen import runtime

        with runtime.measure_saves(mutation) as measured:
            compiled.forward(*receiver, *args, **kwargs)
        scope = measured.pop("__scope__")  # type: ignore[call-overload]
        captured = measured.pop("__captured__", {})  # type: ignore[call-overload]
        seen = {id(c) for c in [compiled]}
        for c in scope.dynamic:  # methods, closures, classes: known once they ran
            if id(c) not in seen:
                seen.add(id(c))
                sites = list(sites) + [x for x in c.sites if x not in sites]
        sites = [as_measured(s, captured, measured.get((s.file, s.line, s.col), 0
                                                       if s.decision == "guarded-save" else None))
                 for s in sites]
    result = Explanation(merge_sites(sites))
    printing = file is not None and not (
        (file is sys.stdout or file is explain.__kwdefaults__["file"]) and in_notebook())
    if printing:
        print(str(result), file=file)
    return result


def in_notebook() -> bool:
    from adgen.display import in_notebook

    return in_notebook()


def differentiable(fun: Callable[..., Any] | None = None, *,
                   mutation: str = "save") -> Any:
    """Marks ``fun`` for adgen and compiles it now, so static errors surface at definition.

    The decorated function behaves exactly as before when called.
    """

    def mark(f: Callable[..., Any]) -> Callable[..., Any]:
        compile_fun(f, mutation)
        f.__adgen_differentiable__ = True  # type: ignore[attr-defined]
        f.__adgen_mutation__ = mutation  # type: ignore[attr-defined]
        return f

    return mark if fun is None else mark(fun)


def rrule(primal: Callable[..., Any], *, mutates: Sequence[int | str] = ()) -> Callable[..., Any]:
    """Registers a custom rule for ``primal``, in ChainRules' rrule style.

        @adgen.rrule(jclock)
        def _(x):
            y = jclock(x)
            return y, lambda y_bar: (y_bar * y / x,)

    The rule runs in place of ``primal`` in the forward pass; its pullback returns one
    cotangent per argument passed, in the order of ``primal``'s parameters (an argument passed
    by keyword included; cotangents for the positional arguments only are accepted, and then a
    keyword whose value has a gradient is refused). ``mutates`` lists the arguments (positions or names)
    the primal writes in place; the pullback of such a rule is called as
    ``pullback(out_bar, *written_bars)`` with the adjoints of the written arguments' new
    contents, and returns the adjoints of their old contents with the other cotangents. A rule
    takes effect at the next call of any compiled function, including ones compiled before it.
    """
    from adgen.rules.registry import defrrule

    def register(rule: Callable[..., Any]) -> Callable[..., Any]:
        defrrule(primal, rule, mutates=tuple(str(m) for m in mutates))
        return rule

    return register



# --------------------------------------------------------------------------------------------
# Forward mode and higher order: jvp, jacfwd, jacrev, jacobian, hvp, hessian, grad of grad
