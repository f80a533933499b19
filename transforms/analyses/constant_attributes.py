"""Attributes of a constant parameter that the function never stores: their reads are constants.

Input: a function in SSA form (read only), the (sources, targets) pairs of
:func:`activity.activity` with the statement each came from, the alias map and the
parameters given tangents. Output: :class:`ConstantAttributes`, the reads ``t = p.a`` that
take no variation from ``p`` and the names only those reads reach, which a store into ``p``
does not vary.

Forward mode compiles a method for the arguments after its object (``jvp(m.keeps, (x,),
(v,))``: the object is a constant, as in JAX). A method that stores an attribute
(``self.h = np.sqrt(self.data) * w ** 3``) makes its object varied, so every attribute read
of it took a tangent, the zero one of the object's: ``np.sqrt(self.data)``'s tangent was
``0 / (2 * 0)``, a NaN where ``data`` holds a 0, and jvp, jacfwd and hessian were NaN.
The value of ``p.a`` is the one ``p`` had on entry, a constant, when:

- ``p`` is a parameter given no tangent, bound once, read by no nested def, never handed to
  a call (``setattr(p, ...)``, ``helper(p)``) and never called itself;
- the only statements that may change ``p`` (every pair whose targets, aliases included,
  reach it) store an attribute of ``p`` itself (``p.h = v``), none of them ``a``.

Storing an attribute changes no buffer, so the names bound from such reads by subscripts,
attributes and NumPy operations (``t = p.data``, ``v = t[1:]``, ``s = np.sqrt(t)``) keep their
values too, where the value read does not hold ``p`` itself. That is checked when the code
runs (``runtime.constant_attribute``, which also refuses a property's read, as the tangent
code's ``stored_attribute`` did), and so is each store: a property's setter or a class's
``__setattr__`` may store other attributes (``runtime.plain_attribute_store``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gast
import numpy as np
from adgen.transforms.node_index import loaded_names, nodes_of

__all__ = ["ConstantAttributes", "constant_attributes"]


@dataclass
class ConstantAttributes:
    """What :func:`constant_attributes` found."""

    reads: dict[int, tuple[str, str]] = field(default_factory=dict)  # id(stmt) -> (p, a)
    stores: dict[int, tuple[str, str]] = field(default_factory=dict)  # id(stmt) -> (p, a)
    kept: dict[str, set[str]] = field(default_factory=dict)  # p -> names a store leaves


def _store_on(s: gast.stmt | None) -> tuple[str, str] | None:
    """(p, a) of ``p.a = v``, else None."""
    if isinstance(s, gast.Assign) and len(s.targets) == 1:
        t = s.targets[0]
        if isinstance(t, gast.Attribute) and isinstance(t.value, gast.Name):
            return t.value.id, t.attr
    return None


def _read_of(s: gast.stmt | None) -> tuple[str, str, str] | None:
    """(t, p, a) of ``t = p.a``, else None."""
    if isinstance(s, gast.Assign) and len(s.targets) == 1 and \
            isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Attribute) and \
            isinstance(s.value.value, gast.Name):
        return s.targets[0].id, s.value.value.id, s.value.attr
    return None


def constant_attributes(fn: gast.FunctionDef, pairs: list[tuple[set[str], set[str]]],
                        owners: list[gast.stmt | None], bindings: set[int],
                        aliases: dict[str, set[str]], varied: set[str],
                        closures: list[tuple[set[str], set[str]]], callees: frozenset[str],
                        resolve: Callable[[gast.expr], Any] | None,
                        skipped: frozenset[str]) -> ConstantAttributes:
    """The attribute reads of constant parameters that stay constants (see the module).

    Args:
        fn: the function in SSA form.
        pairs, owners: the activity pairs and the statement of each (None: a closure's).
        bindings: the indices of the pairs that vary their own target only.
        aliases: name -> the names that may share its memory.
        varied: the parameters given tangents.
        closures: (free variables, def name) of the nested defs.
        callees: the names that may hold a callable object (``activity.held_callees``).
        resolve: a global name or attribute chain -> the object (None: local or unknown).
        skipped: attribute names whose reads carry no derivative anyway (``x.shape``).
    """
    found = ConstantAttributes()
    params = [a.id for a in fn.args.args if isinstance(a, gast.Name)]
    stores: dict[str, int] = {}
    for x in nodes_of(fn, gast.Name):
        if isinstance(x.ctx, (gast.Store, gast.Del)):
            stores[x.id] = stores.get(x.id, 0) + 1
    passed: set[str] = set()
    for c in nodes_of(fn, gast.Call):
        for a in [*c.args, *(k.value for k in c.keywords)]:
            passed |= {n for n in loaded_names(a)}
        passed |= loaded_names(c.func) if not isinstance(c.func, gast.Attribute) else set()
    in_closures = set().union(*(src for src, _ in closures)) if closures else set()
    candidates = {p for p in params if p not in varied and p not in stores and
                  p not in passed and p not in in_closures and p not in callees}
    if not candidates:
        return found
    written: dict[str, set[str]] = {p: set() for p in candidates}
    for k, (_, dst) in enumerate(pairs):
        reach = set(dst) if k in bindings else set().union(
            *({d} | aliases.get(d, set()) for d in dst)) if dst else set()
        store = _store_on(owners[k])
        for p in candidates & reach:
            if store is not None and store[0] == p:
                written[p].add(store[1])
            else:
                written.pop(p, None)  # changed otherwise: every read of it varies
        candidates &= set(written)
    # an object nothing stores into is not varied at all: its reads need no check (a
    # property of it, scipy.sparse's .T, is a constant like any other read)
    written = {p: attrs for p, attrs in written.items() if attrs}
    for st in nodes_of(fn, gast.Assign):
        read = _read_of(st)
        if read is not None and read[1] in written and read[2] not in written[read[1]] and \
                read[2] not in skipped and stores.get(read[0]) == 1:
            found.reads[id(st)] = (read[1], read[2])
    owners_of = {p for p, _ in found.reads.values()}
    for st in nodes_of(fn, gast.Assign):
        store = _store_on(st)
        if store is not None and store[0] in owners_of:
            found.stores[id(st)] = store
    # the names only the constant reads reach (by subscripts, attributes, NumPy operations):
    # a store into the object does not change them
    read_names = {p: {st.targets[0].id for st in nodes_of(fn, gast.Assign)
                      if found.reads.get(id(st), (None,))[0] == p} for p in owners_of}
    bound = set(stores)
    for p, kept in read_names.items():
        changed = True
        while changed:
            changed = False
            for st in nodes_of(fn, gast.Assign):
                t = st.targets[0] if len(st.targets) == 1 else None
                if not isinstance(t, gast.Name) or t.id in kept or stores.get(t.id) != 1:
                    continue
                if _derived(st.value, kept, bound, resolve):
                    kept.add(t.id)
                    changed = True
        found.kept[p] = kept
    return found


def _derived(v: gast.expr, kept: set[str], bound: set[str],
             resolve: Callable[[gast.expr], Any] | None) -> bool:
    """Whether ``v`` computes from the names in ``kept`` (and constants) by subscripts,
    attributes, operators or a call of a NumPy function: no object of the user's can come
    out of it that did not go in."""
    if isinstance(v, (gast.Subscript, gast.Attribute)):
        # (an index picks a part: what the part is does not depend on it)
        return isinstance(v.value, gast.Name) and v.value.id in kept
    if isinstance(v, (gast.BinOp, gast.UnaryOp)):
        names = loaded_names(v) & bound
        return bool(names) and names <= kept
    if isinstance(v, gast.Call) and resolve is not None:
        obj = resolve(v.func)
        module = str(getattr(obj, "__module__", "") or "")
        if obj is None or not (module.startswith("numpy") or isinstance(obj, np.ufunc)):
            return False
        names = set().union(*(loaded_names(a) for a in [*v.args, *(k.value for k in
                                                               v.keywords)])) & bound
        return bool(names) and names <= kept
    return False
