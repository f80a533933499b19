"""Global statements: ``global calls; calls += 1`` in a function adgen compiles, written as
the item of the module's globals it is: ``__adgen_globals__["calls"] += 1``.

A counter of calls or steps a helper keeps in a module global was refused ("a global
statement (writes to globals) is not supported"), though the same code written with a
global dict (``STATS["calls"] += 1``) is differentiated. Only a counter's update may be
stored: a value made of constants and of such globals that reads the global itself
(``calls += 1``, ``n = n + 1``, ``k = k * 2``), which carries no derivative that a function
reading the global would drop; any other store (a value computed from a local, a flag or a
reset ``done = True``, unpacking) is refused at its line, and so is a global array written
in place (``W -= lr * g``). The rewrite binds the name ``__adgen_globals__`` in the
function's module to that module's globals dict (``fn.__globals__``; a dunder name, which
``from m import *`` leaves out), so that the generated code reads it as it reads the global
``STATS``, and reads and writes every name a ``global`` statement of the function's own body
lists, and that the body stores, as an item of it. Names a global statement lists but the
body only reads stay plain global reads (validate lets such a statement through). A
``global`` statement of a nested def is left to validate (refused there). A ``del`` of such
a name is refused at its line.

Every function of the module reads such a counter live too, as the same item: compiled, a
global's value is taken when the call starts, and a callee bumping it mid-run (``y =
helper(x); return np.sum(y) * calls``, a callback given as an argument too) gave a silently
wrong value and gradient. Which globals the module's functions (their nested defs, its
classes' methods) update as counters is read from their code (``STORE_GLOBAL``) and source,
once per code object (:func:`written_globals`); a global only set otherwise (a training
loop's ``global W``, a test's ``STEPS = 5``) stays a value taken when the call starts.

Runs right after parsing, on the tree as written (before validate).
"""

from __future__ import annotations

import dis
import functools
import types

import gast
from adgen.transforms.parse import Parsed
from adgen.transforms.walk import walk

from adgen.errors import UnsupportedError

__all__ = ["GLOBALS_NAME", "has_global_statement", "rewrite_global_statements",
           "written_globals"]

# the generated code's name for the function's module globals
GLOBALS_NAME = "__adgen_globals__"


def rewrite_global_statements(parsed: Parsed) -> None:
    """Rewrites ``parsed.tree`` in place (see the module); nothing where its own body has no
    ``global`` statement naming a name it stores, and reads no global that a function of its
    module updates as a counter by one."""
    tree = parsed.tree
    own = list(_own_nodes(tree))
    listed = {n for node in own if isinstance(node, gast.Global) for n in node.names}
    stored = {n.id for n in own if isinstance(n, gast.Name) and
              isinstance(n.ctx, (gast.Store, gast.Del)) and n.id in listed}
    read = _read_elsewhere(parsed, own, stored)
    if not stored and not read:
        return
    stored |= read
    for node in own:
        if isinstance(node, gast.Name) and node.id in stored and isinstance(node.ctx, gast.Del):
            raise UnsupportedError(f"del of the global {node.id} is not supported",
                                   parsed.location(node),
                                   hint=f"leave {node.id} bound (set it to None)")
    for node in own:
        if isinstance(node, gast.stmt):
            _check_store(parsed, node, stored)
    _Items(stored).visit(tree)
    _drop_statements(tree, stored)
    scope = parsed.fn.__globals__
    # bound in the module itself, so that the name is a global like STATS (guarded at each
    # call, its number items analyses.number_items's, read live by -o's standalone module)
    scope.setdefault(GLOBALS_NAME, scope)
    parsed.namespace[GLOBALS_NAME] = scope
    parsed.forget_locals()


def written_globals(scope: dict) -> frozenset[str]:
    """The names a ``global`` statement of a function of the module whose globals are
    ``scope`` updates as a counter (:func:`_stored_by`): its functions, the defs nested in
    them, its classes' methods. A function found only when the code runs (a callback given
    as an argument) is one of them, so every reader in the module reads such a name live."""
    out: set[str] = set()
    for v in list(scope.values()):
        for f in _functions_of(v):
            if getattr(f, "__globals__", None) is scope:
                out |= _stored_by(f.__code__)
    return frozenset(out)


