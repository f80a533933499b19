"""What ``grad`` and ``value_and_grad`` return: :class:`GradientFunction` (a partial that
pickles as a reference to the function) around the gradient closure
(:func:`gradient_function`), which compiles per argument signature, runs the forward and the
pullback in one Python frame, and hands a signature's later calls to a call decided once
(``fast_gradient.fast_call``, a backend's ``fast_call``); with ``checkpoint=``, the gradient
of the function's loops in segments."""

from __future__ import annotations

import functools
import types
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adgen.aliased_globals import may_alias_globals, refuse_aliased_globals
from adgen.arguments import (
    check_differentiable,
    check_policy,
    describe,
    has_complex,
    location_of,
    normalize_argnums,
    refuse_subclasses,
    shift_argnums,
    split_receiver,
)
from adgen.compiled_calls import gradient_compilation, run_forward
from adgen.errors import AdgenError, NonDifferentiableError, UnsupportedError
from adgen.forward_errors import annotate
from adgen.pullback_runs import (
    COMPLEX_PULLBACKS,
    COMPLEX_REFS,
    as_received,
    complex_into_real,
    may_be_complex,
    run_pullback,
    run_pullback_again,
    run_pullback_ieee,
    scalar_output,
    single_use_seed,
)
from adgen.runtime import as_gradient
from adgen.transforms.analyses.kinds import (
    FLOAT_ARG,
    defaults_signature,
    has_unknown,
    signature,
)
from adgen.transforms.bindings import failed
from adgen.transforms.keyword_shims import for_keywords, takes_keywords

_F64 = np.dtype(np.float64)
_NDARRAY = np.ndarray  # (one global load in the gradient's hot path, not two)
_F64_SCALAR = np.float64


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
    from adgen.api import grad, value_and_grad

    build = value_and_grad if with_value else grad
    return build(fun, argnums, mutation=mutation, has_aux=has_aux, checkpoint=checkpoint)


