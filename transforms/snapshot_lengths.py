"""A grown list's snapshot on a loop's tape as its length: the pullback takes the same items
again from the list as the function left it.

Input: the plan of a function and a loop whose reversed body reads a name ``t`` bound by
``t = list_snapshot(L)`` (transforms/grown_list_reads.py: ``np.array(hist)`` read before
``hist.append(h)``) only for its shape (``shape_tree(t)``, a zero of it:
shape_saves.read_for_shape_only). Output: those ``t`` whose list ``L`` only grows, each with
``L``: the loop's row keeps ``len(t)`` (an int) and the reversed body binds ``t =
L[:t_len]`` again at its top (Rows.snapshot_lengths).

Why: the row kept the snapshot, a list of every item so far, so ``hist.append(h); a =
np.array(hist)`` at every step kept n(n + 1) / 2 references for n steps (a list object per
step besides), where the pullback reads only the shapes of the items the read saw.

When the items are the same: ``L`` is bound once, outside every loop, to a list display;
every other mention of ``L`` in the function reads it as the receiver of a statement
``L.append(v)`` / ``L.extend(vs)``, as the argument of ``list_snapshot(L)`` or ``len(L)``,
or reads an item (``L[i]``, ``L[1:]``); no nested def reads it. Then nothing rebinds,
removes or reorders an item, no other name or object holds ``L`` (nothing may change it
after the function returns, before the pullback runs), and the first ``len(t)`` items of
the final list are the items ``t`` held. Anything else (a store ``L[0] = v``, ``L.pop()``,
``return L``, ``y = L``, a call given ``L``, a loop over it) keeps the snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import gast
from adgen.transforms.analyses.kinds import is_builtin
from adgen.transforms.desugar import assign, name
from adgen.transforms.reverse_ast import is_comment
from adgen.transforms.shape_saves import read_for_shape_only
from adgen.transforms.walk import walk

if TYPE_CHECKING:
    from adgen.transforms.reverse_ast import Recording
    from adgen.transforms.reverse_plan import Plan

_GROWING = frozenset({"append", "extend"})
_READS = frozenset({"list_snapshot", "len"})


def lengths_of_snapshots(plan: Plan, rec: Recording, fresh: Callable[[str], str],
                         s: gast.For | gast.While, recorded: list[str],
                         body: list[gast.stmt]) -> list[str]:
    """``recorded`` (a loop's row) with each snapshot of :func:`snapshots_read_for_shape`
    replaced by a fresh name for its length (``rec.shape_of``: ``(t, "len")``, which the
    forward records as ``len(t)``), and ``t = L[:t_len]`` inserted at the top of the
    reversed ``body``."""
    found = snapshots_read_for_shape(plan, recorded, body)
    # bound at the top of the loop's body, in every iteration (where a branch may skip it,
    # the row would take len of the None that stands for it)
    top = {id(st) for st in s.body}
    found = {r: lst for r, lst in found.items() if id(plan.def_stmt.get(r)) in top}
    if not found:
        return recorded
    again: list[gast.stmt] = []
    out: list[str] = []
    for r in recorded:
        if r not in found:
            out.append(r)
            continue
        n = fresh(f"{r}_len")
        rec.shape_of[n] = (r, "len")
        rec.extra_fwd.add(n)
        out.append(n)
        again.append(assign(name(r, gast.Store), gast.Subscript(
            value=name(found[r]), slice=gast.Slice(lower=None, upper=name(n), step=None),
            ctx=gast.Load()), plan.def_stmt.get(r) or s))
    head = 1 if body and is_comment(body[0]) else 0
    body[head:head] = again
    return out


def snapshots_read_for_shape(plan: Plan, recorded: list[str], body: list[gast.stmt]
                             ) -> dict[str, str]:
    """``{t: L}`` for the names of ``recorded`` (a loop's row) bound by ``t =
    list_snapshot(L)`` that the reversed ``body`` reads only for their shape, where ``L``
    only grows (module docstring)."""
    lists: dict[str, str] = {}
    for r in recorded:
        at = plan.def_stmt.get(r)
        v = at.value if isinstance(at, gast.Assign) else None
        if isinstance(v, gast.Call) and isinstance(v.func, gast.Name) and \
                v.func.id == "list_snapshot" and len(v.args) == 1 and not v.keywords and \
                isinstance(v.args[0], gast.Name) and plan.def_count.get(r) == 1:
            lists[r] = v.args[0].id
    if not lists:
        return {}
    shaped = read_for_shape_only(body, set(lists))
    return {r: L for r, L in lists.items() if r in shaped and only_grows(plan, L)}


def only_grows(plan: Plan, lst: str) -> bool:
    """Whether the list ``lst`` is bound once, outside every loop, to a list display, and
    every other mention of it only grows it or reads it (module docstring)."""
    at = plan.def_stmt.get(lst)
    if not (isinstance(at, gast.Assign) and isinstance(at.value, gast.List) and
            plan.def_count.get(lst) == 1 and plan.loops_of.get(id(at), ()) == () and
            lst not in plan.parsed.closure_free and
            lst not in {a.id for a in plan.fn.args.args}):
        return False
    allowed: set[int] = {id(at.targets[0])}
    for node in walk(plan.fn):
        if isinstance(node, gast.Expr) and isinstance(node.value, gast.Call):
            f = node.value.func
            if isinstance(f, gast.Attribute) and f.attr in _GROWING and \
                    isinstance(f.value, gast.Name) and f.value.id == lst:
                allowed.add(id(f.value))
        elif isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and \
                node.func.id in _READS and len(node.args) == 1 and not node.keywords and \
                isinstance(node.args[0], gast.Name) and node.args[0].id == lst and \
                (node.func.id == "list_snapshot" or
                 is_builtin(node.func, plan.resolve_or_none)):
            allowed.add(id(node.args[0]))  # (len: the builtin, not a global of that name)
        elif isinstance(node, gast.Subscript) and isinstance(node.ctx, gast.Load) and \
                isinstance(node.value, gast.Name) and node.value.id == lst:
            allowed.add(id(node.value))
    return all(id(node) in allowed for node in walk(plan.fn)
               if isinstance(node, gast.Name) and node.id == lst)