def _functions_of(v: object) -> list:
    if isinstance(v, types.FunctionType):
        return [v]
    if not isinstance(v, type):
        return []
    out = []
    for m in list(vars(v).values()):
        m = getattr(m, "__func__", m)  # staticmethod, classmethod
        if isinstance(m, property):
            out += [f for f in (m.fget, m.fset) if isinstance(f, types.FunctionType)]
        elif isinstance(m, types.FunctionType):
            out.append(m)
    return out


@functools.lru_cache(maxsize=4096)
def _stored_by(code: types.CodeType) -> frozenset[str]:
    """The globals ``code`` (and the code nested in it) updates by a global statement as
    :func:`rewrite_global_statements` follows them: every store a counter's update, made
    of constants and globals and reading the global itself (``calls += 1``, ``n = n + 1``).
    A function storing anything else there (a training loop's ``global W; W = W - lr * g``,
    a test rebinding a constant, ``STEPS = 5``) is refused where adgen compiles it and runs
    as it is elsewhere, and its readers keep reading the global as a value taken when their
    call starts, as before. All of them where the source cannot be read."""
    out = {i.argval for i in dis.get_instructions(code) if i.opname == "STORE_GLOBAL"}
    if out:
        out -= _computed_stores(code, out)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out |= _stored_by(c)
    return frozenset(out)


