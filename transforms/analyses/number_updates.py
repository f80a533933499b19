"""Number updates: ``self.calls += 1`` in a method, which writes nothing in place when the
attribute holds a number.

Input: a function in SSA form after lower_mutation (read only) and its :class:`Effects`.
Output: :class:`NumberUpdates`, the in-place writes of the parameters that are augmented
assignments of a parameter's attribute (desugar writes ``self.calls += 1`` as ``t = self.calls;
t_1 = t; t_1 += 1; self.calls = t_1``), and whether they are the only ones.

The effects analysis cannot tell an int attribute from an array attribute, so ``t_1 += 1``
counts as a write to the parameter's buffers, and a method called through a variable, a
method or a closure (``runtime.call_forward``) that writes its parameters is refused: the
caller's analyses did not see the write. When the attribute holds an immutable value (an int,
a float, a NumPy scalar, a string, a tuple), ``+=`` rebinds it as ``self.calls = self.calls + 1``
does, which those calls follow. :func:`holds_numbers` checks that at the call, on the
arguments; it is exact only if nothing in the function can rebind the attribute to an array
before the update runs, which :func:`number_updates` makes sure of statically (``exact``):

- every in-place write of a parameter's buffers is such an update, of a parameter ``P``;
- ``P`` is read only through its attributes (never passed on, stored or aliased as a whole);
- no other statement stores the updated attribute (``X.calls = ...``), nor calls ``setattr``;
- no call that could reach ``P`` (a method of ``P``, or a function read from an attribute of
  ``P``) runs before an update: it comes after the last update and shares no loop with one.
"""

from __future__ import annotations

import inspect
import numbers

import gast
import numpy as np
from adgen.transforms.analyses.effects import Effects
from adgen.transforms.node_index import nodes_of

from adgen.records import FrozenRecord


class NumberUpdate(FrozenRecord):
    """``P.attr op= v`` at ``line`` of the user's file, ``P`` the parameter at ``index``."""

    _fields = ("index", "param", "attr", "line", "text", "op")
    index: int
    param: str
    attr: str
    line: int
    text: str  # the user's statement, e.g. "self.calls += 1"
    op: str  # its operator

    def __init__(self, index: int, param: str, attr: str, line: int, text: str,
                 op: str = "+") -> None:
        self.__dict__.update(index=index, param=param, attr=attr, line=line, text=text, op=op)


class NumberUpdates(FrozenRecord):
    """The attribute updates among a function's in-place writes of its parameters."""

    _fields = ("sites", "exact")
    sites: tuple[NumberUpdate, ...]
    # True when the updates are the only in-place writes of the parameters and nothing can
    # rebind an updated attribute before its update runs (the module's docstring)
    exact: bool

    def __init__(self, sites: tuple[NumberUpdate, ...], exact: bool) -> None:
        self.__dict__.update(sites=sites, exact=exact)


_IMMUTABLE = (numbers.Number, np.generic, str, bytes, tuple, frozenset)


def holds_numbers(updates: NumberUpdates | None, args: tuple[object, ...]) -> bool:
    """True when every update's attribute of the argument it updates holds an immutable
    value (or is missing, for which the update raises AttributeError as Python does), so that
    no update writes memory in place. False when ``updates`` is not exact."""
    if updates is None or not updates.exact or not updates.sites:
        return False
    for u in updates.sites:
        if u.index >= len(args):
            return False
        # read without running a property's getter (a descriptor is no stored number)
        value = inspect.getattr_static(args[u.index], u.attr, _IMMUTABLE)
        if value is not _IMMUTABLE and (isinstance(value, np.ndarray) or
                                         not isinstance(value, _IMMUTABLE)):
            return False
    return True


def first_mutable(updates: NumberUpdates | None,
                  args: tuple[object, ...]) -> tuple[NumberUpdate, str] | None:
    """The first update whose attribute holds a mutable value (an array, a list) at the call,
    with that value's type name, or None."""
    for u in updates.sites if updates is not None else ():
        if u.index < len(args):
            value = inspect.getattr_static(args[u.index], u.attr, None)
            if value is not None and (isinstance(value, np.ndarray) or
                                      not isinstance(value, _IMMUTABLE)):
                return u, type(value).__name__
    return None


