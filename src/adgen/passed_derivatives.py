"""Which values a call adgen resolves only when it runs hands over with a derivative, and
the refusals that follow from it.

A derivative reaching a rule's argument that the rule does not differentiate in
(``np.linalg.norm``'s ``ord``, ``np.var``'s ``ddof``: rules.nondiff_params) is refused where
the compiler sees the call. A call it finds only when the call runs (``Model(s).energy(x)``
reading ``self.order``, ``f = np.var if ... else np.std; f(x, ddof=d)``) goes through
``runtime.call_forward``, which knew only the values: the callee was compiled for any
arguments, whose refusal is dropped there (``Compiled.nondiff_refusal``), so the derivative
became a silent zero. The caller's forward now says which of the values it passes carry a
derivative (``call_forward(f, x, d, __adgen_active__=(False, True, True))``: the function's
object first, then the arguments, then the keywords' values, in order; no keyword when all
do, emitted by ``reverse_forward.Forward.passed_active``), and the dispatch:

- for a function with a rule, refuses the call where such a value reaches a parameter the rule
  does not differentiate in (:func:`refuse_rule_call`);
- for a Python function, compiles it for the parameters that receive one (``wrt``, a key of
  the compile cache, :func:`active_positions`), whose compilation refuses as a direct call's
  does, and raises a refusal the compilation kept (:func:`refuse_kept`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from adgen.errors import UnsupportedError
from adgen.rules.nondiff_params import active_nondiff, refusal_text

__all__ = ["ALL_ACTIVE", "MASK_KEYWORD", "active_positions", "closure_positions", "for_passed", "partial_mask",
           "receiver_first", "receiver_flags", "refuse_kept", "starred_mask", "refuse_rule_call", "refuse_rule_tangents",
           "split_mask"]

# the keyword of call_forward carrying the mask (never a keyword of the user's call)
MASK_KEYWORD = "__adgen_active__"

# call_forward without the keyword: every value it passes carries a derivative
ALL_ACTIVE = True

# (refuse_rule_tangents: a keyword argument whose tangent is not zero)
_KEYWORD = object()


def split_mask(kwargs: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """``kwargs`` without the mask, and the mask (:data:`ALL_ACTIVE` where there was none)."""
    if MASK_KEYWORD not in kwargs:
        return kwargs, ALL_ACTIVE
    rest = dict(kwargs)
    return rest, rest.pop(MASK_KEYWORD)


def _flags(mask: Any, n_args: int, kwargs: dict[str, Any]
           ) -> tuple[bool, tuple[bool, ...], dict[str, bool]]:
    """(the function's object, each positional argument, each keyword) of ``mask``."""
    if mask is ALL_ACTIVE:
        return True, (True,) * n_args, dict.fromkeys(kwargs, True)
    mask = tuple(mask)
    if len(mask) != 1 + n_args + len(kwargs):  # (a mask for another call: refuse nothing less)
        return True, (True,) * n_args, dict.fromkeys(kwargs, True)
    return bool(mask[0]), tuple(map(bool, mask[1:1 + n_args])), dict(
        zip(kwargs, map(bool, mask[1 + n_args:])))


def refuse_rule_call(rule: Any, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                     mask: Any) -> None:
    """Refuses ``fn(*args, **kwargs)`` (``fn`` has the rule ``rule``, found when the call
    runs) where a value with a derivative reaches a parameter ``rule`` does not differentiate
    in.

    Raises:
        UnsupportedError: then, without a location (the forward's annotation gives the
            user's line).
    """
    _, positional, keywords = _flags(mask, len(args), kwargs)
    try:
        bound = rule.bind(list(positional), dict(keywords))
    except TypeError:
        return  # (the call itself raises Python's error)
    param = active_nondiff(rule, bound, lambda v: v is True or (
        isinstance(v, (tuple, list)) and any(x is True for x in v)))
    if param is not None:
        msg, hint = refusal_text(rule, param)
        shown = getattr(fn, "__qualname__", None) or rule.name
        raise UnsupportedError(f"{msg} (the function, {shown}, was found when the call ran)",
                               hint=hint)


def refuse_rule_tangents(rule: Any, fn: Any, bound: dict[str, Any],
                         tangents: tuple[Any, ...],
                         kw_tangents: dict[str, Any] | None = None) -> None:
    """Forward mode's :func:`refuse_rule_call`: ``bound`` maps ``rule``'s parameters to the
    positions of the call's arguments (``rule.bind`` of their indices), ``tangents`` holds
    one per position (None: none), ``kw_tangents`` the keyword arguments' by name (None:
    none); a tangent that is not zero reaching a parameter the rule does not differentiate
    in is refused, as the jvp of a direct call refuses it
    (helpers_tangent.refuse_nonzero_tangent).

    Raises:
        UnsupportedError: then.
    """
    from adgen.rules.helpers_tangent import tangent_is_zero
    from adgen.rules.registry import Default

    def carries(k: Any) -> bool:
        if isinstance(k, tuple):
            return any(map(carries, k))
        return type(k) is int and k < len(tangents) and not tangent_is_zero(tangents[k])

    given = {p: k for p, k in bound.items() if not isinstance(k, Default)}
    for k, t in (kw_tangents or {}).items():
        if not tangent_is_zero(t):
            given[k] = _KEYWORD
    param = active_nondiff(rule, given, lambda k: k is _KEYWORD or carries(k))
    if param is not None:
        msg, hint = refusal_text(rule, param)
        shown = getattr(fn, "__qualname__", None) or rule.name
        raise UnsupportedError(f"{msg} (the function, {shown}, was found when the call ran)",
                               hint=hint)


def active_positions(target: Any, receiver: tuple[Any, ...], args: tuple[Any, ...],
                     kwargs: dict[str, Any], mask: Any, vararg: int | None,
                     fresh_receiver: bool = False) -> tuple[int, ...] | None:
    """The positions of ``target``'s parameters (as ``compile_function``'s ``wrt`` counts
    them) given a value with a derivative by the call ``target(*receiver, *args,
    **kwargs)``; None where that cannot be told (a keyword into ``**kwargs``): every
    parameter. ``fresh_receiver``: the receiver is an object being built (``__init__``'s),
    which has none."""
    code = target.__code__
    n = code.co_argcount + code.co_kwonlyargcount + (vararg is not None)
    names = code.co_varnames[:n]
    owner, positional, keywords = _flags(mask, len(args), kwargs)
    flags = (owner and not fresh_receiver,) * len(receiver) + positional
    wrt: set[int] = set()
    for k, f in enumerate(flags):
        if f:
            wrt.add(k if vararg is None or k < vararg else vararg)
    for k, f in keywords.items():
        if not f:
            continue
        if k not in names:
            return None  # (into **kwargs of a function for_keywords did not rewrite)
        wrt.add(names.index(k))
    return tuple(sorted(wrt))


def for_passed(compiled: Any, recompile: Callable[[tuple[int, ...]], Any], target: Any,
               receiver: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any],
               mask: Any, vararg: int | None, fresh_receiver: bool = False) -> Any:
    """``compiled`` (``target`` compiled for any arguments) where it kept no refusal
    (Compiled.nondiff_refusal) or the caller did not say what it passes (``mask`` None);
    else ``target`` compiled for the parameters the call gives a value with a derivative
    (``recompile(wrt)``, :func:`active_positions`), whose refusal is raised, as a direct
    call's is: the compilation for any arguments would drop such a derivative. With none
    passed, ``compiled`` loses nothing.

    Raises:
        UnsupportedError: that refusal, located at the rule's call in ``target``.
    """
    if mask is None or getattr(compiled, "nondiff_refusal", None) is None:
        return compiled
    wrt = active_positions(target, receiver, args, kwargs, mask, vararg, fresh_receiver)
    if wrt == ():
        return compiled
    if wrt is not None:
        compiled = recompile(wrt)
    refuse_kept(compiled)
    return compiled


