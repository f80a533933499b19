"""``@adgen.checkpoint``: a helper whose forward pass is recomputed by the backward pass.

A differentiated function that calls a checkpointed helper keeps, for that call, copies of
the helper's inputs and its output, not the helper's tape. When the pullback reaches the
call, it runs the helper's forward pass again on copies of the saved inputs (``adgen.vjp``)
and then its pullback: the tape of one call exists at a time, at the price of a second
forward pass of the helper.

It is built on the custom-rule mechanism (``adgen.rrule``): ``checkpoint(fn)`` returns a
wrapper with a rule whose forward calls ``fn`` and whose pullback calls ``adgen.vjp(fn)``.
Forward mode has no tape: ``adgen.jvp`` (and ``hvp``, ``hessian``, ``grad`` of ``grad``)
differentiate ``fn`` itself through the wrapper (``__adgen_checkpoint__``).
"""

from __future__ import annotations

import copy
import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from adgen.arguments import POLICIES
from adgen.errors import Location, UnsupportedError


def checkpoint(fn: Callable[..., Any] | None = None, *,
               mutation: str = "save") -> Any:
    """Marks a helper for recomputation in the backward pass.

        @adgen.checkpoint
        def segment(u, alpha):
            u = u.copy()
            for _ in range(100):
                u[1:-1] += alpha * (u[2:] - 2.0 * u[1:-1] + u[:-2])
            return u

    A gradient of a function that calls ``segment`` keeps copies of each call's inputs
    instead of the 100 steps' tape, and recomputes that tape when the pullback needs it.
    Called outside a gradient, ``segment`` is the plain function.

    Args:
        fn: the helper, a function whose source adgen can read.
        mutation: the policy the helper is differentiated with when it is recomputed
            ("save" or "strict", as for :func:`adgen.grad`); the caller's policy does not
            reach inside a checkpointed helper.

    Returns:
        The wrapper (the decorator when ``fn`` is not given): it calls ``fn``.

    Raises:
        UnsupportedError (at the call in a gradient): when the helper writes one of its
            arguments in place, or receives a float value for a keyword-only parameter (its
            cotangent would have nowhere to go).
    """
    if mutation not in POLICIES:
        raise ValueError(f"mutation must be one of {POLICIES}, not {mutation!r}")
    if fn is None:
        return functools.partial(checkpoint, mutation=mutation)
    inner = getattr(fn, "__adgen_checkpoint__", fn)  # checkpoint(checkpoint(f)): once

    @functools.wraps(inner)
    def checkpointed(*args: Any, **kwargs: Any) -> Any:
        return inner(*args, **kwargs)

    checkpointed.__adgen_checkpoint__ = inner  # type: ignore[attr-defined]
    # adgen.grad / vjp / jvp of the helper itself differentiate the function it wraps
    checkpointed.__adgen_primal__ = inner  # type: ignore[attr-defined]

    def rule(*args: Any, **kwargs: Any) -> tuple[Any, Callable[..., tuple[Any, ...]]]:
        _refuse_float_keywords(inner, kwargs)
        _refuse_argument_writes(inner, mutation)
        # copies: a later in-place write by the caller must not change what is recomputed
        saved_args, saved_kwargs = copy.deepcopy((args, kwargs))
        out = inner(*args, **kwargs)
        seen = sample_values(out)

        def pullback(out_bar: Any) -> tuple[Any, ...]:
            from adgen.api import vjp

            # copies again: the helper may write its own local copies of them, and a
            # pullback may run more than once
            again, again_kw = copy.deepcopy((saved_args, saved_kwargs))
            if not again_kw:
                recomputed, pull = vjp(inner, *again, mutation=mutation)
                refuse_other_values(seen, recomputed, f"the checkpointed helper "
                                    f"{inner.__qualname__}()", _location(inner))
                # an object's gradient (self of a checkpointed method) as the adjoint the
                # caller adds up (two calls' were added as objects: a raw TypeError)
                return tuple(_object_adjoint(c, a) for c, a in zip(
                    pull(_cotangent_like(out_bar, recomputed)), saved_args))
            # keywords as positions, so they get cotangents too; the rule returns one per
            # argument passed, in the order of the helper's parameters (dispatch)
            bound = inspect.signature(inner).bind(*again, **again_kw)
            bound.apply_defaults()
            names = list(bound.arguments)
            recomputed, pull = vjp(inner, *bound.args, mutation=mutation, **bound.kwargs)
            refuse_other_values(seen, recomputed, f"the checkpointed helper "
                                f"{inner.__qualname__}()", _location(inner))
            cts = pull(_cotangent_like(out_bar, recomputed))
            passed = set(names[:len(again)]) | set(again_kw)
            return tuple(_object_adjoint(c, bound.arguments[n])
                         for n, c in zip(names, cts) if n in passed)

        return out, pullback

    try:  # the rule binds arguments as the helper does (the compiler reads its signature)
        rule.__signature__ = inspect.signature(inner)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        pass
    from adgen.rules.registry import defrrule

    defrrule(checkpointed, rule)
    return checkpointed


