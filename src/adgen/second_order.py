"""Second order through generated code: reverse mode over adgen's own forward and pullback.

For ``grad(f, j)`` at a signature, :func:`gradient_program` builds a plain Python function

    def f_gradient(a0, a1, ...):
        out, saved = f_forward(a0, a1, ...)
        return or_zeros(f_pullback(saved, 1.0)[j], aj)   # None (no gradient reached aj): 0

over the generated forward and pullback of ``f`` (and of its callees), loaded again from
their source (in linecache, so adgen reads it as it reads a user's) with rewrites that make
the generated code plain code that adgen's reverse mode covers:

- ``sh.of(x)`` (the shadow memory of buffer ``x``) becomes ``shadow_of(sh, x)``, which has a
  rule (``adgen.rules.runtime_rules``); the top pullback makes its map instead of taking it;
  a callee's pullback that uses no shadow memory stops taking the map; one that does (it
  shares its caller's), and the map's other methods (containers handed to callees), are
  refused;
- a typed tape, ``tape = tape_columns(steps, 'float64', ...)``, becomes a list of
  ``np.empty`` columns, and the pullback's ``for i, a, b in reversed_rows(tape, steps)``
  becomes a loop over the step numbers backwards that reads each column at the step;
  ``for row in reversed(tape)`` over a list tape becomes ``for row in tape[::-1]``;
- a validity guard's capture ``saved_x = capture(x, ...)`` (and a guard's own copies)
  becomes ``kept_copy(x)``, a copy taken at once, ``saved_x.value`` reads it, and the
  guards before writes go; under "strict" the gradient runs first (:attr:`Program.check`);
- ``stored_into(x, g)`` becomes ``stored_value(g, x)`` (its rule declares the view);
- the pullback helpers that are plain NumPy over functions with rules
  (:data:`COMPILED_HELPERS`) are copies loaded from their source, compiled like a user's.

Then adgen's reverse mode differentiates ``f_gradient``: the pullback's in-place updates of
adjoint buffers, the shadow memory (its effects: the result of ``shadow_of`` may alias any
other shadow, and each shadow is tracked by the second-level shadow map, which follows the
actual memory), and the tapes written then read backwards are mutation like any user's.

:func:`reverse_program` decides, before anything runs, whether reverse over reverse is
possible for a function at a signature: the program is compiled by adgen (as
``adgen.grad(f_gradient)`` would), and a construct of the generated code that has no
second-order rule (a checkpointed call, a list's popped adjoint...) fails that compilation,
with its line. The caller then takes the forward-over-reverse path, and
``adgen.explain(adgen.grad(f), x)`` says which path is taken and why.

The program is built per compilation of ``grad(f)``'s code (``compile_function``, which
recompiles when one of the user's free names no longer holds what the code assumed), and the
floats and arrays the code re-reads at each call are copied into its namespaces from the
compiled code's (:meth:`Program.refreshed`): a second derivative sees the program as the
primal would at that call.
"""

from __future__ import annotations

import ast
import weakref
from dataclasses import dataclass
from typing import Any

from adgen.errors import AdgenError
from adgen.generated_lines import (
    HELPER_MEANING,
    SHADOW_MAP_MEANING,
    function_name,
    program_refusal,
    refusal,
)

# The compiled pullback (first order) -> its programs; dropped with the compiled code.
_PROGRAMS: weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], Program]] = \
    weakref.WeakKeyDictionary()
# the gradient programs reverse mode refused to compile (the reason), by the second
# derivative's policy, the argument signature and the rules' generation
_REFUSED: weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], Program]] = \
    weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Program:
    """The gradient of a function as a plain Python function over its generated code, or why
    reverse mode cannot differentiate it (``reason``: the construct and its line)."""

    function: Any
    reason: str = ""
    # (the program's namespace, the compiled code's namespace, the names read from it): the
    # floats and arrays the compiled code re-reads at each call (bindings' "kind" guards)
    refresh: tuple[tuple[dict[str, Any], dict[str, Any], tuple[str, ...]], ...] = ()
    # the gradient's code has validity guards that raise under "strict": run the gradient
    # first (its guards raise MutationError where the first derivative is refused)
    check: bool = False

    @property
    def reverse(self) -> bool:
        return not self.reason

    def refreshed(self) -> Program:
        """The program with the current values of the user's floats and arrays it reads (the
        compiled code's namespace is refreshed by its guards, at each compile_function)."""
        for mine, theirs, keys in self.refresh:
            for k in keys:
                if k in theirs:
                    mine[k] = theirs[k]
        return self


