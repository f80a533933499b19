"""Running a pullback and shaping what it gives: the retry with complex adjoints when a
complex cotangent reaches a real buffer (:func:`run_pullback`; whether generated code may
compute complex values at all, :func:`may_be_complex`), ``grad``'s seed of its scalar output
(:func:`scalar_output`, :func:`single_use_seed`), and the cotangents in the structure the
arguments had when the function received them (:func:`as_received`, :func:`cotangents_of`).
Used by ``vjp`` (api.py) and the gradient function (gradient_function.py)."""

from __future__ import annotations

import copy
import re
import sys
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from adgen import runtime
from adgen.arguments import describe
from adgen.errors import NonDifferentiableError, UnsupportedError
from adgen.runtime import as_gradient, is_function_like

_F64 = np.dtype(np.float64)


# Pullbacks that add a complex cotangent into a real array's adjoint in place: they run with
# complex adjoints (runtime.complex_adjoints) from the first time that happens. Held weakly,
# never by id(): a pullback freed and another made at its address ran in complex mode (a
# complex cotangent then reached a checkpointed loop's check: a CotangentError, at random)
#
# Both sets pickle as references to this module's own (_SharedPullbacks, _SharedRefs): a
# gradient closure reads them as globals, and cloudpickle pickles a closure with the globals
# it reads by value (dask tokenizes grad(f) through its partial's function): once a complex
# pullback was in the set, its weak references did not pickle and dask refused every
# gradient function ("cannot be deterministically hashed").
class _SharedPullbacks(weakref.WeakSet):  # type: ignore[type-arg]
    def __reduce__(self) -> tuple[Any, ...]:
        return (_complex_pullbacks, ())


class _SharedRefs(set):  # type: ignore[type-arg]
    def __reduce__(self) -> tuple[Any, ...]:
        return (_complex_refs, ())


def _complex_pullbacks() -> Any:
    return COMPLEX_PULLBACKS


def _complex_refs() -> Any:
    return COMPLEX_REFS


COMPLEX_PULLBACKS: weakref.WeakSet[Any] = _SharedPullbacks()
COMPLEX_PULLBACKS.data = _SharedRefs()


# its set of references: empty or not in one C call (WeakSet.__len__ is Python code, 0.15 us
# of every gradient call); a dead reference in it only sends a call to the membership test
COMPLEX_REFS = COMPLEX_PULLBACKS.data


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


def run_pullback(pullback: Callable[..., Any], saved: Any, out_bar: Any,
                  complex_values: bool = False, stores_retry: bool = False,
                  rerun: bool = True) -> Any:
    """``pullback(saved, out_bar)``; again with complex adjoints for real buffers when a complex
    cotangent reached a real one (NumPy refuses ``float_adjoint += complex``). A pullback can
    run any number of times (it only reads what the forward pass saved), so the retry is
    safe; it is remembered, so the next call goes straight to complex adjoints.
    ``complex_values`` (:func:`may_be_complex`): a complex cotangent that a rule would store
    into a real array raises, naming the line, instead of losing its imaginary part.
    ``stores_retry`` (set by that check, which turns NumPy's ComplexWarning into an error):
    a complex cotangent *stored* into a real adjoint (``x_bar[3:] = t2_bar`` of
    ``z = x[:3] + 1j * x[3:]``) is retried with complex adjoints as an added one is; only a
    store that still drops an imaginary part then (a rule's own real zeros) is refused.
    Python's float arithmetic raising in it is run again with NumPy numbers
    (:func:`run_pullback_ieee`) unless ``rerun`` is false (a pullback that consumes its saved
    arrays)."""
    if complex_values:
        # NumPy only warns when a complex value is stored into a real array (a rule's zeros):
        # the imaginary part would be dropped, a silently wrong gradient
        with warnings.catch_warnings():
            warnings.simplefilter("error", np.exceptions.ComplexWarning)
            try:
                return run_pullback(pullback, saved, out_bar, stores_retry=True, rerun=rerun)
            except np.exceptions.ComplexWarning as exc:
                raise runtime.locate(NonDifferentiableError(
                    "a complex cotangent reached a derivative rule that handles real values "
                    "only: its imaginary part would be dropped",
                    hint="apply that operation to real values (np.abs(z), z.real, z.imag) "
                         "before it, or register an adgen.rrule that handles complex "
                         "values"), exc.__traceback__) from None
    if pullback not in COMPLEX_PULLBACKS:
        try:
            return pullback(saved, out_bar)
        except TypeError as exc:
            if not complex_into_real(exc):
                raise
        except np.exceptions.ComplexWarning:
            if not stores_retry:
                raise
        except (ZeroDivisionError, OverflowError) as exc:
            if not rerun:
                raise
            return run_pullback_ieee(None, pullback, saved, out_bar, exc)
        try:
            COMPLEX_PULLBACKS.add(pullback)
        except TypeError:  # not weakly referable: it tries the real adjoints first each time
            pass
    with runtime.complex_adjoints():
        try:
            return pullback(saved, out_bar)
        except TypeError as exc:
            if not complex_into_real(exc):
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


