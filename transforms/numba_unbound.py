"""numba_unbound: locals that may be unbound, checked by a flag in nopython code.

Where a read may find a local unbound (``if k % 2 == 0: buf = np.zeros(n)`` in a loop, then
``buf[i] += ...``), the default pipeline binds the name to the runtime's ``Unbound``
sentinel at entry and checks ``buf_3 is Unbound`` before the read, raising Python's
``UnboundLocalError`` (``transforms/unbound.py``). nopython code cannot hold the sentinel
where the name holds an array or a number on other paths.

Input: the forward a ``Rewriter`` is rewriting (before its guarded sites, shadows and tapes
steps) and the type analysis of it. Output: each name that may hold the sentinel (bound
to it, or a copy ``buf_1 = buf`` of such a name) gets a bool beside it (``buf_3_unbound``):
True where the sentinel was bound, copied along with the name, False at every other
binding; the checks read it (``if buf_3_unbound: raise UnboundLocalError(...)``, the same
message and line), and the sentinel becomes a value of the name's type that no read sees
(an empty array of its dtype and rank, a NaN, 0, False): a read the check lets through
reads a value some assignment bound. So a loop that binds the array on the steps it takes
before any read runs, and one that reads it unbound raises as Python does.

Left as it is (refused at the read by ``Rewriter.check_calls``, naming the variable) where
the type analysis cannot tell the name's type, or a name of the class is bound otherwise
than by an assignment to it alone or a loop's target.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from adgen.transforms.numba_statements import blocks

if TYPE_CHECKING:
    from adgen.transforms.numba_emit import Rewriter

__all__ = ["unbound_flags"]

SENTINEL = "Unbound"

_PLACEHOLDERS = {"f8": "np.nan", "f4": "np.float32(np.nan)", "i8": "0", "b1": "False"}
_DTYPES = {"f8": "np.float64", "f4": "np.float32", "i8": "np.int64", "b1": "np.bool_"}


def _sentinel_target(st: ast.stmt) -> str | None:
    if isinstance(st, ast.Assign) and len(st.targets) == 1 and \
            isinstance(st.targets[0], ast.Name) and isinstance(st.value, ast.Name) and \
            st.value.id == SENTINEL:
        return st.targets[0].id
    return None


def _placeholder(kind: Any) -> ast.expr | None:
    if kind in _PLACEHOLDERS:
        return ast.parse(_PLACEHOLDERS[kind], mode="eval").body
    if isinstance(kind, tuple) and kind[0] == "array" and len(kind) == 3 and \
            kind[1] in _DTYPES:
        return ast.parse(f"np.empty({(0,) * kind[2]!r}, {_DTYPES[kind[1]]})",
                         mode="eval").body
    return None


def _bound_names(target: ast.expr) -> set[str]:
    """The names a target binds (not those an item or attribute store reads)."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(_bound_names(e) for e in target.elts))
    if isinstance(target, ast.Starred):
        return _bound_names(target.value)
    return set()


def unbound_flags(rw: Rewriter, types_of: Callable[[], dict[str, Any]]) -> None:
    """The sentinel and its checks as flags (the module's docstring). ``types_of()`` runs
    the type analysis of ``rw.fwd`` as it is when called."""
    fwd = rw.fwd
    sentinels = [(b, k) for b in blocks(fwd) for k, st in enumerate(b)
                 if _sentinel_target(st) is not None]
    if not sentinels or any(isinstance(n, ast.Name) and n.id == SENTINEL
                            for n in ast.walk(rw.pb)):
        return
    # the names that may hold the sentinel: bound to it, or copies of such names
    copies: dict[str, set[str]] = {}
    for node in ast.walk(fwd):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Name):
            copies.setdefault(node.value.id, set()).add(node.targets[0].id)
    reach = {_sentinel_target(b[k]) for b, k in sentinels}
    todo = list(reach)
    while todo:
        for c in copies.get(todo.pop(), ()):
            if c not in reach:
                reach.add(c)
                todo.append(c)
    rw.maybe_unbound |= reach
    # every other use of the sentinel is a check `n is Unbound` of such a name
    checks: list[ast.Compare] = []
    for node in ast.walk(fwd):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and \
                isinstance(node.ops[0], ast.Is) and isinstance(node.left, ast.Name) and \
                isinstance(node.comparators[0], ast.Name) and \
                node.comparators[0].id == SENTINEL:
            if node.left.id not in reach:
                return
            checks.append(node)
    uses = sum(isinstance(n, ast.Name) and n.id == SENTINEL for n in ast.walk(fwd))
    if uses != len(checks) + len(sentinels):
        return
    # each binding of such a name: a plain assignment of it alone, or a loop's target
    for node in ast.walk(fwd):
        for target in (node.targets if isinstance(node, ast.Assign) else
                       [node.target] if isinstance(node, (ast.For, ast.AugAssign))
                       else [t for item in node.items for t in [item.optional_vars] if t]
                       if isinstance(node, ast.With) else []):
            alone = isinstance(node, (ast.Assign, ast.For, ast.AugAssign)) and \
                isinstance(target, ast.Name) and \
                (not isinstance(node, ast.Assign) or len(node.targets) == 1)
            if not alone and _bound_names(target) & reach:
                return
    # the type each name takes where it is bound: the sentinel read as None meanwhile
    values = {id(b[k]): b[k].value for b, k in sentinels}
    for b, k in sentinels:
        b[k].value = ast.Constant(None)
    types_ = types_of()
    kinds = {types_.get(n) for n in reach} - {"none"}
    kind = kinds.pop() if len(kinds) == 1 else None
    if _placeholder(kind) is None:
        for b, k in sentinels:
            b[k].value = values[id(b[k])]
        return
    flag = {n: rw.fresh(f"{n}_unbound") for n in sorted(reach)}

    class Checks(ast.NodeTransformer):
        def visit_Compare(self, node: ast.Compare) -> ast.expr:
            if any(node is c for c in checks):
                return ast.Name(id=flag[node.left.id], ctx=ast.Load())
            return self.generic_visit(node)

    Checks().visit(fwd)

    def set_flag(n: str, value: ast.expr) -> ast.stmt:
        return ast.Assign(targets=[ast.Name(id=flag[n], ctx=ast.Store())], value=value,
                          lineno=0)

    def visit(body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for st in body:
            for field in ("body", "orelse"):
                inner = getattr(st, field, None)
                if isinstance(inner, list) and inner:
                    setattr(st, field, visit(inner))
            out.append(st)
            if isinstance(st, ast.For) and isinstance(st.target, ast.Name) and \
                    st.target.id in reach:
                st.body.insert(0, set_flag(st.target.id, ast.Constant(False)))
            if not (isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name) and
                    st.targets[0].id in reach):
                continue
            n = st.targets[0].id
            if id(st) in values:
                st.value = _placeholder(kind)
                out.append(set_flag(n, ast.Constant(True)))
            elif isinstance(st.value, ast.Name) and st.value.id in reach:
                out.append(set_flag(n, ast.Name(id=flag[st.value.id], ctx=ast.Load())))
            else:
                out.append(set_flag(n, ast.Constant(False)))
        return out

    fwd.body = [set_flag(n, ast.Constant(False)) for n in sorted(reach)] + visit(fwd.body)