def _location(fn: Callable[..., Any]) -> Location | None:
    """The helper's ``def`` line."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    import linecache

    return Location(code.co_filename, code.co_firstlineno, 0,
                    linecache.getline(code.co_filename, code.co_firstlineno))


def _has_float(x: Any) -> bool:
    if isinstance(x, (list, tuple)):
        return any(_has_float(v) for v in x)
    if isinstance(x, dict):
        return any(_has_float(v) for v in x.values())
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "fc"
    return isinstance(x, (float, complex, np.floating, np.complexfloating))


def _refuse_float_keywords(fn: Callable[..., Any], kwargs: dict[str, Any]) -> None:
    """A float passed by keyword to a keyword-only parameter could carry a gradient that
    would be dropped (vjp gives keyword-only arguments none), so it is refused; a float
    passed by keyword to a positional-or-keyword parameter gets its cotangent."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        params = {}
    floats = sorted(k for k, v in kwargs.items() if _has_float(v) and
                    (k not in params or params[k].kind == inspect.Parameter.KEYWORD_ONLY))
    if floats:
        raise UnsupportedError(
            f"the checkpointed helper {fn.__qualname__}() is called with a float value by "
            f"keyword-only parameter ({', '.join(floats)}=...): a checkpointed call gives "
            "no gradient to keyword-only parameters", _location(fn),
            hint=f"pass {floats[0]} by position; keywords may carry ints, strings, flags")


def _refuse_argument_writes(fn: Callable[..., Any], mutation: str) -> None:
    """A helper that writes an argument in place changes its caller's buffer, which the
    caller's mutation analysis cannot see through a rule: refused."""
    from adgen.transforms.pipeline import compile_function

    compiled = compile_function(fn, mutation=mutation)
    if compiled.mutates_params or compiled.mutates_containers:
        what = _written_names(fn, compiled.written_params)
        raise UnsupportedError(
            f"the checkpointed helper {fn.__qualname__}() writes {what} in place; a "
            "checkpointed helper must leave its arguments as they are (it is recomputed "
            "from copies of them)", _location(fn),
            hint="write into a copy (x = x.copy() at the top of the helper) and return it, "
                 "or remove @adgen.checkpoint")


def _written_names(fn: Callable[..., Any], written: Any) -> str:
    """The parameters a compiled function writes, by name ("an argument" when unknown)."""
    if written is True or not written:
        return "an argument"
    names = list(inspect.signature(fn).parameters)
    spelled = [names[k] if isinstance(k, int) and k < len(names) else str(k)
               for k in written]
    return ", ".join(sorted(spelled))


def _cotangent_like(ct: Any, out: Any) -> Any:
    """The cotangent the compiler passes, as adgen.vjp takes it: None (no gradient reached
    that part of the output) becomes zeros of its structure; a list for a tuple output
    becomes a tuple."""
    if isinstance(out, (tuple, list)):
        items = ct if isinstance(ct, (tuple, list)) else [None] * len(out)
        return type(out)(_cotangent_like(c, o) for c, o in zip(items, out))
    if isinstance(out, dict):
        got = ct if isinstance(ct, dict) else {}
        return {k: _cotangent_like(got.get(k), v) for k, v in out.items()}
    if ct is None and _has_float(out):
        return np.zeros(np.shape(out)) if isinstance(out, np.ndarray) else 0.0
    return ct


