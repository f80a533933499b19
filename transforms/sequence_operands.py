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


def as_sequence(e: gast.expr) -> gast.expr:
    """``sequence_operand(e)``: ``e`` as an array where it is a list or tuple (a helper of the
    tangent code)."""
    return gast.Call(func=name("sequence_operand"), args=[e], keywords=[])


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


def parameter_sequences(fn: gast.FunctionDef) -> frozenset[str]:
    """The names that may hold a list or tuple the function is given, which forward mode
    (compiled for any arguments) cannot tell from an array or a number: the parameters, and
    the names bound (at any binding) to one of these, to an item or attribute of one (a list
    of lists' row), or to what a loop over one walks. A ufunc's rule template applying Python's
    operators to such an operand (``2.0 * L * d`` of ``np.square(L)``) reads it through
    ``sequence_operand`` (:func:`template_operands`): a TypeError before session 23."""
    sources: dict[str, list[gast.AST]] = {}
    for st in walk(fn):
        if isinstance(st, gast.Assign):
            pairs = [(t, st.value) for t in st.targets]
        elif isinstance(st, gast.For):
            pairs = [(st.target, gast.Subscript(value=st.iter, slice=gast.Constant(0, None),
                                                ctx=gast.Load()))]
        else:
            continue
        for t, v in pairs:
            for n in walk(t):
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                    # (an unpacked target: an item of the value)
                    sources.setdefault(n.id, []).append(v)
    found = {a.id for a in walk(fn.args) if isinstance(a, gast.Name)}
    changed = True
    while changed:
        changed = False
        for n, values in sources.items():
            if n not in found and any(_reaches(v, found) for v in values):
                found.add(n)
                changed = True
    return frozenset(found)


# Calls whose result holds its arguments' items: a loop's sequence (desugar's loop_sequence),
# list(L), zip(L, c)
_PASSING = frozenset({"loop_sequence", "list", "tuple", "reversed", "sorted", "enumerate",
                      "zip"})


def _reaches(v: gast.AST, found: set[str]) -> bool:
    """``v`` is a name in ``found``, or an item, slice or attribute of one, or a list of its
    items (``_PASSING``)."""
    while isinstance(v, (gast.Subscript, gast.Attribute)):
        v = v.value
    if isinstance(v, gast.Call) and isinstance(v.func, gast.Name) and v.func.id in _PASSING:
        return any(_reaches(a, found) for a in v.args)
    return isinstance(v, gast.Name) and v.id in found


_OPERATORS = (gast.BinOp, gast.UnaryOp, gast.Compare)


def _operands(e: gast.AST) -> list[gast.expr]:
    """The direct operands of an operator node."""
    if isinstance(e, gast.BinOp):
        return [e.left, e.right]
    if isinstance(e, gast.UnaryOp):
        return [e.operand]
    if isinstance(e, gast.Compare):
        return [e.left, *e.comparators]
    return []


def template_operands(tpl: gast.expr, params: frozenset[str], tangent: str = "d"
                      ) -> tuple[frozenset[str], bool]:
    """Which of ``params`` (a ufunc rule's operands that may hold a list) its jvp template
    ``tpl`` applies a Python operator to directly (``2.0 * x * d``, ``x2 != 0``): those must be
    read as arrays. And whether its tangent ``d`` must be too: an operator's operand beside a
    number, another tangent or a name not read as an array (``d * 3`` repeated a list, ``-d``
    raised TypeError); beside a call or an operation of arrays it broadcasts as NumPy does."""
    wrapped = {n.id for e in walk(tpl) if isinstance(e, _OPERATORS)
               for n in _operands(e) if isinstance(n, gast.Name) and n.id in params}
    tangent_too = False
    for e in walk(tpl):
        ops = _operands(e) if isinstance(e, _OPERATORS) else []
        if not any(isinstance(o, gast.Name) and o.id == tangent for o in ops):
            continue
        others = [o for o in ops if not (isinstance(o, gast.Name) and o.id == tangent)]
        if not others or len(others) < len(ops) - 1 or any(
                isinstance(o, gast.Constant) or
                isinstance(o, gast.Name) and o.id != "out" and o.id not in wrapped
                for o in others):
            tangent_too = True
    return frozenset(wrapped), tangent_too
