"""Value chains: arrays written in place whose adjoints can be values.

Input: a function in SSA form (read only), its effects, the kinds of its names at one
argument signature, the names that must keep shadow memory anyway (containers, objects,
closure cells), and how to tell a user function's call and resolve a NumPy function.
Output: the names of arrays the pullback may treat as if each in-place write made a new
array (``z = X @ W; z -= z.max(axis=1, keepdims=True); np.exp(z, out=z)``: ``z``, ``z_1``,
``z_2``): each write then has the pullback of the operation it performs, and the adjoint of
the old value is that operation's cotangent, as a person writes it (``z_bar = z_1_bar +
max_vjp(...)``), with no shadow memory (``sh.of(z)``).

A buffer qualifies when the function allocates it, no name outside the chain shares it (no
slice, transpose or reshape of it), none of its names is a parameter, returned, captured by
a nested function, held by a container or an attribute, or handed to a user function; its
names are bound and written only at the top level of the body, by whole-array writes (an
augmented assignment of the name, or ``t = ufunc(..., out=o)`` binding a new name), and each
name is read only while the buffer holds its value: after its last binding and before the
next write. Those are the conditions under which the SSA names are the values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast
import numpy as np
from adgen.transforms.analyses.activity import NONDIFF_ATTRS
from adgen.transforms.analyses.effects import Effects, Write
from adgen.transforms.node_index import nodes_of
from adgen.transforms.walk import walk

_NESTED = ("body", "orelse", "finalbody", "handlers")


def value_chains(fn: gast.FunctionDef, eff: Effects, kinds: dict[str, Any],
                 excluded: set[str], is_user_call: Callable[[gast.Call], bool],
                 resolve: Callable[[gast.expr], Any]) -> set[str]:
    """The names whose adjoints can be values (see the module's docstring)."""
    if not kinds:
        return set()
    top = {id(st) for st in fn.body}
    order: dict[int, int] = {}  # statements in the order they run (pre-order)

    def number(stmts: list[gast.stmt]) -> None:
        for st in stmts:
            order[id(st)] = len(order)
            for field in ("body", "orelse", "finalbody"):
                sub = getattr(st, field, None)
                if isinstance(sub, list):
                    number(sub)
            for h in getattr(st, "handlers", ()):
                number(h.body)

    number(fn.body)
    params = {a.id for a in fn.args.args}
    by_buf: dict[str, set[str]] = {}
    for n, bufs in eff.buffers.items():
        for b in bufs:
            by_buf.setdefault(b, set()).add(n)
    # the buffers the facts at hand rule out go first: most functions write no new array,
    # and their statements are not read again (build time)
    candidates = [(b, names) for b, names in by_buf.items()
                  if b.startswith("new:") and b in eff.written and not names & params and
                  not names & excluded and all(eff.buffers.get(n) == {b} and
                                               isinstance(kinds.get(n), int) for n in names)]
    if not candidates:
        return set()
    loads, binds, escaped = _uses(fn, order, is_user_call)
    out: set[str] = set()
    for b, names in candidates:
        if names & escaped:
            continue
        writes = [w for w in eff.writes if b in w.buffers]
        if any(w.container or id(w.stmt) not in top or not _whole_write(w, names, resolve)
               for w in writes):
            continue
        if any(id(st) not in top for n in names for st in binds.get(n, [])):
            continue
        at = sorted(order[id(w.stmt)] for w in writes)
        if all(_read_while_held(n, binds, loads, order, at) for n in names):
            out |= names
    return out


def _read_while_held(n: str, binds: dict[str, list[gast.stmt]], loads: dict[str, list[int]],
                     order: dict[int, int], writes: list[int]) -> bool:
    """Whether ``n`` is read only after its last binding (a copy then the augmented
    assignment that updates it) and before the buffer's next write."""
    bound = sorted(order[id(st)] for st in binds.get(n, []))
    first, last = (bound[0], bound[-1]) if bound else (0, 0)
    nxt = next((o for o in writes if o > last), None)
    return not any(first < o < last or (nxt is not None and o > nxt)
                   for o in loads.get(n, []))


def _uses(fn: gast.FunctionDef, order: dict[int, int],
          is_user_call: Callable[[gast.Call], bool]
          ) -> tuple[dict[str, list[int]], dict[str, list[gast.stmt]], set[str]]:
    """Where each name is read (statement order) and bound, and the names that escape: held
    by a display, an attribute or an index, returned, a loop's or a with's target, or passed
    to a user function. A method called on an array (``z.max(axis=1)``) only reads it (a
    view it returns shares the buffer, which ``value_chains`` rules out)."""
    loads: dict[str, list[int]] = {}
    binds: dict[str, list[gast.stmt]] = {}
    escaped: set[str] = set()
    for st in nodes_of(fn, gast.stmt):
        if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name):
            binds.setdefault(st.targets[0].id, []).append(st)
        elif isinstance(st, gast.AugAssign) and isinstance(st.target, gast.Name):
            binds.setdefault(st.target.id, []).append(st)
        elif isinstance(st, (gast.For, gast.With)):
            escaped |= {n.id for n in walk(st.target if isinstance(st, gast.For) else st.items)
                        if isinstance(n, gast.Name)}
        elif isinstance(st, gast.Return) and st.value is not None:
            escaped |= {n.id for n in nodes_of(st.value, gast.Name)}
        methods = {id(c.func) for c in nodes_of(st, gast.Call)}
        for field, value in gast.iter_fields(st):
            if field in _NESTED:
                continue
            parts = [value] if isinstance(value, gast.AST) else \
                [v for v in (value or []) if isinstance(v, gast.AST)]
            for node in (x for p in parts for x in nodes_of(p)):
                if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load):
                    loads.setdefault(node.id, []).append(order.get(id(st), 0))
                elif isinstance(node, (gast.List, gast.Tuple, gast.Dict, gast.Set,
                                       gast.Attribute, gast.Subscript, gast.Starred,
                                       gast.Lambda)):
                    if isinstance(node, gast.Attribute) and (
                            node.attr in NONDIFF_ATTRS or id(node) in methods):
                        continue  # x.shape, x.ndim; a method's receiver
                    inner = node.value if isinstance(node, (gast.Attribute, gast.Subscript)) \
                        else node
                    escaped |= {x.id for x in nodes_of(inner, gast.Name)}
                elif isinstance(node, gast.Call) and is_user_call(node):
                    escaped |= {x.id for a in node.args + [k.value for k in node.keywords]
                                for x in nodes_of(a, gast.Name)}
    return loads, binds, escaped


def _whole_write(w: Write, names: set[str], resolve: Callable[[gast.expr], Any]) -> bool:
    """An augmented assignment of a name, or ``t = ufunc(..., out=o)`` binding a new name
    ``t`` (no ``where=``): every element written, the new contents under a new SSA name."""
    st = w.stmt
    if isinstance(st, gast.AugAssign):
        return isinstance(st.target, gast.Name) and st.target.id in names
    if not (isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name) and
            isinstance(st.value, gast.Call)) or st.targets[0].id not in names:
        return False
    call = st.value
    out = [k.value for k in call.keywords if k.arg == "out"]
    return len(out) == 1 and isinstance(out[0], gast.Name) and out[0].id in names and \
        out[0].id != st.targets[0].id and not any(k.arg == "where" for k in call.keywords) \
        and isinstance(resolve(call.func), np.ufunc)
