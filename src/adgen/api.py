"""The public API: grad, value_and_grad, vjp, source, explain, differentiable, rrule.

Names and behaviour follow JAX (``argnums``, ``value_and_grad``, ``vjp``) where JAX has them.
"""

from __future__ import annotations

import copy
import functools
import re
import sys
import types
import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import numpy as np

from adgen import guards, runtime
from adgen.aliased_globals import may_alias_globals, refuse_aliased_globals
from adgen.arguments import (
    check_cotangent,
    check_differentiable,
    check_policy,
    describe,
    has_complex,
    leaves_of,
    location_of,
    normalize_argnums,
    primal_function,
    refuse_subclasses,
    shift_argnums,
    split_receiver,
)
from adgen.errors import (
    AdgenError,
    MutationError,
    NonDifferentiableError,
    UnsupportedError,
)
from adgen.explanation import Explanation, as_measured, merge_sites
from adgen.forward_errors import annotate
from adgen.held_arrays import held_snapshots
from adgen.runtime import as_gradient, is_function_like
from adgen.transforms.analyses.kinds import DICT, FLOAT_ARG, LIST, signature
from adgen.transforms.bindings import failed

_F64 = np.dtype(np.float64)
_NDARRAY = np.ndarray  # (one global load in the gradient's hot path, not two)
_F64_SCALAR = np.float64


def compile_fun(fun: Callable[..., Any], mutation: str,
              wrt: tuple[int, ...] | None = None, sig: tuple[Any, ...] | None = None,
              backend: str = "default", single_use: bool = False) -> Any:
    from adgen.transforms.pipeline import compile_function

    check_policy(mutation)
    if backend != "default":  # numba / auto: adgen.backends
        from adgen.backends import compile_for

        return compile_for(primal_function(fun), mutation, wrt, sig, backend)
    from adgen.transforms.parse import varargs_of

    if varargs_of(primal_function(fun)) is not None:
        from adgen.errors import UnsupportedError

        raise UnsupportedError(
            f"{getattr(fun, '__qualname__', fun)} takes *args: adgen differentiates such a "
            "function where another calls it, not as the function given to grad or vjp",
            hint="give it named parameters, or wrap it: adgen.grad(lambda x, y: f(x, y))")
    return compile_function(primal_function(fun), mutation=mutation, wrt=wrt, sig=sig,
                            single_use=single_use)


def gradient_compilation(fun: Callable[..., Any], mutation: str, wrt: tuple[int, ...] | None,
                         sig: tuple[Any, ...], backend: str = "default") -> Any:
    """The compilation ``grad`` and ``value_and_grad`` run for argument signature ``sig``:
    single use where they can (the default backend, a signature without lists, dicts or
    kindless values; transforms/single_use.py), the reusable form where a complex cotangent
    could make the pullback run again (_run_pullback)."""
    compiled = compile_fun(fun, mutation, wrt=wrt, sig=sig, backend=backend,
                           single_use=backend == "default" and
                           not (None in sig or LIST in sig or DICT in sig))
    if getattr(compiled, "consumes", None) and may_be_complex(compiled):
        compiled = compile_fun(fun, mutation, wrt=wrt, sig=sig, backend=backend)
    return compiled


