"""Untracked views: refuse in-place writes through views adgen does not follow.

Input: a parsed, validated FunctionDef. Output: nothing (an analysis); raises
UnsupportedError at the write.

- NumPy returns a writable view of the operand when a one-operand einsum needs no sum
  (``d = np.einsum("ii->i", B)`` is B's diagonal), so ``d *= 2`` doubles B's diagonal;
  adgen's einsum rule takes its result for a new array.
- ``B.mT`` (NumPy 2's matrix transpose) is a view of B; adgen reads it as
  ``np.matrix_transpose(B)`` but does not follow a write through it (``B.mT[0] = v``) to B's
  adjoint.

Such a write reached B in the plain call but not in the gradient: silently wrong. Until these
views are followed, a write to a name bound to one (or to a name it is copied to, ``e = d``),
or through ``x.mT`` itself, is refused at its line: ``x[...] = v``, ``x += v``, ``x.fill(c)``
and the like, and ``out=x``.
"""

from __future__ import annotations

import gast
import numpy as np
from adgen.transforms.bindings import chain_value
from adgen.transforms.parse import Parsed
from adgen.transforms.walk import walk

from adgen.errors import UnsupportedError

# ndarray methods that write the array in place
_WRITING_METHODS = frozenset({"fill", "sort", "put", "itemset", "partition", "resize",
                              "setfield", "byteswap"})


def refuse_untracked_view_writes(parsed: Parsed) -> None:
    """Raises UnsupportedError at the first in-place write through an untracked view.

    Raises:
        UnsupportedError: naming the write's line and the einsum's.
    """
    everything = list(walk(parsed.tree))
    # without an x.mT nor a call that may be a one-operand einsum there is no such view, nor
    # a write through one: the ordering below is not needed (build time)
    if not any(isinstance(n, gast.Attribute) and n.attr == "mT" or
               isinstance(n, gast.Call) and _is_one_operand_einsum(parsed, n)
               for n in everything):
        return
    views: dict[str, gast.AST] = {}  # name -> the statement that bound it to such a view
    # in the order of the source: a name rebound to something else (t = t.copy()) no longer
    # holds the view for the writes after it (a write earlier in a loop's body still counts)
    # (nodes the front's earlier passes made may carry a line without a column, or neither)
    nodes = sorted((n for n in everything if getattr(n, "lineno", None) is not None),
                   key=lambda n: (n.lineno, getattr(n, "col_offset", None) or 0))
    for node in nodes:
        if isinstance(node, gast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], gast.Name):
            bound = node.targets[0].id
            if _is_one_operand_einsum(parsed, node.value) or _is_mt(node.value):
                views[bound] = node
            elif isinstance(node.value, gast.Name) and node.value.id in views:
                views[bound] = views[node.value.id]  # e = d
            elif bound in views and not _written_at(node, bound):
                del views[bound]  # rebound: a new value
            continue
        through = _written_through_mt(node)
        if through is not None:
            raise UnsupportedError(
                f"this writes {through}.mT in place: {through}.mT is a view of {through} "
                "(NumPy 2's matrix transpose), and adgen does not follow a write through it "
                f"to {through}", parsed.location(node),
                hint=f"write {through} through .T or np.swapaxes({through}, -1, -2) "
                     f"(followed), or into a copy ({through}.mT.copy())")
        if _written_through_einsum(parsed, node):
            # np.einsum("ii->i", y)[...] *= 3.0: no name holds the view (a gradient that
            # missed the write, silently, until session 23)
            written, views["np.einsum(...)"] = "np.einsum(...)", node
        else:
            written = _written_name(node)
        if written is not None and written in views:
            made = views[written]
            raise UnsupportedError(
                f"{written} is written in place, and it holds a view adgen does not follow "
                f"(line {getattr(made, 'lineno', '?')}): a one-operand np.einsum, which NumPy "
                "returns as a view of its operand where no sum is needed (np.einsum('ii->i', "
                "a) is a's diagonal), or x.mT",
                parsed.location(node),
                hint="write into a copy (np.einsum(...).copy(), x.mT.copy()) if the operand "
                     "should not change, or into the operand itself (a[np.arange(n), "
                     "np.arange(n)] *= 2 for its diagonal; x.T or np.swapaxes(x, -1, -2) for "
                     "x.mT)")


def _is_one_operand_einsum(parsed: Parsed, value: gast.expr) -> bool:
    if not isinstance(value, gast.Call) or len(value.args) != 2:
        return False
    return chain_value(parsed, value.func, stored_only=False) is np.einsum


def _written_at(node: gast.Assign, name: str) -> bool:
    return _written_name(node) == name


def _is_mt(value: gast.expr) -> bool:
    return isinstance(value, gast.Attribute) and value.attr == "mT"


def _written_through_mt(node: gast.AST) -> str | None:
    """The name whose ``.mT`` ``node`` writes in place (``B.mT[0] = v``, ``B.mT[...] += v``)."""
    targets = node.targets if isinstance(node, gast.Assign) else \
        [node.target] if isinstance(node, gast.AugAssign) else []
    for t in targets:
        base = t
        while isinstance(base, (gast.Subscript, gast.Attribute)):
            if _is_mt(base) and isinstance(base.value, gast.Name) and base is not t:
                return base.value.id
            base = base.value
    return None


def _written_through_einsum(parsed: Parsed, node: gast.AST) -> bool:
    """Whether ``node`` writes the result of a one-operand einsum call in place, with no
    name between (``np.einsum("ii->i", y)[...] *= 3.0``, ``np.einsum(...).fill(0)``)."""
    targets = node.targets if isinstance(node, gast.Assign) else \
        [node.target] if isinstance(node, gast.AugAssign) else []
    for t in targets:
        base = t
        while isinstance(base, gast.Subscript):
            base = base.value
        if base is not t and _is_one_operand_einsum(parsed, base):
            return True
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and \
            node.func.attr in _WRITING_METHODS:
        return _is_one_operand_einsum(parsed, node.func.value)
    return False


def _written_name(node: gast.AST) -> str | None:
    """The name ``node`` writes in place, if it is such a write."""
    if isinstance(node, gast.AugAssign):
        target = node.target
        while isinstance(target, gast.Subscript):
            target = target.value
        return target.id if isinstance(target, gast.Name) else None
    if isinstance(node, gast.Assign):
        for t in node.targets:
            if isinstance(t, gast.Subscript):
                base = t.value
                while isinstance(base, gast.Subscript):
                    base = base.value
                if isinstance(base, gast.Name):
                    return base.id
        return None
    if isinstance(node, gast.Call):
        f = node.func
        if isinstance(f, gast.Attribute) and f.attr in _WRITING_METHODS and \
                isinstance(f.value, gast.Name):
            return f.value.id
        for k in node.keywords:
            if k.arg == "out" and isinstance(k.value, gast.Name):
                return k.value.id
    return None
