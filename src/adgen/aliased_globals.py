"""Arguments that share memory with a global or closure array the function reads, refused
when the function writes in place.

The effects analysis gives the parameters one buffer and the free names bound to arrays
(globals, closure cells, ``cfg.W``) another (``effects.FREE``): a write of one is no write of
the other. A call that passes the global itself breaks that assumption::

    G = np.array([1., 2., 3., 4.])
    def f(x):
        y = G * x       # the gradient of this line reads G
        x[0] = 5.0      # ... and this writes G too, when x is G
        return np.sum(y * x)
    adgen.grad(f)(G)

The pullback reads ``G`` after the forward ran, with the value ``x[0] = 5.0`` wrote there (a
silently wrong gradient: [25, 8, 18, 32] for [5, 8, 18, 32]); the same when the function
writes the global (``G[0] = 5.0``) and the pullback reads the argument. Only the call can
tell, so :func:`refuse_aliased_globals` checks it before the forward runs, for a compiled
function that writes a parameter or a free array in place and has a free name holding an
array or an object (:func:`may_alias_globals`, decided once per compilation: the gradient
of any other function, and its fast call, check nothing more): an argument whose memory belongs to an array the function's free
names hold (by the array owning it: a view ``G[1:]`` counts) raises a ``MutationError``
naming the argument, the global, the write and the copy to pass, under both policies. A
right gradient would need the global's values from before each write the pullback reads
them after: adgen cannot tell which reads of ``G`` the user meant to see the write.
"""

from __future__ import annotations

import ast
import linecache
from collections.abc import Callable
from typing import Any

import numpy as np

from adgen.arguments import leaves_of, primal_function
from adgen.errors import Location, MutationError
from adgen.held_arrays import free_values, held_owners, owner_of

_PULLBACK_ONLY = ("forced-pullback", "elided-pullback")  # a site's decision about a call


def writes_in_place(compiled: Any) -> bool:
    """Whether ``compiled`` writes a parameter or a global or closure array in place: only
    then can an argument that shares a global's memory give a wrong gradient."""
    return bool(getattr(compiled, "mutates_params", False) or
                getattr(compiled, "free_writes", ()))


def may_alias_globals(compiled: Any) -> bool:
    """Whether a call of ``compiled`` needs :func:`refuse_aliased_globals`: it writes in
    place and a free name of it holds an array or an object (decided once per compilation:
    another kind of value in one of them recompiles)."""
    return writes_in_place(compiled) and bool(free_values(compiled))


def refuse_aliased_globals(compiled: Any, fun: Callable[..., Any], args: tuple[Any, ...],
                           offset: int = 0) -> None:
    """Raises ``MutationError`` when an argument in ``args`` shares memory with an array
    that ``compiled``'s free names hold while ``compiled`` writes that argument (or a free
    array) in place. ``offset``: how many leading ``args`` the user did not pass (a
    method's receiver), for the argument's number in the message."""
    if not writes_in_place(compiled):
        return
    arrays = [(k, leaf) for k, a in enumerate(args)
              for leaf in ((a,) if type(a) is np.ndarray else leaves_of(a))
              if isinstance(leaf, np.ndarray)]
    if not arrays:
        return
    held = held_owners(compiled)
    if not held:
        return  # (None: too many values to search; the arrays named alone are in it)
    for k, leaf in arrays:
        what = held.get(id(owner_of(leaf)))
        if what is not None:
            _refuse(compiled, fun, k, offset, what)


