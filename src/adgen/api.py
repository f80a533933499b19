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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np

from adgen import runtime
from adgen.errors import (
    AdgenError,
    ArgnumsError,
    CotangentError,
    Location,
    MutationError,
    NonDifferentiableError,
    UnsupportedError,
)
from adgen.runtime import as_gradient, is_function_like
from adgen.transforms.analyses.kinds import DICT, LIST, signature
from adgen.transforms.bindings import failed

POLICIES = ("save", "strict")
_F64 = np.dtype(np.float64)
_NDARRAY = np.ndarray  # (one global load in the gradient's hot path, not two)


@dataclass(frozen=True)
class MutationSite:
    """What adgen decided at one mutation site (one row of :func:`explain`).

    Attributes:
        file: the user's file.
        line: the line of the mutating statement.
        col: its column.
        construct: the statement's source text, e.g. ``x.fill(0.0)``.
        decision: one of ``free``, ``guarded-save``, ``guarded-raise``, ``certain-conflict``,
            ``forced-pullback``, ``elided-pullback``.
        reason: why, in words (which capture, which line).
        captured_at: lines whose captured values this site may overwrite.
        bytes_saved: bytes the guard saved in the last measured execution (None: not measured).
    """

    file: str
    line: int
    col: int
    construct: str
    decision: str
    reason: str
    captured_at: tuple[int, ...] = ()
    bytes_saved: int | None = None

    def __str__(self) -> str:
        saved = "" if self.bytes_saved is None else f" [{self.bytes_saved} bytes saved]"
        return (f"{self.file}:{self.line}:{self.col}: {self.decision}: {self.construct}"
                f" -- {self.reason}{saved}")


# Decisions from the most to the least severe: one row per site keeps the most severe.
_SEVERITY = ("certain-conflict", "guarded-raise", "guarded-save", "forced-pullback",
             "elided-pullback", "free")


def merge_sites(sites: Sequence[MutationSite]) -> list[MutationSite]:
    """One row per user statement: the compiler may lower one statement into several writes
    (``u[1:-1] += v`` reads, updates and stores back), and a callee's sites come once."""
    rows: dict[tuple[str, int, int, str], MutationSite] = {}
    for site in sites:
        key = (site.file, site.line, site.col, site.construct)
        kept = rows.get(key)
        if kept is None or _rank(site) < _rank(kept):
            rows[key] = site
    return list(rows.values())


def _rank(site: MutationSite) -> int:
    return _SEVERITY.index(site.decision) if site.decision in _SEVERITY else len(_SEVERITY)


class Explanation(list):
    """The list of :class:`MutationSite` of one function; prints as a table. ``route``: for
    ``explain(grad(f), x)``, the path second derivatives of ``grad(f)`` take ("" otherwise)."""

    route: str = ""

    def __str__(self) -> str:
        if not self:
            return "no mutation sites"
        return "\n".join(str(s) for s in self)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # IPython
        p.text(str(self))

    def _repr_html_(self) -> str:  # Jupyter
        from adgen.display import sites_html

        return sites_html(self)


def _check_policy(mutation: str) -> None:
    if mutation not in POLICIES:
        raise ValueError(f"mutation must be one of {POLICIES}, not {mutation!r}")


def _compiled(fun: Callable[..., Any], mutation: str,
              wrt: tuple[int, ...] | None = None, sig: tuple[Any, ...] | None = None,
              backend: str = "default") -> Any:
    from adgen.transforms.pipeline import compile_function

    _check_policy(mutation)
    if backend != "default":  # numba / auto: adgen.backends
        from adgen.backends import compile_for

        return compile_for(_unwrap(fun), mutation, wrt, sig, backend)
    from adgen.transforms.parse import varargs_of

    if varargs_of(_unwrap(fun)) is not None:
        from adgen.errors import UnsupportedError

        raise UnsupportedError(
            f"{getattr(fun, '__qualname__', fun)} takes *args: adgen differentiates such a "
            "function where another calls it, not as the function given to grad or vjp",
            hint="give it named parameters, or wrap it: adgen.grad(lambda x, y: f(x, y))")
    return compile_function(_unwrap(fun), mutation=mutation, wrt=wrt, sig=sig)


def _unwrap(fun: Callable[..., Any]) -> Callable[..., Any]:
    fun = getattr(fun, "__adgen_primal__", fun)
    return _bound(fun)[0]


def _bound(fun: Callable[..., Any]) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """A bound method (``model.loss``, ``Cls.make`` of a classmethod) or a callable object
    (``layer`` with a ``__call__``) as the function Python runs and the receiver it passes
    first; a function as itself (a numba.njit dispatcher: its Python function)."""
    if type(fun).__module__.startswith("numba.") and hasattr(fun, "py_func"):
        fun = fun.py_func
    if isinstance(fun, types.MethodType) and isinstance(fun.__func__, types.FunctionType):
        return fun.__func__, (fun.__self__,)
    if not isinstance(fun, (types.FunctionType, types.BuiltinFunctionType, type,
                            functools.partial)) and callable(fun):
        call = getattr(type(fun), "__call__", None)
        if isinstance(call, types.FunctionType):
            return call, (fun,)
    return fun, ()


def _shift(argnums: Any, by: int) -> Any:
    """argnums of a method's arguments as argnums of its function (self first)."""
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        return argnums + by if argnums >= 0 else argnums
    if isinstance(argnums, (tuple, list)):
        return tuple(_shift(n, by) for n in argnums)
    return argnums  # refused by _normalize_argnums


