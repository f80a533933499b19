"""numba_callees: what the numba backend's module is compiled from besides the function.

- :func:`callee_trees`: the functions it calls, as the default pipeline compiled them
  (``numba_module.Callee`` trees, recursively), refusing recursion and registered rules at
  the call's line (:func:`call_at`);
- :func:`callee_names`, :func:`names_in`: the callees' names, and every name their code
  reads (a global read there stays a global, not an argument);
- :func:`read_at`: where the forward first reads a free name, for a refusal of a global.

Each Callee is compiled again for the types a call passes it where its caller's code fits
that compilation (``Callee.for_types``: adgen.transforms.numba_typed_callees).
"""

from __future__ import annotations

import functools
import linecache
from typing import Any

import gast

from adgen.errors import Location, UnsupportedError

__all__ = ["call_at", "callee_names", "callee_trees", "names_in", "read_at"]


def callee_trees(caller: Any, memo: dict[int, Any],
                  chain: tuple[str, ...] = ()) -> dict[str, Any]:
    """The callees of a compiled function as numba_module's Callee trees, recursively."""
    from adgen.transforms.numba_module import Callee
    from adgen.transforms.numba_typed_callees import typed_callee

    out = {}
    for sym, c in caller.callees.items():
        if c.trees is None and c.name in chain + (caller.name,):
            path = chain[chain.index(c.name) + 1:] + (caller.name,) if c.name in chain else ()
            via = f" through {' -> '.join(path)}" if path else ""
            raise UnsupportedError(
                f"the numba backend does not differentiate recursion ({c.name} calls "
                f"itself{via})", call_at(caller.trees, sym),
                hint="use backend='default' / 'auto'")
        if c.trees is None:
            raise UnsupportedError(
                f"{c.name} is differentiated by a registered rule, which the numba backend "
                "cannot call from nopython code", call_at(caller.trees, sym),
                hint="use backend='default' / 'auto'")
        hit = memo.get(id(c))
        if hit is None:
            forward, pullback, file = c.trees
            hit = memo[id(c)] = Callee(forward, pullback, file, retype=None if getattr(
                c, "function", None) is None else functools.partial(typed_callee, c))
            hit.callees.update(callee_trees(c, memo, chain + (caller.name,)))
        out[sym] = hit
    return out


def names_in(callees: dict[str, Any]) -> set[str]:
    """Every name the callees' generated code reads (recursively)."""
    out: set[str] = set()
    seen: set[int] = set()
    todo = list(callees.values())
    while todo:
        c = todo.pop()
        if id(c) in seen:
            continue
        seen.add(id(c))
        out |= {n.id for t in (c.forward, c.pullback) for n in gast.walk(t)
                if isinstance(n, gast.Name)}
        todo += list(c.callees.values())
    return out


def call_at(trees: Any, sym: str) -> Location | None:
    """Where a forward calls the callee ``sym`` (the user's line)."""
    forward, _, file = trees
    lines = [n.lineno for n in gast.walk(forward) if isinstance(n, gast.Call) and
             isinstance(n.func, gast.Name) and n.func.id == f"{sym}_forward" and
             getattr(n, "lineno", 0)]
    if not lines:
        return None
    src = linecache.getline(file, min(lines))
    return Location(file, min(lines), len(src) - len(src.lstrip()), src)


def callee_names(callees: dict[str, Any], seen: set[int] | None = None) -> set[str]:
    """The names of the functions compiled as callees, recursively: a global bound to one is
    a function the nopython module has in its own rewritten form (a call of it that adgen
    did not rewrite, an inactive one, is a name numba does not know: refused when compiled)."""
    seen = set() if seen is None else seen
    out = set()
    for c in callees.values():
        if id(c) not in seen:
            seen.add(id(c))
            out |= {c.name} | callee_names(c.callees, seen)
    return out


def read_at(base: Any, key: str) -> Location | None:
    """Where the forward first reads the free name ``key`` (the user's line)."""
    forward, _, file = base.trees
    lines = [n.lineno for n in gast.walk(forward) if isinstance(n, gast.Name) and
             n.id == key and getattr(n, "lineno", 0)]
    if not lines:
        return None
    src = linecache.getline(file, min(lines))
    return Location(file, min(lines), len(src) - len(src.lstrip()), src)
