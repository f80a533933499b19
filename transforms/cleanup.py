"""Cleanup: make the generated pullback read like a hand-written adjoint.

Input: the pullback FunctionDef from the reverse pass. Output: the same function where
- arithmetic on constants is folded (``2 - 1`` -> ``1``), ``e ** 1`` is ``e``, ``e * 1`` and
  ``1 * e`` are ``e``;
- the shadow-memory prologue (``top = sh is None ...``) is dropped when nothing uses ``sh``
  (only functions that write buffers in place need it).
It changes no value the pullback computes.
"""

from __future__ import annotations

import operator

import gast
from adgen.transforms.walk import walk

_FOLD = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
         gast.Div: operator.truediv, gast.Pow: operator.pow}


def cleanup(pullback: gast.FunctionDef) -> gast.FunctionDef:
    """Simplifies the pullback in place and returns it."""
    pullback.body = [_Simplify().visit(s) for s in pullback.body]
    uses_sh = any(isinstance(n, gast.Name) and n.id in ("sh", "top")
                  for s in pullback.body[2:] for n in walk(s))
    if not uses_sh and len(pullback.body) >= 2:
        pullback.body = pullback.body[2:]
    return pullback


def _number(node: gast.AST) -> bool:
    return isinstance(node, gast.Constant) and isinstance(node.value, (int, float)) and \
        not isinstance(node.value, bool)


class _Simplify(gast.NodeTransformer):
    def visit_BinOp(self, node: gast.BinOp) -> gast.expr:
        self.generic_visit(node)
        op = type(node.op)
        if _number(node.left) and _number(node.right) and op in _FOLD:
            try:
                value = _FOLD[op](node.left.value, node.right.value)
            except (ArithmeticError, ValueError):
                return node
            if isinstance(value, float) and value.is_integer() and \
                    isinstance(node.left.value, int) and isinstance(node.right.value, int):
                value = int(value)
            return gast.Constant(value, None)
        if op is gast.Pow and _number(node.right) and node.right.value == 1:
            return node.left
        if op is gast.Mult and _number(node.right) and node.right.value == 1:
            return node.left
        if op is gast.Mult and _number(node.left) and node.left.value == 1:
            return node.right
        return node
