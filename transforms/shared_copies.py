"""One copy for two reads of the same part: a later copied capture as a view of an earlier one.

Under ``mutation="save"`` a part of an array that a later write overwrites is copied where the
pullback reads it (``saved_t9 = copy_when_read(t9, ...)``, reverse_captures). Durbin's step
reads ``y[:k]`` for a dot product and ``y[:k][::-1]`` for the update, and each was copied: two
copies of the same elements per step, where a person keeps one. When the second part is the
first part indexed further by a basic index (``t15 = t14[::-1]`` with ``t14`` and ``t9`` both
``y[:k]``), and nothing writes the array between the two copies, the second copy is that index
of the first copy (``saved_t15 = saved_t9[::-1]``): the same values, a view, no bytes.

This pass decides it (``Capture.copy_of``); reverse_forward emits it.
"""

from __future__ import annotations

import gast
from adgen.transforms.reverse_ast import Capture
from adgen.transforms.reverse_plan import Plan
from adgen.transforms.walk import walk


def share_copies(plan: Plan) -> None:
    """Sets ``copy_of`` on each copied capture of ``plan.caps`` that can be a basic index of
    an earlier copied capture's copy (see the module's docstring)."""
    copied = [(key, cap) for key, cap in plan.caps.items()
              if cap.copied and not cap.after and cap.loop is None]
    if len(copied) < 2:
        return
    chains = {key: _chain(plan, cap) for key, cap in copied}
    sources: set[tuple[int, str]] = set()  # copies others are views of: copies themselves
    for key2, cap2 in copied:
        c2 = chains[key2]
        if c2 is None or key2 in sources:
            continue
        for key1, cap1 in copied:
            c1 = chains[key1]
            if key1 == key2 or (cap1.stmt is not cap2.stmt and
                                plan.order[id(cap1.stmt)] >= plan.order[id(cap2.stmt)]):
                continue  # an earlier statement's copy, or one of the same statement's
            if c1 is None or cap1.copy_of is not None or c1[0] != c2[0] or \
                    len(c1[1]) > len(c2[1]) or \
                    any(gast.dump(a) != gast.dump(b) for a, b in zip(c1[1], c2[1])) or \
                    not _unchanged_between(plan, cap1, cap2, c1[2] | c2[2], c2[0],
                                           c1[1] + c2[1]):
                continue
            cap2.copy_of = (key1, c2[1][len(c1[1]):])
            sources.add(key1)
            break


def _chain(plan: Plan, cap: Capture) -> tuple[str, list[gast.expr], set[int]] | None:
    """``(root, [index, ...], {statements})`` for a capture whose name is ``root[i1][i2]...``
    through views bound in the capture's block (``t15 = t14[::-1]``, ``t14 = y[:k]``), each
    index basic (numbers, names, slices of them); the statements are the views' bindings."""
    n, indices, stmts = cap.name, [], set()
    block = plan.block_of.get(id(cap.stmt))
    while n in plan.view_of and plan.def_count.get(n) == 1:
        base, idx = plan.view_of[n]
        at = plan.def_stmt.get(n)
        if idx is None or at is None or plan.block_of.get(id(at)) != block or \
                not _basic(idx):
            return None
        indices.append(idx)
        stmts.add(id(at))
        n = base
    if not indices or n in plan.view_of:
        return None
    return n, indices[::-1], stmts


def _basic(idx: gast.expr) -> bool:
    """A basic index of numbers, names and slices of them (no array, no call)."""
    parts = idx.elts if isinstance(idx, gast.Tuple) else [idx]
    for p in parts:
        for node in walk(p):
            if not isinstance(node, (gast.Slice, gast.Name, gast.Constant, gast.UnaryOp,
                                     gast.BinOp, gast.operator, gast.unaryop,
                                     gast.expr_context)):
                return False
    return True


def _unchanged_between(plan: Plan, cap1: Capture, cap2: Capture, views: set[int],
                       root: str, indices: list[gast.expr]) -> bool:
    """Both copies taken in one block, the first one first, the root one object for the
    call (bound at most once, not between them), no write of its buffers from the first copy up to the second (the first copy is
    taken before its statement runs), and no name of the indices bound in that span or
    between the views' bindings (both views see the same index values)."""
    s1, s2 = cap1.stmt, cap2.stmt
    if plan.block_of.get(id(s1)) != plan.block_of.get(id(s2)) or \
            plan.order[id(s1)] > plan.order[id(s2)] or plan.def_count.get(root, 0) > 1:
        return False
    lo = min([plan.order[id(s1)]] + [plan.order[v] for v in views])
    hi = plan.order[id(s2)]
    bufs = plan.eff.buffers.get(root, set())
    if not bufs:
        return False
    for w in plan.eff.writes:
        if w.buffers & bufs and (id(w.stmt) not in plan.order or
                                 plan.order[id(s1)] <= plan.order[id(w.stmt)] < hi):
            return False
    # the root too: bound again in the span, the two views would be of two arrays
    names = {n.id for idx in indices for n in walk(idx) if isinstance(n, gast.Name)} | {root}
    for x in names:
        if plan.def_count.get(x, 0) > 1:
            return False
        at = plan.def_stmt.get(x)
        if at is not None and lo < plan.order.get(id(at), -1) <= hi:
            return False
    return True