def partial_mask(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], mask: Any) -> Any:
    """The mask of the call ``fn.func(*fn.args, *args, **{**fn.keywords, **kwargs})`` a
    ``functools.partial`` ``fn`` makes of a call with ``mask``: the partial's own arguments
    were bound from values without a derivative (the compiler refuses one with)."""
    if mask is None:
        return None
    owner, positional, keywords = _flags(mask, len(args), kwargs)
    merged = {**fn.keywords, **kwargs}
    return (owner, *(False,) * len(fn.args), *positional,
            *(keywords.get(k, False) for k in merged))


def starred_mask(mask: Any, n_lead: int, n_passed: int, kwargs: dict[str, Any]) -> Any:
    """The mask of the call ``call_starred`` makes of ``f(*xs, **kw)`` (starred_calls):
    ``mask`` is the caller's for ``call_starred(f, method, xs, kw, line)``; ``f`` (or the
    object whose method it is) gives the object's flag and the ``n_lead`` values before the
    items (an array's own method: the array, its shape tuple), each of the ``n_passed``
    items of ``xs`` takes ``xs``'s, each keyword ``kw``'s. None where ``mask`` is."""
    if mask is None:
        return None
    _, (fn, _, xs, kw, *_) = _flags(mask, 5, {})[:2]
    lead = (fn, xs)[:n_lead]
    return (fn, *lead, *(xs,) * n_passed, *(kw,) * len(kwargs))


