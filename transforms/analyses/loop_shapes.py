"""Loop-invariant shapes: which arrays a loop binds have one shape in all of its iterations.

A loop's pullback that reads an array only for its shape (``unbroadcast(g, t.shape)``) keeps
that shape on the loop's tape, one per iteration. Where the shape is the same in every
iteration of one run of the loop, the forward keeps it once, outside the loop (in the
enclosing loop's row, or with the saved values), and the tape row loses the column.

Input: a function in SSA form (read only), its kinds (analyses.kinds), its shape keys
(analyses.shapes), its single definitions (name -> statement) and a resolver of free names.
Output: :func:`same_every_iteration`, a predicate on a name and a loop.

The rules, for a name ``n`` and a loop ``L`` (the names ``L`` binds: the stores of its body,
nested blocks included, and its target):

- ``n`` is not bound in ``L`` and is an ndarray (kinds: a rank) or a number: it is one object
  while ``L`` runs, and an ndarray object keeps its shape;
- ``n``'s shape key names no name ``L`` binds: each symbol (a parameter's axis, an int bound
  before the loop, the axis of an array bound before it) has one value while ``L`` runs. A
  loop header's key is the common key of its definitions (analyses.shapes), so a key without
  the loop's names holds in every iteration;
- ``n``'s one definition is an operator (``+``, ``*``, ``@``, ...), a unary ``-``/``+`` or a
  NumPy ufunc of constants and names each of which one of these rules covers: the result's
  shape is a function of the operands' shapes (broadcasting), which are the same in every
  iteration; the value of an operand does not matter.

A loop that may change an array's shape in place (``x.shape = ...``, ``x.resize(...)``) has no
such names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast
import numpy as np
from adgen.transforms.analyses.kinds import NUMBER
from adgen.transforms.node_index import nodes_of

_OPS = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.FloorDiv, gast.Mod, gast.Pow,
        gast.MatMult)
_DEPTH = 12  # a chain of operations longer than this is not followed


def key_names(key: Any) -> set[str]:
    """The names a shape key's symbols stand for (``("p", x, axis)``, ``("int", k)``)."""
    out: set[str] = set()
    todo = [key]
    while todo:
        k = todo.pop()
        if not isinstance(k, tuple):
            continue
        if len(k) >= 2 and k[0] in ("p", "int") and isinstance(k[1], str):
            out.add(k[1])
            continue
        todo.extend(e for e in k if isinstance(e, tuple))
    return out


def bound_in(loop: gast.For | gast.While) -> set[str] | None:
    """The names ``loop`` binds (its body's stores, its target), or None where the body may
    change an array's shape in place (``x.shape = ...``, ``x.resize(...)``)."""
    out = {n.id for n in nodes_of(loop, gast.Name) if isinstance(n.ctx, gast.Store)}
    for a in nodes_of(loop, gast.Attribute):
        if a.attr == "shape" and isinstance(a.ctx, gast.Store) or a.attr == "resize":
            return None
    return out


def same_every_iteration(n: str, loop: gast.For | gast.While, bound: set[str],
                         kinds: dict[str, Any], keys: dict[str, Any],
                         def_stmt: dict[str, gast.stmt],
                         resolve: Callable[[gast.expr], Any]) -> bool:
    """True when ``n`` has the same shape in every iteration of one run of ``loop`` where
    the loop binds it (``bound``: :func:`bound_in`'s names of the loop; see the module
    docstring for the rules)."""

    def same(e: gast.expr, depth: int) -> bool:
        if isinstance(e, gast.Constant):
            return type(e.value) in (int, float, bool)
        if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
            return same(e.operand, depth + 1)  # -0.3
        if not isinstance(e, gast.Name) or depth > _DEPTH:
            return False
        kind = kinds.get(e.id)
        if kind != NUMBER and type(kind) is not int:
            return False  # not known to be a number or an ndarray
        if e.id not in bound:
            return True
        key = keys.get(e.id)
        if key is not None and not key_names(key) & bound:
            return True
        st = def_stmt.get(e.id)
        if not (isinstance(st, gast.Assign) and len(st.targets) == 1 and
                isinstance(st.targets[0], gast.Name) and st.targets[0].id == e.id):
            return False
        v = st.value
        if isinstance(v, gast.BinOp) and isinstance(v.op, _OPS):
            return same(v.left, depth + 1) and same(v.right, depth + 1)
        if isinstance(v, gast.UnaryOp) and isinstance(v.op, (gast.USub, gast.UAdd)):
            return same(v.operand, depth + 1)
        if isinstance(v, gast.Call) and not v.keywords and v.args and \
                isinstance(resolve(v.func), np.ufunc) and \
                len(v.args) == resolve(v.func).nin:
            return all(same(a, depth + 1) for a in v.args)
        return False

    return same(gast.Name(id=n, ctx=gast.Load(), annotation=None, type_comment=None), 0)
