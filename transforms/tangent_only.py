"""The jvp code of a function returning its tangent only, which second derivatives (hvp,
hessian, jacfwd / jacrev of grad: ``adgen.directional``) differentiate in reverse mode.

Reverse mode over ``f_jvp``, which returns ``(out, out_dot)``, gave the primal output a zero
cotangent, and the pullbacks of the statements computing it multiplied that zero by their
local derivative: ``log(x)`` at 0 added ``0 / 0`` = nan to the Hessian where JAX, whose zero
is symbolic, gives -inf (``x ** 0.5`` alike). In ``f_jvp_tangent`` every ``return (out,
out_dot)`` is ``return out_dot`` (``f__tangent_jvp``): statements only the primal output depends on are not active
in reverse mode and have no pullback at all.

A helper's jvp returns the pair too: ``t, t_dot = h_jvp(y, y_dot)`` gave ``t`` the zero
cotangent, and ``h``'s ``np.log`` the nan again. Where nothing the tangent-only code keeps
reads ``t`` (:func:`_needed`: the names read by statements that are not assignments of
side-effect-free expressions to names no kept statement reads), the call is
``t_dot = h__tangent_jvp(y, y_dot)``, the helper's own tangent-only jvp (made here, one per
helper), and the assignments nothing reads go (``t2 = t * x`` of the primal output).

Input: the jvp's tree, its namespace and function (defaults, attributes); output: the
function, compiled on first use (:func:`tangent_only`) and kept on the jvp.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import gast
from adgen.transforms.emit import compile_source, to_source

from adgen.rules.registry import defrrule
from adgen.runtime import call_jvp
from adgen.tangent_calls import call_jvp_tangent, call_jvp_tangent_rrule

__all__ = ["tangent_only", "tangent_only_maker"]


def tangent_only_maker(function: gast.FunctionDef, ns: dict[str, Any], qualname: str
                       ) -> functools.partial:
    """What :func:`tangent_only` needs to make the tangent-only function later: kept on the
    jvp as ``__adgen_tangent_only__`` (most jvps are never differentiated again)."""
    return functools.partial(_make, function, ns, qualname)


def tangent_only(jvp: Any) -> Any:
    """The jvp function returning ``out_dot`` only (made once), or None where ``jvp`` has none
    (a mutually recursive placeholder)."""
    made = getattr(jvp, "__adgen_tangent_function__", None)
    if made is not None:
        return made
    maker = getattr(jvp, "__adgen_tangent_only__", None)
    if maker is None:
        return None
    made = maker(jvp)
    jvp.__adgen_tangent_function__ = made
    return made


def _make(function: gast.FunctionDef, ns: dict[str, Any], qualname: str, jvp: Any) -> Any:
    tree = copy.deepcopy(function)
    # (named and filed as jvp code, "..._jvp" in "<adgen ... jvp>": reverse mode's messages
    # give the user's names for its tangents, reverse_captures and user_text)
    tree.name = f"{function.name[:-len('_jvp')]}__tangent_jvp"
    todo: list[Any] = list(tree.body)
    while todo:  # (not into nested defs: their returns are their own)
        node = todo.pop()
        if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda,
                             gast.ClassDef)):
            continue
        if isinstance(node, gast.Return) and isinstance(node.value, gast.Tuple) and \
                len(node.value.elts) == 2:
            node.value = node.value.elts[1]
            continue
        todo.extend(gast.iter_child_nodes(node))
    _IN_PROGRESS.add(id(jvp))
    try:
        _tangent_calls(tree, ns)
    finally:
        _IN_PROGRESS.discard(id(jvp))
    compile_source(to_source(tree) + "\n", f"<adgen {qualname} tangent jvp>", ns)
    made = ns[tree.name]
    made.__defaults__ = jvp.__defaults__
    made.__kwdefaults__ = jvp.__kwdefaults__
    made.__dict__.update({k: v for k, v in jvp.__dict__.items()
                          if k not in ("__adgen_tangent_only__", "__adgen_tangent_function__")})
    return made


# (registered here: only second derivatives call it)
defrrule(call_jvp_tangent, call_jvp_tangent_rrule)
# the jvps whose tangent-only function is being made (a recursive helper: its own calls keep
# the pair)
_IN_PROGRESS: set[int] = set()
# methods of arrays that change nothing (a user object's method is called through call_jvp)
_PURE_METHODS = frozenset({"sum", "mean", "prod", "max", "min", "copy", "reshape", "ravel",
                           "transpose", "astype", "dot", "flatten", "squeeze", "conj", "any",
                           "all", "cumsum", "std", "var", "item", "tolist"})
_PURE_HELPERS = frozenset({"zero_tangent", "sequence_operand", "zeros_like", "len", "float",
                           "int", "abs", "min", "max", "tuple", "list", "range"})


def _tangent_calls(tree: gast.FunctionDef, ns: dict[str, Any]) -> None:
    """Calls of helpers' jvps whose primal result nothing kept reads become calls of their
    tangent-only jvps; then the assignments nothing reads go (see the module docstring)."""
    needed = _needed(tree.body)
    changed = False
    for st in _statements(tree.body):
        if not (isinstance(st, gast.Assign) and len(st.targets) == 1 and
                isinstance(st.targets[0], gast.Tuple) and len(st.targets[0].elts) == 2 and
                all(isinstance(e, gast.Name) for e in st.targets[0].elts) and
                isinstance(st.value, gast.Call) and isinstance(st.value.func, gast.Name)):
            continue
        primal, dot = st.targets[0].elts
        name = st.value.func.id
        if primal.id in needed:
            continue
        if name == "call_jvp" and ns.get(name) is call_jvp:
            # a method, a closure's lambda, a callable object: found when the call runs
            ns["call_jvp_tangent"] = call_jvp_tangent
            st.targets = [dot]
            st.value.func = gast.Name("call_jvp_tangent", gast.Load(), None, None)
            changed = True
            continue
        if not name.endswith("_jvp"):
            continue
        callee = ns.get(name)
        if callee is None or id(callee) in _IN_PROGRESS:
            continue
        only = tangent_only(callee)
        if only is None:
            continue
        only_name = f"{name[:-len('_jvp')]}__tangent_jvp"  # (its own name)
        ns[only_name] = only
        st.targets = [dot]
        st.value.func = gast.Name(only_name, gast.Load(), None, None)
        changed = True
    if changed:
        _drop_unread(tree, needed)


def _statements(body: list[Any]) -> list[Any]:
    """The statements of ``body`` and of the blocks in them (not of nested defs)."""
    out: list[Any] = []
    for st in body:
        out.append(st)
        if isinstance(st, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            block = getattr(st, field, None)
            if isinstance(block, list):
                out.extend(_statements(block))
        for h in getattr(st, "handlers", ()):
            out.extend(_statements(h.body))
    return out


def _own_parts(st: Any) -> list[Any]:
    """What a statement itself evaluates (a compound statement's test, iterator or items;
    its blocks are statements of their own)."""
    if isinstance(st, gast.If) or isinstance(st, gast.While):
        return [st.test]
    if isinstance(st, gast.For):
        return [st.iter, st.target]
    if isinstance(st, gast.With):
        return list(st.items)
    if isinstance(st, gast.Try):
        return [h.type for h in st.handlers if h.type is not None]
    return [st]


def _removable(st: Any, needed: set[str]) -> bool:
    """An assignment of a side-effect-free value to names nothing needed reads."""
    if not isinstance(st, gast.Assign):
        return False
    for t in st.targets:
        names = t.elts if isinstance(t, gast.Tuple) else [t]
        if not all(isinstance(n, gast.Name) and n.id not in needed for n in names):
            return False
    return _pure(st.value)


def _pure(e: Any) -> bool:
    for n in gast.walk(e):
        if isinstance(n, (gast.Yield, gast.YieldFrom, gast.Await, gast.NamedExpr)):
            return False
        if not isinstance(n, gast.Call):
            continue
        f = n.func
        if isinstance(f, gast.Name):
            if f.id not in _PURE_HELPERS:
                return False
            continue
        if not isinstance(f, gast.Attribute):
            return False
        root = f
        while isinstance(root, gast.Attribute):
            root = root.value
        if isinstance(root, gast.Name) and root.id == "np":
            if any(k.arg == "out" for k in n.keywords):
                return False
            continue
        if f.attr not in _PURE_METHODS:
            return False
    return True


def _needed(body: list[Any]) -> set[str]:
    """The names the statements that stay read (flow-insensitive, so a name read anywhere by
    a kept statement is kept everywhere)."""
    stmts = _statements(body)
    needed: set[str] = set()
    changed = True
    while changed:
        changed = False
        for st in stmts:
            if _removable(st, needed):
                continue
            for part in _own_parts(st):
                for n in gast.walk(part):
                    if isinstance(n, gast.Name) and n.id not in needed and (
                            isinstance(n.ctx, gast.Load) or isinstance(st, gast.AugAssign)):
                        needed.add(n.id)
                        changed = True
    return needed


def _drop_unread(tree: gast.FunctionDef, needed: set[str]) -> None:
    """Removes the assignments nothing needed reads (``_removable``), in every block."""
    def clean(body: list[Any]) -> list[Any]:
        kept = []
        for st in body:
            if _removable(st, needed):
                continue
            if not isinstance(st, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
                for field in ("body", "orelse", "finalbody"):
                    block = getattr(st, field, None)
                    if isinstance(block, list) and block:
                        setattr(st, field, clean(block) or
                                ([gast.Pass()] if field != "orelse" else []))
                for h in getattr(st, "handlers", ()):
                    h.body = clean(h.body) or [gast.Pass()]
            kept.append(st)
        return kept

    tree.body = clean(tree.body) or [gast.Pass()]