def _normalize_argnums(argnums: int | Sequence[int], nargs: int) -> tuple[int, ...]:
    if isinstance(argnums, bool) or not isinstance(argnums, (int, tuple, list)):
        raise ArgnumsError(f"argnums must be an int or a tuple of ints, not {argnums!r}")
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums:
        raise ArgnumsError("argnums is empty: name at least one argument to differentiate")
    for n in nums:
        if not isinstance(n, int) or isinstance(n, bool):
            raise ArgnumsError(f"argnums must be ints, got {n!r}")
        if not -nargs <= n < nargs:
            raise ArgnumsError(f"argnums {n} is out of range for a call with {nargs} positional "
                               "argument(s)")
    return tuple(n % nargs for n in nums)


def _check_differentiable(value: Any, position: int) -> None:
    """Raises NonDifferentiableError when an argument has no floating-point content."""
    if type(value) is float or (type(value) is np.ndarray and value.dtype.kind == "f"):
        return  # the common case, checked first
    leaves = _leaves(value)
    if isinstance(value, (list, tuple, dict)) or (
            hasattr(value, "__dict__") and not isinstance(value, (np.ndarray, np.generic))):
        # a container or object: ints and strings inside it get no gradient; it is refused
        # only when nothing in it can have one
        if any(_has_float(leaf) for leaf in leaves):
            return
        raise NonDifferentiableError(
            f"argument {position} ({type(value).__name__}) holds no float or float array",
            hint="leave this position out of argnums")
    if not leaves or all(leaf is None for leaf in leaves):
        raise NonDifferentiableError(f"argument {position} is {value!r}: it has no float "
                                     "content to differentiate",
                                     hint="leave this position out of argnums")
    for leaf in leaves:
        if leaf is not None and not isinstance(leaf, (float, int, complex, str, np.ndarray,
                                                      np.generic)) and \
                not hasattr(leaf, "__dict__"):
            raise NonDifferentiableError(
                f"argument {position} is a {type(leaf).__name__}: it has no gradient",
                hint="pass floats or float arrays, or leave this position out of argnums")
        if type(leaf) is object:
            raise NonDifferentiableError(
                f"argument {position} is a plain object: it has no gradient",
                hint="pass floats or float arrays, or leave this position out of argnums")
        if isinstance(leaf, (bool, np.bool_)) or (
            isinstance(leaf, (int, np.integer))
        ):
            raise NonDifferentiableError(
                f"argument {position} is {type(leaf).__name__} {leaf!r}: integers and bools have "
                "no gradient",
                hint="pass a float (e.g. 3.0 or x.astype(float)), or leave this position out of "
                "argnums")
        if isinstance(leaf, np.ndarray) and leaf.dtype.kind not in "fc":
            raise NonDifferentiableError(
                f"argument {position} is an array of dtype {leaf.dtype.name}: adgen "
                "differentiates float and complex arrays",
                hint="convert with x.astype(np.float64), or leave this position out of argnums")
        if isinstance(leaf, str):
            raise NonDifferentiableError(f"argument {position} is a str: it has no gradient",
                                         hint="leave this position out of argnums")


def _has_float(leaf: Any) -> bool:
    """Whether a leaf has a gradient: a float or complex number or array (a complex one's is
    dL/dx - i dL/dy, JAX's convention)."""
    if isinstance(leaf, np.ndarray):
        return leaf.dtype.kind in "fc"
    return isinstance(leaf, (float, complex, np.floating, np.complexfloating))


def _has_complex(args: tuple[Any, ...]) -> bool:
    """Whether an argument is or holds a complex number or array: its pullback then runs
    with the checks of :func:`may_be_complex` code, whatever its source says."""
    return any(isinstance(leaf, (complex, np.complexfloating)) or (
        isinstance(leaf, np.ndarray) and leaf.dtype.kind == "c")
        for a in args for leaf in _leaves(a))


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _leaves(v)]
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if hasattr(value, "__dict__") and not isinstance(value, (np.ndarray, np.generic, type)) \
            and not is_function_like(value) and vars(value):
        return [leaf for v in vars(value).values() for leaf in _leaves(v)]
    return [value]


def _refuse_complex_jacobian(args: tuple[Any, ...], what: str) -> None:
    """Refuses a complex argument to a Jacobian, a Hessian or a derivative of a gradient, as
    JAX does unless ``holomorphic=True``: these are built from real tangents and real unit
    cotangents."""
    if _has_complex(args):
        raise NonDifferentiableError(
            f"{what} of a function of a complex argument is not supported: it is built from "
            "real tangents and cotangents (JAX refuses it too unless holomorphic=True)",
            hint="use adgen.grad or adgen.vjp, which take complex arguments, or pass the real "
                 "and imaginary parts as two real arguments")


def _refuse_subclasses(args: tuple[Any, ...]) -> None:
    """Refuses the values whose kinds the signature leaves unknown and adgen cannot
    differentiate: array subclasses (np.matrix, masked arrays), whose operators mean something
    else than the rules assume (``*`` is a matrix product for np.matrix). Complex values are
    differentiated (JAX's convention)."""
    for k, a in enumerate(args):
        leaves = _leaves(a)
        for leaf in leaves:
            if isinstance(leaf, np.ndarray) and type(leaf) is not np.ndarray and \
                    not isinstance(leaf, np.memmap):  # a memmap computes as an ndarray
                what = f"{type(leaf).__module__}.{type(leaf).__qualname__}"
                inside = "" if leaf is a else f" holds a {what}, which"
                raise NonDifferentiableError(
                    f"argument {k}{inside or ' is a ' + what + ', which'} is an ndarray "
                    "subclass: adgen differentiates plain ndarrays, and a subclass's "
                    "operators may mean something else (np.matrix: * is a matrix product; "
                    "a masked array skips masked elements)",
                    hint="pass np.asarray(x) (for a masked array: x.filled(value), or the "
                         "mask as a separate argument used with np.where)")


