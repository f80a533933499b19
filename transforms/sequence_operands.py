"""List and tuple operands of NumPy functions, taken as arrays where a rule's template reads
them.

NumPy takes ``np.multiply([a, b], c)``, ``np.square((x1, x3))`` and ``np.add(u, v)`` of
``u = [x0]`` as arrays, but a ufunc's derivative rule's template applies Python's operators to its
operands: ``2.0 * x * g`` of a list raised TypeError (can't multiply sequence by non-int),
``d1 + d2`` of two lists concatenated them (a silently wrong jvp). The reverse pass
(``reverse_ops.instantiate``) and the jvp code (``tangent.apply_rule``) wrap such an operand,
and its tangent, in ``np.asarray`` for the rule of a ufunc (or np.linalg.norm), where
the operand is a differentiated parameter (not ``axis=(0, 1)``):

- a list or tuple display (``[t3, t4]``), or
- a name every binding of which is a display or a list comprehension (``t1 = [x]`` of the
  normal form, ``pair = (x[1], x[3])``): :func:`display_names`.

In reverse mode (compiled per argument signature) so is an operand the effects analysis
knows to hold a list or tuple: a list parameter (``np.square(L)``) or a slice of one. In
forward mode (compiled for any arguments) so is a name bound only to a slice
(:func:`slice_names`: ``np.add(L[:1], L[1:])``, whose jvp concatenated the slices' list
tangents); a list parameter itself is not (docs/limitations.md). Only the operands of a call
are wrapped: ``a + b`` of two lists concatenates them, as Python does.
"""

from __future__ import annotations

from typing import Any

import gast
import numpy as np
from adgen.transforms.desugar import name
from adgen.transforms.walk import walk

_DISPLAYS = (gast.List, gast.Tuple, gast.ListComp)


def of_numpy(primal: Any) -> bool:
    """A NumPy ufunc (or np.linalg.norm), which takes a list operand as an array. (Not every
    NumPy function: np.concatenate's and np.stack's rules take their list as a list.)"""
    return isinstance(primal, np.ufunc) or primal is np.linalg.norm


def as_array(e: gast.expr) -> gast.expr:
    """``np.asarray(e)``."""
    return gast.Call(func=gast.Attribute(value=name("np"), attr="asarray", ctx=gast.Load()),
                     args=[e], keywords=[])


def display_names(fn: gast.FunctionDef) -> frozenset[str]:
    """The names ``fn`` binds, every time, to a list or tuple display or a list
    comprehension (plain assignments only: a loop target, an augmented or unpacking
    assignment makes a name something else)."""
    values: dict[str, list[bool]] = {}
    for st in walk(fn):
        targets = st.targets if isinstance(st, gast.Assign) else \
            [st.target] if isinstance(st, (gast.AugAssign, gast.AnnAssign, gast.For)) else []
        for t in targets:
            for n in walk(t):
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                    values.setdefault(n.id, []).append(
                        isinstance(st, gast.Assign) and t is n and isinstance(st.value, _DISPLAYS))
    for a in walk(fn.args):
        if isinstance(a, gast.Name):
            values.setdefault(a.id, []).append(False)
    return frozenset(n for n, shown in values.items() if all(shown))


def slice_names(fn: gast.FunctionDef) -> frozenset[str]:
    """The names ``fn`` binds, every time, to a slice of something (``t1 = L[:1]`` of the
    normal form): a list, a tuple or an array, never a number, so ``np.asarray`` of one is
    the array NumPy's ufunc takes (of an array, the array itself). A list parameter's slice
    handed to a ufunc (``np.add(L[:1], L[1:])``) had its list tangents concatenated by the
    jvp's ``d1 + d2``: a silently wrong jvp before session 21."""
    values: dict[str, list[bool]] = {}
    for st in walk(fn):
        targets = st.targets if isinstance(st, gast.Assign) else \
            [st.target] if isinstance(st, (gast.AugAssign, gast.AnnAssign, gast.For)) else []
        for t in targets:
            for n in walk(t):
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                    values.setdefault(n.id, []).append(
                        isinstance(st, gast.Assign) and t is n and
                        isinstance(st.value, gast.Subscript) and
                        isinstance(st.value.slice, gast.Slice))
    for a in walk(fn.args):
        if isinstance(a, gast.Name):
            values.setdefault(a.id, []).append(False)
    return frozenset(n for n, sliced in values.items() if all(sliced))


def is_sequence_operand(arg: Any, names: frozenset[str]) -> bool:
    """``arg`` (a bound rule argument) is a display or a name in ``names``."""
    return isinstance(arg, (gast.List, gast.Tuple)) or \
        (isinstance(arg, gast.Name) and arg.id in names)
