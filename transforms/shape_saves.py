"""Shapes instead of arrays: forward values the pullback reads only for their shape.

Many rules read an operand only to undo broadcasting or to size a zero (``unbroadcast(g,
np.shape(a))``, ``concatenate_vjp(g, shape_tree((a, b)), 0)``, ``zeros_like(a)``,
``or_zeros(g, a)``): a linear step's pullback reads no array's values at all. Keeping such an
array on the tape for its shape keeps its memory alive for the whole backward pass (a loop of
n steps keeps n of them).

This pass rewrites a generated pullback so that a forward name read only in those places is
read through a new name bound to its shape (``t3_shape``), and returns the renaming; the
forward then records ``np.shape(t3)`` or ``shape_tree(t3)`` where it recorded ``t3``
(reverse_forward), and a zero adjoint is made from that tree (``runtime.zeros_of_tree``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import gast
from adgen.transforms.walk import Transformer, walk

# zeros_like(n) and or_zeros(g, n) of a number or an array need its shape only
_ZEROS = {"zeros_like": "zeros_of_tree", "or_zeros": "or_zeros_of_tree"}


def _zeros_call(node: gast.AST) -> str | None:
    """The name ``n`` of ``zeros_like(n)`` or ``or_zeros(g, n)`` (else None)."""
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and \
            node.func.id in _ZEROS and not node.keywords and \
            len(node.args) == (1 if node.func.id == "zeros_like" else 2) and \
            isinstance(node.args[-1], gast.Name):
        return node.args[-1].id
    return None


def _shape_call(node: gast.AST) -> str | None:
    """The name ``n`` of ``np.shape(n)``, ``shape_tree(n)`` or ``n.shape`` (else None)."""
    if isinstance(node, gast.Attribute) and node.attr == "shape" and \
            isinstance(node.value, gast.Name) and isinstance(node.ctx, gast.Load):
        return node.value.id
    if not (isinstance(node, gast.Call) and len(node.args) == 1 and not node.keywords and
            isinstance(node.args[0], gast.Name)):
        return None
    f = node.func
    if isinstance(f, gast.Name) and f.id == "shape_tree":
        return node.args[0].id
    if isinstance(f, gast.Attribute) and f.attr == "shape" and \
            isinstance(f.value, gast.Name) and f.value.id == "np":
        return node.args[0].id
    return None


def _tuple_tree(node: gast.AST) -> list[gast.Name] | None:
    """The names of ``shape_tree((a, b, ...))`` or ``shape_tree([a, b, ...])`` when every
    item is a name (else None)."""
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and \
            node.func.id == "shape_tree" and len(node.args) == 1 and not node.keywords and \
            isinstance(node.args[0], (gast.Tuple, gast.List)) and \
            all(isinstance(e, gast.Name) for e in node.args[0].elts):
        return list(node.args[0].elts)
    return None


def shape_reads(body: list[gast.stmt], candidates: set[str], known: set[str],
                fresh: Callable[[str], str]) -> dict[str, tuple[str, str]]:
    """Rewrites ``body`` so that each candidate name read only for its shape is read through
    a name of its own (``fresh(n + "_shape")``), bound where ``n`` was (a loop's target, the
    saved values); returns ``{n: (n_shape, how)}``, where ``how`` says what the forward keeps:
    ``"shape"`` (``np.shape(n)``) or ``"tree"`` (``shape_tree(n)``, which zeros_of_tree
    turns back into a zero adjoint). ``known``: the candidates known to hold a number or an
    ndarray, where the two are the same tuple; for the others (a list, a tuple) the reads of
    one name must all agree on which."""
    if not candidates:
        return {}  # nothing to look for (and no walk of the body)
    loads, shape_uses, tree_uses = _uses(body, candidates)
    chosen: dict[str, tuple[str, str]] = {}
    for n in sorted(set(shape_uses) | set(tree_uses)):  # the text may not hang on str hashes
        s, tr = shape_uses.get(n, 0), tree_uses.get(n, 0)
        if loads.get(n) != s + tr:
            continue  # a value read too
        if tr and s and n not in known:
            continue  # np.shape of a list is not its shape_tree
        chosen[n] = (fresh(f"{n}_shape"), "tree" if tr else "shape")
    if chosen:
        names = {n: v for n, (v, _) in chosen.items()}
        for i, st in enumerate(body):
            body[i] = _Rewrite(names).visit(st)
    return chosen


def read_for_shape_only(body: list[gast.stmt], candidates: set[str]) -> set[str]:
    """The candidate names ``body`` reads, and reads only for their shape (what
    :func:`shape_reads` would rewrite, for names known to be ndarrays); rewrites nothing."""
    if not candidates:
        return set()
    loads, shape_uses, tree_uses = _uses(body, candidates)
    return {n for n in set(shape_uses) | set(tree_uses)
            if loads.get(n) == shape_uses.get(n, 0) + tree_uses.get(n, 0)}


def lengths_not_shapes(recorded: list[str], shape_of: dict[str, tuple[str, str]],
                       vectors: set[str], fresh: Callable[[str], str]
                       ) -> tuple[list[str], dict[str, str]]:
    """A loop's recorded shapes of vectors as their lengths: each name of ``recorded`` that
    stands for the shape of an array of ``vectors`` (``shape_of``: :func:`shape_reads`'s
    answer; of an ndarray, its shape tree is its shape; ``vectors``: arrays known to be of rank 1 that the forward binds in
    every iteration, so never None where the record is made) gives its place in the record
    to a fresh name for the length. A shape on a tape is a tuple object per iteration (48
    bytes) besides the slot the row gives it; a length is that slot only (an int below 257
    is shared by Python, a larger one is the int the shape held anyway), and ``len(x)``
    costs what ``x.shape`` does; the pullback binds the shape again, ``t_shape = (t_len,)``.
    Returns the new record and ``{shape name: length name}``."""
    out: list[str] = []
    lengths: dict[str, str] = {}
    for r in recorded:
        of = shape_of.get(r)
        if of is None or of[0] not in vectors:
            out.append(r)
            continue
        lengths[r] = fresh(f"{of[0]}_len")
        out.append(lengths[r])
    return out, lengths


def _uses(body: list[gast.stmt], candidates: set[str]
          ) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """Per candidate: its loads, its reads for a shape (``np.shape(n)``, ``n.shape``) and
    for a shape tree (``shape_tree(n)``, ``shape_tree((n, ...))``, a zero of it)."""
    shape_uses: dict[str, int] = {}  # np.shape(n), n.shape
    tree_uses: dict[str, int] = {}  # shape_tree(n), shape_tree((n, ...)), zeros
    loads: dict[str, int] = {}
    for node in (n for st in body for n in walk(st)):
        if isinstance(node, gast.Name):
            if isinstance(node.ctx, gast.Load) and node.id in candidates:
                loads[node.id] = loads.get(node.id, 0) + 1
            continue
        if not isinstance(node, (gast.Call, gast.Attribute)):
            continue  # what the three tests below look for is a call or an attribute
        n = _shape_call(node)
        if n in candidates:
            uses = tree_uses if _is_tree_call(node) else shape_uses
            uses[n] = uses.get(n, 0) + 1
        n = _zeros_call(node)
        if n in candidates:
            tree_uses[n] = tree_uses.get(n, 0) + 1
        for e in _tuple_tree(node) or ():
            if e.id in candidates:
                tree_uses[e.id] = tree_uses.get(e.id, 0) + 1
    return loads, shape_uses, tree_uses


def _is_tree_call(node: gast.AST) -> bool:
    return isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and \
        node.func.id == "shape_tree"


class _Rewrite(Transformer):
    def __init__(self, chosen: dict[str, str]) -> None:
        self.chosen = chosen

    def visit_Call(self, node: gast.Call) -> gast.expr:
        n = _shape_call(node)
        if n in self.chosen:
            return gast.Name(id=self.chosen[n], ctx=gast.Load(), annotation=None,
                             type_comment=None)
        n = _zeros_call(node)
        if n in self.chosen:
            # a zero of that shape (runtime.zeros_of_tree)
            node.func.id = _ZEROS[node.func.id]
            node.args[-1] = gast.Name(id=self.chosen[n], ctx=gast.Load(), annotation=None,
                                      type_comment=None)
            self.generic_visit(node)
            return node
        items = _tuple_tree(node)
        if items is not None and any(e.id in self.chosen for e in items):
            # shape_tree((a, b)) is ("tuple", shape of a, shape of b); of [a, b], a list
            as_list = isinstance(node.args[0], gast.List)
            elts: list[gast.expr] = [] if as_list else [gast.Constant("tuple", None)]
            for e in items:
                if e.id in self.chosen:
                    elts.append(gast.Name(id=self.chosen[e.id], ctx=gast.Load(),
                                          annotation=None, type_comment=None))
                else:
                    elts.append(gast.Call(func=gast.Name(id="shape_tree", ctx=gast.Load(),
                                                         annotation=None, type_comment=None),
                                          args=[e], keywords=[]))
            if as_list:
                return gast.List(elts=elts, ctx=gast.Load())
            return gast.Tuple(elts=elts, ctx=gast.Load())
        self.generic_visit(node)
        return node

    def visit_Attribute(self, node: gast.Attribute) -> gast.expr:
        n = _shape_call(node)
        if n in self.chosen:
            return gast.Name(id=self.chosen[n], ctx=gast.Load(), annotation=None,
                             type_comment=None)
        self.generic_visit(node)
        return node

    def visit_Name(self, node: gast.Name) -> gast.Name:
        if isinstance(node.ctx, gast.Store) and node.id in self.chosen:
            node.id = self.chosen[node.id]  # a loop's target: the recorded shape
        return node


def length_expression(sym: Any, axis_of: dict[str, str], reads: set[str]) -> gast.expr | None:
    """The expression of a dimension symbol of analyses.shapes (``("c", n)``, ``("op", op,
    a, b)``, ``("off", d, c)``, ``("sl", d, lo, hi, None)`` with constant bounds, ``("p",
    v, 0)`` with ``v`` in ``axis_of``, which names the length it reads, added to
    ``reads``), or None."""
    if not isinstance(sym, tuple) or not sym:
        return None
    if sym[0] == "c" and type(sym[1]) is int:
        return gast.Constant(sym[1], None)
    if sym[0] == "p" and sym[2] == 0 and sym[1] in axis_of:
        reads.add(axis_of[sym[1]])
        return _name(axis_of[sym[1]])
    if sym[0] == "op" and sym[1] in _LENGTH_OPS:
        a = length_expression(sym[2], axis_of, reads)
        b = length_expression(sym[3], axis_of, reads)
        return None if a is None or b is None else \
            gast.BinOp(left=a, op=_LENGTH_OPS[sym[1]](), right=b)
    if sym[0] == "off" and type(sym[2]) is int:
        d = length_expression(sym[1], axis_of, reads)
        return None if d is None else _call("max", gast.Constant(0, None), gast.BinOp(
            left=d, op=gast.Add(), right=gast.Constant(sym[2], None)))
    if sym[0] == "sl" and sym[4] is None and all(
            x is None or x[0] == "c" and type(x[1]) is int for x in sym[2:4]):
        d = length_expression(sym[1], axis_of, reads)
        if d is None:
            return None
        # Python's slice of an axis of length d, constant bounds: lo and hi clipped to it
        lo, hi = sym[2][1] if sym[2] else 0, sym[3]
        if hi is None:  # d - lo, clipped: one call
            return d if lo == 0 else _call("min", gast.Constant(-lo, None), d) if lo < 0 \
                else _call("max", gast.BinOp(left=d, op=gast.Sub(),
                                             right=gast.Constant(lo, None)),
                           gast.Constant(0, None))
        if lo == 0:  # hi, clipped
            return _bound(hi, d, None)
        return _call("max", gast.Constant(0, None), gast.BinOp(
            left=_bound(hi, d, None), op=gast.Sub(), right=_bound(sym[2], d, 0)))
    return None


_LENGTH_OPS = {"+": gast.Add, "-": gast.Sub, "*": gast.Mult, "//": gast.FloorDiv}


def _bound(sym: Any, d: gast.expr, absent: int | None) -> gast.expr:
    """A constant slice bound ``sym`` (None: ``absent``, None for the axis's end) as the
    index it stands for in an axis of length ``d``: ``min(c, d)``, ``max(d + c, 0)`` for a
    negative c."""
    if sym is None:
        return gast.Constant(absent, None) if absent is not None else copy.deepcopy(d)
    c = sym[1]
    if c >= 0:
        return _call("min", gast.Constant(c, None), copy.deepcopy(d))
    return _call("max", gast.BinOp(left=copy.deepcopy(d), op=gast.Add(),
                                   right=gast.Constant(c, None)), gast.Constant(0, None))


def _name(n: str) -> gast.Name:
    return gast.Name(id=n, ctx=gast.Load(), annotation=None, type_comment=None)


def _call(f: str, *args: gast.expr) -> gast.Call:
    return gast.Call(func=_name(f), args=list(args), keywords=[])
