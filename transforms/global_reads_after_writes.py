"""Whether a function may read a global or closure array after it writes a parameter in place:
forward mode's question for an argument that is that global (``jvp(f, (G,), (v,))``).

The jvp code runs in the program's order, so ``y = G * x; x[0] = 5.0`` is right with ``G``
passed as ``x`` (the read comes first), but ``x[0] = x[1] * 3.0; return np.sum(G * x)`` reads
the written global as a constant (silently wrong). :func:`reads_after_writes` says whether a
read of a free name, or a call of a function of the user's (which may read one), can run after
one of the writes: later in the body, or anywhere in a loop holding a write. The jvp then
checks the arguments when it runs (``aliased_globals.refuse_aliased_tangents``).

Input: the function's tree, the ids of its statements that write a parameter, its free names,
and a predicate for calls of user functions; output: a bool.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import gast
from adgen.transforms.walk import walk

__all__ = ["reads_after_writes"]

_BODIES = ("body", "orelse", "finalbody")


def reads_after_writes(tree: gast.FunctionDef, writes: set[int], free: set[str],
                       user_call: Callable[[gast.Call], bool]) -> bool:
    """Whether a read of one of ``free`` (or a call ``user_call`` accepts) may run after a
    statement whose id is in ``writes``."""
    if not writes or not free:
        return False

    def reads(s: gast.AST) -> bool:
        return any((isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and
                    n.id in free) or (isinstance(n, gast.Call) and user_call(n))
                   for n in walk(s))

    written = False
    for s, loops in _in_order(tree.body, ()):
        if written and reads(_own_part(s)):
            return True
        if id(s) in writes:
            written = True
            # a loop around the write runs its reads again after it
            if any(reads(loop) for loop in loops):
                return True
    return False


def _in_order(stmts: list[gast.stmt], loops: tuple[gast.stmt, ...]
              ) -> Iterator[tuple[gast.stmt, tuple[gast.stmt, ...]]]:
    """The statements in the order they run first, each with the loops around it."""
    for s in stmts:
        yield s, loops
        inner = loops + (s,) if isinstance(s, (gast.For, gast.While)) else loops
        for field in _BODIES:
            yield from _in_order(getattr(s, field, None) or [], inner)
        for h in getattr(s, "handlers", None) or []:
            yield from _in_order(h.body, inner)


def _own_part(s: gast.stmt) -> gast.AST:
    """What a statement itself evaluates (a compound statement's test or iterable, not its
    body, which :func:`_in_order` lists)."""
    if isinstance(s, (gast.If, gast.While)):
        return s.test
    if isinstance(s, gast.For):
        return s.iter
    if isinstance(s, (gast.Try, gast.FunctionDef)):
        return gast.Pass()
    return s
