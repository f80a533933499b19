"""Foreign values: the results of code adgen does not compile that must be checked for an
array subclass where they are made.

Input: a function in SSA form after anf (read only, nested defs hoisted to markers), its
activity, name resolution and kinds. Output: ``{id(statement): expr}`` for the statements
whose result the forward checks with ``runtime.plain_result``: ``expr`` is the call or the
read that made the value (``cfg.make()``, ``S.sum(axis=0)``, ``D["M"]``), for the error to
name.

adgen's rules are those of plain ndarrays. An ``np.matrix`` or masked array the function
reads from outside its arguments, or makes, is refused when it is compiled
(``transforms/array_subclasses.py``), and arguments are checked when the gradient is called;
what neither sees is a value made while the function runs by code adgen runs as it is (a
*root*):

- the result of a call that has no derivative (no value with one among its function and
  arguments: a call that has one is differentiated, through its rule or its compiled code)
  of anything but NumPy, ``math``, a builtin, a rule or adgen's runtime:
  a method of an object (``cfg.make()``, ``S.todense()``, ``S.sum(axis=0)`` of a
  scipy.sparse matrix: an ``np.matrix``), a function held in a parameter or a variable, a
  library function, a class. A method of a name known to hold a number or a plain ndarray
  (by the kinds analysis, or bound by ``np.asarray``: ``x.sum()``, ``x.reshape(...)``) is
  not a root: NumPy's methods give plain arrays (``x.view(np.matrix)`` is refused by
  ``array_subclasses``);
- an item or attribute read from a global or closure object (``cfg.M``, ``D["M"]``), which
  may have been rebound since the function was compiled (the guards check the object, not
  its attributes).

A global or closure *object* whose method a call with a derivative
runs (``model.loss(w)``, ``layer.apply(v)``), or that such a call is handed
(``helper(cfg, v)``), is read by code adgen compiles through names no chain here spells
(``self.M``): :func:`checked_objects` lists them, and the forward checks each once (before
the statement of the function's body that holds the first such call, outside any loop) for
an array subclass it holds two levels down (``runtime.held_subclass``).

A root is checked only where it matters: when it, or a value computed from it without
conversion (``k[1:]``, ``k + 1.0``, ``np.exp(k)``, a list holding it, a nested def reading
it), meets a value with a derivative in one statement, or gets one itself. ``np.asarray``,
``np.array`` (without ``subok``), ``float``, ``int``, ``len`` and ``bool`` give plain values
whatever they are given, and a call of a foreign function on a root's value is a root of
its own: ``np.asarray(S.sum(axis=0)) + v`` and ``k.filled(0.0) + v`` check nothing more
than the value that meets ``v``. Each check runs where the root is made, once per time it is
made (a call in a loop: once per iteration).
"""

from __future__ import annotations

import builtins
import types
from collections import Counter
from collections.abc import Callable
from typing import Any

import gast
import numpy as np
from adgen.transforms.node_index import nodes_of
from adgen.transforms.reverse_ast import MISSING

from adgen.rules import registry

_SCALARS = (int, float, complex, str, bytes, bool, type(None), np.generic)
_SIMPLE = (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.Expr, gast.Return)


def _is_plain_maker(obj: Any) -> bool:
    """Whether a call of ``obj`` gives plain values when its arguments are plain: NumPy,
    ``math``, builtins, rules and adgen's runtime (NumPy's array subclass makers are refused
    by ``array_subclasses`` when the function is compiled)."""
    if isinstance(obj, np.ufunc) or registry.lookup(obj) is not None:
        return True
    module = getattr(obj, "__module__", None) or ""
    if module.split(".")[0] in ("numpy", "math", "adgen"):
        return True
    return getattr(builtins, getattr(obj, "__name__", "") or "", None) is obj


def _converters() -> tuple[Any, ...]:
    return (np.asarray, np.array, np.ascontiguousarray, np.asfortranarray, float, int, len,
            bool)


def _base(node: gast.expr) -> gast.expr:
    while isinstance(node, (gast.Attribute, gast.Subscript)):
        node = node.value
    return node


def _root(st: gast.stmt, resolve: Callable[[gast.expr], Any],
          plain: Callable[[str], bool]) -> gast.expr | None:
    """The call or read that made ``st``'s value, which may be an array subclass, or None."""
    if not (isinstance(st, gast.Assign) and len(st.targets) == 1 and
            isinstance(st.targets[0], gast.Name)):
        return None
    v = st.value
    if isinstance(v, gast.Call):
        f = v.func
        obj = resolve(f) if isinstance(f, (gast.Name, gast.Attribute)) else MISSING
        if obj is MISSING:
            if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and \
                    plain(f.value.id):
                return None  # a method of a number or a plain ndarray
            return v
        return None if _is_plain_maker(obj) else v
    if isinstance(v, (gast.Attribute, gast.Subscript)):
        base = _base(v)
        if not isinstance(base, gast.Name):
            return None
        obj = resolve(base)
        if obj is MISSING or isinstance(obj, (types.ModuleType, np.ndarray, int, float, str,
                                              complex, bool, type(None))):
            return None  # a local (its own roots), a module, an array or number the guards check
        return v
    return None


def _converts(st: gast.stmt, resolve: Callable[[gast.expr], Any]) -> bool:
    """``n = np.asarray(...)`` and the like: a plain value whatever the argument is."""
    if not (isinstance(st, gast.Assign) and isinstance(st.value, gast.Call)):
        return False
    f = st.value.func
    if not isinstance(f, (gast.Name, gast.Attribute)):
        return False
    obj = resolve(f)
    if obj is MISSING or not any(obj is c for c in _converters()):
        return False
    return not any(k.arg == "subok" for k in st.value.keywords)


