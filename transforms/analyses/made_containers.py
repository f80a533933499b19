"""Which names of a function certainly hold a list or a dict, and what kind of container a
function returns.

Input: a function in SSA form (read only). Output: ``displays`` gives name -> ``LIST`` /
``DICT`` for the names every binding of which is a list or dict: a display (``p = {"w":
w}``, ``ws = [a, b]``, ``dict(...)``, ``list(...)``), a name bound once to another such name
(``grads = comp1``, the dict a comprehension builds), a user function's result where that
function returns such a container wherever it returns (``grads = g_of(params)``:
``Compiled.returns_container``, asked through ``returned``), or the gradient
``adgen.grad(f)`` gives of an argument that is one (``grads = adgen.grad(loss)(params, x)``:
a gradient has its argument's structure); and a parameter a signature gives such a kind
(``given``) that the function never binds again. ``returned_container`` gives the kind every
``return`` of the function returns, or None.

What it is for: a helper writing the arrays of a dict in place while reading another dict
(``for p, g in zip(params.values(), grads.values()): p -= lr * g``) is compiled for the dicts
its callers pass (``callee_activity``), and a caller's name holding one is a dict for the
effects analysis. A dict the analysis could not name was taken for an array, and its adjoint
met the items' shadows in a raw NumPy casting error when the pullback ran.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import gast
from adgen.transforms.analyses.kinds import CONTAINERS, DICT, LIST
from adgen.transforms.node_index import nodes_of

__all__ = ["derivative_functions", "displays", "returned_container"]


def displays(fn: gast.FunctionDef, resolve: Callable[[gast.expr], Any],
             given: dict[str, str],
             returned: Callable[[Any], str | None] | None = None) -> dict[str, str]:
    """``LIST`` or ``DICT`` for the names of ``fn`` that certainly hold one (the module's
    docstring); ``returned(obj)``: the container kind user function ``obj`` returns (None:
    unknown, or not asked)."""
    stores: dict[str, int] = {}
    for n in nodes_of(fn, gast.Name):
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load):
            stores[n.id] = stores.get(n.id, 0) + 1
    params = {a.id for a in fn.args.args}
    out = {p: k for p, k in given.items() if k in CONTAINERS and p in params and
           stores.get(p, 0) == 1}  # (its binding as a parameter)
    shown: dict[str, list[str | None]] = {}
    once: dict[str, gast.expr] = {}
    for st in nodes_of(fn, gast.Assign):
        if not (isinstance(st, gast.Assign) and len(st.targets) == 1 and
                isinstance(st.targets[0], gast.Name)):
            continue
        v = st.value
        made = resolve(v.func) if isinstance(v, gast.Call) else None
        if made is dict or made is list:
            kind = DICT if made is dict else LIST
        else:
            kind = DICT if isinstance(v, gast.Dict) else LIST if isinstance(v, gast.List) \
                else None
        shown.setdefault(st.targets[0].id, []).append(kind)
        once[st.targets[0].id] = v
    out.update((name, kinds[0]) for name, kinds in shown.items()
               if kinds[0] is not None and len(set(kinds)) == 1 and
               stores[name] == len(kinds) and name not in params)
    # names bound once to a container made elsewhere: followed to a fixed point (a copy of
    # a copy; a gradient of a dict the function got from a call)
    once = {name: v for name, v in once.items()
            if stores[name] == 1 and name not in params and name not in out}
    changed = True
    while changed:
        changed = False
        for name, v in once.items():
            if name not in out:
                kind = _made_elsewhere(v, out, once, resolve, returned)
                if kind is not None:
                    out[name] = kind
                    changed = True
    return out


def _made_elsewhere(v: gast.expr, known: dict[str, str], once: dict[str, gast.expr],
                    resolve: Callable[[gast.expr], Any],
                    returned: Callable[[Any], str | None] | None) -> str | None:
    """The container kind of value ``v`` (bound once): a name ``known`` gives a kind, the
    result of a user function ``returned`` gives one, or the gradient a function made by
    ``adgen.grad(f)`` (bound once to a name) returns of an argument ``known`` gives one."""
    if isinstance(v, gast.Name):
        return known.get(v.id)
    if not isinstance(v, gast.Call) or any(isinstance(a, gast.Starred) for a in v.args) or \
            any(k.arg is None for k in v.keywords):
        return None
    if isinstance(v.func, gast.Name) and isinstance(once.get(v.func.id), gast.Call):
        k = _grad_argnum(once[v.func.id], resolve)  # type: ignore[arg-type]
        if k is None or v.keywords or k >= len(v.args) or \
                not isinstance(v.args[k], gast.Name):
            return None
        return known.get(v.args[k].id)
    obj = resolve(v.func)
    spec = getattr(obj, "_adgen_spec", None)  # a gradient function adgen.grad made
    if isinstance(spec, tuple) and len(spec) == 5 and type(spec[1]) is int and \
            not spec[3] and not spec[4] and not v.keywords and spec[1] < len(v.args) and \
            isinstance(v.args[spec[1]], gast.Name):
        return known.get(v.args[spec[1]].id)  # (fun, argnums, mutation, has_aux, with_value)
    if returned is None or obj is None:
        return None
    return returned(obj)


def _grad_argnum(made: gast.Call, resolve: Callable[[gast.expr], Any]) -> int | None:
    """The position of the argument whose gradient a function ``made`` by ``adgen.grad(f)``
    returns (``argnums`` a constant int, no ``has_aux``); None for any other call."""
    import adgen.api

    if resolve(made.func) is not adgen.api.grad or len(made.args) != 1:
        return None
    k = 0
    for kw in made.keywords:
        if kw.arg == "argnums" and isinstance(kw.value, gast.Constant) and \
                type(kw.value.value) is int and kw.value.value >= 0:
            k = kw.value.value
        elif kw.arg != "mutation":
            return None  # (has_aux: a pair; argnums a tuple: a tuple of gradients)
    return k


def derivative_functions(fn: gast.FunctionDef, resolve: Callable[[gast.expr], Any]
                         ) -> set[str]:
    """The names bound to a function ``adgen.grad`` (``value_and_grad``, ``jacfwd``,
    ``jacrev``, ``jacobian``, ``hessian``) makes inside ``fn`` (a training step's ``g =
    adgen.grad(loss)``): a function holding no memory the function could write, whose
    results are new arrays (the effects analysis gives it no buffer; taken to share its
    gradient's memory, it met an array's adjoint in the pullback)."""
    stores: dict[str, int] = {}
    for n in nodes_of(fn, gast.Name):
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load):
            stores[n.id] = stores.get(n.id, 0) + 1
    return {st.targets[0].id for st in nodes_of(fn, gast.Assign)
            if isinstance(st, gast.Assign) and len(st.targets) == 1 and
            isinstance(st.targets[0], gast.Name) and stores[st.targets[0].id] == 1 and
            isinstance(st.value, gast.Call) and _is_derivative_maker(resolve(st.value.func))}


#: adgen's functions making a derivative function, by where they are defined
_MAKERS = frozenset({("adgen.api", "grad"), ("adgen.api", "value_and_grad")} |
                    {("adgen.higher_order", n) for n in ("jacfwd", "jacrev", "jacobian",
                                                         "hessian")})


def _is_derivative_maker(obj: Any) -> bool:
    """Whether ``obj`` is ``adgen.grad`` (``value_and_grad``, ``jacfwd``, ``jacrev``,
    ``jacobian``, ``hessian``). Looked up in the module defining it only when that module is
    already imported (code holding ``adgen.jacfwd`` imported it): asking ``adgen`` for
    ``jacfwd`` would import forward mode (adgen.higher_order, 13 modules) into every first
    gradient (issue 15's cold start)."""
    where = (getattr(obj, "__module__", None), getattr(obj, "__name__", None))
    if not (type(where[0]) is str and type(where[1]) is str) or where not in _MAKERS:
        return False
    module = sys.modules.get(where[0])
    return module is not None and getattr(module, where[1], None) is obj


def returned_container(fn: gast.FunctionDef, known: dict[str, str]) -> str | None:
    """``LIST`` or ``DICT`` where every ``return`` of ``fn`` returns a name ``known``
    (:func:`displays` of ``fn``, parameters left out) calls one of that kind; else None."""
    out = None
    for node in nodes_of(fn, gast.Return):
        if not isinstance(node, gast.Return):
            continue
        v = node.value
        kind = known.get(v.id) if isinstance(v, gast.Name) else \
            DICT if isinstance(v, gast.Dict) else LIST if isinstance(v, gast.List) else None
        if kind is None or out not in (None, kind):
            return None
        out = kind
    return out
