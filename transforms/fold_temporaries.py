"""Single-use temporaries folded back into the expressions that read them.

The normal form gives every intermediate value a name (``t1 = x.shape; t2 = t1[0]``); the
reverse pass calls :func:`fold_temporaries` on the forward it emits, so the printed code reads
like the user's (``h = np.empty((x.shape[0], w.shape[1]))``). A fold never moves an
operation with an effect past another one, nor a read past a write (see its docstring).
"""

from __future__ import annotations

from collections.abc import Callable

import gast
from adgen.transforms.walk import children, walk


def _target(st: gast.stmt) -> str | None:
    if isinstance(st, gast.Assign) and len(st.targets) == 1 and \
            isinstance(st.targets[0], gast.Name):
        return st.targets[0].id
    return None


def fold_temporaries(fn: gast.FunctionDef, temporary: Callable[[str], bool]) -> None:
    """Folds each temporary the normal form introduced back into its one use, in place, so
    the code reads like the user's: ``h = np.empty((x.shape[0], w.shape[1]))`` rather than
    ``t1 = x.shape; t2 = t1[0]; ...; h = np.empty((t2, t4))``.

    ``t = e`` is folded into the statement right after it (once the temporaries between are
    folded) when ``t`` is a ``temporary``, bound once and read once in the function, there,
    outside any nested block or conditionally evaluated part, and everything that statement
    evaluates before ``t`` is a plain load (a name, a constant, an attribute of one): ``e``
    then runs at the same point relative to every other operation with an effect, and reads
    the same values. A value the pullback reads is read twice (by its use and by the saved
    tuple), so it stays bound.
    """
    loads: dict[str, int] = {}
    stores: dict[str, int] = {}
    for n in walk(fn):
        if isinstance(n, gast.Name):
            table = loads if isinstance(n.ctx, gast.Load) else stores
            table[n.id] = table.get(n.id, 0) + 1
        elif isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Name):
            loads[n.target.id] = loads.get(n.target.id, 0) + 1
    foldable = {n for n, k in stores.items() if k == 1 and loads.get(n) == 1 and temporary(n)}
    if foldable:
        _fold_block(fn.body, foldable)


def _fold_block(body: list[gast.stmt], foldable: set[str]) -> None:
    out: list[gast.stmt] = []
    for st in body:
        for block in ("body", "orelse", "finalbody"):
            if isinstance(getattr(st, block, None), list):
                _fold_block(getattr(st, block), foldable)
        for handler in getattr(st, "handlers", None) or []:
            _fold_block(handler.body, foldable)
        while True:
            # the statement before st, past new empty tapes (tape1 = []: no effect, and no
            # temporary reads them)
            k = len(out) - 1
            while k >= 0 and _inert(out[k]):
                k -= 1
            if k < 0 or not _fold_into(out[k], st, foldable):
                break
            del out[k]
        out.append(st)
    body[:] = out


def _inert(st: gast.stmt) -> bool:
    """``n = []``, ``n = ()`` or ``n = None``: a binding that runs no code."""
    return _target(st) is not None and (
        isinstance(st.value, (gast.List, gast.Tuple)) and not st.value.elts or
        isinstance(st.value, gast.Constant) and st.value.value is None)


def _fold_into(prev: gast.stmt, st: gast.stmt, foldable: set[str]) -> bool:
    """Replaces the one read of ``prev``'s temporary in ``st`` by its value (True), if the
    conditions of :func:`fold_temporaries` hold; else changes nothing (False)."""
    t = _target(prev)
    if t is None or t not in foldable:
        return False
    for part in _evaluated(st):
        found = _load_path(part, t)
        if found is None:
            if not _plain_load(part):
                return False  # evaluated before t's read, and may have an effect
            continue
        path, node = found
        for parent, child in zip(path, path[1:] + [node]):
            if not _unconditional(parent, child):
                return False
        for parent, child in zip(path, path[1:] + [node]):
            for sibling in _before(parent, child):
                if not _plain_load(sibling):
                    return False
        value = prev.value
        if path:
            _replace(path[-1], node, value)
        else:
            _replace_part(st, part, value)
        return True
    return False


