"""The layout of a compiled function's saved values, for its callers: which elements of the
tuple its forward hands to its pullback are its parameters as it received them.

A caller of a user function keeps the callee's saved tuple until the callee's pullback runs:
in a loop, one tuple per call per iteration (rk4's right-hand side, ``(W, t2, y)``, four
times a step), although the caller holds two of its three elements itself: the arguments it
passed. With the layout, the caller keeps only the elements the callee made (``t2``), each
on its own, and builds the tuple again when it calls the pullback, from its own reads of the
arguments (``rhs_pullback((W, rhs_t2, t7), g, sh)``; ``reverse_calls.Calls``).

Input: a compiled function (``pipeline.Compiled``): its final forward and pullback trees
(``trees``), the callees it calls (their ``Compiled``, by symbol), and the parameters it
writes in place.
Output: a :data:`Layout`, or None where a caller must keep the tuple whole:

- every ``return`` of the forward is ``return (out, saved)`` with one ``saved`` display
  (a tuple of names, or of such tuples: the free values travel in a second one);
- an element is a parameter (its position) only if it is a positional parameter of the
  forward (no ``*args``, ``**kwargs`` or keyword-only parameters), which the forward never
  binds again and the function does not write in place: the object the caller passed, with
  the contents the caller sees;
- the pullback uses no shadow memory: ``sh`` is read nowhere but as the map handed on to a
  callee's pullback that has a layout itself (transitively shadow-free). Shadow memory
  finds an adjoint by the object's identity (``sh.of(v)`` of a view of a parameter), and a
  caller's own read of an argument may be another object with the same values (a row of a
  typed tape, an element read again from the final array).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Union

import gast
from adgen.transforms.walk import walk

# an element: a parameter's position (int), a value the callee made (str: the name it had
# there, for the caller's name of it), or a nested display (a tuple of elements)
Layout = tuple[Union[int, str, "Layout"], ...]


def saved_layout(compiled: Any, _seen: frozenset[int] = frozenset()) -> Layout | None:
    """The layout of the saved values of ``compiled`` (a ``pipeline.Compiled``: its final
    forward and pullback trees, its callees, the parameters it writes; see the module
    docstring), or None."""
    trees = getattr(compiled, "trees", None)
    if not trees or id(compiled) in _seen:
        return None  # another backend's, or a recursive call's compilation in progress
    forward, pullback = trees[0], trees[1]
    args = forward.args
    if args.vararg is not None or args.kwarg is not None or args.kwonlyargs or \
            getattr(args, "posonlyargs", None):
        return None
    if not _shadow_free(pullback, compiled.callees, _seen | {id(compiled)}):
        return None
    params = {a.id: k for k, a in enumerate(args.args) if isinstance(a, gast.Name)}
    saved = None
    for node in walk(forward):
        if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda)) and \
                node is not forward:
            return None
        if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Del)):
            params.pop(node.id, None)  # bound again: not the object received
        if isinstance(node, gast.Return):
            value = node.value
            if not (isinstance(value, gast.Tuple) and len(value.elts) == 2):
                return None
            if saved is None:
                saved = value.elts[1]
            elif gast.dump(saved) != gast.dump(value.elts[1]):
                return None
    if not isinstance(saved, gast.Tuple):
        return None
    written = compiled.written_params
    if written is True:
        params = {}
    else:
        params = {p: k for p, k in params.items() if p not in written}
    return _layout(saved, params)


def _layout(display: gast.Tuple, params: dict[str, int]) -> Layout:
    out: list[int | str | Layout] = []
    for e in display.elts:
        if isinstance(e, gast.Tuple):
            out.append(_layout(e, params))
        elif isinstance(e, gast.Name) and e.id in params:
            out.append(params[e.id])
        else:
            out.append(e.id if isinstance(e, gast.Name) else "part")
    return tuple(out)


def _shadow_free(pullback: gast.FunctionDef, callees: Mapping[str, Any],
                 seen: frozenset[int]) -> bool:
    """Whether ``pullback`` reads ``sh`` only to hand it to callees' pullbacks that have a
    layout (and so use no shadow memory either)."""
    handed: set[int] = set()
    for node in walk(pullback):
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and \
                node.func.id.endswith("_pullback") and node.args and \
                isinstance(node.args[-1], gast.Name) and node.args[-1].id == "sh" and \
                not node.keywords:
            callee = callees.get(node.func.id[:-len("_pullback")])
            if callee is not None and saved_layout(callee, seen) is not None:
                handed.add(id(node.args[-1]))
    return all(id(n) in handed for n in walk(pullback)
               if isinstance(n, gast.Name) and n.id == "sh" and isinstance(n.ctx, gast.Load))


def elements(layout: Layout, path: tuple[int, ...] = ()
             ) -> Iterator[tuple[tuple[int, ...], int | str]]:
    """Each element of ``layout`` that is not a display, with its path of indices."""
    for k, e in enumerate(layout):
        if isinstance(e, tuple):
            yield from elements(e, path + (k,))
        else:
            yield path + (k,), e


def rebuilt(layout: Layout, value_of: Mapping[tuple[int, ...], gast.expr],
            path: tuple[int, ...] = ()) -> gast.Tuple:
    """The saved display again, each element the caller's expression for its path."""
    elts = [rebuilt(e, value_of, path + (k,)) if isinstance(e, tuple) else
            value_of[path + (k,)] for k, e in enumerate(layout)]
    return gast.Tuple(elts=elts, ctx=gast.Load())