def _forward(compiled: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    if not compiled.needs_scope:
        return compiled.forward(*args, **kwargs)  # no capture or guard to keep apart
    # a fresh scope of captures for this pass, in this thread's stack (runtime._THREAD)
    scopes = runtime._THREAD.scopes
    scopes.append(runtime.GuardScope())
    try:
        return compiled.forward(*args, **kwargs)
    finally:
        scopes.pop()


# Pullbacks that add a complex cotangent into a real array's adjoint in place: they run with
# complex adjoints (runtime.complex_adjoints) from the first time that happens.
_COMPLEX_PULLBACKS: set[int] = set()


# generated code that may hold complex values: an FFT, a complex literal, a complex dtype
_COMPLEX_MARKS = re.compile(r"\bfft\b|\b\d+(\.\d*)?j\b|complex|\bconj|\bangle\b|\bvdot\b")


def may_be_complex(compiled: Any) -> bool:
    """Whether a compiled function's code (its callees' included) may compute complex
    values, whose cotangents a rule written for real values would cut to their real part."""
    known = getattr(compiled, "may_be_complex", None)
    if known is None:  # the source is long: searched once per compilation
        known = bool(_COMPLEX_MARKS.search(getattr(compiled, "source", "") or ""))
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
    if id(pullback) not in _COMPLEX_PULLBACKS:
        try:
            return pullback(saved, out_bar)
        except TypeError as exc:
            if not _complex_into_real(exc):
                raise
        _COMPLEX_PULLBACKS.add(id(pullback))
    with runtime.complex_adjoints():
        return pullback(saved, out_bar)


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
            return tuple(received(v) for v in x)
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
            f"grad needs a real scalar output, but the function returned {_describe(out)}, "
            "which is complex: its gradient depends on which real function of it you mean",
            hint="return np.real(z), np.abs(z) or np.abs(z) ** 2, or use adgen.vjp with a "
                 "complex cotangent (dL/dRe - 1j dL/dIm, JAX's convention)")
    raise NonDifferentiableError(
        f"grad needs a scalar output, but the function returned {_describe(out)}",
        hint="reduce it (np.sum, np.mean), or use adgen.vjp for a vector output")


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    if value is None:
        return "None"
    return f"a {type(value).__name__}"


def vjp(fun: Callable[..., Any], *args: Any, mutation: str = "save",
        backend: str = "default", **kwargs: Any) -> tuple[Any, Callable[[Any], tuple[Any, ...]]]:
    """Runs ``fun(*args)`` and returns its output with a pullback.

    Args:
        fun: a Python function whose source adgen can read (or that has a rule).
        *args: the positional arguments; cotangents are returned for each of them.
        mutation: "save" (default) keeps what the backward pass needs before it is overwritten;
            "strict" raises MutationError instead.
        backend: "default", "numba" or "auto", as for :func:`grad`.
        **kwargs: keyword arguments passed to ``fun``; they get no cotangent.

    Returns:
        ``(out, pullback)``. ``pullback(out_bar)`` returns a tuple with one cotangent per
        positional argument, each of the argument's structure (None for arguments without a
        floating-point value). It may be called any number of times.

    Raises:
        AdgenError: for code adgen cannot differentiate, naming the file and line.
    """
    if isinstance(fun, GradientFunction):  # vjp of grad(f, j): Hessian-vector products
        return _vjp_of_gradient(fun, args, mutation, kwargs)
    if isinstance(fun, functools.partial):  # its arguments get no cotangent
        out, pull = vjp(fun.func, *fun.args, *args, mutation=mutation, backend=backend,
                        **{**fun.keywords, **kwargs})
        return out, lambda out_bar: pull(out_bar)[len(fun.args):]
    target, receiver = _bound(getattr(fun, "__adgen_primal__", fun))
    if receiver:  # a method or callable object: no cotangent for the receiver
        out, pull = vjp(target, *receiver, *args, mutation=mutation, backend=backend,
                        **kwargs)
        return out, lambda out_bar: pull(out_bar)[len(receiver):]
    _refuse_subclasses(args)
    compiled = _compiled(fun, mutation, sig=signature(args), backend=backend)
    received = _as_received(args) if compiled.mutates_containers else args
    complex_values = may_be_complex(compiled) or _has_complex(args)
    out, saved = _forward(compiled, args, kwargs)
    # the pullback reads the arguments (and the output) where they are, not copies: a change
    # made to them in place before it runs would give a wrong gradient, so it is detected
    snapshots = _snapshots(fun, args, out, compiled.reads_params)

    def pullback(out_bar: Any) -> tuple[Any, ...]:
        for what, now, then in snapshots:
            if now.shape != then.shape or not np.array_equal(
                    now, then, equal_nan=now.dtype.kind in "fc"):
                raise MutationError(
                    f"{what} was changed in place after adgen.vjp returned, and the pullback "
                    "reads its values: the cotangents would be wrong",
                    _location(fun),
                    hint="call the pullback before changing it, or pass a copy to adgen.vjp")
        _check_cotangent(out_bar, out, "the cotangent", fun)
        return _cotangents(_run_pullback(compiled.pullback, saved, out_bar, complex_values),
                           received)

    return out, pullback


