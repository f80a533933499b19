"""Whether what a user function returns has no derivative, whatever its arguments.

Input: a Python function of the user's (a callee forward mode compiles). Output: True when
every value it returns is bound once, by an operation without a derivative (``return
len(x)``, ``return x.shape[0]``, a comparison, an int constant, a call of such a function) or
by arithmetic and parts of such values; False when one may carry one, or when that cannot be
told (a nested def, a recursive call, code the front end refuses). A syntactic test: values
kept in containers, or anything the activity analysis would follow, count as having one, and
so does a name a statement may change in place (``out = np.zeros_like(x); out[m] = np.sin(x[m])``
returns a derivative though ``zeros_like`` has none: taken for a constant, the Hessian of a
caller lost its second derivative).

Forward mode's activity reads this (``activity``'s ``result_free``): ``n = count(x)`` of a
helper returning ``len(x)`` is an int, but its jvp gave it the zero tangent ``0.0``, so
``x ** float(n)`` took the exponent's term ``0.0 * log(x) * x ** n``, NaN at a negative
``x`` (jvp, jacfwd and hessian; JAX gives the finite value). The caller's compiled code is
guarded on the callee's binding (bindings.py), so the fact holds for every call it serves.
"""

from __future__ import annotations

import types
from typing import Any

import gast
from adgen.transforms.analyses.activity import NONDIFF_ATTRS, nondiff_call
from adgen.transforms.front import front, resolve
from adgen.transforms.node_index import loaded_names, nodes_of

from adgen.errors import AdgenError

__all__ = ["returns_no_derivative"]


def returns_no_derivative(fn: Any, memo: dict[int, bool] | None = None) -> bool:
    """True when no value ``fn`` returns carries a derivative (see the module docstring).

    ``memo``: the answers so far, by ``id`` of the function (one compilation's; a function
    being summarised answers False, so a recursive one is taken to return a derivative).
    """
    memo = {} if memo is None else memo
    key = id(fn)
    if key in memo:
        return memo[key]
    memo[key] = False
    try:
        parsed, tree, _, _ = front(fn)
    except AdgenError:
        return False  # its own compilation reports it
    if parsed.nested_defs:
        return False
    look = lambda n: resolve(parsed, n)  # noqa: E731 - the resolver of this function
    args = tree.args
    params = {a.id for a in [*args.args, *args.kwonlyargs, *args.posonlyargs,
                             *[v for v in (args.vararg, args.kwarg) if v is not None]]
              if isinstance(a, gast.Name)}
    stores: dict[str, int] = {}
    for x in nodes_of(tree, gast.Name):
        if isinstance(x.ctx, (gast.Store, gast.Del)):
            stores[x.id] = stores.get(x.id, 0) + 1
    values = {st.targets[0].id: st.value for st in nodes_of(tree, gast.Assign)
              if len(st.targets) == 1 and isinstance(st.targets[0], gast.Name) and
              stores.get(st.targets[0].id) == 1}
    bound = set(stores) | params
    # names a statement may change in place (out[m] = v, out += v, o.a = v, a call's argument
    # or receiver, f(out), out.fill(v)): their values are not those they were bound to
    changed_in_place = _changed_in_place(tree)
    values = {n: v for n, v in values.items() if n not in changed_in_place}
    free: set[str] = set()
    # the names bound once to a value without a derivative: an operation that has none
    # (len, a shape, a comparison), a number constant, or arithmetic and parts of such names
    # (a global read is a constant of the caller's jvp too); never a parameter
    changed = True
    while changed:
        changed = False
        for n, v in values.items():
            if n in free or n in params:
                continue
            if _no_derivative(v, free, bound, look, memo):
                free.add(n)
                changed = True
    returns = list(nodes_of(tree, gast.Return))
    result = bool(returns) and all(
        r.value is None or isinstance(r.value, gast.Name) and r.value.id in free
        for r in returns)
    memo[key] = result
    return result


def _no_derivative(v: gast.expr, free: set[str], bound: set[str], look: Any,
                   memo: dict[int, bool]) -> bool:
    """Whether the value ``v`` has no derivative, given the names in ``free`` have none."""
    if isinstance(v, (gast.Compare, gast.BoolOp)) or \
            isinstance(v, gast.UnaryOp) and isinstance(v.op, gast.Not):
        return True
    if isinstance(v, gast.Constant):
        return type(v.value) in (int, bool, str, type(None))
    if isinstance(v, gast.Attribute) and v.attr in NONDIFF_ATTRS:
        return True
    if isinstance(v, gast.Call):
        if nondiff_call(v, look):
            return True
        obj = look(v.func)
        return isinstance(obj, types.FunctionType) and \
            not str(getattr(obj, "__module__", "") or "").startswith(
                ("numpy", "scipy", "adgen.", "functools")) and \
            returns_no_derivative(obj, memo)
    if isinstance(v, (gast.BinOp, gast.UnaryOp, gast.Subscript)):
        names = loaded_names(v) & bound
        return names <= free
    return False


def _changed_in_place(tree: gast.AST) -> set[str]:
    """The names whose value a statement of ``tree`` may change without binding them again:
    the roots of subscript and attribute stores, augmented assignments' targets, and any name
    passed to a call or whose attribute is called."""
    found: set[str] = set()

    def root(e: gast.expr) -> None:
        while isinstance(e, (gast.Subscript, gast.Attribute, gast.Starred)):
            e = e.value
        if isinstance(e, gast.Name):
            found.add(e.id)

    for node in nodes_of(tree, gast.AST):
        if isinstance(node, (gast.Subscript, gast.Attribute)) and \
                isinstance(node.ctx, (gast.Store, gast.Del)):
            root(node)
        elif isinstance(node, gast.AugAssign):
            root(node.target)
        elif isinstance(node, gast.Call):
            for a in [*node.args, *(k.value for k in node.keywords)]:
                root(a)
            if isinstance(node.func, gast.Attribute):
                root(node.func.value)
    return found