def receiver_flags(mask: Any, n_receiver: int, n_args: int, kwargs: dict[str, Any]) -> Any:
    """The mask of ``fn(*receiver, *args, **kwargs)`` (a method's function given its object)
    for a call with ``mask``: the object's flag for the receiver, the function value's
    (``mask[0]``) kept first. None where ``mask`` is."""
    if mask is None:
        return None
    owner, positional, keywords = _flags(mask, n_args, kwargs)
    return (owner, *(owner,) * n_receiver, *positional, *keywords.values())


def closure_positions(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], mask: Any
                      ) -> tuple[int, ...] | None:
    """The positions (``compile_closure``'s ``wrt``) of the nested def ``fn``'s parameters
    given a value with a derivative by the call ``fn(*args)`` with ``mask`` (its flag for the
    function value, ``mask[0]``, the free variables'): its own parameters first, then its
    free variables. None where that cannot be told (keywords, defaults, ``*args``, no mask)."""
    code = fn.__code__
    if mask is None or kwargs or fn.__defaults__ or fn.__kwdefaults__ or \
            code.co_flags & 0x0C or code.co_kwonlyargcount or len(args) != code.co_argcount:
        return None
    owner, positional, _ = _flags(mask, len(args), {})
    wrt = [k for k, f in enumerate(positional) if f]
    if owner:
        wrt += range(code.co_argcount, code.co_argcount + len(code.co_freevars))
    return tuple(wrt)


def receiver_first(mask: Any, n_args: int, kwargs: dict[str, Any]) -> Any:
    """The mask of ``method(obj, *args, **kwargs)`` for a call ``obj.method(*args,
    **kwargs)`` with ``mask`` (the object's flag its first argument's)."""
    owner, positional, keywords = _flags(mask, n_args, kwargs)
    return (False, owner, *positional, *keywords.values())


def refuse_kept(compiled: Any) -> None:
    """Raises the refusal ``compiled`` kept for its callers (a compilation for any
    arguments, or for the parameters ``active_positions`` gave, where a derivative reaches a
    rule's argument without one: Compiled.nondiff_refusal)."""
    refused = getattr(compiled, "nondiff_refusal", None)
    if refused is not None:
        raise refused