def gradient_function(fun: Callable[..., Any], argnums: int | Sequence[int], mutation: str,
                       has_aux: bool, with_value: bool, backend: str = "default",
                       checkpoint: int | bool | None = None) -> Callable[..., Any]:
    """The function :func:`value_and_grad` (``with_value``) or :func:`grad` returns: one
    closure for both, so a call to a gradient goes through one Python frame."""
    check_policy(mutation)
    if isinstance(fun, functools.partial):
        # functools.partial(f, *args, **keywords): f's gradient with respect to the arguments
        # the call gives (argnums counts them), the partial's own passed through
        part = fun
        inner_p = gradient_function(part.func, shift_argnums(argnums, len(part.args)), mutation,
                                     has_aux, with_value, backend, checkpoint)

        @functools.wraps(inner_p)
        def partial_fun(*args: Any, **kwargs: Any) -> Any:
            return inner_p(*part.args, *args, **{**part.keywords, **kwargs})

        return partial_fun
    target, receiver = split_receiver(getattr(fun, "__adgen_primal__", fun))
    if receiver:
        # a method or callable object: its function, with the receiver as argument 0
        inner = gradient_function(target, shift_argnums(argnums, len(receiver)), mutation, has_aux,
                                   with_value, backend, checkpoint)

        @functools.wraps(inner)
        def method_fun(*args: Any, **kwargs: Any) -> Any:
            return inner(*receiver, *args, **kwargs)

        return method_fun
    if takes_keywords(target) and for_keywords(target, ()) is not target:
        # def loss(x, **opts): one gradient per set of keyword names a call passes into
        # **opts (transforms/keyword_shims.py); the keywords are constants, as in JAX
        if checkpoint is not None and checkpoint is not False:
            raise UnsupportedError(
                f"checkpoint= of {getattr(target, '__qualname__', target)}, which takes "
                "**kwargs: adgen splits the loops of a function with named parameters only",
                location_of(target),
                hint="give the function named parameters (def f(x, *, scale=1.0)), or "
                     "drop checkpoint=")
        per_keywords: dict[tuple[str, ...], tuple[Any, Callable[..., Any]]] = {}

        @functools.wraps(fun)
        def keywords_fun(*args: Any, **kwargs: Any) -> Any:
            keys = tuple(kwargs)
            # (the shim of these keywords, made again when the function's code is
            # replaced; its defaults follow the function's)
            shim = for_keywords(target, keys)
            hit = per_keywords.get(keys)
            if hit is None or hit[0] is not shim:
                hit = per_keywords[keys] = (shim, gradient_function(
                    shim, argnums, mutation, has_aux, with_value, backend, checkpoint))
            return hit[1](*args, **kwargs)

        return keywords_fun
    if checkpoint is not None and checkpoint is not False:
        return _segmented_gradient(fun, argnums, mutation, has_aux, with_value, backend,
                                   checkpoint)

    from adgen.rules import registry

    single = isinstance(argnums, int)
    generation = registry._GENERATION  # changes whenever a rule is registered
    # per argument signature: the normalised argnums and the compiled function, recompiled
    # when a rule is registered (the registry's generation changes)
    cache: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    # a call that leaves numbers' defaults to the function (verlet(x, v) with dt=0.01) is
    # compiled for their kinds too (kinds.defaults_signature), per count of arguments given,
    # while the function's defaults are the same tuple; a call with keywords is not
    primal = fun if type(fun) is types.FunctionType and backend == "default" else None
    argcount = primal.__code__.co_argcount if primal is not None else 0
    tails: dict[int, tuple[Any, ...]] = {}
    tails_of: list[Any] = [None]
    # a backend's call decided once per signature (numba_function.NumbaFunction.fast_call): per
    # signature (its cache entry, the call), and the last one used, tried first
    fasts: dict[tuple[Any, ...], tuple[Any, Any]] = {}
    fast: list[Any] = [None]
    # another backend compiles for every positional parameter (numba_function): a call that
    # leaves parameters to their defaults (euler(y0) with n=20, h=0.05) passes the defaults
    # positionally (numbers or arrays, as Python would bind them; argnums counts the
    # arguments given, so a negative one keeps the call as it is)
    filler = fun if type(fun) is types.FunctionType and backend != "default" and \
        fun.__defaults__ and not any(
            n < 0 for n in ((argnums,) if isinstance(argnums, int) else
                            tuple(a for a in argnums if isinstance(a, int)))) else None

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
        filled = False
        if filler is not None and not kwargs and \
                len(args) < filler.__code__.co_argcount <= \
                len(args) + len(filler.__defaults__ or ()):
            tail = filler.__defaults__[len(args) - filler.__code__.co_argcount:]
            wanted = (argnums,) if isinstance(argnums, int) else tuple(argnums)
            if all(type(d) in (float, int) or type(d) is np.ndarray for d in tail) and \
                    all(type(n) is int and n < len(args) for n in wanted):
                args, filled = args + tuple(tail), True
        if len(args) == 1 and type(args[0]) is _NDARRAY and args[0].dtype is _F64:
            sig = (args[0].ndim,)  # signature(args) of one float array, without the call
        else:
            sig = signature(args)
        if len(args) < argcount and not kwargs:
            defaults = primal.__defaults__  # type: ignore[union-attr]
            if defaults is not tails_of[0]:
                tails.clear()
                tails_of[0] = defaults
            tail = tails.get(len(args))
            if tail is None:
                tail = tails[len(args)] = defaults_signature(primal, len(args))
            sig = sig + tail
        hit = cache.get(sig)
        if (hit is None or not hit[12]) and has_unknown(sig):
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
                                not has_unknown(sig),
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
        received = as_received(args) if compiled.mutates_containers else args
        if writes:  # an argument that is (or views) a global array it reads
            refuse_aliased_globals(compiled, fun, args)
        # a backend's forward and pullback in one compiled call (numba), where it can
        both = fused(*args) if fused is not None and not kwargs else None
        if both is not None:
            out, saved = both
            key = (sig, "defaults") if filled else sig  # (a call given them all: its own)
            entry = fasts.get(key)
            if entry is None or entry[0] is not hit:
                make = getattr(getattr(fused, "__self__", None), "fast_call", None)
                entry = fasts[key] = (hit, make(
                    args, nums, single, with_value, hit[7], generation, hit[0],
                    (hit[10], hit[11]) if hit[10] is not None else None, value_and_grad_fun)
                    if make is not None and not has_aux and not compiled.mutates_containers
                    and not writes and not filled else None)
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
        try:
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise NonDifferentiableError(
                        "has_aux=True needs the function to return a pair (value, aux), "
                        f"not {describe(out)}")
                value, aux = out
                seed: Any = (single_use_seed(value) if getattr(compiled, "single_use", False)
                             else scalar_output(value), None)
            else:
                value = out
                seed = 1.0 if type(out) is _F64_SCALAR or type(out) is float else \
                    (single_use_seed(out) if getattr(compiled, "single_use", False) else
                     scalar_output(out))
        except NonDifferentiableError as err:
            # an output grad cannot seed: named at the function's def, as the user's line
            if err.location is None:
                err.location = location_of(fun)
                err.args = (err.format(),)
            raise
        if both is not None:
            cts = saved  # seeded with 1.0: fused is only given for a float output
        elif complex_values or (COMPLEX_REFS and pullback in COMPLEX_PULLBACKS):
            cts = run_pullback(pullback, saved, seed, complex_values,
                               rerun=not getattr(compiled, "consumes", None))
        else:  # run_pullback's common case, without its frame
            try:
                cts = pullback(saved, seed)
            except TypeError as exc:
                if not complex_into_real(exc):
                    raise
                cts = run_pullback_again(compiled, pullback, saved, seed, exc)
            except (ZeroDivisionError, OverflowError) as exc:
                cts = run_pullback_ieee(compiled, pullback, saved, seed, exc)
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
                            "scalar_output": single_use_seed if getattr(
                                compiled, "single_use", False) else scalar_output,
                            "run_pullback": functools.partial(run_pullback_again, compiled),
                            "run_ieee": functools.partial(run_pullback_ieee, compiled),
                            "ieee_errors": (ZeroDivisionError, OverflowError),
                            "into_real": complex_into_real,
                            "as_gradient": as_gradient, "failed": failed,
                            "complex_refs": COMPLEX_REFS,
                            "complex_pullbacks": COMPLEX_PULLBACKS,
                            # (only for a function that writes in place: aliased_globals)
                            **({"refuse_aliased": functools.partial(
                                refuse_aliased_globals, compiled, fun)}
                               if may_alias_globals(compiled) else {})}, slow)
    if made is None:
        return None
    fast, direct = made
    fast.direct = direct
    return fast


def with_checkpoint(g: GradientFunction, checkpoint: int | bool | None) -> GradientFunction:
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
        inner = gradient_function(segmented(fun, checkpoint, mutation), argnums, mutation,
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
