"""Shift invariance: row shifts of a normalised exponential, whose derivative is zero.

Input: a function in SSA form (read only), its effects, the kinds of its names at one
argument signature, and how to resolve a global name to its object. Output: the names ``m``
bound to a ``keepdims`` reduction along an axis ``k`` (``m = s.max(axis=1, keepdims=True)``)
that are read only where they shift the input of a normalised exponential along that axis::

    s1 = s - m                       (or  s1 = s; s1 -= m)
    e = np.exp(s1)                   (or  e = np.exp(s1, out=s1))
    t = np.sum(e, axis=k, keepdims=True)
    p = e / t                        (the softmax; or the log-softmax:
                                      l = np.log(t); q = s1 - l)

``p`` does not depend on ``m`` (``exp(s - m) / sum(exp(s - m)) = exp(s) / sum(exp(s))`` for any
``m`` constant along ``k``), so ``m``'s adjoint from the shift is exactly zero: the row sums of
``s1``'s adjoint, ``e * (p_bar - sum(p_bar * p)) / t``, vanish. A person leaves the max out of
the gradient for this reason; the reverse pass may treat such an ``m`` as a constant: no
``max_vjp``, no row sum of the cotangent, and nothing kept for them (the copy of ``s`` the max's
pullback reads before ``s -= m`` overwrites it). Nor does ``q = s1 - log(sum(exp(s1)))``:
the row sums of ``s1``'s adjoint, ``q_bar - p * sum(q_bar)``, vanish too. There ``s1`` is
read by the subtraction as well, so its exponential must be a new array (no ``out=s1``), and
``t`` and ``l`` are read only by the log and the subtraction.

What is checked, so that the SSA names are the values the formula speaks of: the five
statements are at the top level of the body, in that order; ``m``, ``s1``, ``e``, ``t`` are each
bound once; ``s``, ``s1`` and ``e`` are ndarrays of one known rank (analyses.kinds), ``m``
and ``t`` reductions of arrays of that rank along the same constant axis with
``keepdims=True`` and no other keyword (so constant along it); after the shift,
no name that may share ``s1``'s or ``e``'s buffer is read anywhere but in these statements
(so nothing writes, views or returns the exponential before ``p`` is formed), ``t`` is read
only by the division, and every read of ``m`` is such a shift. Anything else leaves ``m``
active, with its usual derivative.

A reduction over every element (``m = s.max()``, ``t = np.sum(e)``: no axis, no other
argument) is one number, constant along every axis: ``m`` may be one with ``t`` along any
axis, and ``t`` one only with such an ``m`` (``e -= e.max(); np.exp(e, out=e); p = e /
e.sum()``, the softmax of a vector). The softmax and log-softmax rules sum along one axis:
those patterns keep the division's and the log's own rules (normalised_exponentials,
logs_of_softmaxes leave them out), and only ``m`` loses its derivative.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast
import numpy as np
from adgen.transforms.analyses.effects import Effects
from adgen.transforms.node_index import nodes_of

# Reductions whose keepdims result is constant along the reduced axis.
_REDUCTIONS = ("max", "min", "amax", "amin", "mean", "sum")


def shift_invariant(fn: gast.FunctionDef, eff: Effects, kinds: dict[str, Any],
                    resolve: Callable[[gast.expr], Any]) -> set[str]:
    """The names whose every read is a shift a normalised exponential cancels (see the
    module's docstring)."""
    shifts: dict[str, set[int]] = {}  # m -> ids of the shift statements proven
    for found in _proven(fn, eff, kinds, resolve):
        shifts.setdefault(found.m, set()).update(id(st) for st in found.shift
                                                  if not _is_bind(st))
    if not shifts:
        return set()
    loads = _loads(fn)
    return {m for m, at in shifts.items()
            if all(st is not None and id(st) in at for st in loads.get(m, ()))}


def normalised_exponentials(fn: gast.FunctionDef, eff: Effects, kinds: dict[str, Any],
                            resolve: Callable[[gast.expr], Any]
                            ) -> dict[int, tuple[str, str, int]]:
    """``id(p = e / t)`` -> ``(s1, e, k)`` for each proven pattern (the module's docstring):
    ``e`` and ``t`` are read nowhere else and ``s1``'s buffer not after the exponential, so
    ``s1``'s adjoint is the softmax's, ``p * (p_bar - sum(p_bar * p, axis=k,
    keepdims=True))`` (rules.reductions.softmax), and neither ``e`` nor ``t`` has one."""
    return {id(f.div): (f.s1, f.e, f.axis) for f in _proven(fn, eff, kinds, resolve)
            if not f.log and f.axis is not None}  # (the rule sums along one axis)


class _Found:
    """A proven pattern: the division (or the log's subtraction) ``div``, the shift ``m`` and
    its statements, the shifted ``s1``, the exponential ``e``, the axis. A plain class: a
    NamedTuple is made by exec of generated code when the module is imported (0.2 ms on
    the first gradient's path)."""

    __slots__ = ("div", "m", "shift", "s1", "e", "axis", "log")

    def __init__(self, div: gast.stmt, m: str, shift: list[gast.stmt], s1: str, e: str,
                 axis: int | None, log: bool) -> None:
        self.div = div
        self.m = m
        self.shift = shift
        self.s1 = s1
        self.e = e
        self.axis = axis
        self.log = log  # q = s1 - np.log(t), not p = e / t


def _loads(fn: gast.FunctionDef) -> dict[str, list[gast.stmt | None]]:
    """Every load, with the top-level statement that runs it; None under a nested function
    or lambda (it runs when called, at no position of the body)."""
    nested = {id(n) for d in nodes_of(fn, gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda)
              if d is not fn for n in nodes_of(d)}
    loads: dict[str, list[gast.stmt | None]] = {}
    for st in fn.body:
        for n in nodes_of(st, gast.Name):
            if isinstance(n.ctx, gast.Load):
                loads.setdefault(n.id, []).append(None if id(n) in nested else st)
    return loads


def _calls_exp(top: list[gast.stmt], resolve: Callable[[gast.expr], Any]) -> bool:
    """Whether a statement of ``top`` calls ``np.exp`` (or a method ``.exp``): a cheap test
    that spares the proof's walks of a function without one (a stencil's build)."""
    for st in top:
        for n in nodes_of(st, gast.Call):
            if isinstance(n, gast.Call) and (
                    isinstance(n.func, gast.Attribute) and n.func.attr == "exp" or
                    isinstance(n.func, gast.Name) and resolve(n.func) is np.exp):
                return True
    return False


def _proven(fn: gast.FunctionDef, eff: Effects, kinds: dict[str, Any],
            resolve: Callable[[gast.expr], Any]) -> list[_Found]:
    """The patterns of the module's docstring whose buffers and names pass its checks."""
    top = list(fn.body)
    if not _calls_exp(top, resolve):
        return []  # every pattern has an np.exp: skipping the proof only keeps a derivative
    pos = {id(st): k for k, st in enumerate(top)}
    defs: dict[str, list[gast.stmt]] = {}
    for st in nodes_of(fn, gast.Assign, gast.For, gast.AugAssign):
        if isinstance(st, gast.Assign):
            for t in st.targets:
                for n in nodes_of(t, gast.Name):
                    if isinstance(n.ctx, gast.Store):
                        defs.setdefault(n.id, []).append(st)
        elif isinstance(st, (gast.For, gast.AugAssign)) and isinstance(st.target, gast.Name):
            defs.setdefault(st.target.id, []).append(st)
    loads = _loads(fn)
    aliases = eff.aliases()

    def one_def(name: str) -> gast.stmt | None:
        d = defs.get(name, [])
        return d[0] if len(d) == 1 and id(d[0]) in pos else None

    def rank(name: str) -> int | None:
        k = kinds.get(name)
        return k if type(k) is int and k >= 1 else None

    out = []
    for div in top:
        found = _normalised(div, one_def, rank, resolve, defs, pos)
        log = found is None  # else the log-softmax: q = s1 - np.log(t)
        if log:
            found = _log_normalised(div, one_def, rank, resolve, defs, pos)
        if found is None:
            continue
        m, shift_stmts, protected, buffer_names, t, axis = found
        group = set(buffer_names)
        for n in buffer_names:
            group |= aliases.get(n, set())
        if any(not eff.buffers.get(n) or any(not b.startswith("new:")
                                             for b in eff.buffers[n]) for n in group):
            continue  # an argument's buffer: its final contents are an output too
        start = min(pos[id(st)] for st in shift_stmts)
        ok = all(st is not None and (pos[id(st)] < start or id(st) in protected)
                 for n in group for st in loads.get(n, ()))
        if log:  # t read by the log alone, the log by the subtraction alone
            lg = div.value.right.id  # type: ignore[attr-defined]
            ok = ok and all(st is one_def(lg) for st in loads.get(t, ())) and \
                all(st is div for st in loads.get(lg, ()))
        else:
            ok = ok and all(st is div for st in loads.get(t, ()))
        if ok:
            out.append(_Found(div, m, shift_stmts, buffer_names[0], buffer_names[1], axis,
                              log))
    return out


def _is_bind(st: gast.stmt) -> bool:
    return isinstance(st, gast.Assign) and isinstance(st.value, gast.Name)


def _normalised(div: gast.stmt, one_def: Callable[[str], gast.stmt | None],
                rank: Callable[[str], int | None], resolve: Callable[[gast.expr], Any],
                defs: dict[str, list[gast.stmt]], pos: dict[int, int]
                ) -> tuple[str, list[gast.stmt], set[int], list[str], str, int] | None:
    """For ``p = e / t`` closing the pattern: (m, the shift's statements, the ids of the
    statements allowed to read the buffer after the shift, the names of that buffer (s1, e),
    t, the axis)."""
    if not (isinstance(div, gast.Assign) and len(div.targets) == 1 and
            isinstance(div.targets[0], gast.Name) and isinstance(div.value, gast.BinOp) and
            isinstance(div.value.op, gast.Div) and isinstance(div.value.left, gast.Name) and
            isinstance(div.value.right, gast.Name)):
        return None
    e, t = div.value.left.id, div.value.right.id
    return _exponential(div, e, t, [], one_def, rank, resolve, defs, pos)


def _log_normalised(close: gast.stmt, one_def: Callable[[str], gast.stmt | None],
                    rank: Callable[[str], int | None], resolve: Callable[[gast.expr], Any],
                    defs: dict[str, list[gast.stmt]], pos: dict[int, int]
                    ) -> tuple[str, list[gast.stmt], set[int], list[str], str, int] | None:
    """For ``q = s1 - l`` with ``l = np.log(t)`` closing the log-softmax (``q = s1 -
    log(sum(exp(s1)))`` does not change when ``s1`` is shifted along the summed axis, so the
    shift's adjoint, ``-sum(q_bar - softmax * sum(q_bar))``, is zero): as :func:`_normalised`,
    ``l`` and ``t`` read only by the statement after them."""
    if not (isinstance(close, gast.Assign) and len(close.targets) == 1 and
            isinstance(close.targets[0], gast.Name) and isinstance(close.value, gast.BinOp) and
            isinstance(close.value.op, gast.Sub) and isinstance(close.value.left, gast.Name) and
            isinstance(close.value.right, gast.Name)):
        return None
    s1, lg = close.value.left.id, close.value.right.id
    log_st = one_def(lg)
    if log_st is None or not isinstance(log_st, gast.Assign):
        return None
    call = log_st.value
    if not (isinstance(call, gast.Call) and resolve(call.func) is np.log and
            len(call.args) == 1 and isinstance(call.args[0], gast.Name) and
            not call.keywords):
        return None
    t = call.args[0].id
    sum_st = one_def(t)
    if sum_st is None or not isinstance(sum_st, gast.Assign) or rank(s1) is None:
        return None
    red = _reduction(sum_st.value, resolve, rank, ("sum",), full=True)
    if red is None or lg in (s1, t, red[0]):
        return None
    exp_st = one_def(red[0])
    if not isinstance(exp_st, gast.Assign) or not isinstance(exp_st.value, gast.Call) or \
            exp_st.value.keywords:
        return None  # np.exp(s1, out=s1): the subtraction would read the exponential
    found = _exponential(close, red[0], t, [log_st], one_def, rank, resolve, defs, pos)
    if found is None or found[3][0] != s1:
        return None  # the exponential of another array than the one subtracted from
    return found


def _exponential(close: gast.stmt, e: str, t: str, between: list[gast.stmt],
                 one_def: Callable[[str], gast.stmt | None],
                 rank: Callable[[str], int | None], resolve: Callable[[gast.expr], Any],
                 defs: dict[str, list[gast.stmt]], pos: dict[int, int]
                 ) -> tuple[str, list[gast.stmt], set[int], list[str], str, int | None] | None:
    """The common part of the patterns closed by ``close``: ``t`` the row sums of ``e =
    np.exp(s1)``, ``s1`` the shift of ``s`` by ``m``; ``between``: statements after the sum
    and before ``close`` (the log)."""
    r = rank(e)
    if r is None or e == t:
        return None
    sum_st = one_def(t)
    if sum_st is None or not isinstance(sum_st, gast.Assign):
        return None
    red = _reduction(sum_st.value, resolve, rank, ("sum",), full=True)
    if red is None or red[0] != e or red[1] is not None and not -r <= red[1] < r:
        return None
    axis = None if red[1] is None else red[1] % r  # (None: the sum of every element)
    exp_st = one_def(e)
    if exp_st is None or not isinstance(exp_st, gast.Assign):
        return None
    call = exp_st.value
    if not (isinstance(call, gast.Call) and resolve(call.func) is np.exp and
            len(call.args) == 1 and isinstance(call.args[0], gast.Name)):
        return None
    s1 = call.args[0].id
    if any(not (k.arg == "out" and isinstance(k.value, gast.Name) and k.value.id == s1)
           for k in call.keywords) or rank(s1) != r:
        return None
    # the shift: s1 = s - m, or s1 = s; s1 -= m (the normal form of s -= m)
    s1_defs = defs.get(s1, [])
    if len(s1_defs) == 1 and isinstance(s1_defs[0], gast.Assign) and \
            isinstance(s1_defs[0].value, gast.BinOp) and \
            isinstance(s1_defs[0].value.op, gast.Sub) and \
            isinstance(s1_defs[0].value.left, gast.Name) and \
            isinstance(s1_defs[0].value.right, gast.Name):
        s, m = s1_defs[0].value.left.id, s1_defs[0].value.right.id
        shift = [s1_defs[0]]
    elif len(s1_defs) == 2 and _is_bind(s1_defs[0]) and \
            isinstance(s1_defs[1], gast.AugAssign) and isinstance(s1_defs[1].op, gast.Sub) and \
            isinstance(s1_defs[1].value, gast.Name) and \
            pos.get(id(s1_defs[1])) == pos.get(id(s1_defs[0]), -2) + 1:
        s, m = s1_defs[0].value.id, s1_defs[1].value.id
        shift = list(s1_defs)
    else:
        return None
    if any(id(st) not in pos for st in shift) or rank(s) != r or m in (s, s1, e, t):
        return None
    m_st = one_def(m)
    if m_st is None or not isinstance(m_st, gast.Assign):
        return None
    # m over every element is constant along any axis; along an axis, the sum's
    mred = _reduction(m_st.value, resolve, rank, _REDUCTIONS, full=True)
    if mred is None or rank(mred[0]) != r or mred[1] is not None and (
            axis is None or not -r <= mred[1] < r or mred[1] % r != axis):
        return None
    order = [pos[id(m_st)], pos[id(shift[-1])], pos[id(exp_st)], pos[id(sum_st)]] + [
        pos.get(id(st), -1) for st in between] + [pos[id(close)]]
    if order != sorted(order) or len(set(order)) != len(order):
        return None
    protected = {id(st) for st in shift} | {id(exp_st), id(sum_st), id(close)}
    return m, shift, protected, [s1, e], t, axis


def _reduction(v: gast.expr, resolve: Callable[[gast.expr], Any],
               rank: Callable[[str], int | None], names: tuple[str, ...],
               full: bool = False) -> tuple[str, int | None] | None:
    """(the array reduced, the axis) for ``np.f(x, axis=k, keepdims=True)`` or
    ``x.f(axis=k, keepdims=True)`` (``f`` one of ``names``, ``k`` a constant int, the axis
    given by keyword or position, no other argument); with ``full``, (x, None) for ``np.f(x)``
    or ``x.f()`` too (over every element: no axis, no other argument); else None."""
    if not isinstance(v, gast.Call):
        return None
    f = v.func
    obj = resolve(f)
    args = list(v.args)
    if obj is not None:
        if not any(obj is getattr(np, n, None) for n in names) or not args:
            return None
        x = args.pop(0)
    elif isinstance(f, gast.Attribute) and f.attr in names and \
            isinstance(f.value, gast.Name) and rank(f.value.id) is not None:
        x = f.value
    else:
        return None
    if not isinstance(x, gast.Name):
        return None
    kw = {k.arg: k.value for k in v.keywords}
    if len(args) > 1 or set(kw) - {"axis", "keepdims"} or None in kw or \
            (args and "axis" in kw):
        return None
    if not args and not kw and full:
        return x.id, None  # x.max(): one number, constant along every axis
    axis = args[0] if args else kw.get("axis")
    sign = 1
    if isinstance(axis, gast.UnaryOp) and isinstance(axis.op, gast.USub):  # axis=-1
        axis, sign = axis.operand, -1
    keep = kw.get("keepdims")
    if not (isinstance(axis, gast.Constant) and type(axis.value) is int and
            isinstance(keep, gast.Constant) and keep.value is True):
        return None
    return x.id, sign * axis.value


def logs_of_softmaxes(fn: gast.FunctionDef, eff: Effects, kinds: dict[str, Any],
                      resolve: Callable[[gast.expr], Any]) -> dict[int, tuple[str, str, int]]:
    """``id(q = np.log(p))`` -> ``(s1, p, k)`` where ``p = e / t`` closes a proven softmax
    (normalised_exponentials) and that top-level statement, after the division, is the only
    read of ``p``: ``q`` is the log-softmax of ``s1``, whose adjoint ``q_bar - p *
    sum(q_bar, axis=k, keepdims=True)`` (rules.reductions.log_softmax) needs no ``p_bar``
    (no ``q_bar / p``, no ``p_bar * p``), and ``p`` gets none."""
    proven = _proven(fn, eff, kinds, resolve)
    if not proven:
        return {}
    loads = _loads(fn)
    pos = {id(st): k for k, st in enumerate(fn.body)}
    out = {}
    for f in proven:
        if f.log or f.axis is None or not (isinstance(f.div, gast.Assign) and
                                           len(f.div.targets) == 1 and
                         isinstance(f.div.targets[0], gast.Name)):
            continue
        p = f.div.targets[0].id
        readers = loads.get(p, [])
        if len(readers) != 1 or readers[0] is None:
            continue
        st = readers[0]
        v = st.value if isinstance(st, gast.Assign) else None
        if isinstance(v, gast.Call) and len(st.targets) == 1 and \
                isinstance(st.targets[0], gast.Name) and resolve(v.func) is np.log and \
                len(v.args) == 1 and isinstance(v.args[0], gast.Name) and \
                v.args[0].id == p and not v.keywords and pos[id(st)] > pos[id(f.div)] and \
                sum(n.id == p for n in nodes_of(st, gast.Name)) == 1:
            out[id(st)] = (f.s1, p, f.axis)
    return out