class _NotDifferentiable(Exception):
    """A construct of the generated code that the rewrites do not cover."""


def _is_call(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
        node.func.id == name


class _Rewrite(ast.NodeTransformer):
    """The three rewrites of the module docstring, on one generated function's source."""

    def __init__(self, text: str, tree: ast.Module, user: tuple[str, str],
                 top: str | None = None) -> None:
        self.text, self.tree, self.user = text, tree, user  # (for refusals)
        self.count = 0
        self.top = top  # the pullback the program calls: its shadow map is its own

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        self.generic_visit(node)
        params = node.args.args
        if node.name != self.top or not params or params[-1].arg != "sh":
            return node
        heads = [k for k, st in enumerate(node.body[:3]) if ast.unparse(st) == "top = sh is None"]
        if not heads or heads[0] + 1 >= len(node.body) or \
                ast.unparse(node.body[heads[0] + 1]) != "if top:\n    sh = ShadowMap()":
            return node
        # the program calls it without a map: the map is made here, not received (a
        # parameter may alias every other parameter: the shadows would alias the saved values)
        del params[-1]
        del node.args.defaults[-1]
        k = heads[0]
        node.body[k:k + 2] = [ast.parse("sh = ShadowMap()").body[0],
                              ast.parse("top = True").body[0]]
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and \
                f.value.id == "sh":
            if f.attr == "of" and len(node.args) == 1 and not node.keywords:
                return ast.copy_location(ast.Call(func=ast.Name("shadow_of", ast.Load()),
                                                  args=[f.value, node.args[0]], keywords=[]),
                                         node)
            raise _NotDifferentiable(refusal(self.text, self.tree, node, f"sh.{f.attr}(...)",
                                             SHADOW_MAP_MEANING, *self.user))
        if _is_call(node, "stored_into") and len(node.args) == 2 and not node.keywords:
            # the cotangent first: its rule declares that the result may be it (a view)
            return ast.copy_location(ast.Call(func=ast.Name("stored_value", ast.Load()),
                                              args=[node.args[1], node.args[0]], keywords=[]),
                                     node)
        if _is_call(node, "tape_columns"):
            steps, dtypes = node.args[0], node.args[1:]
            count = ast.Call(func=ast.Name("len", ast.Load()), args=[steps], keywords=[])

            def column(d: ast.expr) -> ast.expr:
                spec = d.value if isinstance(d, ast.Constant) else None
                if isinstance(spec, str) and spec.startswith("float64["):
                    # a column of arrays of rank r (runtime.tape_columns): empty of rank r + 1
                    # until the loop's first row allocates it
                    shape: ast.expr = ast.Tuple(elts=[ast.Constant(0)] * (int(spec[8:-1]) + 1),
                                                ctx=ast.Load())
                    return ast.Call(func=ast.Attribute(ast.Name("np", ast.Load()), "empty",
                                                       ast.Load()), args=[shape], keywords=[])
                return ast.Call(func=ast.Attribute(ast.Name("np", ast.Load()), "empty",
                                                   ast.Load()), args=[count, d], keywords=[])

            return ast.copy_location(ast.List(elts=[column(d) for d in dtypes],
                                              ctx=ast.Load()), node)
        return node

    def visit_For(self, node: ast.For) -> ast.AST:
        self.generic_visit(node)
        it = node.iter
        if _is_call(it, "reversed") and len(it.args) == 1 and not _is_call(it.args[0],
                                                                           "range"):
            node.iter = ast.Subscript(value=it.args[0], slice=ast.Slice(
                None, None, ast.UnaryOp(ast.USub(), ast.Constant(1))), ctx=ast.Load())
            return node
        if not _is_call(it, "reversed_rows"):
            return node
        tape = it.args[0]
        steps = it.args[1] if len(it.args) > 1 else None
        targets = node.target.elts if isinstance(node.target, ast.Tuple) else [node.target]
        self.count += 1
        k = f"row{self.count}"
        reads: list[ast.stmt] = []
        columns = targets[1:] if steps is not None else targets
        if steps is not None:
            reads.append(ast.Assign(targets=[targets[0]], value=ast.Subscript(
                value=steps, slice=ast.Name(k, ast.Load()), ctx=ast.Load())))
        for c, t in enumerate(columns):
            column = ast.Subscript(value=tape, slice=ast.Constant(c), ctx=ast.Load())
            reads.append(ast.Assign(targets=[t], value=ast.Subscript(
                value=column, slice=ast.Name(k, ast.Load()), ctx=ast.Load())))
        first = ast.Subscript(value=tape, slice=ast.Constant(0), ctx=ast.Load())
        count = steps if steps is not None else first
        start = ast.BinOp(ast.Call(func=ast.Name("len", ast.Load()), args=[count],
                                   keywords=[]), ast.Sub(), ast.Constant(1))
        node.target = ast.Name(k, ast.Store())
        node.iter = ast.Call(func=ast.Name("range", ast.Load()),
                             args=[start, ast.Constant(-1), ast.Constant(-1)], keywords=[])
        node.body = reads + node.body
        return node


# Runtime functions of guard copies standing for a callee's arguments and of calls resolved
# at run time, and the helpers that take the shadow map itself and write through it (a
# copy's adjoint scattered into its base's shadow, containers' adjoints handed to their
# arrays): no second-order rules yet. Compiled as callees, their writes into what sh.of
# returns would not be seen as writes of the shadows (a zero second derivative).
REFUSED = ("remap_saved", "call_forward", "call_pullback", "scatter_if_copy", "collect",
           "with_shadows", "add_out", "items_to_shadows", "shadows_to_items")
# Validity guards: a capture becomes a copy taken at once (kept_copy), which makes the guards
# before later writes useless under "save". Under "strict" they raise where a write
# overwrites a captured value: the gradient, which has the same guards, is run first
# (Program.check), so that the second derivatives are refused where the first one is.
CAPTURES = ("capture", "copy_before_loop", "copy_when_read")
# The forward's notes that a slot may have changed (transforms/slot_changes.py): dropped
SLOT_NOTES = ("slots_changed", "slots_changed_by", "slots_changed_by_call")


def _rewritten(text: str, user: tuple[str, str], top: str | None) -> tuple[ast.Module, bool]:
    """The rewritten tree, and whether it had validity guards. ``user``: the user's file and
    the function's name, which a refusal names (with the user's line, where it has one)."""
    tree = ast.parse(text)
    guarded = False
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id in REFUSED:
            raise _NotDifferentiable(refusal(text, tree, node, f"{node.func.id}(...)",
                                             HELPER_MEANING[node.func.id], *user))
        guarded = guarded or node.func.id in (*CAPTURES, "before_write")
    tree = _Captures().visit(tree)
    tree = _OwnedUpdates().visit(tree)
    return _Rewrite(text, tree, user, top).visit(tree), guarded


class _OwnedUpdates(ast.NodeTransformer):
    """In a pullback, ``t_bar -= v`` on an adjoint every binding of which is a fresh value
    (an operator's or a plain function's result) and which nothing aliases before the update
    becomes ``t_bar = t_bar - v``: lean_pullback writes such an owned adjoint in place to
    save memory, the two forms have one value, and the second is one adgen's reverse mode
    differentiates without asking what ``t_bar`` may share (a helper's result, such as
    ``unbroadcast``'s, it cannot tell from its argument when compiling). An update of an
    adjoint bound to a shadow (a name, an item, ``sh.of(x)``) keeps writing that memory."""

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        self.generic_visit(node)
        if not node.name.endswith("_pullback"):
            return node
        self.fresh: dict[str, bool] = {}
        self.aliases: dict[str, list[tuple[int, tuple[int, ...]]]] = {}
        self.updates: list[tuple[ast.AugAssign, tuple[int, ...]]] = []
        self._scan(node.body, ())
        owned = {id(u) for u, loops in self.updates
                 if u.target.id.endswith("_bar") and self.fresh.get(u.target.id, False) and
                 not any(line < u.lineno or set(inside) & set(loops)
                         for line, inside in self.aliases.get(u.target.id, ()))}
        return _Rebind(owned).visit(node)

    def _scan(self, body: list[ast.stmt], loops: tuple[int, ...]) -> None:
        """Records the bindings, the aliases (``a = t_bar``, with the loops around them) and
        the updates of names in ``body``."""
        for st in body:
            if isinstance(st, ast.Assign):
                value = st.value
                ok = isinstance(value, (ast.BinOp, ast.UnaryOp)) or (
                    isinstance(value, ast.Call) and isinstance(value.func, ast.Name))
                for t in st.targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            self.fresh[n.id] = self.fresh.get(n.id, True) and ok and \
                                isinstance(t, ast.Name)
                if isinstance(value, ast.Name):
                    self.aliases.setdefault(value.id, []).append((st.lineno, loops))
            elif isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name):
                self.updates.append((st, loops))
            else:
                for n in ast.walk(st):
                    # names bound otherwise (loop targets, with, walrus, nested defs): kept
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                        self.fresh[n.id] = False
                inner = (*loops, id(st)) if isinstance(st, (ast.For, ast.While)) else loops
                for field in ("body", "orelse", "finalbody"):
                    block = getattr(st, field, None)
                    if isinstance(block, list):
                        self._scan(block, inner)
                for h in getattr(st, "handlers", ()):
                    self._scan(h.body, inner)