def checked_values(fn: gast.FunctionDef, nested_defs: list[gast.FunctionDef],
                   marker_index: Callable[[gast.stmt], int | None],
                   active: Callable[[str], bool], resolve: Callable[[gast.expr], Any],
                   kinds: dict[str, Any]) -> dict[int, gast.expr]:
    """The root statements whose value the forward must check: ``{id(st): expr}`` (see the
    module's docstring)."""
    stmts = [s for s in nodes_of(fn, gast.stmt) if s is not fn]
    if not any(_root(s, resolve, lambda n: kinds.get(n) is not None) is not None
               for s in stmts):
        return {}  # (most functions: no walk of their statements' names)
    bindings = Counter(t.id for s in stmts for t in nodes_of(
        s.target if isinstance(s, gast.For) else s, gast.Name)
        if isinstance(t.ctx, gast.Store) and isinstance(s, (*_SIMPLE, gast.For)))
    # bound once, by np.asarray and the like (SSA leaves a loop's names several bindings)
    converted = {s.targets[0].id for s in stmts if isinstance(s, gast.Assign) and
                 len(s.targets) == 1 and isinstance(s.targets[0], gast.Name) and
                 _converts(s, resolve) and bindings[s.targets[0].id] == 1}

    def plain(n: str) -> bool:
        return kinds.get(n) is not None or n in converted

    roots: dict[int, gast.expr] = {}
    made: dict[str, set[int]] = {}  # name -> the roots its value may come from
    # (statement, names it binds, names it reads); a root binds itself
    flows: list[tuple[gast.stmt, list[str], list[str]]] = []
    for s in stmts:
        k = marker_index(s)
        if k is not None:  # a nested def reads its free names when it runs
            d = nested_defs[k]
            flows.append((s, [d.name], [n.id for n in nodes_of(d, gast.Name)]))
            continue
        what = _root(s, resolve, plain)
        if what is not None and not any(active(n.id) for n in nodes_of(s.value, gast.Name)):
            roots[id(s)] = what
            made.setdefault(s.targets[0].id, set()).add(id(s))
            continue
        if isinstance(s, (gast.Assign, gast.AugAssign, gast.AnnAssign)):
            if _converts(s, resolve):
                continue
            targets = s.targets if isinstance(s, gast.Assign) else [s.target]
            bound = [b.id for b in map(_base, targets) if isinstance(b, gast.Name)]
            bound += [n.id for t in targets for n in nodes_of(t, gast.Name)
                      if isinstance(n.ctx, gast.Store)]
            flows.append((s, bound, [n.id for n in nodes_of(s.value, gast.Name)]))
        elif isinstance(s, gast.For):
            flows.append((s, [n.id for n in nodes_of(s.target, gast.Name)],
                          [n.id for n in nodes_of(s.iter, gast.Name)]))
        elif isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) and \
                isinstance(s.value.func, gast.Attribute) and \
                isinstance(_base(s.value.func), gast.Name):
            # lst.append(k): what the receiver holds may come from the arguments
            flows.append((s, [_base(s.value.func).id], [
                n.id for a in [*s.value.args, *(k.value for k in s.value.keywords)]
                for n in nodes_of(a, gast.Name)]))
    if not roots:
        return {}
    grew = True
    while grew:  # to a fixed point: loops read names bound further down
        grew = False
        for _, bound, read in flows:
            came = set().union(*(made.get(r, ()) for r in read))
            if not came:
                continue
            for b in bound:
                have = made.setdefault(b, set())
                if not came <= have:
                    have |= came
                    grew = True
    needed: set[int] = set()
    for s in stmts:
        if not isinstance(s, _SIMPLE) or marker_index(s) is not None:
            continue
        names = {n.id for n in nodes_of(s, gast.Name)}
        for t in names:
            if t in made and (active(t) or any(active(n) for n in names if n != t)):
                needed |= made[t]
    return {sid: what for sid, what in roots.items() if sid in needed}


def checked_objects(fn: gast.FunctionDef, active: Callable[[str], bool],
                    resolve: Callable[[gast.expr], Any]) -> dict[int, list[str]]:
    """The free names bound to objects or containers that a call with a derivative runs a
    method of or is handed (see the module's docstring): ``{id(top): names}``, by the
    statement of the function's body (outside any loop) where the first such call is."""
    found: dict[int, list[str]] = {}
    seen: set[str] = set()
    for top in fn.body:
        for s in nodes_of(top, gast.Assign, gast.Expr):
            call = s.value
            if not isinstance(call, gast.Call) or not any(
                    active(n.id) for n in nodes_of(call, gast.Name)):
                continue
            given = [*call.args, *(k.value for k in call.keywords)]
            if isinstance(call.func, gast.Attribute):
                given.append(_base(call.func))
            for a in given:
                if isinstance(a, gast.Name) and a.id not in seen and \
                        _is_object(resolve(a)):
                    seen.add(a.id)
                    found.setdefault(id(top), []).append(a.id)
    return found


def _is_object(value: Any) -> bool:
    """An instance of a user's class (not a module, a class, a function, an array, a number;
    nor a list, tuple or dict, which transforms.array_subclasses checks when the function
    is compiled)."""
    from adgen.adjoints import is_function_like

    if value is MISSING or isinstance(value, (np.ndarray, list, tuple, dict, *_SCALARS)):
        return False
    return hasattr(value, "__dict__") and not is_function_like(value)