def _computed_stores(code: types.CodeType, names: set[str]) -> set[str]:
    """Those of ``names`` that ``code``'s own body stores otherwise than by a counter's
    update (``name op= value`` or ``name = value`` reading ``name``, the value made of
    constants and of ``names`` alone), read from its source; none where it cannot be read
    (every such global then read live: right, if slower)."""
    import ast
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(code)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return set()
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and
               n.name == code.co_name), None)
    if fn is None:
        return set()
    out: set[str] = set()
    counted: set[int] = set()  # the target names of counters' updates
    stores: list[ast.Name] = []
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        todo.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)) and \
                node.id in names:
            stores.append(node)
        if isinstance(node, (ast.Assign, ast.AugAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if len(targets) != 1 or not isinstance(targets[0], ast.Name):
                continue
            name = targets[0].id
            counts = isinstance(node, ast.AugAssign) or any(
                isinstance(n, ast.Name) and n.id == name for n in ast.walk(node.value))
            if counts and all(
                    isinstance(n, ast.Name) and n.id in names or
                    isinstance(n, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.BoolOp,
                                   ast.Compare, ast.IfExp, ast.Tuple, ast.expr_context,
                                   ast.operator, ast.unaryop, ast.boolop, ast.cmpop))
                    for n in ast.walk(node.value)):
                counted.add(id(targets[0]))
    for n in stores:
        if id(n) not in counted:
            out.add(n.id)  # (unpacking, a loop, a with, a value not a counter's update)
    return out


def _read_elsewhere(parsed: Parsed, own: list[gast.AST], stored: set[str]) -> set[str]:
    """The globals the function reads (not binds) that a global statement of another
    function of its module binds: read live, as items of the module's globals, since a
    callee may change them while the function runs (its folded value was the value at the
    call's start: ``y = helper(x); return np.sum(y) * calls`` gave a silently wrong value
    and gradient). A nested def or lambda reading one is refused."""
    code = getattr(parsed.fn, "__code__", None)
    if code is None or not (set(code.co_names) - stored):
        return set()
    names = (set(code.co_names) - stored) & written_globals(parsed.fn.__globals__)
    names = {n for n in names if not parsed.is_local(n)}
    if not names:
        return set()
    for node in walk(parsed.tree):
        if isinstance(node, (gast.FunctionDef, gast.Lambda)) and node is not parsed.tree:
            for n in walk(node):
                if isinstance(n, gast.Name) and n.id in names:
                    raise UnsupportedError(
                        f"a nested function or lambda reads the global {n.id}, which a "
                        "global statement of another function writes: adgen reads it live "
                        "only in the function's own body", parsed.location(n),
                        hint=f"read {n.id} into a local first ({n.id.lower()}_now = {n.id}) "
                             "and use that in the nested function")
    return names


# what a value stored in a global may be made of, besides constants' and globals' names
# (_computed_stores reads the same of a function adgen has not compiled yet)
_PLAIN = (gast.Constant, gast.BinOp, gast.UnaryOp, gast.BoolOp, gast.Compare, gast.IfExp,
          gast.Tuple, gast.expr_context, gast.operator, gast.unaryop, gast.boolop, gast.cmpop)


def _check_store(parsed: Parsed, st: gast.stmt, names: set[str]) -> None:
    """Refuses ``st`` where it binds one of ``names`` otherwise than as a counter's update,
    ``name = value`` or ``name op= value`` with a value made of constants and of ``names``
    alone that reads ``name`` (``calls += 1``, ``n = n + 1``): a value computed from anything
    else may carry a derivative, which a function reading the global would drop silently,
    and only such updates are the ones every reader in the module reads live."""
    targets = [st.target] if isinstance(st, (gast.AugAssign, gast.AnnAssign, gast.For)) else \
        st.targets if isinstance(st, gast.Assign) else \
        [i.optional_vars for i in st.items if i.optional_vars is not None] \
        if isinstance(st, gast.With) else []
    hit = [n.id for t in targets for n in walk(t) if isinstance(n, gast.Name) and
           n.id in names]
    if not hit:
        return
    name = hit[0]
    plain = isinstance(st, (gast.Assign, gast.AugAssign)) and \
        all(isinstance(t, gast.Name) for t in targets)
    value = st.value if plain else None
    bad = [n.id for n in walk(value) if isinstance(n, gast.Name) and n.id not in names] \
        if value is not None else []
    bad.sort(key=lambda n: not parsed.is_local(n))  # (x before np in np.sum(x))
    counts = plain and (isinstance(st, gast.AugAssign) or any(
        isinstance(n, gast.Name) and n.id == name for n in walk(value)))
    if plain and counts and not bad and all(isinstance(n, _PLAIN) for n in walk(value)
                                            if not isinstance(n, gast.Name)):
        return
    why = f"from {bad[0]}" if bad else "otherwise (a call, an item, an attribute, a display)" \
        if plain and counts else "without reading it (not a counter's update)" if plain \
        else "by unpacking, a loop or a with"
    raise UnsupportedError(
        f"the global {name} (global statement) is written with a value computed {why}: adgen "
        "follows a write to a global only as a counter's update, of a value made of constants "
        f"and globals that reads it ({name} += 1), since one that may carry a derivative would reach the code "
        "reading the global as a constant", parsed.location(st),
        hint=f"return the value and keep it in the caller (or pass in a dict or an object "
             f"and set state[\"{name}\"] = ..., which adgen follows)")


def _own_nodes(tree: gast.FunctionDef):  # noqa: ANN202 - a generator of nodes
    """The nodes of ``tree``'s body, not those of a nested def, lambda or class."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, (gast.FunctionDef, gast.Lambda, gast.ClassDef)):
            continue
        todo.extend(gast.iter_child_nodes(node))


class _Items(gast.NodeTransformer):
    """Each name of ``names`` in the function's own body -> ``__adgen_globals__["name"]``."""

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.depth = 0

    def visit_FunctionDef(self, node: gast.FunctionDef) -> gast.AST:
        self.depth += 1
        try:
            if self.depth == 1:
                self.generic_visit(node)
            return node
        finally:
            self.depth -= 1

    def visit_Lambda(self, node: gast.Lambda) -> gast.AST:
        return node  # (its own scope: a name it reads is the global, read as one)

    def visit_ClassDef(self, node: gast.ClassDef) -> gast.AST:
        return node

    def visit_Name(self, node: gast.Name) -> gast.AST:
        if node.id not in self.names:
            return node
        item = gast.Subscript(value=gast.Name(id=GLOBALS_NAME, ctx=gast.Load(), annotation=None,
                                              type_comment=None),
                              slice=gast.Constant(node.id, None), ctx=node.ctx)
        return gast.copy_location(item, node)


def _drop_statements(tree: gast.FunctionDef, names: set[str]) -> None:
    """Takes the rewritten names out of the function's own global statements (a statement
    left without a name goes; a block left empty gets a ``pass``)."""
    for node in [tree, *_own_nodes(tree)]:
        if isinstance(node, (gast.FunctionDef, gast.Lambda, gast.ClassDef)) and node is not tree:
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, field, None)
            if not isinstance(block, list) or not block or not isinstance(block[0], gast.stmt):
                continue
            kept = []
            for st in block:
                if isinstance(st, gast.Global):
                    st.names = [n for n in st.names if n not in names]
                    if not st.names:
                        continue
                kept.append(st)
            block[:] = kept or [gast.copy_location(gast.Pass(), block[0])]


def has_global_statement(tree: gast.FunctionDef) -> bool:
    """Whether ``tree`` has a ``global`` statement anywhere (the front's cheap test)."""
    return any(isinstance(n, gast.Global) for n in walk(tree))