class _Rebind(ast.NodeTransformer):
    def __init__(self, owned: set[int]) -> None:
        self.owned = owned

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        if id(node) not in self.owned:
            return node
        target = node.target
        value = ast.BinOp(left=ast.Name(target.id, ast.Load()), op=node.op, right=node.value)
        return ast.copy_location(ast.Assign(targets=[ast.Name(target.id, ast.Store())],
                                            value=value), node)


class _Captures(ast.NodeTransformer):
    """Under "save": ``saved_x = capture(x, ...)`` becomes ``saved_x = kept_copy(x)`` (and
    the guards' own copies too), ``saved_x.value`` becomes ``saved_x``, and the guards before
    writes (``before_write(...)``) go: what they would save is copied already."""

    def __init__(self) -> None:
        self.kept: set[str] = set()

    def visit_Module(self, node: ast.Module) -> ast.AST:
        for st in ast.walk(node):
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and \
                    isinstance(st.targets[0], ast.Name) and _is_call(st.value, "capture"):
                self.kept.add(st.targets[0].id)
        self.generic_visit(node)
        return node

    def visit_Delete(self, node: ast.Delete) -> ast.AST | None:
        # lean_pullback's ``del t_bar`` after a last read frees memory and changes no value;
        # adgen does not differentiate del statements
        return None

    def visit_Expr(self, node: ast.Expr) -> ast.AST | None:
        if _is_call(node.value, "before_write"):
            return None
        if any(_is_call(node.value, n) for n in SLOT_NOTES):
            # (item_shadows.slots_changed: for records of containers' slots, which code
            # differentiated again does not make, REFUSED)
            return None
        self.generic_visit(node)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in CAPTURES:
            return ast.copy_location(ast.Call(func=ast.Name("kept_copy", ast.Load()),
                                              args=node.args[:1], keywords=[]), node)
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if node.attr == "value" and isinstance(node.value, ast.Name) and \
                node.value.id in self.kept and isinstance(node.ctx, ast.Load):
            return node.value
        return node

    def generic_visit(self, node: ast.AST) -> ast.AST:
        # a statement list left empty by a removed guard gets a pass
        super().generic_visit(node)
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and not block and field == "body":
                block.append(ast.Pass())
        return node