def segment_rule(segment: Callable[..., Any], mutation: str, where: Location,
                 check_names: list[str], shelves: set[int],
                 changed: set[int], returned: set[int]) -> Callable[..., Any]:
    """The callable a segmented loop (``adgen.grad(f, checkpoint=K)``, see
    ``transforms/segment_loops.py``) calls for each segment, with a rule that keeps the
    segment's inputs instead of its tape and recomputes the tape in the backward pass.

    The segment is called with its inputs and then the values of the function's other
    locals (``check_names``): those only serve to check that nothing else shares memory with
    what the segment changes (the segment runs on copies of what it writes, and the loop
    rebinds the names to what it returns, so a view of a changed array elsewhere would keep
    the old values). ``shelves`` are the positions of inputs whose items the loop body never
    writes in place (lists it appends to, dicts whose slots it rebinds): those are copied as
    structures that share their items, and their items may be held by other names too.
    ``changed`` are the positions of the inputs the loop body writes in place (the segment
    may copy them first, so it does not write them itself): they must not share memory with
    anything else either. ``returned`` are the positions of the inputs the segment returns:
    everything it writes must be among them (checked at each call: a helper the loop calls
    may have been rebound since the loop was rewritten).
    """
    n_in = segment.__code__.co_argcount

    def call(*args: Any) -> Any:
        return segment(*args[:n_in])

    def rule(*args: Any) -> tuple[Any, Callable[..., tuple[Any, ...]]]:
        inputs, checks = args[:n_in], args[n_in:]
        # compiled once (cached, and compiled again when a name it reads is rebound)
        written = written_positions(segment, mutation, inputs)
        lost = sorted(k for k in written if k >= 4 and k not in returned)
        if lost:
            names = list(inspect.signature(segment).parameters)
            raise UnsupportedError(
                f"checkpoint=: the loop now writes {', '.join(names[k] for k in lost)} in "
                "place, which it did not when adgen.grad(..., checkpoint=) split it (a "
                "function it calls was redefined)", where,
                hint="call adgen.grad(f, checkpoint=...) again to split the loop anew")
        # only lists, dicts and tuples are shelves: an array written is copied whole
        shelved = {k for k in shelves if isinstance(inputs[k], (list, dict, tuple))}
        _refuse_aliases(inputs, checks, check_names, (written | changed) - shelved, segment,
                        where)
        for k in sorted(written | changed):
            if _is_object(inputs[k]):
                raise UnsupportedError(
                    f"checkpoint=: the loop may change the object "
                    f"{list(inspect.signature(segment).parameters)[k]} in place; a segment "
                    "works on copies of what it changes, and a copy of an object is another "
                    "object", where,
                    hint="keep the loop's state in arrays, lists or dicts (local names), or "
                         "put the steps in a helper decorated with @adgen.checkpoint")
        # the inputs the segment writes are unreachable from the caller's other names
        # (checked above) and the caller rebinds them to the segment's outputs: the inputs
        # themselves are the checkpoint, the runs work on copies
        saved = inputs
        out = segment(*_copied(inputs, written, shelved))
        seen = sample_values(out)

        def pullback(out_bar: Any) -> tuple[Any, ...]:
            from adgen.api import vjp

            recomputed, pull = vjp(segment, *_copied(saved, written, shelved),
                                   mutation=mutation)
            refuse_other_values(seen, recomputed, "checkpoint=: the loop's segment", where)
            cts = pull(_cotangent_like(out_bar, recomputed))
            # the caller's pullback keeps an object's adjoint as ObjectAdjoint, not as the
            # object-shaped gradient adgen.vjp hands to users
            cts = tuple(_object_adjoint(c, a) for c, a in zip(cts, inputs))
            return cts + (None,) * len(checks)

        return out, pullback

    params = [inspect.Parameter(f"a{k}", inspect.Parameter.POSITIONAL_ONLY)
              for k in range(n_in + len(check_names))]
    call.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    rule.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    call.__name__ = call.__qualname__ = segment.__qualname__
    call.__adgen_checkpoint__ = segment  # type: ignore[attr-defined]
    from adgen.rules.registry import defrrule

    defrrule(call, rule)
    return call


def written_positions(fn: Callable[..., Any], mutation: str,
                      args: tuple[Any, ...] | None = None) -> set[int]:
    """The positions of the parameters ``fn`` writes in place: those the compiler names (all
    of them when it cannot tell), and, when it writes into containers, every argument of
    ``args`` that is a list, dict or other object (which of them it cannot tell)."""
    from adgen.transforms.pipeline import compile_function

    compiled = compile_function(fn, mutation=mutation)
    names = list(inspect.signature(fn).parameters)
    written = compiled.written_params
    if written is True and compiled.mutates_params:
        return set(range(len(names)))
    out = {k for k, n in enumerate(names) if n in written} if written is not True else set()
    if compiled.mutates_containers and args is not None:
        out |= {k for k, a in enumerate(args) if not isinstance(
            a, (np.ndarray, float, int, complex, np.generic, str, bytes, type(None)))}
    return out


def _copied(args: tuple[Any, ...], written: set[int], shelves: set[int]) -> tuple[Any, ...]:
    """Copies of the written arguments: whole, or (shelves) as structures sharing items."""
    return tuple(a if k not in written else _structure(a) if k in shelves else
                 copy.deepcopy(a) for k, a in enumerate(args))


