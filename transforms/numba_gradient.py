"""numba_gradient: ``grad``'s one compiled call in the nopython module.

Input: the rewritten forward and pullback of the differentiated function (``ast`` trees, as
:mod:`adgen.transforms.numba_module` has them before rendering) and the numba types of its
parameters. Output: a pullback that writes the gradients of its float64 (and float32) array
parameters into float64 arrays its caller passes (``f_pullback_into(saved, out_bar, L_grad, b_grad)``) and the
source of ``f_gradient(L, b, L_grad, b_grad)``, which runs the forward and that pullback
seeded with 1.0 in one nopython call and returns ``(out, cotangents)`` with those arrays in
their places.

Why: numba boxes an array it allocated into a new Python object at each return (about half
a microsecond, and from numba's cache with a dtype object that is not NumPy's own, which sent
each gradient through the slow path of ``adgen.grad``'s checks), but hands back an array its
caller passed as the same object. So ``grad`` allocates the gradients in Python
(``np.empty``), and the pullback accumulates into them:

- an adjoint the pullback allocates as ``L_bar = zeros_like(L)`` (``L`` the parameter, the
  name bound nowhere else) becomes ``L_bar = zeros_into(L_grad, L)``: zeroed in place,
  nothing allocated or copied (trisolv's 60 x 60 gradient of ``L``);
- any other cotangent of such a parameter is copied into its array when the pullback
  returns (``store_cotangent``: zeros for None), after every returned value is computed, so
  no copy overwrites a value another position returns.

A float32 parameter's gradient is accumulated in a float64 array too, as its adjoint is
(``zeros_like``), and cast to float32 by ``adgen.grad`` when the call returns (the default
backend's convention: adjoints in float64, the gradient in its argument's dtype).
"""

from __future__ import annotations

import ast
import copy

from adgen.transforms.analyses.numba_types import ArgType, call_name, name_of


def pullback_into(fwd: ast.FunctionDef, pb: ast.FunctionDef, params: dict[str, ArgType],
                  taken: set[str]) -> tuple[ast.FunctionDef, list[int]] | None:
    """The pullback writing into caller-given arrays, and the positions of the parameters
    it takes arrays for (float64 arrays whose cotangent is not a literal None); None where
    there is none or the pullback's returns are not one tuple per parameter."""
    new = copy.deepcopy(pb)
    returns = [n for n in ast.walk(new) if isinstance(n, ast.Return)]
    if not returns or not isinstance(returns[0].value, ast.Tuple):
        return None
    # the user's parameters (the globals passed as data come after them: no cotangent)
    names = [a.arg for a in fwd.args.args][:len(returns[0].value.elts)]
    if not all(isinstance(r.value, ast.Tuple) and len(r.value.elts) == len(names)
               for r in returns):
        return None
    outs = [k for k, p in enumerate(names)
            if params.get(p) in (ArgType("array", "f8", params[p].ndim),
                                 ArgType("array", "f4", params[p].ndim))
            and any(not _is_none(r.value.elts[k]) for r in returns)]  # type: ignore[union-attr]
    if not outs:
        return None
    used = taken | {n.id for n in ast.walk(new) if isinstance(n, ast.Name)} | \
        {a.arg for a in fwd.args.args}
    grads: dict[int, str] = {}
    for k in outs:
        g, j = f"{names[k]}_grad", 1
        while g in used:
            j += 1
            g = f"{names[k]}_grad_{j}"
        used.add(g)
        grads[k] = g
    new.args.args += [ast.arg(arg=grads[k]) for k in outs]
    bound = _bindings(new)
    rebound_in_forward = _bindings(fwd)
    # the adjoints allocated for a parameter, made in its array instead
    made: dict[str, int] = {}
    for st in new.body:  # run once each: a fresh array, the caller's one instead
        if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and
                isinstance(st.targets[0], ast.Name) and call_name(st.value) == "zeros_like"
                and len(st.value.args) == 1):  # type: ignore[union-attr]
            continue
        target, like = st.targets[0].id, name_of(st.value.args[0])  # type: ignore[union-attr]
        k = names.index(like) if like in names else -1
        if k in grads and bound.get(target) == 1 and bound.get(like) == 1 and \
                rebound_in_forward.get(like) == 1 and target not in made and \
                all(name_of(r.value.elts[k]) == target for r in returns):  # type: ignore
            st.value = ast.Call(func=ast.Name(id="zeros_into", ctx=ast.Load()),
                                args=[ast.Name(id=grads[k], ctx=ast.Load()),
                                      ast.Name(id=like, ctx=ast.Load())], keywords=[])
            made[target] = k
    for r in returns:
        elts = r.value.elts  # type: ignore[union-attr]
        for k in outs:
            if name_of(elts[k]) in made and made[name_of(elts[k])] == k:  # type: ignore
                continue  # already the caller's array
            elts[k] = ast.Call(func=ast.Name(id="store_cotangent", ctx=ast.Load()),
                               args=[ast.Name(id=grads[k], ctx=ast.Load()), elts[k]],
                               keywords=[])
    new.name = _fresh(pb.name + "_into", used)
    return new, outs


def gradient_source(name: str, fwd: ast.FunctionDef, pullback: str,
                    grads: list[str], value_only: bool = False) -> str:
    """``name(*params, *grads)``: the forward, then ``pullback`` seeded with 1.0; returns
    ``(out, cotangents)``, or ``out`` alone with ``value_only`` (every cotangent is in
    ``grads``: numba boxing the returned tuple costs about 0.3 us a call)."""
    params = ", ".join(a.arg for a in fwd.args.args)
    extra = "".join(f", {g}" for g in grads)
    if value_only:
        return (f"\n\ndef {name}({params}{extra}):\n"
                f"    out, saved = {fwd.name}({params})\n"
                f"    {pullback}(saved, 1.0{extra})\n"
                f"    return out\n")
    return (f"\n\ndef {name}({params}{extra}):\n"
            f"    out, saved = {fwd.name}({params})\n"
            f"    return out, {pullback}(saved, 1.0{extra})\n")


def only_into(pb: ast.FunctionDef, outs: list[int]) -> bool:
    """Whether every cotangent ``pb`` (a pullback of :func:`pullback_into`) returns outside
    the positions ``outs`` is a literal None: its caller then has every gradient in the
    arrays it passed."""
    returns = [n for n in ast.walk(pb) if isinstance(n, ast.Return)]
    return bool(returns) and all(
        isinstance(r.value, ast.Tuple) and
        all(k in outs or _is_none(e) for k, e in enumerate(r.value.elts)) for r in returns)


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _bindings(fn: ast.FunctionDef) -> dict[str, int]:
    """How many times each name is bound in ``fn`` (assignments, loop targets, unpacking;
    its parameters once each). An augmented assignment is not counted: of an array (what
    ``zeros_like`` of an array parameter makes) it works in place, in numba as in NumPy, so
    the name keeps its array (``W_bar += ...``)."""
    out: dict[str, int] = {a.arg: 1 for a in fn.args.args}
    augmented = {id(n.target) for n in ast.walk(fn) if isinstance(n, ast.AugAssign)}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)) and \
                id(n) not in augmented:
            out[n.id] = out.get(n.id, 0) + 1
    return out


def _fresh(name: str, used: set[str]) -> str:
    out, j = name, 1
    while out in used:
        j += 1
        out = f"{name}_{j}"
    used.add(out)
    return out