def _saved_only(tree: ast.Module, name: str) -> bool:
    """Adds to ``tree`` a copy of the forward ``{name}_forward`` named
    ``{name}_forward_saved`` whose returns ``(out, saved)`` are ``(None, saved)``; False where
    a return is of another form (the program then calls the forward itself).

    The program reads only the saved values: its reverse mode gave the primal output a zero
    cotangent, and the pullbacks of the statements only the output depends on multiplied it
    by their local derivative, ``0 * np.log(y)`` = nan at y = 0 in ``jacrev(grad(f))`` where
    JAX's zero is symbolic. Without the output those statements are not active and have no
    pullback (as transforms/tangent_only.py does for forward over reverse)."""
    forward = next((d for d in tree.body if isinstance(d, ast.FunctionDef) and
                    d.name == f"{name}_forward"), None)
    if forward is None:
        return False
    copy = ast.parse(ast.unparse(forward)).body[0]
    assert isinstance(copy, ast.FunctionDef)
    copy.name = f"{name}_forward_saved"
    todo: list[ast.AST] = list(copy.body)
    while todo:  # (not into nested defs: their returns are their own)
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                             ast.ClassDef)):
            continue
        if isinstance(node, ast.Return):
            value = node.value
            if not (isinstance(value, ast.Tuple) and len(value.elts) == 2) or any(
                    isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and
                    n.func.id.endswith("_forward") for n in ast.walk(value.elts[0])):
                return False  # (a call in the output: its forward runs there)
            value.elts[0] = ast.Constant(None)
            continue
        todo.extend(ast.iter_child_nodes(node))
    tree.body.append(copy)
    return True