def run_forward(compiled: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    try:
        if not compiled.needs_scope:
            return compiled.forward(*args, **kwargs)  # no capture or guard to keep apart
        # a fresh scope of captures for this pass, in this thread's stack
        scopes = guards.scope_stack()
        scopes.append(guards.GuardScope())
        try:
            return compiled.forward(*args, **kwargs)
        finally:
            scopes.pop()
    except Exception as exc:
        annotate(exc, compiled)  # the user's line, not only the generated one
        raise


# Pullbacks that add a complex cotangent into a real array's adjoint in place: they run with
# complex adjoints (runtime.complex_adjoints) from the first time that happens. Held weakly,
# never by id(): a pullback freed and another made at its address ran in complex mode (a
# complex cotangent then reached a checkpointed loop's check: a CotangentError, at random)
_COMPLEX_PULLBACKS: weakref.WeakSet[Any] = weakref.WeakSet()
# its set of references: empty or not in one C call (WeakSet.__len__ is Python code, 0.15 us
# of every gradient call); a dead reference in it only sends a call to the membership test
_COMPLEX_REFS = _COMPLEX_PULLBACKS.data


# generated code that may hold complex values: an FFT, a complex literal, a complex dtype
_COMPLEX_MARKS = re.compile(r"\bfft\b|\b\d+(\.\d*)?j\b|complex|\bconj|\bangle\b|\bvdot\b")
# Where a mark may be: each of its matches holds one of these (a literal's last digit then
# j, or digit, point, j). A search of the marks alone tries every position of a long source
# (1.6 ms for Polybench ADI's 10 kB, per compilation); these are found by a fast literal scan.
_COMPLEX_HINTS = re.compile(r"fft|\dj|\d\.j|complex|conj|angle|vdot")


def _has_complex_marks(source: str) -> bool:
    """``_COMPLEX_MARKS.search(source)``, searched only on the lines where a hint is: no mark
    spans a newline, and a line starts after one (a word boundary either way)."""
    for hint in _COMPLEX_HINTS.finditer(source):
        start = source.rfind("\n", 0, hint.start()) + 1
        end = source.find("\n", hint.end())
        if _COMPLEX_MARKS.search(source, start, len(source) if end < 0 else end):
            return True
    return False


def may_be_complex(compiled: Any) -> bool:
    """Whether a compiled function's code (its callees' included) may compute complex
    values, whose cotangents a rule written for real values would cut to their real part."""
    known = getattr(compiled, "may_be_complex", None)
    if known is None:  # the source is long: searched once per compilation
        known = _has_complex_marks(getattr(compiled, "source", "") or "")
        try:
            compiled.may_be_complex = known
        except AttributeError:
            pass
    return known


def _run_pullback(pullback: Callable[..., Any], saved: Any, out_bar: Any,
                  complex_values: bool = False) -> Any:
    """``pullback(saved, out_bar)``; again with complex adjoints for real buffers when a complex
    cotangent reached a real one (NumPy refuses ``float_adjoint += complex``). A pullback can
    run any number of times (it only reads what the forward pass saved), so the retry is
    safe; it is remembered, so the next call goes straight to complex adjoints.
    ``complex_values`` (:func:`may_be_complex`): a complex cotangent that a rule would store
    into a real array raises, naming the line, instead of losing its imaginary part."""
    if complex_values:
        # NumPy only warns when a complex value is stored into a real array (a rule's zeros):
        # the imaginary part would be dropped, a silently wrong gradient
        with warnings.catch_warnings():
            warnings.simplefilter("error", np.exceptions.ComplexWarning)
            try:
                return _run_pullback(pullback, saved, out_bar)
            except np.exceptions.ComplexWarning as exc:
                raise runtime.locate(NonDifferentiableError(
                    "a complex cotangent reached a derivative rule that handles real values "
                    "only: its imaginary part would be dropped",
                    hint="apply that operation to real values (np.abs(z), z.real, z.imag) "
                         "before it, or register an adgen.rrule that handles complex "
                         "values"), exc.__traceback__) from None
    if pullback not in _COMPLEX_PULLBACKS:
        try:
            return pullback(saved, out_bar)
        except TypeError as exc:
            if not _complex_into_real(exc):
                raise
        try:
            _COMPLEX_PULLBACKS.add(pullback)
        except TypeError:  # not weakly referable: it tries the real adjoints first each time
            pass
    with runtime.complex_adjoints():
        try:
            return pullback(saved, out_bar)
        except TypeError as exc:
            if not _complex_into_real(exc):
                raise
            # with complex adjoints only a float view of a complex array's real parts keeps
            # a float64 adjoint (ShadowMap.of); the compiler converts what it sees reach one
            # (analyses.real_parts), not a view a callee returned
            raise runtime.locate(UnsupportedError(
                "a complex cotangent reached the real parts of a complex array (z.real) "
                "through a value adgen did not see as them (a function's result)",
                hint="take the real parts where they are used (r = z.real or np.real(z) in "
                     "this function, not a helper's result), or make the value real "
                     "(np.real(...) of it, or a .copy() of the real parts)"),
                exc.__traceback__) from None


def _single_use_seed(out: Any) -> Any:
    """grad's seed for ``out`` (:func:`_scalar_output`) as a float or a float64 array: a
    single-use pullback (transforms/single_use.py) computes in place in a saved float64
    array where the seed's dtype cannot widen the product (1.0 in any float dtype is the
    same number)."""
    seed = _scalar_output(out)
    if type(seed) is np.ndarray and seed.dtype is not _F64:
        seed = seed.astype(np.float64)
    return seed


def _run_pullback_again(compiled: Any, pullback: Callable[..., Any], saved: Any,
                        out_bar: Any, exc: TypeError | None = None) -> Any:
    """The pullback run again with complex adjoints (:func:`_run_pullback`) after a complex
    cotangent reached a real buffer; refused, loudly, for a single-use pullback that may
    have written its saved arrays already."""
    if getattr(compiled, "consumes", None):
        raise runtime.locate(UnsupportedError(
            "a complex cotangent reached a real array in grad's pullback, which writes the "
            "forward's saved arrays in place and cannot run again with complex adjoints",
            hint="use adgen.vjp(f, *args)[1](1.0), whose pullback can run again, or make "
                 "the complex values real (np.real, np.abs) before they reach real ones"),
            exc.__traceback__ if exc is not None else None) from None
    return _run_pullback(pullback, saved, out_bar)


def _fast_call(args: tuple[Any, ...], nums: tuple[int, ...], single: bool, with_value: bool,
               compiled: Any, guards: tuple[Any, ...], generation: list[int],
               compiled_at: int, code: tuple[Any, Any] | None,
               slow: Callable[..., Any], fun: Callable[..., Any]) -> Callable[..., Any] | None:
    """The gradient's call for arguments of the types of ``args``, checking inline what this
    path checks (:func:`adgen.fast_gradient.fast_call`), with ``direct`` (the same taking
    the arguments itself) as an attribute; None where they need this path."""
    from adgen.fast_gradient import fast_call

    made = fast_call(args, nums, single, with_value, compiled, guards, generation, compiled_at,
                     code, {"annotate": annotate,
                            "scalar_output": _single_use_seed if getattr(
                                compiled, "single_use", False) else _scalar_output,
                            "run_pullback": functools.partial(_run_pullback_again, compiled),
                            "into_real": _complex_into_real,
                            "as_gradient": as_gradient, "failed": failed,
                            "complex_refs": _COMPLEX_REFS,
                            "complex_pullbacks": _COMPLEX_PULLBACKS,
                            # (only for a function that writes in place: aliased_globals)
                            **({"refuse_aliased": functools.partial(
                                refuse_aliased_globals, compiled, fun)}
                               if may_alias_globals(compiled) else {})}, slow)
    if made is None:
        return None
    fast, direct = made
    fast.direct = direct
    return fast


def _complex_into_real(exc: TypeError) -> bool:
    """Whether a pullback failed because a complex cotangent was added into a real buffer
    (``float_adjoint += complex``): it then runs again with complex adjoints."""
    text = str(exc)
    return "complex" in text and "float" in text


def _as_received(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The arguments with the structure they had on entry: new lists, tuples, dicts and
    (shallow) objects holding the same leaves, for a function that rebinds their slots."""

    def received(x: Any) -> Any:
        if isinstance(x, list):
            return [received(v) for v in x]
        if isinstance(x, tuple):
            items = tuple(received(v) for v in x)
            # a namedtuple stays one: its gradient is built of the primal's type
            return type(x)._make(items) if hasattr(type(x), "_fields") else items
        if isinstance(x, dict):
            return {k: received(v) for k, v in x.items()}
        if hasattr(x, "__dict__") and not isinstance(x, (type, np.generic, np.ndarray)) and \
                not is_function_like(x):
            try:
                out = copy.copy(x)
                for k, v in vars(x).items():
                    setattr(out, k, received(v))
                return out
            except Exception:  # noqa: BLE001 - properties, slots: the object as it is
                return x
        return x

    return tuple(received(a) for a in args)


def _cotangents(cts: tuple[Any, ...], args: tuple[Any, ...]) -> tuple[Any, ...]:
    """One cotangent per positional argument, shaped like it (None: no float content)."""
    return tuple(as_gradient(ct, a) for ct, a in zip(cts, args))


def _scalar_output(out: Any) -> float:
    if type(out) is float or type(out) is np.float64:
        return 1.0
    if isinstance(out, (float, int, np.floating, np.integer)) and not isinstance(out, bool):
        return 1.0
    if isinstance(out, np.ndarray) and out.size == 1 and out.dtype.kind == "f":
        return np.ones_like(out)
    if isinstance(out, (complex, np.complexfloating)) or (
            isinstance(out, np.ndarray) and out.dtype.kind == "c"):
        # JAX refuses this too (unless holomorphic=True): the gradient of a complex output
        # depends on which real function of it is meant
        raise NonDifferentiableError(
            f"grad needs a real scalar output, but the function returned {describe(out)}, "
            "which is complex: its gradient depends on which real function of it you mean",
            hint="return np.real(z), np.abs(z) or np.abs(z) ** 2, or use adgen.vjp with a "
                 "complex cotangent (dL/dRe - 1j dL/dIm, JAX's convention)")
    raise NonDifferentiableError(
        f"grad needs a scalar output, but the function returned {describe(out)}",
        hint="reduce it (np.sum, np.mean), or use adgen.vjp for a vector output")


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
    refuse_subclasses(args, kwargs)
    compiled = compile_fun(fun, mutation, sig=signature(args), backend=backend)
    # an argument that is (or views) a global array the function reads, written in place
    refuse_aliased_globals(compiled, fun, args)
    received = _as_received(args) if compiled.mutates_containers else args
    complex_values = may_be_complex(compiled) or has_complex(args)
    out, saved = run_forward(compiled, args, kwargs)
    # the pullback reads the arguments (and the output) where they are, not copies: a change
    # made to them in place before it runs would give a wrong gradient, so it is detected
    snapshots = _snapshots(fun, args, out, compiled.reads_params) + _free_snapshots(compiled)
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
        return _cotangents(_run_pullback(compiled.pullback, saved, out_bar, complex_values),
                           received)

    return out, pullback


def _snapshots(fun: Callable[..., Any], args: tuple[Any, ...], out: Any,
               reads: Any) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Copies of the arrays in the arguments the pullback reads, and in the output."""
    code = getattr(primal_function(fun), "__code__", None)
    names = code.co_varnames[:code.co_argcount] if code is not None else ()
    found: list[tuple[str, np.ndarray, np.ndarray]] = []
    seen: set[int] = set()
    parts = [(f"argument {k} ({names[k]})" if k < len(names) else f"argument {k}", a)
             for k, a in enumerate(args)
             if reads is True or (k < len(names) and names[k] in reads) or k >= len(names)]
    for what, value in parts + [("the output", out)]:
        for leaf in leaves_of(value):
            # (an object array's copy is shallow: what its items hold is not checked)
            if type(leaf) is np.ndarray and leaf.dtype.kind != "O" and id(leaf) not in seen:
                seen.add(id(leaf))
                found.append((what, leaf, leaf.copy()))
    return found


def _free_snapshots(compiled: Any) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Copies of the global and closure arrays a pullback (the function's or a callee's)
    reads: they travel with its saved values by reference (free_values.py), so one changed
    in place after vjp returned (a data buffer refilled) would give a wrong gradient."""
    pullbacks = []
    todo = [compiled]
    while todo:
        c = todo.pop()
        pullbacks.append(getattr(c, "pullback", None))
        todo.extend((getattr(c, "callees", None) or {}).values())
    read: set[str] = set()
    for pb in pullbacks:
        code = getattr(pb, "__code__", None)
        if code is not None:
            read.update(code.co_names, code.co_varnames)
    found: list[tuple[str, np.ndarray, np.ndarray]] = []
    seen: set[int] = set()
    for g in compiled.guards:
        value = g.ns.get(g.key) if g.mode == "kind" and isinstance(g.ns, dict) else None
        if type(value) is np.ndarray and g.key in read and id(value) not in seen:
            seen.add(id(value))
            found.append((f"the global {g.name}", value, value.copy()))
    return found


# the GradientFunctions wrapping each gradient closure (weak references), which the closure
# points at a signature's direct call (backends' fast_call); keyed by the closure itself, as
# a wrapper made with functools.wraps (a method's, a partial's) would copy an attribute
_DIRECT_OWNERS: weakref.WeakKeyDictionary[Any, list[Any]] = weakref.WeakKeyDictionary()


class _Owners(list):
    """The partials a gradient closure points at a signature's direct call (weak references).
    A pickled closure (cloudpickle, dask's task names) carries none: weak references do not
    pickle, and a copy of the closure has no partials yet."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Owners, ())


class GradientFunction(functools.partial):
    """What :func:`grad` and :func:`value_and_grad` return: a callable with ``fun``'s name,
    docstring and signature, that pickles as a reference to ``fun``.

    Pickling (``multiprocessing`` with spawn, ``concurrent.futures.ProcessPoolExecutor``,
    joblib, Dask) stores ``fun`` (by its module and name, as pickle stores any function) and
    the options; the receiving process builds ``grad(fun, ...)`` again and compiles there.
    It is a ``functools.partial`` of the gradient closure only because calling a partial adds
    no Python frame: a call costs what calling the closure costs.
    """

    __adgen_transform__ = True  # compile_function refuses derivatives of derivatives

    def __new__(cls, call: Callable[..., Any], fun: Callable[..., Any],
                argnums: int | Sequence[int], mutation: str, has_aux: bool,
                with_value: bool) -> GradientFunction:
        self = super().__new__(cls, call)
        functools.update_wrapper(self, fun)
        self._adgen_spec = (fun, argnums, mutation, has_aux, with_value)
        owners = _DIRECT_OWNERS.get(call)  # this closure itself, not a wrapper of it
        if owners is not None:
            # the gradient closure may point this partial at a backend's call decided for
            # one argument signature (fast_call's direct form): one Python frame less
            owners.append(weakref.ref(self))
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        checkpoint = getattr(self, "_adgen_checkpoint", None)
        return (_rebuild_gradient, self._adgen_spec + ((checkpoint,) if checkpoint else ()))

    def __repr__(self) -> str:
        fun, argnums, mutation, has_aux, with_value = self._adgen_spec
        name = getattr(fun, "__qualname__", repr(fun))
        options = "".join([f", argnums={argnums!r}" if argnums != 0 else "",
                           f", mutation={mutation!r}" if mutation != "save" else "",
                           ", has_aux=True" if has_aux else ""])
        return f"<adgen.{'value_and_grad' if with_value else 'grad'}({name}{options})>"


def _rebuild_gradient(fun: Callable[..., Any], argnums: int | Sequence[int], mutation: str,
                      has_aux: bool, with_value: bool,
                      checkpoint: int | bool | None = None) -> GradientFunction:
    """Unpickles a :class:`GradientFunction`: ``grad(fun, ...)`` built again."""
    build = value_and_grad if with_value else grad
    return build(fun, argnums, mutation=mutation, has_aux=has_aux, checkpoint=checkpoint)


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
    return _with_checkpoint(GradientFunction(
        _gradient_function(fun, argnums, mutation, has_aux, with_value=True, backend=backend,
                           checkpoint=checkpoint),
        fun, argnums, mutation, has_aux, True), checkpoint)


def _gradient_function(fun: Callable[..., Any], argnums: int | Sequence[int], mutation: str,
                       has_aux: bool, with_value: bool, backend: str = "default",
                       checkpoint: int | bool | None = None) -> Callable[..., Any]:
    """The function :func:`value_and_grad` (``with_value``) or :func:`grad` returns: one
    closure for both, so a call to a gradient goes through one Python frame."""
    check_policy(mutation)
    if isinstance(fun, functools.partial):
        # functools.partial(f, *args, **keywords): f's gradient with respect to the arguments
        # the call gives (argnums counts them), the partial's own passed through
        part = fun
        inner_p = _gradient_function(part.func, shift_argnums(argnums, len(part.args)), mutation,
                                     has_aux, with_value, backend, checkpoint)

        @functools.wraps(inner_p)
        def partial_fun(*args: Any, **kwargs: Any) -> Any:
            return inner_p(*part.args, *args, **{**part.keywords, **kwargs})

        return partial_fun
    target, receiver = split_receiver(getattr(fun, "__adgen_primal__", fun))
    if receiver:
        # a method or callable object: its function, with the receiver as argument 0
        inner = _gradient_function(target, shift_argnums(argnums, len(receiver)), mutation, has_aux,
                                   with_value, backend, checkpoint)

        @functools.wraps(inner)
        def method_fun(*args: Any, **kwargs: Any) -> Any:
            return inner(*receiver, *args, **kwargs)

        return method_fun
    if checkpoint is not None and checkpoint is not False:
        return _segmented_gradient(fun, argnums, mutation, has_aux, with_value, backend,
                                   checkpoint)

    from adgen.rules import registry

    single = isinstance(argnums, int)
    generation = registry._GENERATION  # changes whenever a rule is registered
    # per argument signature: the normalised argnums and the compiled function, recompiled
    # when a rule is registered (the registry's generation changes)
    cache: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    # a backend's call decided once per signature (numba_function.NumbaFunction.fast_call): per
    # signature (its cache entry, the call), and the last one used, tried first
    fasts: dict[tuple[Any, ...], tuple[Any, Any]] = {}
    fast: list[Any] = [None]

    @functools.wraps(fun)
    def value_and_grad_fun(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        quick = fast[0]
        if quick is not None and not kwargs:
            got = quick(args)  # None: its checks failed, the generic path decides
            if got is not None:
                return got
        # a function of its own: a frame with the generic path's forty locals and closure
        # cells costs about 0.1 us, a third of what the fast call adds to numba's
        return generic(args, kwargs)

    def generic(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
        # compiled per argument signature: numbers, and arrays of each rank (kinds.signature)
        complex_args = False
        if len(args) == 1 and type(args[0]) is _NDARRAY and args[0].dtype is _F64:
            sig = (args[0].ndim,)  # signature(args) of one float array, without the call
        else:
            sig = signature(args)
        hit = cache.get(sig)
        if (hit is None or not hit[12]) and (None in sig or LIST in sig or DICT in sig):
            # array subclasses and complex values have no kind (None); a list or dict may
            # hold them (hit[12]: the signature has none of these, known once)
            refuse_subclasses(args)
            complex_args = has_complex(args)
        if kwargs:
            refuse_subclasses((), kwargs)  # (the fast path takes no keywords)
        # recompiled when a rule was registered, or when a free name of the function (or of a
        # callee) no longer holds what the compiled code assumed (bindings.failed)
        if hit is None or hit[0] != generation[0] or (
                hit[10] is not None and hit[10].__code__ is not hit[11]) or (
                hit[7] and failed(hit[7]) is not None):
            nums = normalize_argnums(argnums, len(args))
            # only the requested arguments get adjoint code (jax.grad's argnums)
            # single use: this call runs the pullback once, after its own forward (the
            # default backend's; transforms/single_use.py)
            compiled = gradient_compilation(fun, mutation, tuple(sorted(set(nums))), sig,
                                            backend)
            # the guard that the function's own code was not replaced, checked inline: it
            # is the only one of most functions (bindings.failed costs a call)
            code = [g for g in compiled.guards if g.mode == "attr" and g.name == "__code__"
                    and isinstance(g.scope, types.FunctionType)][:1]
            hit = cache[sig] = (registry.generation(), nums, compiled, compiled.forward,
                                compiled.pullback, compiled.needs_scope,
                                nums[0] if len(nums) == 1 else None,
                                tuple(g for g in compiled.guards if g not in code),
                                may_be_complex(compiled),
                                None if has_aux else compiled.gradient,
                                code[0].scope if code else None,
                                code[0].expected if code else None,
                                not (None in sig or LIST in sig or DICT in sig),
                                # every argument differentiated is a float64 array or a
                                # float: no check at each call
                                all(type(sig[n]) is int or sig[n] == FLOAT_ARG
                                    for n in nums),
                                # it writes in place and reads global arrays or objects: an
                                # argument sharing their memory is refused (aliased_globals)
                                may_alias_globals(compiled))
        _, nums, compiled, forward, pullback, needs_scope, one, _, complex_values, fused, _, \
            _, _, floats, writes = hit
        complex_values = complex_values or complex_args
        plain = False  # the one argument differentiated is a float64 array
        if one is not None:  # one argument differentiated: no loop
            a = args[one]
            plain = type(a) is _NDARRAY and a.dtype is _F64
            if not plain and type(a) is not float:
                check_differentiable(a, one)
        elif not floats:
            for n in nums:
                a = args[n]
                if type(a) is not float and not (type(a) is np.ndarray and
                                                 a.dtype.kind == "f"):
                    check_differentiable(a, n)
        # a list, dict or object the function changes in place: its gradient takes the
        # structure it had when the function received it (a slot may be rebound to another
        # kind of value: a number replaced by an array)
        received = _as_received(args) if compiled.mutates_containers else args
        if writes:  # an argument that is (or views) a global array it reads
            refuse_aliased_globals(compiled, fun, args)
        # a backend's forward and pullback in one compiled call (numba), where it can
        both = fused(*args) if fused is not None and not kwargs else None
        if both is not None:
            out, saved = both
            entry = fasts.get(sig)
            if entry is None or entry[0] is not hit:
                make = getattr(getattr(fused, "__self__", None), "fast_call", None)
                entry = fasts[sig] = (hit, make(
                    args, nums, single, with_value, hit[7], generation, hit[0],
                    (hit[10], hit[11]) if hit[10] is not None else None, value_and_grad_fun)
                    if make is not None and not has_aux and not compiled.mutates_containers
                    and not writes else None)
            fast[0] = entry[1]
            # the partials wrapping this closure call the signature's direct form, which
            # comes back here when its checks fail; or this closure again
            target = getattr(entry[1], "direct", None) or value_and_grad_fun
            for ref in owners:
                owner = ref()
                if owner is not None and owner.func is not target:
                    owner.__setstate__((target, (), None, owner.__dict__))
        elif needs_scope:
            out, saved = run_forward(compiled, args, kwargs)
        else:
            if fused is None and not kwargs and not has_aux and not complex_values and \
                    received is args:
                # the next calls of this signature check only what they must, inline
                # (fast_gradient.fast_call; None where these arguments need this path),
                # written at its second call: a first call pays no compile of it
                entry = fasts.get(sig)
                if entry is None or entry[0] is not hit:
                    entry = fasts[sig] = (hit, False)  # seen once
                elif entry[1] is False:
                    entry = fasts[sig] = (hit, _fast_call(
                        args, nums, single, with_value, compiled, hit[7], generation,
                        hit[0], (hit[10], hit[11]) if hit[10] is not None else None,
                        value_and_grad_fun, fun))
                fast[0] = entry[1] or None
                target = getattr(entry[1], "direct", None) or value_and_grad_fun
                for ref in owners:
                    owner = ref()
                    if owner is not None and owner.func is not target:
                        owner.__setstate__((target, (), None, owner.__dict__))
            try:
                out, saved = forward(*args, **kwargs) if kwargs else forward(*args)
            except Exception as exc:
                annotate(exc, compiled)  # the user's line, not only the generated one
                raise
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise NonDifferentiableError(
                    "has_aux=True needs the function to return a pair (value, aux), "
                    f"not {describe(out)}")
            value, aux = out
            seed: Any = (_single_use_seed(value) if getattr(compiled, "single_use", False)
                         else _scalar_output(value), None)
        else:
            value = out
            seed = 1.0 if type(out) is _F64_SCALAR or type(out) is float else \
                (_single_use_seed(out) if getattr(compiled, "single_use", False) else
                 _scalar_output(out))
        if both is not None:
            cts = saved  # seeded with 1.0: fused is only given for a float output
        elif complex_values or (_COMPLEX_REFS and pullback in _COMPLEX_PULLBACKS):
            cts = _run_pullback(pullback, saved, seed, complex_values)
        else:  # _run_pullback's common case, without its frame
            try:
                cts = pullback(saved, seed)
            except TypeError as exc:
                if not _complex_into_real(exc):
                    raise
                cts = _run_pullback_again(compiled, pullback, saved, seed, exc)
        if one is not None:
            g = cts[one]
            a = received[one]
            if not (plain and received is args and type(g) is _NDARRAY and g.dtype is _F64
                    and g.shape == a.shape):  # else: already a gradient
                g = as_gradient(g, a)
            if not single:
                g = (g,)
        else:
            each = []
            for n in nums:
                c, a = cts[n], received[n]
                if not (type(c) is _NDARRAY and type(a) is _NDARRAY and c.dtype is _F64 and
                        a.dtype is _F64 and c.shape == a.shape):  # else: already a gradient
                    c = as_gradient(c, a)
                each.append(c)
            g = tuple(each)
        if with_value:
            return (out if has_aux else value), g
        return (g, out[1]) if has_aux else g

    owners = _Owners()
    _DIRECT_OWNERS[value_and_grad_fun] = owners
    return value_and_grad_fun


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
    return _with_checkpoint(GradientFunction(
        _gradient_function(fun, argnums, mutation, has_aux, with_value=False, backend=backend,
                           checkpoint=checkpoint),
        fun, argnums, mutation, has_aux, False), checkpoint)


def _with_checkpoint(g: GradientFunction, checkpoint: int | bool | None) -> GradientFunction:
    """Records ``checkpoint`` on a gradient function, so it pickles with it."""
    if checkpoint is not None and checkpoint is not False:
        g._adgen_checkpoint = checkpoint
    return g


def _segmented_gradient(fun: Callable[..., Any], argnums: int | Sequence[int], mutation: str,
                        has_aux: bool, with_value: bool, backend: str,
                        checkpoint: int | bool) -> Callable[..., Any]:
    """The gradient of ``fun`` with its top-level loops run in checkpointed segments
    (transforms/segment_loops.py); errors name the user's file."""
    from adgen.transforms.segment_loops import remap_error, segmented

    if backend != "default":
        raise UnsupportedError(
            f"checkpoint= runs with the default backend, not backend={backend!r}",
            location_of(fun), hint="drop backend=, or checkpoint=")
    try:
        inner = _gradient_function(segmented(fun, checkpoint, mutation), argnums, mutation,
                                   has_aux, with_value, backend)
    except AdgenError as exc:
        raise remap_error(exc) from None

    @functools.wraps(fun)
    def segmented_fun(*args: Any, **kwargs: Any) -> Any:
        try:
            return inner(*args, **kwargs)
        except AdgenError as exc:
            raise remap_error(exc) from None

    return segmented_fun


def source(fun: Callable[..., Any], *args: Any, mutation: str = "save",
           mode: str = "reverse", backend: str = "default",
           single_use: bool | None = None) -> str:
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

    Raises:
        ValueError: an unknown ``mode``, or ``single_use=True`` without example arguments or
            for arguments ``grad`` compiles no single-use pullback for.
    """
    from adgen.display import SourceView

    if mode not in ("reverse", "forward"):
        raise ValueError(f'mode must be "reverse" or "forward", not {mode!r}')
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
    receiver = split_receiver(getattr(fun, "__adgen_primal__", fun))[1]
    compiled = compile_fun(fun, mutation, sig=signature(receiver + args) if args else None)
    sites = compiled.sites
    if args:
        from adgen import runtime

        with runtime.measure_saves() as measured:
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
