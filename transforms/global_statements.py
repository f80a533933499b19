"""Global statements: ``global calls; calls += 1`` in a function adgen compiles, written as
the item of the module's globals it is: ``__adgen_globals__["calls"] += 1``.

A counter of calls, a log of losses or a cache a helper keeps in a module global was
refused ("a global statement (writes to globals) is not supported"), though the same code
written with a global dict (``STATS["calls"] += 1``) is differentiated. Only a value made of
constants and of such globals may be stored (``calls += 1``, ``n = n + 1``, ``done = True``):
it carries no derivative, which a function reading the global (as a constant) would drop;
any other store is refused at its line. A global array written in place (``W -= lr * g``) is
refused at the line by the checks of a global's in-place writes. The
rewrite binds the name ``__adgen_globals__`` in the function's module to that module's
globals dict (``fn.__globals__``; a dunder name, which ``from m import *`` leaves out), so
that the generated code reads it as it reads the global ``STATS``, and reads and writes every
name a
``global`` statement of the function's own body lists, and that the body stores, as an item
of it. Names a global statement lists but the body only reads stay plain global reads
(validate lets such a statement through). A ``global`` statement of a nested def is left to
validate (refused there). A ``del`` of such a name is refused at its line.

The module's other functions that may call such a function read the global live too, as
the same item: compiled, a global's value is taken when the call starts, and a callee
changing it mid-run (``y = helper(x); return np.sum(y) * calls``) gave a silently wrong value
and gradient. Which functions a function may call is read from the names of its code
(:func:`written_globals`), which globals they bind from theirs (``STORE_GLOBAL``). A
function handed in from outside (a callback argument) is not seen: a caller reading a
global such a callback bumps reads the value it had when the call started.

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
    module writes by one."""
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


def written_globals(scope: dict, code: types.CodeType) -> frozenset[str]:
    """The names a ``global`` statement binds in the functions of the module whose globals
    are ``scope`` that ``code`` may call: those its names (and theirs, in turn) reach, a
    function, a class's methods, any method of the module's classes named like an attribute
    it reads (``m.forward(x)``). A function no such name reaches (a training loop's
    ``global W``, a test rebinding a constant) runs outside the call, where the value taken
    when the call starts is the one Python reads."""
    methods: dict[str, list] = {}
    for v in list(scope.values()):
        if isinstance(v, type):
            for f in _functions_of(v):
                methods.setdefault(f.__name__, []).append(f)
    out: set[str] = set()
    seen: set[types.CodeType] = set()
    todo = [code]
    while todo:
        c = todo.pop()
        if c in seen:
            continue
        seen.add(c)
        out |= _stored_by(c)
        for n in _names_in(c):
            for f in _functions_of(scope.get(n)) + methods.get(n, []):
                if getattr(f, "__globals__", None) is scope:
                    todo.append(f.__code__)
    return frozenset(out)


@functools.lru_cache(maxsize=4096)
def _names_in(code: types.CodeType) -> frozenset[str]:
    """The global and attribute names ``code`` and the code nested in it read."""
    out = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out |= _names_in(c)
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
    """The globals ``code`` (and the code nested in it) binds by a global statement to values
    made of constants and globals only, as :func:`rewrite_global_statements` follows them
    (a function storing anything else there is refused where adgen compiles it, and runs as
    it is elsewhere: a training loop's ``global W; W = W - lr * g``, whose readers keep
    reading ``W`` as a global taken when their call starts); all of them where the source
    cannot be read."""
    out = {i.argval for i in dis.get_instructions(code) if i.opname == "STORE_GLOBAL"}
    if out:
        out -= _computed_stores(code, out)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out |= _stored_by(c)
    return frozenset(out)


def _computed_stores(code: types.CodeType, names: set[str]) -> set[str]:
    """Those of ``names`` that ``code``'s own body stores a value into that is not made of
    constants and of ``names`` alone (read from its source; none where it cannot be)."""
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
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        todo.extend(ast.iter_child_nodes(node))
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            hit = {t.id for t in targets if isinstance(t, ast.Name)} & names
            plain = all(isinstance(t, ast.Name) for t in targets) and node.value is not None
            if hit and not (plain and all(
                    isinstance(n, ast.Name) and n.id in names or
                    isinstance(n, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.BoolOp,
                                   ast.Compare, ast.IfExp, ast.Tuple, ast.expr_context,
                                   ast.operator, ast.unaryop, ast.boolop, ast.cmpop))
                    for n in ast.walk(node.value))):
                out |= hit
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
    names = (set(code.co_names) - stored) & written_globals(parsed.fn.__globals__, code)
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
    """Refuses ``st`` where it binds one of ``names`` otherwise than ``name = value`` or
    ``name op= value`` with a value made of constants and of ``names`` alone (``calls += 1``,
    ``n = n + 1``, ``done = True``): a value computed from anything else may carry a
    derivative, which a function reading the global as a constant would drop silently."""
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
    if plain and not bad and all(isinstance(n, _PLAIN) for n in walk(value)
                                 if not isinstance(n, gast.Name)):
        return
    why = f"from {bad[0]}" if bad else "otherwise (a call, an item, an attribute, a display)" \
        if plain else "by unpacking, a loop or a with"
    raise UnsupportedError(
        f"the global {name} (global statement) is written with a value computed {why}: adgen "
        "follows a write to a global only of a value made of constants and globals (a "
        f"counter: {name} += 1), since one that may carry a derivative would reach the code "
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