def _shapes_saved(tree: ast.Module, name: str) -> None:
    """The values the top pullback ``{name}_pullback`` reads from its saved tuple only for
    their shapes (``np.shape(t3)``, ``t3.shape``) are saved as their shapes by the forwards
    of ``tree`` (``{name}_forward``, ``{name}_forward_saved``), which the pullback then reads
    as they are. Saved as arrays, they were outputs of the forward that the program's reverse
    mode gave a zero cotangent, and the pullbacks of the statements computing them multiplied
    it by their local derivative (``t3 = t2 * x`` with ``t2 = c * np.log(y)``: 0 * -inf = nan
    in ``jacrev(grad(f))`` where JAX's zero is symbolic). Left as it is where a forward's
    return or the pullback's unpacking of ``saved`` has another form."""
    pullback = _pullback_def(tree, name)
    unpack = next((st for st in pullback.body if isinstance(st, ast.Assign) and
                   isinstance(st.value, ast.Name) and st.value.id == "saved"), None)
    if unpack is None or len(unpack.targets) != 1 or \
            not isinstance(unpack.targets[0], ast.Tuple) or \
            not all(isinstance(e, ast.Name) for e in unpack.targets[0].elts):
        return
    names = [e.id for e in unpack.targets[0].elts]  # type: ignore[attr-defined]
    reads: dict[str, list[tuple[ast.AST, str, Any]]] = {n: [] for n in names}
    other: set[str] = set()
    for parent in ast.walk(pullback):
        for field, value in ast.iter_fields(parent):
            for k, child in (enumerate(value) if isinstance(value, list) else [(None, value)]):
                if isinstance(child, ast.Call) and _is_shape_call(child) and \
                        child.args[0].id in reads:  # type: ignore[attr-defined]
                    reads[child.args[0].id].append((parent, field, k))  # type: ignore
                elif isinstance(child, ast.Attribute) and child.attr == "shape" and \
                        isinstance(child.value, ast.Name) and child.value.id in reads and \
                        isinstance(child.ctx, ast.Load):
                    reads[child.value.id].append((parent, field, k))
    for node in ast.walk(pullback):
        if isinstance(node, ast.Name) and node.id in reads:
            inside = any(_shape_of(getattr(p, f) if k is None else getattr(p, f)[k]) is node
                         for p, f, k in reads[node.id])
            if not inside and node not in unpack.targets[0].elts:  # type: ignore[attr-defined]
                other.add(node.id)
    shaped = [k for k, n in enumerate(names) if reads[n] and n not in other]
    if not shaped:
        return
    returns = []
    for d in tree.body:
        if isinstance(d, ast.FunctionDef) and d.name in (f"{name}_forward",
                                                           f"{name}_forward_saved"):
            todo: list[ast.AST] = list(d.body)
            while todo:
                node = todo.pop()
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                     ast.ClassDef)):
                    continue
                if isinstance(node, ast.Return):
                    v = node.value
                    if not (isinstance(v, ast.Tuple) and len(v.elts) == 2 and
                            isinstance(v.elts[1], ast.Tuple) and
                            len(v.elts[1].elts) == len(names)):
                        return
                    returns.append(v.elts[1])
                    continue
                todo.extend(ast.iter_child_nodes(node))
    for saved in returns:
        for k in shaped:
            saved.elts[k] = ast.Call(func=ast.Attribute(ast.Name("np", ast.Load()), "shape",
                                                        ast.Load()),
                                     args=[saved.elts[k]], keywords=[])
    for k in shaped:
        for parent, field, j in reads[names[k]]:
            plain = ast.Name(names[k], ast.Load())
            if j is None:
                setattr(parent, field, plain)
            else:
                getattr(parent, field)[j] = plain


