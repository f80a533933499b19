"""Saved arrays a single-use pullback may consume: made fresh by the forward, held by nothing
else.

``adgen.grad`` and ``value_and_grad`` run the pullback exactly once, right after its forward
(PyTorch frees saved tensors after ``backward`` for the same reason). Their compilation (the
``single_use`` flag of ``pipeline.compile_function``; never ``vjp``'s, whose pullback may run
again, nor the program a higher derivative differentiates, nor a callee's) lets
``lean_pullback`` take over a saved array at its last read as the buffer of an adjoint
(``p *= s; t_bar -= p`` for ``t_bar -= p * s``).

Input: the final forward (after ``drop_dead_arrays``), whose one return is its last top-level
statement, ``return (out, (n1, n2, ...))``. Output: the saved names ``n`` such that

- ``n`` is bound once in the forward, at its top level, by arithmetic (``BinOp``/``UnaryOp``:
  a new array or number), and is known to hold a float64 array (``f64``, of rank ``ranks``);
- every other read of ``n`` in the forward is an operand of arithmetic or a comparison, an
  attribute ``shape``/``ndim``/``dtype``/``size``, or the one argument of a NumPy ufunc or
  reduction called without ``out=`` (``np.log(n)``, ``np.sum(n, axis=1)``): a new value. A
  read anywhere else (the returned value, ``has_aux``'s output, a tuple or list, a call of a
  user function or of anything else, an assignment ``q = n`` or ``G[0] = n``, a view
  ``n[1:]`` or ``n.T``, a capture) may keep the array or a view of it, and ``n`` is not
  consumable;
- ``n`` appears once in the saved tuple.

Also :func:`shape_numbers`: the names bound to an array's ``x.shape[k]`` (Python ints, which
NumPy takes as weak: they widen no product).

Nothing is rewritten here (an analysis).
"""

from __future__ import annotations

import gast
import numpy as np
from adgen.transforms.walk import children, walk

# NumPy functions (called as np.NAME) that return a new array and keep no reference to
# their first argument when called without out=
_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "prod", "amax", "amin", "std", "var"})
_SAFE_ATTRS = frozenset({"shape", "ndim", "dtype", "size"})


def _fresh_numpy(name: str) -> bool:
    return name in _REDUCTIONS or isinstance(getattr(np, name, None), np.ufunc)


def consumable_saved(forward: gast.FunctionDef, ranks: dict[str, int],
                     f64: set[str]) -> set[str]:
    """The saved names of ``forward`` a single-use pullback may write in place (module
    docstring); empty where the forward's shape is not the one described there."""
    body = forward.body
    if not body or not isinstance(body[-1], gast.Return):
        return set()
    ret = body[-1].value
    if not (isinstance(ret, gast.Tuple) and len(ret.elts) == 2 and
            isinstance(ret.elts[1], gast.Tuple)):
        return set()
    # (an early return, which hands other values back, is counted by the one walk below,
    # made only where a name is a candidate: a walk of the whole forward less)
    saved_tuple = ret.elts[1]
    saved = [e.id for e in saved_tuple.elts if isinstance(e, gast.Name)]
    params = {a.id for a in walk(forward.args) if isinstance(a, gast.Name)}
    top_bound: dict[str, int] = {}
    fresh_bound: set[str] = set()
    for st in body:
        if isinstance(st, gast.Assign) and len(st.targets) == 1 and \
                isinstance(st.targets[0], gast.Name):
            n = st.targets[0].id
            top_bound[n] = top_bound.get(n, 0) + 1
            if isinstance(st.value, (gast.BinOp, gast.UnaryOp)):
                fresh_bound.add(n)
    # what the top level and the facts decide, before any walk of the whole forward (build
    # time: most forwards have no candidate left here)
    candidates = {n for n in saved if saved.count(n) == 1 and n not in params and
                  n in fresh_bound and top_bound.get(n) == 1 and n in f64 and
                  ranks.get(n, 0) >= 1}
    if not candidates:
        return set()
    # one walk for the returns, the stores and the reads (three walks before)
    returns = 0
    stores: dict[str, int] = {}
    parents: dict[int, gast.AST] = {}
    loads: list[gast.Name] = []
    todo: list[gast.AST] = [forward]
    for node in todo:
        kids = children(node)
        for child in kids:
            parents[id(child)] = node
        todo.extend(kids)
        if isinstance(node, gast.Name):
            if isinstance(node.ctx, gast.Store):
                stores[node.id] = stores.get(node.id, 0) + 1
            elif isinstance(node.ctx, gast.Load) and node.id in candidates:
                loads.append(node)
        elif isinstance(node, gast.AugAssign):
            stores[_root(node.target)] = stores.get(_root(node.target), 0) + 2
        elif isinstance(node, gast.Return):
            returns += 1
    if returns != 1:
        return set()  # an early return hands other values back
    escaping = _escaping(loads, parents, saved_tuple)
    return {n for n in candidates if stores.get(n) == 1 and n not in escaping}


def shape_numbers(forward: gast.FunctionDef, ranks: dict[str, int]) -> set[str]:
    """Names bound once in ``forward``, at its top level, to ``x.shape[k]`` of an array
    ``x`` (``ranks``) with an int literal ``k``: a Python int."""
    found = []
    for st in forward.body:
        if isinstance(st, gast.Assign) and len(st.targets) == 1 and \
                isinstance(st.targets[0], gast.Name):
            v = st.value
            if isinstance(v, gast.Subscript) and isinstance(v.slice, gast.Constant) and \
                    type(v.slice.value) is int and isinstance(v.value, gast.Attribute) and \
                    v.value.attr == "shape" and isinstance(v.value.value, gast.Name) and \
                    ranks.get(v.value.value.id, 0) >= 1:
                found.append(st.targets[0].id)
    if not found:
        return set()  # no walk of the forward (build time)
    counts: dict[str, int] = {}
    for node in walk(forward):
        if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Del)):
            counts[node.id] = counts.get(node.id, 0) + 1
    return {n for n in found if counts[n] == 1}


def _root(e: gast.expr) -> str:
    while isinstance(e, (gast.Subscript, gast.Attribute)):
        e = e.value
    return e.id if isinstance(e, gast.Name) else ""


def _escaping(loads: list[gast.Name], parents: dict[int, gast.AST],
              saved_tuple: gast.Tuple) -> set[str]:
    """Names read somewhere in the forward (``loads``, each with its parent in ``parents``;
    the saved tuple aside) where the value or a view of it may be kept."""
    out: set[str] = set()
    for node in loads:
        up = parents.get(id(node))
        if up is saved_tuple:
            continue
        if isinstance(up, (gast.BinOp, gast.UnaryOp, gast.Compare)) or \
                isinstance(up, gast.Attribute) and up.attr in _SAFE_ATTRS:
            continue
        if isinstance(up, gast.Call) and len(up.args) >= 1 and up.args[0] is node and \
                not any(k.arg == "out" for k in up.keywords) and \
                all(node is not a for a in up.args[1:]) and \
                isinstance(up.func, gast.Attribute) and \
                isinstance(up.func.value, gast.Name) and up.func.value.id == "np" and \
                _fresh_numpy(up.func.attr):
            continue
        if isinstance(up, gast.AugAssign) and up.value is node:
            continue  # y += n: adds n's values into y
        out.add(node.id)
    return out
