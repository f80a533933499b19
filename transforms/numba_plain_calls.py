"""numba_plain_calls: calls of a helper for a value no derivative goes through.

``j = argmin_row(a, i)`` then ``a[i, j]``, ``n = count_pos(x)`` then ``range(n)``: the default
pipeline keeps such a call as the user wrote it (the default backend calls the Python
function), though it compiled the helper's forward (``argmin_row_forward``) for the module
(``Compiled.callees``). The nopython module defines no ``argmin_row``, and numba refused the
name. This step makes the call a call of the forward, whose first value is the helper's
result: ``j, argmin_row_result = argmin_row_forward(a, i)`` (the saved values, a record for a
pullback no one calls, are left unused), in the forward and in the pullback (which may compute
the index again). ``numba_module._Module.link`` then emits the helper for the argument types
of the call as it does for any callee.

A call inside an expression is bound to a name of its own before its statement where that
statement evaluates it once, first (``return x[count_pos(x) - 1]``, ``if count_pos(x) > 2:``);
elsewhere (a ``while`` test, under ``and`` / ``or``, unpacked into several names) it is left,
and numba's refusal names it as before.
"""

from __future__ import annotations

import ast
import copy

from adgen.transforms.numba_statements import blocks

__all__ = ["plain_calls"]


def plain_calls(rw: object, callees: frozenset[str]) -> None:
    """Rewrites ``x = helper(args)`` of a callee into ``x, rec = helper_forward(args)``, in
    the forward and the pullback of Rewriter ``rw`` (in place); a call inside an expression
    of a statement that evaluates it once and first (an assignment, a return, an ``if``'s
    test; not under ``and``/``or``/``x if c else y``) is bound so before the statement."""
    for fn in (rw.fwd, rw.pb):  # type: ignore[attr-defined]
        bound = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and
                 isinstance(n.ctx, ast.Store)} | {a.arg for a in fn.args.args}

        def plain(node: ast.AST) -> bool:
            return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in callees and node.func.id not in bound

        for block in blocks(fn):
            out: list[ast.stmt] = []
            for st in block:
                if isinstance(st, ast.Assign) and len(st.targets) == 1 and \
                        isinstance(st.targets[0], ast.Name) and plain(st.value):
                    _bind(rw, st, st.targets[0], st.value)  # type: ignore[arg-type]
                    out.append(st)
                    continue
                top = st.test if isinstance(st, ast.If) else st.value if isinstance(
                    st, (ast.Assign, ast.AugAssign, ast.Return, ast.Expr)) else None
                if top is not None and not any(isinstance(n, (ast.BoolOp, ast.IfExp, ast.Lambda))
                                               for n in ast.walk(top)):
                    for node in [n for n in ast.walk(top) if plain(n)]:
                        name = ast.Name(id=rw.fresh(f"{node.func.id}_value"),  # type: ignore
                                        ctx=ast.Store())
                        hoisted = ast.Assign(targets=[name], value=copy.copy(node),
                                             lineno=getattr(st, "lineno", 0))
                        if hasattr(st, "_user_line"):
                            hoisted._user_line = st._user_line  # type: ignore[attr-defined]
                        _bind(rw, hoisted, name, hoisted.value)  # type: ignore[arg-type]
                        out.append(hoisted)
                        _replace(st, node, ast.Name(id=name.id, ctx=ast.Load()))
                out.append(st)
            block[:] = out


def _bind(rw: object, st: ast.Assign, target: ast.Name, call: ast.Call) -> None:
    sym = call.func.id  # type: ignore[attr-defined]
    record = rw.fresh(f"{sym}_record")  # type: ignore[attr-defined]
    st.targets = [ast.Tuple(elts=[target, ast.Name(id=record, ctx=ast.Store())],
                            ctx=ast.Store())]
    call.func = ast.Name(id=f"{sym}_forward", ctx=ast.Load())


def _replace(tree: ast.AST, old: ast.AST, new: ast.expr) -> None:
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
            elif isinstance(value, list):
                for k, v in enumerate(value):
                    if v is old:
                        value[k] = new