def _is_shape_call(node: ast.Call) -> bool:
    """``np.shape(name)``."""
    f = node.func
    return isinstance(f, ast.Attribute) and f.attr == "shape" and \
        isinstance(f.value, ast.Name) and f.value.id == "np" and len(node.args) == 1 and \
        not node.keywords and isinstance(node.args[0], ast.Name)


def _shape_of(node: Any) -> Any:
    """The name whose shape ``node`` reads (``np.shape(n)``, ``n.shape``), or None."""
    if isinstance(node, ast.Call) and _is_shape_call(node):
        return node.args[0]
    if isinstance(node, ast.Attribute) and node.attr == "shape":
        return node.value
    return None


def _pullback_def(tree: ast.Module, name: str) -> ast.FunctionDef:
    return next(d for d in tree.body if isinstance(d, ast.FunctionDef) and
                d.name == f"{name}_pullback")


def _passes_map(node: ast.AST) -> bool:
    """A call that hands the shadow map on: ``g_pullback(saved, g, sh)``."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
        node.func.id.endswith("_pullback") and bool(node.args) and \
        isinstance(node.args[-1], ast.Name) and node.args[-1].id == "sh"


def _shadow_users(trees: dict[int, ast.Module], compiled: dict[int, Any]) -> set[int]:
    """The compiled functions whose pullback uses the shadow map (``shadow_of(sh, x)``), or
    hands it to a callee's pullback that does."""
    direct = {k for k, t in trees.items()
              if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and
                     n.func.id == "shadow_of" for n in ast.walk(_pullback_def(
                         t, compiled[k].name)))}
    users = set(direct)
    changed = True
    while changed:
        changed = False
        for k, t in trees.items():
            if k in users:
                continue
            for n in ast.walk(_pullback_def(t, compiled[k].name)):
                if _passes_map(n):
                    callee = compiled[k].callees.get(n.func.id[:-len("_pullback")])
                    if callee is not None and id(callee) in users:
                        users.add(k)
                        changed = True
                        break
    return users


def _drop_map(tree: ast.Module, name: str, callees: dict[str, Any], users: set[int],
              own: bool) -> None:
    """Calls of callees' pullbacks that do not use the shadow map stop passing it; and, with
    ``own``, this pullback stops taking it (it does not use it)."""
    fn = _pullback_def(tree, name)
    for n in ast.walk(fn):
        if _passes_map(n):
            callee = callees.get(n.func.id[:-len("_pullback")])
            if callee is not None and id(callee) not in users:
                n.args.pop()
    if own and fn.args.args and fn.args.args[-1].arg == "sh":
        fn.args.args.pop()
        fn.args.defaults.pop()
        fn.body = [st for st in fn.body if ast.unparse(st) not in (
            "top = sh is None", "if top:\n    sh = ShadowMap()")]


# Helpers of generated pullbacks that are plain NumPy over functions with rules: the program
# calls copies of them, loaded from their source as a user's functions, which adgen's reverse
# mode compiles like any callee (their rule-less first-order versions stay as they are).
COMPILED_HELPERS = ("matmul_vjp_a", "matmul_vjp_b", "matrix_transpose", "det_vjp", "shared_inverse",
                    "solve_vjp_a", "solve_vjp_b", "max_vjp", "norm_vjp", "matrix_norm_vjp",
                    "expand_reduced")


def _helper_copies() -> dict[str, Any]:
    """The copies of :data:`COMPILED_HELPERS`, in one namespace (they call each other)."""
    import inspect
    from typing import Any as _Any

    import numpy as np

    from adgen import runtime
    from adgen.transforms.emit import compile_source

    ns: dict[str, Any] = {n: getattr(runtime, n) for n in runtime.__all__}
    ns.update({"__name__": "adgen_second_order_helpers", "np": np, "Any": _Any})
    for n in COMPILED_HELPERS:
        compile_source(inspect.getsource(getattr(runtime, n)),
                       f"<adgen second order helper {n}>", ns)
    return {n: ns[n] for n in COMPILED_HELPERS}