def _check_cotangent(ct: Any, out: Any, what: str, fun: Callable[..., Any]) -> None:
    """Raises CotangentError unless ``ct`` fits the output ``out``: a real number or array of
    its shape for a float or an array, the same structure for a tuple, list or dict, None
    (or a number, ignored) for an output without a gradient (an int, a str, None)."""

    def refuse(problem: str) -> None:
        raise CotangentError(f"{what} {problem}", _location(fun),
                             hint="pass the pullback a cotangent of the output's structure "
                                  "and shape, of a float dtype (np.ones_like(out) for an "
                                  "array output)")

    if isinstance(out, (float, complex, np.floating, np.complexfloating)) or (
            isinstance(out, np.ndarray) and out.dtype.kind in "fc"):
        if ct is None or isinstance(ct, (str, bytes, bool, np.bool_)) or not (
                isinstance(ct, (int, float, complex, np.number, np.ndarray))):
            refuse(f"is {_describe(ct) if ct is not None else 'None'}, but the output is "
                   f"{_describe(out)}")
        complex_out = np.iscomplexobj(out)  # a complex output takes a complex cotangent
        if isinstance(ct, np.ndarray) and ct.dtype.kind not in ("fiuc" if complex_out else
                                                                 "fiu") or \
                (isinstance(ct, (complex, np.complexfloating)) and not complex_out):
            refuse(f"has dtype {np.asarray(ct).dtype}; a real (float) cotangent is needed")
        if np.shape(ct) != np.shape(out):
            refuse(f"has shape {np.shape(ct)}, but the output has shape {np.shape(out)}")
        return
    if isinstance(out, (tuple, list)):
        if not isinstance(ct, (tuple, list)) or len(ct) != len(out):
            refuse(f"is {_describe(ct)}, but the output is a {type(out).__name__} of "
                   f"{len(out)} items: give one cotangent per item")
        for k, (c, o) in enumerate(zip(ct, out)):
            _check_cotangent(c, o, f"{what}[{k}]", fun)
        return
    if isinstance(out, dict):
        if not isinstance(ct, dict) or set(ct) - set(out):
            refuse(f"is {_describe(ct)}, but the output is a dict with keys {list(out)}")
        for k, c in ct.items():
            _check_cotangent(c, out[k], f"{what}[{k!r}]", fun)
        return
    if out is None or isinstance(out, (str, bytes)):
        if ct is not None:
            refuse(f"is {_describe(ct)}, but the output is {_describe(out)}, which has no "
                   "gradient: pass None")


def _location(fun: Callable[..., Any]) -> Location | None:
    code = getattr(_unwrap(fun), "__code__", None)
    return Location(code.co_filename, code.co_firstlineno) if code is not None else None