def _structure(x: Any) -> Any:
    """A copy of the lists, tuples and dicts in ``x`` that shares everything else."""
    if isinstance(x, list):
        return [_structure(v) for v in x]
    if isinstance(x, dict):
        return {k: _structure(v) for k, v in x.items()}
    if isinstance(x, tuple):
        return tuple(_structure(v) for v in x)
    return x if isinstance(x, (np.ndarray, np.generic, float, int, complex, str, bytes,
                               type(None))) else copy.deepcopy(x)


def _is_object(x: Any) -> bool:
    return hasattr(x, "__dict__") and not isinstance(
        x, (np.ndarray, list, dict, tuple, float, int, complex, str, type)) and \
        not callable(x)


def sample_values(x: Any) -> list[Any]:
    """A small record of the numbers in ``x`` (each array's sum and up to 64 of its elements,
    each number), to check that recomputing a checkpoint gives what the first run gave."""
    out: list[Any] = []
    if isinstance(x, (list, tuple)):
        for v in x:
            out += sample_values(v)
    elif isinstance(x, dict):
        for v in x.values():
            out += sample_values(v)
    elif isinstance(x, np.ndarray) and x.dtype.kind in "fc":
        flat = x.reshape(-1)
        picks = flat[np.linspace(0, flat.size - 1, min(flat.size, 64)).astype(int)] \
            if flat.size else flat
        out += [np.sum(x), picks.copy()]
    elif isinstance(x, (float, complex, np.floating, np.complexfloating)):
        out.append(x)
    return out


def refuse_other_values(seen: list[Any], recomputed: Any, what: str,
                        where: Location | None) -> None:
    """Raises when recomputing a checkpoint gave other values than its first run (a random
    draw, a clock, a global or an object that changed in between): its tape would then
    belong to another computation, and the gradient would be silently wrong."""
    again = sample_values(recomputed)
    same = len(again) == len(seen) and all(
        np.shape(a) == np.shape(b) and np.allclose(a, b, rtol=1e-7, atol=1e-12, equal_nan=True)
        for a, b in zip(seen, again))
    if not same:
        raise UnsupportedError(
            f"{what} was run again for the gradient and gave other values than the first "
            "time: it draws random numbers, or reads something that changed in between (a "
            "clock, a global, an object's state); its recomputed tape would belong to another "
            "computation", where,
            hint="draw the random numbers before the loop (noise = rng.normal(size=(steps, "
                 "n))) and index them in it, or differentiate without checkpointing")


def _object_adjoint(ct: Any, primal: Any) -> Any:
    """An object's gradient as adgen.vjp gives it (a copy of the object holding gradients)
    as the adjoint the compiled code adds up (attribute name -> adjoint)."""
    if _is_object(primal) and type(ct) is type(primal):
        from adgen.runtime import ObjectAdjoint

        return ObjectAdjoint({k: v for k, v in vars(ct).items()
                              if isinstance(v, (float, np.ndarray))})
    return ct


def _array_leaves(x: Any, out: list[Any]) -> list[Any]:
    if isinstance(x, np.ndarray):
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _array_leaves(v, out)
    elif isinstance(x, dict):
        for v in x.values():
            _array_leaves(v, out)
    return out


def _refuse_aliases(inputs: tuple[Any, ...], checks: tuple[Any, ...], check_names: list[str],
                    written: set[int], segment: Callable[..., Any], where: Location) -> None:
    """Refuses a segment call where something the segment writes shares memory (or is the
    same list or dict) with another input or another local of the function."""
    names = list(inspect.signature(segment).parameters)
    for k in sorted(written):
        mine = inputs[k]
        others = [(names[j], v) for j, v in enumerate(inputs) if j != k] + \
                 list(zip(check_names, checks))
        mine_leaves = _array_leaves(mine, [])
        for other_name, other in others:
            shared = other is mine and isinstance(mine, (list, dict, np.ndarray)) or any(
                np.may_share_memory(a, b) for a in mine_leaves
                for b in _array_leaves(other, []))
            if shared:
                raise UnsupportedError(
                    f"checkpoint=: the loop changes {names[k]} in place, and {other_name} "
                    f"shares memory with it; each segment works on a copy of {names[k]}, so "
                    f"{other_name} would miss the loop's changes",
                    where,
                    hint=f"make {names[k]} a fresh array before the loop "
                         f"({names[k]} = {names[k]}.copy()) and read it by that name only")