def number_updates(fn: gast.FunctionDef, eff: Effects, lines: list[str]) -> NumberUpdates:
    """The parameters' attribute updates of ``fn`` (SSA form) and whether they are exact.

    Args:
        fn: the function after ssa.
        eff: its effects.
        lines: the user's file, one string a line (``Parsed.lines``).
    """
    params = [a.id for a in fn.args.args]
    order = {id(st): k for k, st in enumerate(_in_order(fn.body))}
    defs: dict[str, list[gast.Assign]] = {}
    for st in nodes_of(fn, gast.Assign):
        if len(st.targets) == 1 and isinstance(st.targets[0], gast.Name):
            defs.setdefault(st.targets[0].id, []).append(st)
    sites: list[NumberUpdate] = []
    site_stmts: list[gast.stmt] = []
    exact = True
    for w in eff.writes:
        if w.container or "param" not in w.buffers:
            continue
        site = _site_of(w.stmt, defs, params, lines)
        if site is None:
            exact = False
            continue
        sites.append(site)
        site_stmts.append(w.stmt)
    if not sites:
        return NumberUpdates((), False)
    attrs = {u.attr for u in sites}
    # the statements desugar wrote to store each update back (self.calls = t_1)
    updated_names = {s.target.id for s in site_stmts}
    store_backs = {id(st.targets[0]) for st in nodes_of(fn, gast.Assign)
                   if len(st.targets) == 1 and isinstance(st.targets[0], gast.Attribute) and
                   isinstance(st.value, gast.Name) and st.value.id in updated_names}
    last = max(order[id(s)] for s in site_stmts)
    loops = [lp for lp in nodes_of(fn, gast.For, gast.While)
             if any(_inside(s, lp) for s in site_stmts)]
    receivers = {u.param for u in sites}
    # names bound to an attribute of an updated parameter (h = self.reset): calling one may
    # reach the parameter
    from_param = {name for name, vs in defs.items() if any(
        isinstance(a.value, gast.Attribute) and isinstance(a.value.value, gast.Name) and
        a.value.value.id in receivers for a in vs)}
    for a in nodes_of(fn, gast.Attribute):
        if a.attr in attrs and isinstance(a.ctx, (gast.Store, gast.Del)) and \
                id(a) not in store_backs:
            exact = False  # another store of an updated attribute
    for node in nodes_of(fn, gast.Name):
        if node.id in receivers and isinstance(node.ctx, (gast.Store, gast.Del)):
            exact = False  # the parameter rebound
    if _bare_uses(fn, receivers):
        exact = False  # P passed on, stored or aliased as a whole
    for d in nodes_of(fn, gast.FunctionDef, gast.Lambda):
        if d is not fn and any(n.id in receivers for n in nodes_of(d, gast.Name)):
            exact = False  # a nested function that reads P may run before an update
    for st in _in_order(fn.body):
        for call in _calls_in(st):
            f = call.func
            reaches = (isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and
                       f.value.id in receivers) or \
                (isinstance(f, gast.Name) and (f.id in from_param or f.id == "setattr"))
            if not reaches:
                continue
            if f.__class__ is gast.Name and f.id == "setattr":
                exact = False
            elif order[id(st)] < last or any(_inside(st, lp) for lp in loops):
                exact = False
    return NumberUpdates(tuple(sites), exact)


def _site_of(st: gast.stmt, defs: dict[str, list[gast.Assign]], params: list[str],
             lines: list[str]) -> NumberUpdate | None:
    """The update ``st`` is part of (``t_1 += v`` after ``t_1 = t`` and ``t = P.attr``), or
    None."""
    if not (isinstance(st, gast.AugAssign) and isinstance(st.target, gast.Name)):
        return None
    copies = defs.get(st.target.id, [])
    if len(copies) != 1 or not isinstance(copies[0].value, gast.Name):
        return None
    loads = defs.get(copies[0].value.id, [])
    if len(loads) != 1:
        return None
    v = loads[0].value
    if not (isinstance(v, gast.Attribute) and isinstance(v.value, gast.Name) and
            v.value.id in params):
        return None
    line = getattr(st, "lineno", 0) or 0
    # the statement without a trailing comment (two spaces and a #, as PEP 8 writes one)
    text = lines[line - 1].split("  #")[0].strip() if 0 < line <= len(lines) else ""
    import ast

    op = ast.unparse(ast.BinOp(ast.Name("a"), getattr(ast, type(st.op).__name__)(),
                               ast.Name("b")))[2:-2]
    return NumberUpdate(params.index(v.value.id), v.value.id, v.attr, line, text, op)


def _in_order(stmts: list[gast.stmt]) -> list[gast.stmt]:
    """The statements of ``stmts`` and those nested in them, in the order of the source (a
    compound statement before its body), not descending into nested functions."""
    out: list[gast.stmt] = []
    for st in stmts:
        out.append(st)
        if isinstance(st, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            out.extend(_in_order(getattr(st, field, None) or []))
        for h in getattr(st, "handlers", None) or []:
            out.extend(_in_order(h.body))
    return out


def _inside(st: gast.stmt, loop: gast.stmt) -> bool:
    return any(n is st for n in _in_order(loop.body + loop.orelse))


def _calls_in(st: gast.stmt) -> list[gast.Call]:
    """The calls a statement makes itself (not those of the statements nested in it)."""
    if isinstance(st, (gast.For, gast.While, gast.If, gast.Try, gast.With,
                       gast.FunctionDef)):
        heads: list[gast.AST] = [getattr(st, k) for k in ("iter", "test") if hasattr(st, k)]
        return [c for h in heads for c in nodes_of(h, gast.Call)]
    return list(nodes_of(st, gast.Call))


def _bare_uses(fn: gast.FunctionDef, receivers: set[str]) -> list[gast.Name]:
    """Loads of a receiver that are not the value of an attribute (``o = self``, ``f(self)``,
    ``[self]``)."""
    as_value = {id(a.value) for a in nodes_of(fn, gast.Attribute)}
    return [n for n in nodes_of(fn, gast.Name)
            if n.id in receivers and isinstance(n.ctx, gast.Load) and id(n) not in as_value]