_COPIES: dict[str, Any] = {}


def _load(compiled: Any, mutation: str) -> tuple[dict[str, Any], tuple[Any, ...], bool]:
    """The generated functions of ``compiled`` and of its callees, loaded again from their
    rewritten source; returns the namespace of ``compiled``'s own, what to refresh
    (:attr:`Program.refresh`), and whether the code had validity guards."""
    from adgen.transforms.emit import compile_source

    every: dict[int, Any] = {}
    trees: dict[int, ast.Module] = {}
    guarded = False
    todo = [compiled]
    while todo:
        c = todo.pop()
        if id(c) in every:
            continue
        if not c.own_source or c.pullback is None or \
                not hasattr(c.pullback, "__globals__"):
            raise _NotDifferentiable(f"{c.name} is differentiated by a rule or at run time: "
                                     "its pullback has no generated code to differentiate")
        every[id(c)] = c
        top = f"{c.name}_pullback" if c is compiled else None
        trees[id(c)], has_guards = _rewritten(c.own_source, _user(c), top)
        guarded = guarded or has_guards
        todo.extend(c.callees.values())
    users = _shadow_users(trees, every)
    for k, c in every.items():
        if c is not compiled and k in users:
            # its shadows are its caller's (views of the caller's arrays, arrays the caller
            # passed and it writes): the second derivative of that hand-over is not done yet
            raise _NotDifferentiable(
                f"{_user(c)[0]}: {function_name(c.name)}'s pullback shares its caller's shadow "
                "map (it writes or views arrays in place), which reverse over reverse does not "
                "follow into callees yet")
        _drop_map(trees[k], c.name, c.callees, users, own=c is not compiled)
    if _saved_only(trees[id(compiled)], compiled.name) and \
            not any(callee is compiled for c in every.values() for callee in c.callees.values()):
        # (its saved values go to the program only: not where it calls itself)
        _shapes_saved(trees[id(compiled)], compiled.name)
    if not _COPIES:
        _COPIES.update(_helper_copies())
    spaces: dict[int, dict[str, Any]] = {}
    for k, c in every.items():
        ns = dict(c.pullback.__globals__)
        ns.update(_COPIES)
        tree = ast.fix_missing_locations(trees[k])
        compile_source(_with_line_comments(tree, c.own_source) + "\n", _where(c, mutation),
                       ns)
        # the source shows a default argument as a placeholder (arr=None): the loaded forward
        # takes the user's defaults as the compiled one does (a raw TypeError otherwise)
        for forward in (ns.get(f"{c.name}_forward"), ns.get(f"{c.name}_forward_saved")):
            if forward is not None and getattr(c, "forward", None) is not None:
                forward.__defaults__ = c.forward.__defaults__
                forward.__kwdefaults__ = c.forward.__kwdefaults__
        spaces[k] = ns
    for k, c in every.items():  # callers call their callees' new functions, by their names
        for name, callee in c.callees.items():
            inner = spaces[id(callee)]
            spaces[k][f"{name}_forward"] = inner[f"{callee.name}_forward"]
            spaces[k][f"{name}_pullback"] = inner[f"{callee.name}_pullback"]
    # the user's floats and arrays the code reads: refreshed in the compiled code's namespace
    # by its guards at each call, and copied into the program's from there
    theirs = {id(c.pullback.__globals__): k for k, c in every.items()}
    keys: dict[int, set[str]] = {}
    for g in compiled.guards:
        if g.mode == "kind" and g.ns is not None and id(g.ns) in theirs:
            keys.setdefault(theirs[id(g.ns)], set()).add(g.key)
    refresh = tuple((spaces[k], every[k].pullback.__globals__, tuple(sorted(names)))
                    for k, names in keys.items())
    return spaces[id(compiled)], refresh, guarded