def _snapshots(fun: Callable[..., Any], args: tuple[Any, ...], out: Any,
               reads: Any) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Copies of the arrays in the arguments the pullback reads, and in the output."""
    code = getattr(_unwrap(fun), "__code__", None)
    names = code.co_varnames[:code.co_argcount] if code is not None else ()
    found: list[tuple[str, np.ndarray, np.ndarray]] = []
    seen: set[int] = set()
    parts = [(f"argument {k} ({names[k]})" if k < len(names) else f"argument {k}", a)
             for k, a in enumerate(args)
             if reads is True or (k < len(names) and names[k] in reads) or k >= len(names)]
    for what, value in parts + [("the output", out)]:
        for leaf in _leaves(value):
            # (an object array's copy is shallow: what its items hold is not checked)
            if type(leaf) is np.ndarray and leaf.dtype.kind != "O" and id(leaf) not in seen:
                seen.add(id(leaf))
                found.append((what, leaf, leaf.copy()))
    return found


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
        return GradientFunction(_grad_of_grad(value_and_grad, fun, argnums, mutation, has_aux,
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
    _check_policy(mutation)
    if isinstance(fun, functools.partial):
        # functools.partial(f, *args, **keywords): f's gradient with respect to the arguments
        # the call gives (argnums counts them), the partial's own passed through
        part = fun
        inner_p = _gradient_function(part.func, _shift(argnums, len(part.args)), mutation,
                                     has_aux, with_value, backend, checkpoint)

        @functools.wraps(inner_p)
        def partial_fun(*args: Any, **kwargs: Any) -> Any:
            return inner_p(*part.args, *args, **{**part.keywords, **kwargs})

        return partial_fun
    target, receiver = _bound(getattr(fun, "__adgen_primal__", fun))
    if receiver:
        # a method or callable object: its function, with the receiver as argument 0
        inner = _gradient_function(target, _shift(argnums, len(receiver)), mutation, has_aux,
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

    @functools.wraps(fun)
    def value_and_grad_fun(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        # compiled per argument signature: numbers, and arrays of each rank (kinds.signature)
        has_complex = False
        if len(args) == 1 and type(args[0]) is _NDARRAY and args[0].dtype is _F64:
            sig = (args[0].ndim,)  # signature(args) of one float array, without the call
        else:
            sig = signature(args)
            if None in sig or LIST in sig or DICT in sig:
                # array subclasses and complex values have no kind (None); a list or dict
                # may hold them
                _refuse_subclasses(args)
                has_complex = _has_complex(args)
        hit = cache.get(sig)
        # recompiled when a rule was registered, or when a free name of the function (or of a
        # callee) no longer holds what the compiled code assumed (bindings.failed)
        if hit is None or hit[0] != generation[0] or (
                hit[10] is not None and hit[10].__code__ is not hit[11]) or (
                hit[7] and failed(hit[7]) is not None):
            nums = _normalize_argnums(argnums, len(args))
            # only the requested arguments get adjoint code (jax.grad's argnums)
            compiled = _compiled(fun, mutation, wrt=tuple(sorted(set(nums))), sig=sig,
                                 backend=backend)
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
                                code[0].expected if code else None)
        _, nums, compiled, forward, pullback, needs_scope, one, _, complex_values, fused, _, \
            _ = hit
        complex_values = complex_values or has_complex
        plain = False  # the one argument differentiated is a float64 array
        if one is not None:  # one argument differentiated: no loop
            a = args[one]
            plain = type(a) is _NDARRAY and a.dtype is _F64
            if not plain and type(a) is not float:
                _check_differentiable(a, one)
        else:
            for n in nums:
                a = args[n]
                if type(a) is not float and not (type(a) is np.ndarray and
                                                 a.dtype.kind == "f"):
                    _check_differentiable(a, n)
        # a list, dict or object the function changes in place: its gradient takes the
        # structure it had when the function received it (a slot may be rebound to another
        # kind of value: a number replaced by an array)
        received = _as_received(args) if compiled.mutates_containers else args
        # a backend's forward and pullback in one compiled call (numba), where it can
        both = fused(*args) if fused is not None and not kwargs else None
        if both is not None:
            out, saved = both
        elif needs_scope:
            out, saved = _forward(compiled, args, kwargs)
        else:
            out, saved = forward(*args, **kwargs) if kwargs else forward(*args)
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise NonDifferentiableError(
                    "has_aux=True needs the function to return a pair (value, aux), "
                    f"not {_describe(out)}")
            value, aux = out
            seed: Any = (_scalar_output(value), None)
        else:
            value = out
            seed = 1.0 if type(out) is np.float64 or type(out) is float else _scalar_output(out)
        if both is not None:
            cts = saved  # seeded with 1.0: fused is only given for a float output
        elif complex_values or (_COMPLEX_PULLBACKS and id(pullback) in _COMPLEX_PULLBACKS):
            cts = _run_pullback(pullback, saved, seed, complex_values)
        else:  # _run_pullback's common case, without its frame
            try:
                cts = pullback(saved, seed)
            except TypeError as exc:
                if not _complex_into_real(exc):
                    raise
                cts = _run_pullback(pullback, saved, seed)
        if one is not None:
            g = cts[one]
            a = received[one]
            if not (plain and received is args and type(g) is _NDARRAY and g.dtype is _F64
                    and g.shape == a.shape):  # else: already a gradient
                g = as_gradient(g, a)
            if not single:
                g = (g,)
        else:
            g = tuple([as_gradient(cts[n], received[n]) for n in nums])
        if with_value:
            return (out if has_aux else value), g
        return (g, out[1]) if has_aux else g

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
        return GradientFunction(_grad_of_grad(grad, fun, argnums, mutation, has_aux, False),
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
            _location(fun), hint="drop backend=, or checkpoint=")
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
           mode: str = "reverse", backend: str = "default") -> str:
    """The generated forward and pullback functions of ``fun`` (and its callees), as source.

    The text is a module: it starts with its imports and runs as it is.

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
    """
    if mode not in ("reverse", "forward"):
        raise ValueError(f'mode must be "reverse" or "forward", not {mode!r}')
    if mode == "forward":
        return "import numpy as np\nfrom adgen.runtime import *\n\n\n" + \
            _tangent_compiled(fun)[0].source
    if backend != "default":  # the nopython module of these arguments' types
        from adgen.backends import check_backend, numba_source

        check_backend(backend)
        _check_policy(mutation)
        return numba_source(_unwrap(fun), mutation, args, backend)
    compiled = _compiled(fun, mutation, sig=signature(args) if args else None)
    return "import numpy as np\nfrom adgen.runtime import *\n\n\n" + compiled.source


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

    _check_policy(mutation)
    return standalone_module(_unwrap(fun), mutation=mutation)


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
        return _explain_gradient(fun, args, mutation, file, kwargs)
    # with example arguments, the compilation grad would use for them (kinds.signature)
    compiled = _compiled(fun, mutation, sig=signature(args) if args else None)
    sites = compiled.sites
    if args:
        from adgen import runtime

        with runtime.measure_saves() as measured:
            compiled.forward(*args, **kwargs)
        scope = measured.pop("__scope__")  # type: ignore[call-overload]
        seen = {id(c) for c in [compiled]}
        for c in scope.dynamic:  # methods, closures, classes: known once they ran
            if id(c) not in seen:
                seen.add(id(c))
                sites = list(sites) + [x for x in c.sites if x not in sites]
        sites = [
            MutationSite(s.file, s.line, s.col, s.construct, s.decision, s.reason, s.captured_at,
                         measured.get((s.file, s.line, s.col), 0
                                      if s.decision == "guarded-save" else None))
            for s in sites
        ]
    result = Explanation(merge_sites(sites))
    printing = file is not None and not (
        (file is sys.stdout or file is explain.__kwdefaults__["file"]) and _in_notebook())
    if printing:
        print(str(result), file=file)
    return result


def _in_notebook() -> bool:
    from adgen.display import in_notebook

    return in_notebook()


def differentiable(fun: Callable[..., Any] | None = None, *,
                   mutation: str = "save") -> Any:
    """Marks ``fun`` for adgen and compiles it now, so static errors surface at definition.

    The decorated function behaves exactly as before when called.
    """

    def mark(f: Callable[..., Any]) -> Callable[..., Any]:
        _compiled(f, mutation)
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


def _tangent_compiled(fun: Callable[..., Any]) -> tuple[Any, tuple[Any, ...]]:
    """The compiled jvp of ``fun`` (transforms.pipeline.compile_tangent) and its receiver."""
    from adgen.transforms.pipeline import compile_tangent

    target, receiver = _bound(getattr(fun, "__adgen_primal__", fun))
    return compile_tangent(target), receiver


def jvp(fun: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any],
        **kwargs: Any) -> tuple[Any, Any]:
    """Forward mode: ``fun(*primals)`` and its derivative in the direction ``tangents``.

    As ``jax.jvp``. The tangent code is generated from ``fun``'s source (see
    ``adgen.source(fun, mode="forward")``), in-place writes included: a buffer's tangent is a
    buffer written where the buffer is written.

    Args:
        fun: a Python function whose source adgen can read.
        primals: the positional arguments.
        tangents: one tangent per primal, of its structure (an array of its shape, a float for
            a number, a list for a list); None is a zero tangent.
        **kwargs: keyword arguments passed to ``fun``; they get no tangent.

    Returns:
        ``(out, out_dot)``: the output and its tangent (of the output's structure).

    Raises:
        AdgenError: for code forward mode cannot differentiate, naming the file and line.
    """
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ArgnumsError(f"jvp got {len(primals)} primal(s) and {len(tangents)} tangent(s); "
                           "give one tangent per primal (None for none)")
    _refuse_subclasses(primals)
    if _has_complex(primals):
        # the tangent rules are written for real tangents: a complex one would be cut to its
        # real part (forward mode has no ComplexWarning net around it)
        raise NonDifferentiableError(
            "jvp of a complex argument is not supported: forward mode propagates real "
            "tangents only", _location(fun),
            hint="use adgen.grad or adgen.vjp (complex arguments are supported there), or "
                 "pass the real and imaginary parts as two real arguments")
    if isinstance(fun, GradientFunction):  # jvp of grad(f, j): Hessian-vector products
        return _jvp_of_gradient(fun, primals, tangents, kwargs)
    if isinstance(fun, functools.partial):  # its arguments get no tangent
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
        return rule.primal(*primals, **kwargs), registry.eval_jvp(rule, primals, kwargs, given)
    compiled, receiver = _tangent_compiled(fun)
    args = receiver + primals
    # new buffers laid out like the primals: the tangent code writes them where f writes
    named = {t: runtime.given_tangent(v, x) for t, v, x in
             zip(compiled.tangent_params[len(receiver):], tangents, primals)}
    return compiled.jvp(*args, **named, **kwargs)


def _basis(x: Any) -> list[Any]:
    """Unit tangents of a number or an array, one per element (C order)."""
    if isinstance(x, np.ndarray):
        out = []
        for k in range(x.size):
            e = np.zeros(x.size)
            e[k] = 1.0
            out.append(e.reshape(x.shape))
        return out
    if isinstance(x, (float, int, np.number)) and not isinstance(x, bool):
        return [1.0]
    raise NonDifferentiableError(f"a Jacobian or Hessian is taken with respect to numbers and "
                                 f"arrays, not {_describe(x)}")


def _copies(args: tuple[Any, ...]) -> tuple[Any, ...]:
    import copy

    return copy.deepcopy(args)


def _columns(out_dots: list[Any], out: Any, x: Any) -> Any:
    """A Jacobian from its columns (one tangent per element of ``x``): out's shape + x's."""
    cols = np.stack([np.asarray(d, dtype=float) for d in out_dots], axis=-1)
    return cols.reshape(np.shape(out) + np.shape(x))


def jacfwd(fun: Callable[..., Any], argnums: int | Sequence[int] = 0,
           **options: Any) -> Callable[..., Any]:
    """The Jacobian by forward mode: one jvp per element of the differentiated argument(s).

    As ``jax.jacfwd``: the Jacobian has the output's shape followed by the argument's; a tuple
    ``argnums`` gives a tuple. Each jvp runs on copies of the arguments, so a function that
    writes its arguments in place sees the same values every time.
    """
    def jacobian_fwd(*args: Any, **kwargs: Any) -> Any:
        nums = _normalize_argnums(argnums, len(args))
        out = None
        result = []
        for n in nums:
            dots = []
            for e in _basis(args[n]):
                tangents = [None] * len(args)
                tangents[n] = e
                out, d = jvp(fun, _copies(args), tangents, **kwargs)
                dots.append(d)
            result.append(_columns(dots, out, args[n]))
        return result[0] if isinstance(argnums, int) else tuple(result)

    return functools.wraps(fun)(jacobian_fwd) if hasattr(fun, "__name__") else jacobian_fwd


def jacrev(fun: Callable[..., Any], argnums: int | Sequence[int] = 0, *,
           mutation: str = "save") -> Callable[..., Any]:
    """The Jacobian by reverse mode: one forward pass, its pullback called once per element
    of the output (pullbacks are reusable). As ``jax.jacrev``; shapes as :func:`jacfwd`."""
    def jacobian_rev(*args: Any, **kwargs: Any) -> Any:
        nums = _normalize_argnums(argnums, len(args))
        _refuse_complex_jacobian(tuple(args[n] for n in nums), "jacrev")
        out, pullback = vjp(fun, *args, mutation=mutation, **kwargs)
        shape = np.shape(out)
        rows: list[list[Any]] = [[] for _ in nums]
        for k in range(int(np.prod(shape, dtype=int))):
            e = np.zeros(shape)
            e.flat[k] = 1.0
            cts = pullback(e if shape else float(e))
            for r, n in zip(rows, nums):
                r.append(np.asarray(cts[n], dtype=float) if cts[n] is not None
                         else np.zeros(np.shape(args[n])))
        result = [np.stack(r).reshape(shape + np.shape(args[n])) if r else
                  np.zeros(shape + np.shape(args[n])) for r, n in zip(rows, nums)]
        return result[0] if isinstance(argnums, int) else tuple(result)

    return functools.wraps(fun)(jacobian_rev) if hasattr(fun, "__name__") else jacobian_rev


def jacobian(fun: Callable[..., Any], argnums: int | Sequence[int] = 0, *,
             mutation: str = "save") -> Callable[..., Any]:
    """The Jacobian: reverse mode (:func:`jacrev`), or forward mode (:func:`jacfwd`) when the
    differentiated arguments have fewer elements than the output."""
    def jacobian_fun(*args: Any, **kwargs: Any) -> Any:
        nums = _normalize_argnums(argnums, len(args))
        before = _copies(args)
        out = fun(*before, **kwargs)
        n_in = sum(int(np.size(args[n])) for n in nums)
        if n_in < int(np.size(out)):
            return jacfwd(fun, argnums)(*args, **kwargs)
        return jacrev(fun, argnums, mutation=mutation)(*args, **kwargs)

    return functools.wraps(fun)(jacobian_fun) if hasattr(fun, "__name__") else jacobian_fun


# Wrappers that give reverse mode a Python function over a compiled jvp: their source is
# generated (and in linecache, as the jvp's is), so adgen.grad reads and differentiates it.
_WRAPPERS: dict[tuple[Any, ...], tuple[Any, Callable[..., Any]]] = {}


def _directional(fun: Callable[..., Any], nargs: int, wrt: tuple[int, ...], unit: bool
                 ) -> Callable[..., Any]:
    """A Python function ``d(*args, *directions)`` (or ``d(*args)`` with ``unit``: the
    direction 1.0) returning the derivative of ``fun`` at ``args`` along the directions given
    for the arguments ``wrt`` (the out_dot of its jvp)."""
    import keyword

    from adgen.transforms.emit import compile_source

    compiled, receiver = _tangent_compiled(fun)
    key = (id(compiled.jvp), nargs, wrt, unit, len(receiver))
    hit = _WRAPPERS.get(key)
    if hit is not None and hit[0] is compiled.jvp:
        return hit[1]
    names = [p if p.isidentifier() and not keyword.iskeyword(p) else f"a{k}"
             for k, p in enumerate(compiled.params[len(receiver):][:nargs])]
    names += [f"a{k}" for k in range(len(names), nargs)]
    dirs = [] if unit else [f"direction{k}" for k in range(len(wrt))]
    fname = f"{compiled.name}_jvp"
    lead = [f"receiver{k}" for k in range(len(receiver))]
    given = ", ".join(f"{compiled.tangent_params[len(receiver) + n]}="
                      f"{'1.0' if unit else f'given_tangent({dirs[k]}, {names[n]})'}"
                      for k, n in enumerate(wrt))
    text = (f"def {compiled.name}_directional({', '.join(names + dirs)}):\n"
            f"    out, out_dot = {fname}({', '.join(lead + names)}, {given})\n"
            f"    return out_dot\n")
    ns: dict[str, Any] = {fname: compiled.jvp, "np": np,
                          "given_tangent": runtime.given_tangent}
    ns.update({f"receiver{k}": r for k, r in enumerate(receiver)})
    compile_source(text, f"<adgen {compiled.name} directional>", ns)
    wrapper = ns[f"{compiled.name}_directional"]
    _WRAPPERS[key] = (compiled.jvp, wrapper)
    return wrapper


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
        if kwargs:
            from adgen.errors import UnsupportedError

            raise UnsupportedError("hvp and hessian pass no keyword arguments to the function",
                                   hint="bind them first: adgen.hvp(lambda x: f(x, k=2.0))")
        n = _normalize_argnums(argnums, len(args))[0]
        _refuse_complex_jacobian(tuple(args), "hvp (and hessian)")
        d = _directional(fun, len(args), (n,), unit=False)
        return grad(d, n, mutation=mutation)(*args, v, **kwargs)

    return functools.wraps(fun)(hessian_vector) if hasattr(fun, "__name__") else hessian_vector


def hessian(fun: Callable[..., Any], argnums: int = 0, *,
            mutation: str = "save") -> Callable[..., Any]:
    """The Hessian of a scalar function with respect to one argument (x's shape twice), one
    Hessian-vector product (:func:`hvp`) per element; each runs on copies of the arguments."""
    def hessian_fun(*args: Any, **kwargs: Any) -> Any:
        n = _normalize_argnums(argnums, len(args))[0]
        h = hvp(fun, n, mutation=mutation)
        cols = [h(*_copies(tuple(args)), e, **kwargs) for e in _basis(args[n])]
        return _columns(cols, args[n], args[n])

    return functools.wraps(fun)(hessian_fun) if hasattr(fun, "__name__") else hessian_fun


def _check_derivable(g: GradientFunction) -> None:
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
    _check_derivable(g)
    fun, argnums, mutation = g._adgen_spec[0], g._adgen_spec[1], g._adgen_spec[2]
    if kwargs:
        from adgen.errors import UnsupportedError

        raise UnsupportedError("a derivative of a gradient passes no keyword arguments",
                               hint="bind them first: adgen.grad(lambda x: f(x, k=2.0))")
    j = _normalize_argnums(argnums, len(primals))[0]
    out = g(*_copies(primals))
    wrt = tuple(n for n, v in enumerate(tangents) if v is not None)
    if not wrt:
        return out, runtime.zeros_like(out)
    d = _directional(fun, len(primals), wrt, unit=False)
    dot = grad(d, j, mutation=mutation)(*_copies(primals), *[tangents[n] for n in wrt])
    return out, dot


def _vjp_of_gradient(g: GradientFunction, args: tuple[Any, ...], mutation: str,
                     kwargs: dict[str, Any]) -> tuple[Any, Callable[[Any], tuple[Any, ...]]]:
    """``vjp(grad(f, j), x)``: the gradient, and a pullback taking a cotangent c of it to the
    gradients with respect to every argument of the derivative of f along c (on x_j), by
    reverse mode over the generated tangent code. So ``jacrev(grad(f))`` is the Hessian."""
    _check_derivable(g)
    fun, argnums = g._adgen_spec[0], g._adgen_spec[1]
    if kwargs:
        from adgen.errors import UnsupportedError

        raise UnsupportedError("a derivative of a gradient passes no keyword arguments",
                               hint="bind them first: adgen.grad(lambda x: f(x, k=2.0))")
    j = _normalize_argnums(argnums, len(args))[0]
    _refuse_complex_jacobian(args, "vjp of a gradient")
    program = _second_order_program(fun, j, args, g._adgen_spec[2], mutation)
    if program.reverse:  # reverse over reverse: the generated forward and pullback
        if program.check:  # "strict": refused where the gradient is
            g(*_copies(args))
        out, pull = vjp(program.function, *_copies(args), mutation=mutation)

        def pullback_rr(ct: Any) -> tuple[Any, ...]:
            _check_cotangent(ct, out, "the cotangent", fun)
            return pull(ct)

        return out, pullback_rr
    before = _copies(args)
    out = g(*_copies(args))
    d = _directional(fun, len(args), (j,), unit=False)
    # the arguments with a gradient (floats, float arrays, containers of them)
    every = tuple(n for n, a in enumerate(args)
                  if not isinstance(a, (bool, int, str, np.integer, np.bool_, type(None))) and
                  not (isinstance(a, np.ndarray) and a.dtype.kind not in "fc"))

    def pullback(ct: Any) -> tuple[Any, ...]:
        _check_cotangent(ct, out, "the cotangent", fun)
        got = grad(d, every, mutation=mutation)(*_copies(before), ct) if every else ()
        cts: list[Any] = [None] * len(args)
        for n, c in zip(every, got):
            cts[n] = c
        return tuple(cts)

    return out, pullback


def _grad_of_grad(outer: Callable[..., Any], g: GradientFunction, argnums: Any, mutation: str,
                  has_aux: bool, with_value: bool) -> Callable[..., Any]:
    """``grad(grad(f, j), k)``: the gradient of the generated function that computes
    ``df/dx_j`` by forward mode (a scalar argument j: grad(f, j) returns a number)."""
    fun, inner_argnums = g._adgen_spec[0], g._adgen_spec[1]
    _check_derivable(g)  # refuses what it cannot do, now

    def second(*args: Any, **kwargs: Any) -> Any:
        j = _normalize_argnums(inner_argnums, len(args))[0]
        if not isinstance(args[j], (float, int, np.floating)) or isinstance(args[j], bool):
            raise NonDifferentiableError(
                f"grad(grad(f)) needs grad(f) to return a number, but argument {j} is "
                f"{_describe(args[j])}, so grad(f) returns an array",
                hint="use adgen.hessian(f) or adgen.hvp(f) for the second derivatives of a "
                     "function of an array")
        _refuse_complex_jacobian(args, "grad of a gradient")
        if not kwargs:
            program = _second_order_program(fun, j, args, g._adgen_spec[2], mutation)
            if program.reverse:  # reverse over reverse: the generated forward and pullback
                if program.check:  # "strict": refused where the gradient is
                    g(*_copies(args))
                return outer(program.function, argnums, mutation=mutation,
                             has_aux=has_aux)(*args)
        d = _directional(fun, len(args), (j,), unit=True)
        return outer(d, argnums, mutation=mutation, has_aux=has_aux)(*args, **kwargs)

    return second


def _second_order_program(fun: Callable[..., Any], j: int, args: tuple[Any, ...],
                          mutation: str, outer: str | None = None) -> Any:
    """``grad(fun, j)`` at ``args``'s signature as a function adgen's reverse mode compiles
    (adgen.second_order), or the reason it cannot: then derivatives of the gradient take the
    forward-over-reverse path. Decided when compiling, before anything runs."""
    from adgen.second_order import Program, reverse_program

    target, receiver = _bound(getattr(fun, "__adgen_primal__", fun))
    if receiver or isinstance(fun, functools.partial) or _has_complex(args):
        return Program(None, "a method, a functools.partial or a complex argument takes the "
                             "forward-over-reverse path")
    return reverse_program(fun, j, args, mutation, outer)


def _explain_gradient(g: GradientFunction, args: tuple[Any, ...], mutation: str,
                      file: TextIO | None, kwargs: dict[str, Any]) -> Explanation:
    """``explain(grad(f), *args)``: which path second derivatives of ``grad(f)`` take at
    ``args`` (reverse over reverse, or forward over reverse and why), printed first, then the
    mutation sites of the code that is differentiated again (``result.route`` holds the
    path)."""
    from adgen.errors import UnsupportedError

    _check_derivable(g)
    fun, argnums, gmutation = g._adgen_spec[0], g._adgen_spec[1], g._adgen_spec[2]
    if not args or kwargs:
        raise UnsupportedError("explain(grad(f)) needs example arguments (positional only): "
                               "the path second derivatives take depends on their kinds",
                               hint="adgen.explain(adgen.grad(f), x)")
    j = _normalize_argnums(argnums, len(args))[0]
    program = _second_order_program(fun, j, args, gmutation)
    if program.reverse:
        route = ("second derivatives: reverse over reverse (adgen differentiates the "
                 "generated forward and pullback of grad(f))")
        import os

        # (the sites of the program's code, not of adgen's runtime classes it constructs)
        internal = os.path.dirname(os.path.abspath(runtime.__file__))
        result = Explanation(s for s in explain(program.function, *_copies(args),
                                                mutation=gmutation, file=None)
                             if not os.path.abspath(s.file).startswith(internal))
    else:
        route = ("second derivatives: forward over reverse (Hessian-vector products), "
                 f"because {program.reason}")
        target, receiver = _bound(getattr(fun, "__adgen_primal__", fun))
        result = explain(target, *receiver, *_copies(args), mutation=gmutation, file=None)
    result.route = route
    printing = file is not None and not (
        (file is sys.stdout or file is explain.__kwdefaults__["file"]) and _in_notebook())
    if printing:
        print(route, file=file)
        print(str(result), file=file)
    return result