def run_pullback_again(compiled: Any, pullback: Callable[..., Any], saved: Any,
                        out_bar: Any, exc: TypeError | None = None) -> Any:
    """The pullback run again with complex adjoints (:func:`run_pullback`) after a complex
    cotangent reached a real buffer; refused, loudly, for a single-use pullback that may
    have written its saved arrays already."""
    if getattr(compiled, "consumes", None):
        raise runtime.locate(UnsupportedError(
            "a complex cotangent reached a real array in grad's pullback, which writes the "
            "forward's saved arrays in place and cannot run again with complex adjoints",
            hint="use adgen.vjp(f, *args)[1](1.0), whose pullback can run again, or make "
                 "the complex values real (np.real, np.abs) before they reach real ones"),
            exc.__traceback__ if exc is not None else None) from None
    return run_pullback(pullback, saved, out_bar)


def run_pullback_ieee(compiled: Any, pullback: Callable[..., Any], saved: Any, out_bar: Any,
                      exc: ArithmeticError) -> Any:
    """The pullback run again with the Python floats it was given (the seed 1.0, the saved
    numbers) as NumPy float64 numbers, after Python's float arithmetic raised in it: a
    derivative that divides by zero (``g / x`` of ``np.log(x)`` at ``x = 0.0``, ``x ** -0.5`` of
    ``x ** 0.5``) or overflows (``x ** -2`` at ``1e-200``) is then inf or nan with NumPy's
    RuntimeWarning, as JAX gives and as it is for an array. The forward keeps Python's rules
    (the user's own ``1 / x`` at ``0.0`` raises as it does without adgen). Refused with the
    error itself for a pullback that may have written its saved arrays already (single use)."""
    if getattr(compiled, "consumes", None):
        raise exc
    return run_pullback(pullback, numpy_numbers(saved), numpy_numbers(out_bar), rerun=False)


def numpy_numbers(v: Any) -> Any:
    """``v`` with each Python float, itself or in a (nested) plain tuple, as a NumPy float64
    (the same number, computed with by IEEE rules: no ZeroDivisionError)."""
    if type(v) is float:
        return np.float64(v)
    if type(v) is tuple:
        return tuple(numpy_numbers(e) for e in v)
    return v


def complex_into_real(exc: TypeError) -> bool:
    """Whether a pullback failed because a complex cotangent was added into a real buffer
    (``float_adjoint += complex``): it then runs again with complex adjoints."""
    text = str(exc)
    return "complex" in text and "float" in text


def single_use_seed(out: Any) -> Any:
    """grad's seed for ``out`` (:func:`scalar_output`) as a float or a float64 array: a
    single-use pullback (transforms/single_use.py) computes in place in a saved float64
    array where the seed's dtype cannot widen the product (1.0 in any float dtype is the
    same number)."""
    seed = scalar_output(out)
    if type(seed) is np.ndarray and seed.dtype is not _F64:
        seed = seed.astype(np.float64)
    return seed


def scalar_output(out: Any) -> float:
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
    hint = "reduce it (np.sum, np.mean), or use adgen.vjp for a vector output"
    if out is None:
        hint = "the function returns nothing (a missing return?): return the loss, as in " \
            "return np.sum(...)"
    elif isinstance(out, tuple) and len(out) == 2:
        # return loss, aux (JAX's has_aux form)
        hint = "for a pair (loss, aux) pass has_aux=True: adgen.grad(f, has_aux=True) " \
            "returns (gradient, aux); else " + hint
    raise NonDifferentiableError(
        f"grad needs a scalar output, but the function returned {describe(out)}", hint=hint)


def as_received(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The arguments with the structure they had on entry: new lists, tuples, dicts and
    (shallow) objects holding the same leaves, for a function that rebinds their slots. An
    object or container met again inside itself (a ``logging.Logger`` whose manager holds
    it, a tree node's parent) is its copy there: the walk ended never before. (Shared, not
    nested, the same one is copied at each place, as before.)"""
    within: dict[int, Any] = {}  # the copies of the containers being filled, by id

    def enter(x: Any, out: Any) -> Any:
        within[id(x)] = out
        return out

    def received(x: Any) -> Any:
        if id(x) in within:
            return within[id(x)]
        if isinstance(x, list):
            out_list = enter(x, [])
            out_list.extend(received(v) for v in x)
            del within[id(x)]
            return out_list
        if isinstance(x, tuple):
            items = tuple(received(v) for v in x)
            # a namedtuple stays one: its gradient is built of the primal's type
            return type(x)._make(items) if hasattr(type(x), "_fields") else items
        if isinstance(x, dict):
            out_dict = enter(x, {})
            out_dict.update((k, received(v)) for k, v in x.items())
            del within[id(x)]
            return out_dict
        if hasattr(x, "__dict__") and not isinstance(x, (type, np.generic, np.ndarray)) and \
                not is_function_like(x):
            if str(type(x).__module__).split(".")[0] in sys.stdlib_module_names:
                # (a logging.Logger handed in: no derivative inside, and its manager reaches
                # every logger of the process, copied at each place it is met: no end)
                return x
            try:
                out = enter(x, copy.copy(x))
                for k, v in vars(x).items():
                    setattr(out, k, received(v))
                return out
            except Exception:  # noqa: BLE001 - properties, slots: the object as it is
                return x
            finally:
                within.pop(id(x), None)
        return x

    return tuple(received(a) for a in args)


def cotangents_of(cts: tuple[Any, ...], args: tuple[Any, ...]) -> tuple[Any, ...]:
    """One cotangent per positional argument, shaped like it (None: no float content)."""
    return tuple(as_gradient(ct, a) for ct, a in zip(cts, args))