def _evaluated(st: gast.stmt) -> list[gast.expr]:
    """The expressions ``st`` evaluates, in order, outside its nested blocks ([] where a
    temporary is not folded: a while test, evaluated again at each iteration)."""
    if isinstance(st, gast.Assign):
        return [st.value] + list(st.targets)
    if isinstance(st, gast.AugAssign):
        # x[i] += e reads x[i] before e: only a plain name target is folded into
        return [st.target, st.value] if isinstance(st.target, gast.Name) else []
    if isinstance(st, (gast.Expr, gast.Return)) and st.value is not None:
        return [st.value]
    if isinstance(st, gast.For):
        return [st.iter]
    if isinstance(st, gast.If):
        return [st.test]
    return []


# Expression nodes whose operands are all evaluated, left to right, in their field order
_STRICT = (gast.Call, gast.BinOp, gast.UnaryOp, gast.Subscript, gast.Attribute, gast.Tuple,
           gast.List, gast.Slice, gast.keyword)


def _children(node: gast.AST) -> list[gast.AST]:
    if isinstance(node, gast.Call):
        return [node.func, *node.args, *node.keywords]
    # (operators and contexts are nodes too, evaluated by no one)
    return [c for c in children(node) if isinstance(c, (gast.expr, gast.keyword))]


def _load_path(root: gast.AST, t: str) -> tuple[list[gast.AST], gast.Name] | None:
    """The nodes from ``root`` down to the read of ``t`` (excluded), and that read."""
    if isinstance(root, gast.Name) and root.id == t and isinstance(root.ctx, gast.Load):
        return [], root
    for child in _children(root):
        found = _load_path(child, t)
        if found is not None:
            return [root] + found[0], found[1]
    return None


def _unconditional(parent: gast.AST, child: gast.AST) -> bool:
    """``child`` is evaluated whenever ``parent`` is, once, after the operands before it."""
    return isinstance(parent, _STRICT) and not (
        isinstance(parent, gast.Call) and any(isinstance(a, gast.Starred) for a in parent.args))


def _before(parent: gast.AST, child: gast.AST) -> list[gast.AST]:
    kids = _children(parent)
    return kids[:[id(k) for k in kids].index(id(child))]


def _plain_load(node: gast.AST) -> bool:
    """A name, a constant, an attribute of one, or a tuple of those: evaluating it has no
    effect and reads no array element that an earlier operation could change."""
    if isinstance(node, (gast.Name, gast.Constant)):
        return True  # (a name stored to is a target, bound after everything is evaluated)
    if isinstance(node, gast.Attribute):
        return _plain_load(node.value)
    if isinstance(node, (gast.Tuple, gast.List)):
        return all(_plain_load(e) for e in node.elts)
    if isinstance(node, gast.keyword):
        return _plain_load(node.value)
    return False


def _replace(parent: gast.AST, old: gast.AST, new: gast.AST) -> None:
    for field, value in gast.iter_fields(parent):
        if value is old:
            setattr(parent, field, new)
            return
        if isinstance(value, list):
            for k, item in enumerate(value):
                if item is old:
                    value[k] = new
                    return
    raise AssertionError("fold_temporaries: the read is not a child of its parent")


def _replace_part(st: gast.stmt, part: gast.expr, new: gast.expr) -> None:
    if isinstance(st, gast.Assign) and part is st.value:
        st.value = new
    elif isinstance(st, gast.AugAssign) and part is st.value:
        st.value = new
    elif isinstance(st, (gast.Expr, gast.Return)) and part is st.value:
        st.value = new
    elif isinstance(st, gast.For) and part is st.iter:
        st.iter = new
    elif isinstance(st, gast.If) and part is st.test:
        st.test = new
    else:  # a target: the temporary is not a store's target itself
        raise AssertionError("fold_temporaries: a temporary read as a whole target")
