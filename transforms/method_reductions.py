"""Reductions of known arrays as methods in forward code: ``np.sum(a, axis=1, keepdims=True)``
-> ``a.sum(axis=1, keepdims=True)`` (and ``np.max``/``np.amax``, ``np.min``/``np.amin``,
``np.mean``).

For an ``np.ndarray`` the function and the method are one reduction: ``np.sum`` hands an
ndarray to ``np.add.reduce`` with the same axis and keepdims that ``ndarray.sum`` passes it
(``np.max`` to ``np.maximum.reduce``, ``np.mean`` to the same ``_mean``), so the result has
the same bits. The function first goes through NumPy's Python dispatch (``_wrapreduction``),
1.5-2 us in NumPy 2 at every call: as long as a softmax's row sum of a 128 x 10 matrix (the
reduction itself takes 3.5 us). A person who times such code writes the method.

Input: the forward function as the reverse pass builds it (reverse_forward; before
fold_temporaries) and the kinds of its names (analyses.kinds: an ``int``
kind is an ``np.ndarray`` of that rank, never a subclass or a number). Output: the same
function where each call ``np.f(a)``, ``np.f(a, axis)`` or ``np.f(a, axis=..., keepdims=...)``
of one of those reductions, ``a`` a name of a known array of rank >= 1, is ``a.f(...)`` with
the same arguments after ``a``. Any other keyword (``dtype``, ``out``, ``where``,
``initial``: lowered or refused before this runs), a starred argument, a number or a value of
unknown kind (a Python float or a list has no ``.sum``) leaves the call as written. (For an
ndarray subclass, a masked array or ``np.matrix``, ``np.sum`` calls the object's own method
anyway.) The positional ``axis`` is the first parameter of the method as of the function
after ``a``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast
import numpy as np
from adgen.transforms.walk import Transformer

# the function's id -> the ndarray method computing the same reduction
_METHODS = {id(np.sum): "sum", id(np.max): "max", id(np.min): "min", id(np.amax): "max",
            id(np.amin): "min", id(np.mean): "mean"}
# keywords passed through as they are (both name the same parameter of the method)
_KEYWORDS = frozenset({"axis", "keepdims"})


class _MethodReductions(Transformer):
    def __init__(self, kinds: dict[str, Any], resolve: Callable[[gast.expr], Any]) -> None:
        self.kinds = kinds
        self.resolve = resolve

    def visit_Call(self, node: gast.Call) -> gast.expr:
        self.generic_visit(node)
        if not (isinstance(node.func, gast.Attribute) and 1 <= len(node.args) <= 2 and
                isinstance(node.args[0], gast.Name)):
            return node
        if any(isinstance(a, gast.Starred) for a in node.args) or \
                any(k.arg not in _KEYWORDS for k in node.keywords):
            return node  # **kwargs (k.arg None), dtype=, out=, ...
        if len(node.args) == 2 and any(k.arg == "axis" for k in node.keywords):
            return node  # axis given twice: NumPy's own TypeError stays the user's
        k = self.kinds.get(node.args[0].id)
        if not (isinstance(k, int) and k >= 1):
            return node
        method = _METHODS.get(id(self.resolve(node.func)))
        if method is None:
            return node
        return gast.Call(func=gast.Attribute(value=node.args[0], attr=method, ctx=gast.Load()),
                         args=node.args[1:], keywords=node.keywords)


def method_reductions(fn: gast.FunctionDef, kinds: dict[str, Any],
                      resolve: Callable[[gast.expr], Any]) -> gast.FunctionDef:
    """``fn`` (a forward) with its reductions of known arrays as methods (module docstring).

    Args:
        fn: the forward function, rewritten in place.
        kinds: analyses.kinds of its names.
        resolve: the object a callee expression names (``np.sum``), or None.

    Returns:
        ``fn``.
    """
    return _MethodReductions(kinds, resolve).visit(fn)
