"""Rewrites of generated adjoint code where static facts answer a run-time question.

``drop_unbroadcast`` where nothing was broadcast, ``shape_only`` where a rule's operands
are known to be numbers or arrays, and, for code specialised to an argument signature
(analyses.kinds), ``known_shapes`` and ``accumulate_in_place``."""

from __future__ import annotations

import operator
from typing import Any

import gast
from adgen.transforms.analyses.kinds import NUMBER
from adgen.transforms.desugar import name
from adgen.transforms.reverse_ast import (
    BINOPS,
    UNARYOPS,
)
from adgen.transforms.walk import walk


class _Unbroadcast(gast.NodeTransformer):
    """``unbroadcast(e, shape)`` -> ``e`` where nothing was broadcast."""

    def visit_Call(self, node: gast.Call) -> gast.expr:
        self.generic_visit(node)
        if isinstance(node.func, gast.Name) and node.func.id == "unbroadcast" and node.args:
            return node.args[0]
        return node


class _ShapeOnly(gast.NodeTransformer):
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
    for node in walk(gast.Module(body=body, type_ignores=[])):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) and \
                node.id in stores and id(node) not in ok_loads and id(node) not in updates:
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


class _KnownShapes(gast.NodeTransformer):
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
            if isinstance(k, int):
                return gast.Attribute(value=node.args[0], attr="shape", ctx=gast.Load())
        return node


def drop_unbroadcast(expr: gast.expr) -> gast.expr:
    """``unbroadcast(e, shape)`` -> ``e`` in ``expr``: where nothing was broadcast."""
    return _Unbroadcast().visit(expr)


def shape_only(expr: gast.expr) -> gast.expr:
    """The list cases of a rule's template dropped (its operands are numbers or arrays)."""
    return _ShapeOnly().visit(expr)


def known_shapes(stmt: gast.stmt, kinds: dict[str, Any]) -> gast.stmt:
    """``np.shape(a)`` -> ``a.shape`` / ``()`` and zero adjoints of numbers -> ``0.0``."""
    return _KnownShapes(kinds).visit(stmt)