def _with_line_comments(tree: ast.Module, original: str) -> str:
    """The source of the rewritten ``tree`` with, above each statement, the ``# line N:``
    comment that stood above it in the ``original`` generated code (``ast.unparse`` drops
    comments): the code compiled from it names these lines, so an error raised under reverse
    over reverse is located at the user's line (``adjoints.locate``)."""
    import re

    text = ast.unparse(tree)
    user_of: list[str | None] = []
    current = None
    for line in original.splitlines():
        if line.startswith("def "):
            current = None
        found = re.match(r"\s*(# line \d+:.*)$", line)
        if found:
            current = found.group(1)
        user_of.append(current)
    olds = [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]
    news = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.stmt)]
    if len(olds) != len(news):
        return text
    comments: dict[int, str] = {}
    for old, new in zip(olds, news):
        k = getattr(old, "lineno", 0) - 1
        if 0 <= k < len(user_of) and user_of[k] is not None and \
                not isinstance(old, (ast.FunctionDef, ast.Import, ast.ImportFrom)):
            comments[new.lineno] = " " * new.col_offset + user_of[k]
    lines = text.splitlines()
    for n in sorted(comments, reverse=True):
        lines.insert(n - 1, comments[n])
    return "\n".join(lines)


def _user(c: Any) -> tuple[str, str]:
    """The user's file of compiled function ``c`` and its name (for refusals)."""
    trees = getattr(c, "trees", None)
    return (trees[2] if trees else "<unknown file>"), c.name


def _where(c: Any, mutation: str) -> str:
    return f"<adgen {c.name} {mutation} second order>"


def gradient_program(fun: Any, j: int, args: tuple[Any, ...], mutation: str) -> Program:
    """``grad(fun, j)`` at the signature of ``args`` as a plain function of the arguments,
    over the generated code (see the module docstring), or why there is none."""
    from adgen.transforms.analyses.kinds import signature
    from adgen.transforms.emit import compile_source
    from adgen.transforms.pipeline import compile_function

    compiled = compile_function(fun, mutation=mutation, wrt=(j,), sig=signature(args))
    key = (j, len(args), mutation)
    known = _PROGRAMS.setdefault(compiled.pullback, {})
    if key in known:
        return known[key].refreshed()
    try:
        ns, refresh, guarded = _load(compiled, mutation)
    except _NotDifferentiable as exc:
        program = known[key] = Program(None, str(exc))
        return program
    names = [f"a{k}" for k in range(len(args))]
    name = f"{compiled.name}_gradient"
    # (its output unused: the copy returning the saved values only, where there is one)
    forward = f"{compiled.name}_forward_saved"
    if forward not in ns:
        forward = f"{compiled.name}_forward"
    text = (f"def {name}({', '.join(names)}):\n"
            f"    out, saved = {forward}({', '.join(names)})\n"
            f"    return or_zeros({compiled.name}_pullback(saved, 1.0)[{j}], a{j})\n")
    space = dict(ns)
    compile_source(text, f"<adgen {compiled.name} {mutation} gradient program>", space)
    program = known[key] = Program(space[name], refresh=refresh,
                                   check=guarded and mutation == "strict")
    return program.refreshed()


def reverse_program(fun: Any, j: int, args: tuple[Any, ...], mutation: str,
                    outer: str | None = None) -> Program:
    """The program of :func:`gradient_program` (``mutation``: the gradient's policy) if
    adgen's reverse mode compiles it (under ``outer``, the second derivative's policy; the
    same by default), so that reverse over reverse runs; else a Program with the reason. The
    decision is taken before anything runs, from what the generated code contains."""
    from adgen.rules import registry
    from adgen.transforms.analyses.kinds import signature
    from adgen.transforms.pipeline import compile_function

    program = gradient_program(fun, j, args, mutation)
    if not program.reverse:
        return program
    # a refusal is kept (a gradient function called in a loop inside a differentiated
    # function compiled its program again at every call: 280 ms each); where it is wrong
    # (a global's kind changed since), the other path still gives the derivative
    sig = signature(args)
    refused = _REFUSED.setdefault(program.function, {})
    key = (outer or mutation, sig, registry.generation())
    if key in refused:
        return refused[key]
    try:
        compile_function(program.function, mutation=outer or mutation, sig=sig)
    except AdgenError as exc:
        refused[key] = Program(None, program_refusal(exc))
        return refused[key]
    return program
