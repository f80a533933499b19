"""Rewrites of generated adjoint code where static facts answer a run-time question.

``drop_unbroadcast`` where nothing was broadcast, ``shape_only`` where a rule's operands
are known to be numbers or arrays, and, for code specialised to an argument signature
(analyses.kinds), ``known_shapes`` and ``accumulate_in_place``."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

import gast
from adgen.transforms.analyses.kinds import NUMBER
from adgen.transforms.desugar import name
from adgen.transforms.reverse_ast import (
    BINOPS,
    UNARYOPS,
    Subst,
    is_number,
    parse_expr,
)
from adgen.transforms.walk import Transformer, children, clone, walk


class _Unbroadcast(Transformer):
    """``unbroadcast(e, shape)`` -> ``e`` where nothing was broadcast."""

    def visit_Call(self, node: gast.Call) -> gast.expr:
        self.generic_visit(node)
        if isinstance(node.func, gast.Name) and node.func.id == "unbroadcast" and node.args:
            return node.args[0]
        return node


class _ShapeOnly(Transformer):
    """``unbroadcast(e, shape_tree(a), seq=...)`` -> ``unbroadcast(e, np.shape(a))`` where
    ``a`` is known to be a number or an array (the list cases of the rule cannot happen)."""

    def visit_Call(self, node: gast.Call) -> gast.expr:
        self.generic_visit(node)
        f = node.func
        if isinstance(f, gast.Name) and f.id == "shape_tree" and len(node.args) == 1:
            return gast.Call(func=gast.Attribute(value=name("np"), attr="shape",
                                                 ctx=gast.Load()), args=node.args, keywords=[])
        if isinstance(f, gast.Name) and f.id == "unbroadcast":
            node.keywords = [k for k in node.keywords if k.arg != "seq"]
        return node


def is_elementwise(rule: Any) -> bool:
    """An operator or ufunc: each operand's cotangent has the (broadcast) result's shape."""
    import numpy as np

    prim = rule.primal
    if isinstance(prim, np.ufunc):
        return True
    return (prim in BINOPS.values() and prim is not operator.matmul) or \
        prim in UNARYOPS.values()


def accumulate_in_place(body: list[gast.stmt]) -> None:
    """``b = b + e`` -> ``b += e`` for adjoints no other name can see: every store to ``b``
    is a fresh array (``zeros_like``, ``copy_adjoint`` or ``b + e``) and ``b`` is read only
    by its own updates, arithmetic (fresh results) and the final ``return``."""
    fresh_calls = ("zeros_like", "copy_adjoint")
    stores: dict[str, list[gast.Assign]] = {}
    bad: set[str] = set()
    updates: set[int] = set()  # id of the Name b in "b = b + e"
    ok_loads: set[int] = set()
    targets: set[int] = set()
    loads: list[gast.Name] = []
    for node in walk(gast.Module(body=body, type_ignores=[])):
        if isinstance(node, gast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], gast.Name):
            targets.add(id(node.targets[0]))
            b = node.targets[0].id
            v = node.value
            if isinstance(v, gast.BinOp) and isinstance(v.op, gast.Add) and \
                    isinstance(v.left, gast.Name) and v.left.id == b:
                stores.setdefault(b, []).append(node)
                updates.add(id(v.left))
            elif isinstance(v, gast.Call) and isinstance(v.func, gast.Name) and \
                    v.func.id in fresh_calls:
                stores.setdefault(b, []).append(node)
            else:
                bad.add(b)
        elif isinstance(node, gast.Return) and isinstance(node.value, gast.Tuple):
            ok_loads |= {id(e) for e in node.value.elts if isinstance(e, gast.Name)}
        elif isinstance(node, (gast.BinOp, gast.UnaryOp)):
            operands = [node.left, node.right] if isinstance(node, gast.BinOp) else \
                [node.operand]
            ok_loads |= {id(e) for e in operands if isinstance(e, gast.Name)}
        elif isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store) and \
                id(node) not in targets:
            bad.add(node.id)  # bound some other way (a tuple target, a loop target)
        elif isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load):
            loads.append(node)  # judged below, when every update and fresh read is known
    for node in loads:
        if node.id in stores and id(node) not in ok_loads and id(node) not in updates:
            bad.add(node.id)
    for b, sts in stores.items():
        if b in bad:
            continue
        for st in sts:
            if isinstance(st.value, gast.BinOp):
                aug = gast.AugAssign(target=gast.Name(id=b, ctx=gast.Store(), annotation=None,
                                                      type_comment=None),
                                     op=gast.Add(), value=st.value.right)
                gast.copy_location(aug, st)
                st.__class__ = gast.AugAssign
                st.__dict__.clear()
                st.__dict__.update(aug.__dict__)


def _constant_index(node: gast.expr) -> tuple[int, ...] | None:
    """A subscript of non-negative int constants as a tuple (None: anything else)."""
    elts = node.elts if isinstance(node, gast.Tuple) else [node]
    if all(isinstance(e, gast.Constant) and type(e.value) is int and e.value >= 0
           for e in elts):
        return tuple(e.value for e in elts)
    return None


def first_writes(body: list[gast.stmt], kinds: dict[str, Any]) -> None:
    """``b[i] += e`` -> ``b[i] = e`` right after ``b = zeros_like(a)`` for an array ``a``,
    while each constant index is written for the first time (the element is still 0; an
    array's element or row assignment copies ``e``, so no alias is made). Statements between
    that do not name ``b`` leave it as it was."""
    for st in body:
        for block in ("body", "orelse"):
            if isinstance(getattr(st, block, None), list):
                first_writes(getattr(st, block), kinds)
    named: list[set[str] | None] = [None] * len(body)  # each statement's names, read once
    for k, st in enumerate(body):
        if not (isinstance(st, gast.Assign) and len(st.targets) == 1 and
                isinstance(st.targets[0], gast.Name) and isinstance(st.value, gast.Call) and
                isinstance(st.value.func, gast.Name) and st.value.func.id == "zeros_like" and
                len(st.value.args) == 1 and isinstance(st.value.args[0], gast.Name)):
            continue
        a = kinds.get(st.value.args[0].id)
        if not (isinstance(a, int) and a >= 1):
            continue
        b = st.targets[0].id
        written: set[tuple[int, ...]] = set()
        for j in range(k + 1, len(body)):
            nxt = body[j]
            names = named[j]
            if names is None:
                names = named[j] = {n.id for n in walk(nxt) if isinstance(n, gast.Name)}
            if b not in names:
                continue
            if not (isinstance(nxt, gast.AugAssign) and isinstance(nxt.op, gast.Add) and
                    isinstance(nxt.target, gast.Subscript) and
                    isinstance(nxt.target.value, gast.Name) and nxt.target.value.id == b):
                break
            idx = _constant_index(nxt.target.slice)
            if idx is None or (written and len(idx) != len(next(iter(written)))) or \
                    len(idx) > a or \
                    any(isinstance(n, gast.Name) and n.id == b for n in walk(nxt.value)):
                break
            if idx in written:
                continue  # written before: it accumulates
            written.add(idx)
            target = nxt.target
            target.ctx = gast.Store()
            new = gast.Assign(targets=[target], value=nxt.value, type_comment=None)
            gast.copy_location(new, nxt)
            nxt.__class__ = gast.Assign
            nxt.__dict__.clear()
            nxt.__dict__.update(new.__dict__)


class _KnownShapes(Transformer):
    """``np.shape(a)`` -> ``a.shape`` for a known array, ``()`` for a known number."""

    def __init__(self, kinds: dict[str, Any]) -> None:
        self.kinds = kinds

    def visit_Call(self, node: gast.Call) -> gast.expr:
        self.generic_visit(node)
        f = node.func
        if isinstance(f, gast.Attribute) and f.attr == "shape" and \
                isinstance(f.value, gast.Name) and f.value.id == "np" and \
                len(node.args) == 1 and not node.keywords and \
                isinstance(node.args[0], gast.Name):
            k = self.kinds.get(node.args[0].id)
            if k == NUMBER:
                return gast.Tuple(elts=[], ctx=gast.Load())
            if isinstance(k, int):
                return gast.Attribute(value=node.args[0], attr="shape", ctx=gast.Load())
        if isinstance(f, gast.Name) and f.id == "zeros_like" and len(node.args) == 1 and \
                isinstance(node.args[0], gast.Name) and \
                self.kinds.get(node.args[0].id) == NUMBER:
            return gast.Constant(0.0, None)  # the zero adjoint of a number
        return node


# (rank of a, rank of b) -> the adjoints of a and b in a @ b, with g the result's adjoint:
# what matmul_vjp_a/b compute for those ranks (nothing broadcast), written out
_MATMUL_ADJOINTS = {
    (2, 2): ("g @ b.T", "a.T @ g"),
    (2, 1): ("g[:, None] * b", "g @ a"),
    (1, 2): ("b @ g", "a[:, None] * g"),
}


def inline_matmul(expr: gast.expr, rank_a: Any, rank_b: Any) -> gast.expr:
    """``matmul_vjp_a(g, b, shape)`` / ``matmul_vjp_b(g, a, shape)`` -> the product itself
    (``g @ b.T``, ``a.T @ g``, an outer product) where the ranks of ``a`` and ``b`` are known
    (1 or 2, not both 1): what the helper computes for them, without its call and checks
    (about 0.4 us each; a person writes the product). The adjoint ``g`` of the product has
    its rank; anything else (a number) raises in ``@`` or ``[:, None]`` instead of
    broadcasting. Other forms are left."""
    forms = _MATMUL_ADJOINTS.get((rank_a, rank_b))
    if forms is None or not (isinstance(expr, gast.Call) and isinstance(expr.func, gast.Name)
                             and len(expr.args) == 3 and not expr.keywords):
        return expr
    which = {"matmul_vjp_a": 0, "matmul_vjp_b": 1}.get(expr.func.id)
    if which is None:
        return expr
    template = parse_expr(forms[which])
    g, other = expr.args[0], expr.args[1]
    return Subst({"g": g, "b" if which == 0 else "a": other}).visit(template)


def scalar_sum_adjoints(body: list[gast.stmt], summed: Callable[[gast.expr], str | None],
                        same_shape: Callable[[str, str], bool],
                        maybe_same: Callable[[str, str], bool] | None = None) -> None:
    """``n = sum_vjp(g, shape(x), None, False)`` read once, as a factor of a product with an
    array of x's shape (``n * 2 * out``, ``out`` of ``x = out ** 2``'s shape): the product
    takes ``g`` itself, a number, and ``n`` is not filled. The product has x's shape either
    way, and each element is the same product of the same numbers (a person writes
    ``out_bar * 2 * out``; the filled array was an allocation and a pass). Only top-level
    statements of ``body``; ``summed(shape_expr)`` names the array a shape expression is of
    (or None), ``same_shape`` compares forward names.

    Where no factor's shape is provably x's, but ``maybe_same(f, x)`` says a factor ``f``'s
    may be (a float64 array of x's rank: ``Y * np.log(p)`` with ``Y`` an argument, which may
    broadcast against ``log p``), the product becomes ``(g * f if f.shape == shape(x) else
    sum_vjp(g, shape(x), None, False) * f)``: with the number where the shapes agree at run
    time, with the filled array where they do not. Both give x's shape, and f's float64 gives
    them one dtype and the same bits; whole products in both arms have one type (an array of
    x's rank), which numba's nopython mode needs."""
    if not any(_is_sum_vjp(st) for st in body):
        return  # nothing to take (and no walks of the block: called once per block)
    loads: dict[str, list[gast.Name]] = {}
    parents: dict[int, gast.AST] = {}
    top: set[int] = set()
    for st in body:
        for node in walk(st):  # once for the three
            top.add(id(node))
            if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load):
                loads.setdefault(node.id, []).append(node)
            for child in children(node):
                parents[id(child)] = node
    drop: list[int] = []
    for k, st in enumerate(body):
        if not _is_sum_vjp(st):
            continue
        g, shape, axis, keep = st.value.args
        n = st.targets[0].id
        x = summed(shape)
        uses = loads.get(n, [])
        if x is None or len(uses) != 1 or id(uses[0]) not in top or not (
                isinstance(axis, gast.Constant) and axis.value is None and
                isinstance(keep, gast.Constant) and keep.value is False) or \
                not isinstance(g, (gast.Name, gast.Constant)):
            continue
        # the product chain holding the use, and its other factors
        chain = parents.get(id(uses[0]))
        if not (isinstance(chain, gast.BinOp) and isinstance(chain.op, gast.Mult)):
            continue
        while isinstance(parents.get(id(chain)), gast.BinOp) and \
                isinstance(parents[id(chain)].op, gast.Mult):
            chain = parents[id(chain)]
        factors = [_shaped_name(e) for e in _factors(chain) if e is not uses[0]]
        maybe: list[str] = []
        if not any(f is not None and same_shape(f, x) for f in factors):
            maybe = [f for f in factors if f is not None and maybe_same is not None and
                     maybe_same(f, x)]
            if not maybe or not any(field for field in ("value", "args", "left", "right")
                                    if _holds(parents.get(id(chain)), field, chain)):
                continue
        if isinstance(g, gast.Name) and any(
                isinstance(node, gast.Name) and node.id == g.id and
                not isinstance(node.ctx, gast.Load) for later in body[k + 1:]
                for node in walk(later)):
            continue  # g is bound again before the product reads it
        holder = parents[id(uses[0])]
        field = "left" if holder.left is uses[0] else "right"
        setattr(holder, field, g)
        if maybe:
            # decided at run time: the product with the number where f has x's shape, else
            # with the filled array (whole products in both arms: one type for numba)
            with_number = clone(chain)
            setattr(holder, field, st.value)
            test = gast.Compare(left=gast.Attribute(value=name(maybe[0]), attr="shape",
                                                    ctx=gast.Load()),
                                ops=[gast.Eq()], comparators=[clone(shape)])
            _replace(parents[id(chain)], chain,
                     gast.IfExp(test=test, body=with_number, orelse=chain))
        drop.append(k)
    for k in reversed(drop):
        del body[k]


def _holds(parent: gast.AST | None, field: str, child: gast.expr) -> bool:
    """Whether ``parent.field`` is ``child`` or a list holding it."""
    got = getattr(parent, field, None)
    return got is child or isinstance(got, list) and any(e is child for e in got)


def _replace(parent: gast.AST, old: gast.expr, new: gast.expr) -> None:
    """``old``, a child of ``parent`` in a value, args, left or right field, replaced."""
    for field in ("value", "args", "left", "right"):
        got = getattr(parent, field, None)
        if got is old:
            setattr(parent, field, new)
            return
        if isinstance(got, list):
            for i, e in enumerate(got):
                if e is old:
                    got[i] = new
                    return


def _is_sum_vjp(st: gast.stmt) -> bool:
    """``n = sum_vjp(g, shape, axis, keepdims)``."""
    return isinstance(st, gast.Assign) and len(st.targets) == 1 and \
        isinstance(st.targets[0], gast.Name) and isinstance(st.value, gast.Call) and \
        isinstance(st.value.func, gast.Name) and st.value.func.id == "sum_vjp" and \
        len(st.value.args) == 4 and not st.value.keywords


def _shaped_name(e: gast.expr) -> str | None:
    """The name whose shape ``e`` has: ``a``, or ``a ** c`` / ``-a`` with ``c`` of constants
    (the power rule's ``out ** (2 - (2 != 0))`` before cleanup folds it)."""
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
        return _shaped_name(e.operand)
    if isinstance(e, gast.BinOp) and isinstance(e.op, gast.Pow) and \
            not any(isinstance(n, gast.Name) for n in walk(e.right)):
        return _shaped_name(e.left)
    return e.id if isinstance(e, gast.Name) else None


def _factors(e: gast.expr) -> list[gast.expr]:
    """The operands of a chain of ``*``: ``a * 2 * (b + c)`` -> a, 2, (b + c)."""
    if isinstance(e, gast.BinOp) and isinstance(e.op, gast.Mult):
        return _factors(e.left) + _factors(e.right)
    return [e]


def inline_extreme(expr: gast.expr) -> gast.expr:
    """``extreme_vjp(g, out, x, y)`` -> ``g * ((0.5 if y == out else 1.0) if x == out else
    0.0)``, for a caller that knows ``x``, ``y`` and ``out`` are Python ints or floats or
    NumPy float64 numbers on every path (a ``max(a, b)`` of float64 numbers): the helper's
    own branch for those types (``balanced_eq``), the same operations on the same values,
    without its two calls and type checks (about 0.4 us a use, four a soft-DTW cell). Only
    where ``out``, ``x`` and ``y`` are names or number literals (read twice here, so nothing
    may be evaluated twice); other forms are left."""
    if not (isinstance(expr, gast.Call) and isinstance(expr.func, gast.Name) and
            expr.func.id == "extreme_vjp" and len(expr.args) == 4 and not expr.keywords):
        return expr
    g, out, x, y = expr.args
    if not all(isinstance(e, gast.Name) or is_number(e) for e in (out, x, y)):
        return expr
    share = Subst({"out": out, "x": x, "y": y}).visit(clone(_share()))
    return gast.BinOp(left=g, op=gast.Mult(), right=share)


@functools.cache
def _share() -> gast.expr:
    """The template of :func:`inline_extreme`'s share, parsed once (a build parsed it four
    times for soft-DTW's cells)."""
    return parse_expr("(0.5 if y == out else 1.0) if x == out else 0.0")


def drop_unbroadcast(expr: gast.expr) -> gast.expr:
    """``unbroadcast(e, shape)`` -> ``e`` in ``expr``: where nothing was broadcast."""
    return _Unbroadcast().visit(expr)


def shape_only(expr: gast.expr) -> gast.expr:
    """The list cases of a rule's template dropped (its operands are numbers or arrays)."""
    return _ShapeOnly().visit(expr)


def known_shapes(stmt: gast.stmt, kinds: dict[str, Any]) -> gast.stmt:
    """``np.shape(a)`` -> ``a.shape`` / ``()`` and zero adjoints of numbers -> ``0.0``."""
    return _KnownShapes(kinds).visit(stmt)


def split_concatenations(body: list[gast.stmt], ranks: dict[str, int],
                         arrays: dict[str, Any], fresh: Callable[[str], str]) -> None:
    """``ct = concatenate_vjp(g, [s1, s2], axis)`` -> the parts as basic slices of ``g``
    (``o1 = s1[axis]; ct = [g[:o1], g[o1:o1 + s2[axis]]]``) where each ``si`` is a recorded
    shape (a tuple of ints: ``ranks`` gives the ranks of those names) or ``shape_tree(a)`` of
    an array (``arrays``: the kinds), of one rank, and the axis is a constant; and
    ``or_zeros_of_tree(ct[k], s)`` or ``or_zeros(ct[k], a)`` -> ``ct[k]`` (a part is never
    missing).
    concatenate_vjp does the same at run time after checking what it was given: about 2 us of
    a heat-equation step's pullback."""
    for st in body:
        for block in ("body", "orelse"):
            if isinstance(getattr(st, block, None), list):
                split_concatenations(getattr(st, block), ranks, arrays, fresh)
    split: set[str] = set()
    out: list[gast.stmt] = []
    for st in body:
        parts = _split_parts(st, ranks, arrays)
        if parts is None:
            if split:
                st = _PartsPresent(split).visit(st)
            out.append(st)
            continue
        ct, g, shapes, axis = parts
        as_tuple = isinstance(st.value.args[1], gast.Tuple)  # type: ignore[attr-defined]
        lead = [gast.Slice(lower=None, upper=None, step=None)] * axis
        items: list[gast.expr] = []
        start: gast.expr | None = None
        for k, s in enumerate(shapes):
            size = gast.Subscript(value=s, slice=gast.Constant(axis, None), ctx=gast.Load())
            stop: gast.expr | None = None
            if k < len(shapes) - 1:
                stop_name = fresh(f"{ct}_stop")
                value = size if start is None else gast.BinOp(left=name(start.id),
                                                              op=gast.Add(), right=size)
                bound = gast.Assign(targets=[name(stop_name, gast.Store)], value=value,
                                    type_comment=None)
                gast.copy_location(bound, st)
                out.append(bound)
                stop = name(stop_name)
            cut = gast.Slice(lower=None if start is None else name(start.id), upper=stop,
                             step=None)
            index = gast.Tuple(elts=[*lead, cut], ctx=gast.Load()) if lead else cut
            items.append(gast.Subscript(value=name(g), slice=index, ctx=gast.Load()))
            start = stop  # type: ignore[assignment]
        value = gast.Tuple(elts=items, ctx=gast.Load()) if as_tuple else \
            gast.List(elts=items, ctx=gast.Load())
        new = gast.Assign(targets=[name(ct, gast.Store)], value=value, type_comment=None)
        gast.copy_location(new, st)
        out.append(new)
        split.add(ct)
    body[:] = out


def _split_parts(st: gast.stmt, ranks: dict[str, int], arrays: dict[str, Any]
                 ) -> tuple[str, str, list[gast.expr], int] | None:
    """(ct, g, shape names, axis) of ``ct = concatenate_vjp(g, [s1, ...], axis)`` as
    :func:`split_concatenations` rewrites it, else None."""
    if not (isinstance(st, gast.Assign) and len(st.targets) == 1 and
            isinstance(st.targets[0], gast.Name) and isinstance(st.value, gast.Call)):
        return None
    call = st.value
    if not (isinstance(call.func, gast.Name) and call.func.id == "concatenate_vjp" and
            len(call.args) == 3 and not call.keywords and
            isinstance(call.args[0], gast.Name) and
            isinstance(call.args[1], (gast.List, gast.Tuple))):
        return None
    axis_node = call.args[2]
    sign = 1
    if isinstance(axis_node, gast.UnaryOp) and isinstance(axis_node.op, gast.USub):
        axis_node, sign = axis_node.operand, -1
    if not (isinstance(axis_node, gast.Constant) and type(axis_node.value) is int):
        return None
    elts = list(call.args[1].elts)
    if isinstance(call.args[1], gast.Tuple):
        # a tuple's shape tree ("tuple", s1, s2, ...): the parts come back as a tuple
        if not (elts and isinstance(elts[0], gast.Constant) and elts[0].value == "tuple"):
            return None
        elts = elts[1:]
    shapes: list[gast.expr] = []
    rank = set()
    for e in elts:
        if isinstance(e, gast.Name) and e.id in ranks:
            shapes.append(e)  # a recorded shape
            rank.add(ranks[e.id])
        elif isinstance(e, gast.Call) and isinstance(e.func, gast.Name) and \
                e.func.id == "shape_tree" and len(e.args) == 1 and \
                isinstance(e.args[0], gast.Name) and isinstance(arrays.get(e.args[0].id), int):
            # an array kept for its value: its shape
            shapes.append(gast.Attribute(value=e.args[0], attr="shape", ctx=gast.Load()))
            rank.add(arrays[e.args[0].id])
        else:
            return None
    if len(rank) != 1:
        return None
    r = rank.pop()
    axis = sign * axis_node.value
    if r < 1 or not -r <= axis < r:
        return None
    return st.targets[0].id, call.args[0].id, shapes, axis % r


class _PartsPresent(Transformer):
    """``or_zeros_of_tree(ct[k], s)``, ``or_zeros(ct[k], a)`` -> ``ct[k]`` for the split
    cotangents ``ct``."""

    def __init__(self, split: set[str]) -> None:
        self.split = split

    def visit_Call(self, node: gast.Call) -> gast.expr:
        self.generic_visit(node)
        if isinstance(node.func, gast.Name) and node.func.id in ("or_zeros_of_tree",
                                                                  "or_zeros") and \
                len(node.args) == 2 and isinstance(node.args[0], gast.Subscript) and \
                isinstance(node.args[0].value, gast.Name) and \
                node.args[0].value.id in self.split:
            return node.args[0]
        return node


def first_slice_writes(body: list[gast.stmt], ranks: dict[str, int],
                       arrays: dict[str, Any]) -> None:
    """``b[lo:hi] += e`` -> ``b[lo:hi] = e`` right after ``b = zeros_of_tree(s)`` (``s`` a
    recorded shape of an array: ``ranks``) or ``b = zeros_like(a)`` (``a`` an array:
    ``arrays``), for constant slices of the first axis whose elements no earlier write of the
    sequence touched, for every length of that axis (``b[-1:]`` and ``b[:1]`` are one element
    when it is 1). The elements are still 0; storing copies ``e`` (about 0.5 us where the
    augmented form costs about 2.5: a read, an add and a write of the slice)."""
    for st in body:
        for block in ("body", "orelse"):
            if isinstance(getattr(st, block, None), list):
                first_slice_writes(getattr(st, block), ranks, arrays)
    # the names each statement holds, read once per statement (a long block with many
    # zeros was walked again after each of them); the rewrite below keeps them
    named: list[set[str] | None] = [None] * len(body)
    for k, st in enumerate(body):
        if not (isinstance(st, gast.Assign) and len(st.targets) == 1 and
                isinstance(st.targets[0], gast.Name) and isinstance(st.value, gast.Call) and
                isinstance(st.value.func, gast.Name) and len(st.value.args) == 1 and
                isinstance(st.value.args[0], gast.Name)):
            continue
        f, a = st.value.func.id, st.value.args[0].id
        if not (f == "zeros_of_tree" and ranks.get(a, 0) >= 1 or
                f == "zeros_like" and isinstance(arrays.get(a), int) and arrays[a] >= 1):
            continue
        b = st.targets[0].id
        touched: list[tuple[int | None, int | None, int | None]] = []
        for j in range(k + 1, len(body)):
            nxt = body[j]
            names = named[j]
            if names is None:
                names = named[j] = {n.id for n in walk(nxt) if isinstance(n, gast.Name)}
            if b not in names:
                continue
            if not (isinstance(nxt, gast.AugAssign) and isinstance(nxt.op, gast.Add) and
                    isinstance(nxt.target, gast.Subscript) and
                    isinstance(nxt.target.value, gast.Name) and nxt.target.value.id == b and
                    not any(isinstance(n, gast.Name) and n.id == b for n in walk(nxt.value))):
                break
            region = _constant_slice(nxt.target.slice)
            if region is None:
                break
            if all(slices_apart(region, other) for other in touched):
                target = nxt.target
                target.ctx = gast.Store()
                new = gast.Assign(targets=[target], value=nxt.value, type_comment=None)
                gast.copy_location(new, nxt)
                nxt.__class__ = gast.Assign
                nxt.__dict__.clear()
                nxt.__dict__.update(new.__dict__)
            touched.append(region)


def _constant_slice(idx: gast.expr) -> tuple[int | None, int | None, int | None] | None:
    """(lo, hi, step) of a slice of int constants (or absent bounds), else None."""
    if not isinstance(idx, gast.Slice):
        return None
    out: list[int | None] = []
    for e in (idx.lower, idx.upper, idx.step):
        sign = 1
        if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
            e, sign = e.operand, -1
        if e is None:
            out.append(None)
        elif isinstance(e, gast.Constant) and type(e.value) is int:
            out.append(sign * e.value)
        else:
            return None
    if out[2] == 0:
        return None
    return out[0], out[1], out[2]


def slices_apart(a: tuple[int | None, ...], b: tuple[int | None, ...]) -> bool:
    """Whether two constant slices share no element for any length of the axis: beyond
    twice the largest constant the bounds keep their order, so the lengths up to there
    decide."""
    top = 2 * max([abs(c) for c in a + b if c is not None] + [1]) + 2
    return all(not set(range(n)[slice(*a)]) & set(range(n)[slice(*b)])
               for n in range(top + 1))
