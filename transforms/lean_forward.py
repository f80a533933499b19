"""Lean forwards: an array the forward computed is dropped (``del``) after the top-level
statement that reads it for the last time, so the forward's peak is what is alive at once,
not everything it ever bound. A stable softmax's logits (``z``, shifted and exponentiated in
place, then normalised into ``p``) die at the division instead of living until the forward
returns next to ``p``, ``log p`` and ``Y * log p``.

Runs on the finished forward (after ``fold_temporaries``), on the statements of its top level:
a loop, a branch, a ``try`` or a ``with`` there is one opaque statement (every name it reads
is read there; what it binds may not be bound). A name is dropped only where all of these
hold, so the ``del`` can neither fail nor change a value:

- the kinds analysis knows it holds an array (numbers are not worth a line);
- a top-level assignment binds it before the ``del`` (so it is bound on every path there);
- no statement after the ``del`` reads it (the ``return``, which hands the pullback its saved
  values, reads those), and no nested function or lambda reads it (a closure's cell would
  be emptied under it);
- it is not a parameter (the caller holds the argument anyway).

``del`` only drops a reference: a buffer still viewed, aliased or taped by another name stays
alive, and nothing is computed differently.
"""

from __future__ import annotations

from collections.abc import Collection

import gast
from adgen.transforms.walk import names_read, walk


def drop_dead_arrays(fn: gast.FunctionDef, arrays: Collection[str]) -> None:
    """Adds ``del n`` to ``fn``'s top level after the last statement reading each array
    ``n`` it computed (see the module docstring). ``arrays``: the names the kinds analysis
    knows to hold arrays."""
    body = fn.body
    params = {a.id for a in fn.args.args if isinstance(a, gast.Name)}
    params |= {a.id for a in (fn.args.vararg, fn.args.kwarg) if isinstance(a, gast.Name)}
    params |= {a.id for a in fn.args.kwonlyargs if isinstance(a, gast.Name)}
    in_closures: set[str] = set()
    for node in walk(fn):
        if node is not fn and isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef,
                                                gast.Lambda)):
            in_closures |= names_read(node)
    last: dict[str, int] = {}
    for k, st in enumerate(body):
        for n in names_read(st):
            last[n] = k
    bound: set[str] = set()
    new: list[gast.stmt] = []
    for k, st in enumerate(body):
        new.append(st)
        if isinstance(st, (gast.Assign, gast.AugAssign, gast.AnnAssign)):
            targets = st.targets if isinstance(st, gast.Assign) else [st.target]
            bound |= {n.id for t in targets for n in walk(t)
                      if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
        if all(isinstance(later, gast.Return) for later in body[k + 1:]):
            continue  # the return frees them anyway
        dead = sorted(n for n, at in last.items() if at == k and n in bound and n in arrays
                      and n not in params and n not in in_closures)
        if dead:
            new.append(gast.copy_location(
                gast.Delete(targets=[gast.Name(id=n, ctx=gast.Del(), annotation=None,
                                               type_comment=None) for n in dead]), st))
    fn.body[:] = new