def refuse_aliased_tangents(compiled: Any, fun: Callable[..., Any], args: tuple[Any, ...],
                            tangents: tuple[Any, ...], offset: int = 0) -> None:
    """Forward mode's :func:`refuse_aliased_globals`: raises ``MutationError`` when an array
    argument given a tangent shares memory with an array the free names of ``compiled`` (a
    ``CompiledTangent``) hold while its jvp writes a parameter in place: the write changes
    the global too, which the jvp code takes for a constant (``jvp(f, (G,), (v,))`` with
    ``x[0] = x[1] * 3.0`` gave 20 for 40: silently wrong)."""
    writes = getattr(compiled.jvp, "__adgen_param_writes__", ())
    if not writes:
        return
    arrays = [(k, leaf) for k, (a, t) in enumerate(zip(args, tangents)) if t is not None
              for leaf in ((a,) if type(a) is np.ndarray else leaves_of(a))
              if isinstance(leaf, np.ndarray)]
    if not arrays:
        return
    held = held_owners(compiled)
    if not held:
        return
    names = _parameter_names(fun)
    fname = getattr(primal_function(fun), "__qualname__", "the function")
    for k, leaf in arrays:
        what = held.get(id(owner_of(leaf)))
        if what is None:
            continue
        name = names[k] if k < len(names) else None
        at = writes[0]
        raise MutationError(
            f"argument {k - offset}" + (f" ({name})" if name else "") + f" shares memory "
            f"with {what}, an array {fname} reads as a global or closure variable, and "
            f"{fname} writes an argument in place at line {at.line} "
            f"({at.source_line.strip()}): that write changes {what} too, and forward mode "
            "would take it for a constant (adgen takes arguments and globals for separate "
            "arrays)", at,
            hint=f"pass a copy: jvp(f, ({what}.copy(), ...), ...), or copy the argument "
                 f"before writing it ({name or 'x'} = {name or 'x'}.copy())")


def _refuse(compiled: Any, fun: Callable[..., Any], k: int, offset: int, what: str) -> None:
    """Raises the error for argument ``k``, which shares memory with ``what``, unless
    ``compiled`` writes neither that argument nor a free array."""
    names = _parameter_names(fun)
    written = getattr(compiled, "written_params", True)
    free_writes = getattr(compiled, "free_writes", ())
    name = names[k] if k < len(names) else None
    argument = f"argument {k - offset}" + (f" ({name})" if name else "")
    fname = getattr(primal_function(fun), "__qualname__", "the function")
    if written is True or (name is not None and name in written):
        at = _write_of(compiled, name) or (free_writes[0] if free_writes else None)
        wrote = f"writes {name or 'it'} in place" + (
            f" at line {at.line} ({at.source_line.strip()})" if at else "")
    elif free_writes:
        at = free_writes[0]
        wrote = f"writes a global or closure array in place at line {at.line} " \
            f"({at.source_line.strip()})"
    else:
        return
    raise MutationError(
        f"{argument} shares memory with {what}, an array {fname} reads as a global or "
        f"closure variable, and {fname} {wrote}: that write changes {what} too, and the "
        "gradient would read the changed values (adgen takes arguments and globals for "
        "separate arrays)",
        at,
        hint=f"pass a copy: grad(f)({what}.copy()), or copy the argument before writing "
             f"it ({name or 'x'} = {name or 'x'}.copy())")


def _parameter_names(fun: Callable[..., Any]) -> tuple[str, ...]:
    code = getattr(primal_function(fun), "__code__", None)
    return tuple(code.co_varnames[:code.co_argcount]) if code is not None else ()


def _write_of(compiled: Any, name: str | None) -> Location | None:
    """Where ``compiled`` (or a callee) writes parameter ``name`` in place: the first of its
    mutation sites whose statement writes or passes that name (a site lists the statement's
    text, not the buffer it writes)."""
    first = None
    for s in getattr(compiled, "sites", ()):
        if s.decision in _PULLBACK_ONLY:
            continue
        at = Location(s.file, s.line, s.col, linecache.getline(s.file, s.line))
        first = first or at
        if name is not None and _mentions(s.construct, name):
            return at
    return first


def _mentions(text: str, name: str) -> bool:
    """Whether the statement ``text`` names ``name`` (``x[0] = 5.0``, ``np.exp(x, out=x)``)."""
    try:
        tree = ast.parse(text.strip())
    except SyntaxError:
        return name in text
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(tree))
