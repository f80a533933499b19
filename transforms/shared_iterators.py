"""Iterators a loop shares: ``for i in it`` where the function also reads ``it`` in or after the
loop (``next(it)`` in the body, ``rest = list(it)`` after a ``break``).

adgen walks a for loop over a list of its items made when the loop starts
(``runtime.loop_sequence``: every item is there for the pullback to index). For a list or
an array that is what Python walks; for an iterator it is not. Python's loop and a
``next(it, None)`` in its body share one iterator, so the body skips the item it draws; with
the items listed first, the loop walked every item and ``next`` found the iterator used up:

    it = iter(range(4))
    for i in it:
        y[i] *= 2          # Python doubles y[0] and y[2]; adgen doubled all four
        next(it, None)

a silently wrong gradient (8x where it is 2x). Refused at the line that reads the iterator
again, where the name is bound to a call that makes an iterator (``iter``, ``map``,
``filter``, ``zip``, ``enumerate``, ``reversed``, a generator expression, an ``itertools``
function). Reads before the loop starts are fine (``next(it)`` to skip a header: the loop
lists what is left).

The reads this check sees are only a part of the story: the iterator may be an argument
(``def g(x, it): for i in it: ... next(it, None)``), held in an attribute or a list
(``for i in h.it: next(h.it)``), an alias (``it2 = it``), given twice (``zip(it, it)``), drawn
from by another (``islice(it, 2)`` then ``next(it)``), advanced by a helper (``skip(it)``),
or lazy over values the loop changes (``map(lambda i: y[i], ...)`` with ``y[...] = ...`` in
the body); and the loop may stop early and leave the rest to code holding the iterator.
Whether the object is an iterator at all is known only when the code runs: those loops are
checked by ``transforms/walked_iterators.py`` (whose checks' reads this module skips).
"""

from __future__ import annotations

from collections.abc import Callable

import gast
from adgen.transforms.walk import walk

from adgen.errors import UnsupportedError

__all__ = ["refuse_shared_iterators"]

_ITERATOR_BUILTINS = frozenset({"iter", "map", "filter", "zip", "enumerate", "reversed"})
_LOOPS = (gast.For, gast.While)


def refuse_shared_iterators(fn: gast.FunctionDef, location: Callable[[gast.AST], object]
                            ) -> None:
    """Raises at the first read of an iterator that a for loop of ``fn`` walks, made in the
    loop's body, after the loop, or anywhere in a loop around it (see the module doc)."""
    iterators = _iterator_names(fn)
    if not iterators:
        return
    loops: list[tuple[gast.For, list[gast.AST]]] = []  # each for loop and the loops around it

    def visit(node: gast.AST, around: list[gast.AST]) -> None:
        for child in gast.iter_child_nodes(node):
            if isinstance(child, gast.For) and isinstance(child.iter, gast.Name) and \
                    child.iter.id in iterators:
                loops.append((child, around))
            if isinstance(child, (gast.FunctionDef, gast.Lambda, gast.ClassDef)):
                continue  # (a nested def reads it when called: hoisted, checked as its own)
            visit(child, around + [child] if isinstance(child, _LOOPS) else around)

    visit(fn, [])
    for comp in walk(fn):  # [x[i] * x[next(it)] for i in it]: the read in the element
        if isinstance(comp, (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)):
            for g in comp.generators:
                if not (isinstance(g.iter, gast.Name) and g.iter.id in iterators):
                    continue
                again = next((n for n in walk(comp) if isinstance(n, gast.Name) and
                              n.id == g.iter.id and isinstance(n.ctx, gast.Load) and
                              n is not g.iter), None)
                if again is not None:
                    raise UnsupportedError(
                        f"reading the iterator {g.iter.id} again while the comprehension "
                        f"walks it (adgen walks a list of the items {g.iter.id} has when the "
                        "comprehension starts, so the two would not share the iterator as "
                        "Python's do)", location(again),
                        hint=f"make the list first ({g.iter.id}_items = list({g.iter.id})) "
                             "and walk it by index")
    checked = {id(m) for n in walk(fn) if isinstance(n, gast.Call) and
               isinstance(n.func, gast.Name) and n.func.id.startswith("walked_iterator")
               for m in walk(n)}  # (check_walked_iterators's checks read it: not the user)
    for loop, around in loops:
        it = loop.iter.id
        start = _position(loop)
        for n in walk(fn):
            if not (isinstance(n, gast.Name) and n.id == it and isinstance(n.ctx, gast.Load))\
                    or n is loop.iter or id(n) in checked:
                continue
            if _position(n) > start or any(_contains(outer, n) for outer in around):
                raise UnsupportedError(
                    f"reading the iterator {it} again while the for loop at line "
                    f"{loop.lineno} walks it, or after it (adgen walks a list of the items "
                    f"{it} has when the loop starts, so the loop and this read would not "
                    "share the iterator as Python's do)", location(n),
                    hint=f"make the list first ({it}_items = list({it})) and walk it by "
                         f"index (for k in range(0, len({it}_items), 2)), or walk the "
                         "sequence the iterator was made from")


def _iterator_names(fn: gast.FunctionDef) -> set[str]:
    """Names bound to a call that makes an iterator (see the module doc)."""
    local = {n.id for n in walk(fn) if isinstance(n, gast.Name) and
             isinstance(n.ctx, gast.Store)} | {a.id for a in fn.args.args}
    out: set[str] = set()
    for s in walk(fn):
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and \
                isinstance(s.targets[0], gast.Name) and _makes_iterator(s.value, local):
            out.add(s.targets[0].id)
    return out


def _makes_iterator(v: gast.expr, local: set[str]) -> bool:
    if isinstance(v, gast.GeneratorExp):
        return True
    if not isinstance(v, gast.Call):
        return False
    f = v.func
    if isinstance(f, gast.Name):
        return f.id in _ITERATOR_BUILTINS and f.id not in local
    return isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and \
        f.value.id == "itertools" and "itertools" not in local


def _position(n: gast.AST) -> tuple[int, int]:
    return (getattr(n, "lineno", 0) or 0, getattr(n, "col_offset", 0) or 0)


def _contains(outer: gast.AST, n: gast.AST) -> bool:
    return any(m is n for m in walk(outer))
