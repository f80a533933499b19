"""walk.walk visits what ast.walk visits but the expression contexts, in its order;
clone_with is a clone with the loaded names replaced, sharing nothing with the template or
the substitutes."""

from __future__ import annotations

import ast
from pathlib import Path

import gast
from adgen.transforms.emit import to_source
from adgen.transforms.walk import (
    Transformer,
    _written_pusher,
    children,
    clone,
    clone_with,
    walk,
)

ROOT = Path(__file__).resolve().parents[2]


def _ast_walk(node):
    """ast.walk's ids without the expression contexts (Load, Store, Del, Param), which walk,
    children and Transformer leave out."""
    return [id(n) for n in ast.walk(node) if not isinstance(n, gast.expr_context)]


def _ast_children(node):
    return [id(c) for c in ast.iter_child_nodes(node) if not isinstance(c, gast.expr_context)]


def test_walk_is_ast_walk():
    tree = gast.parse((ROOT / "transforms" / "reverse_ops.py").read_text())
    assert [id(n) for n in walk(tree)] == _ast_walk(tree)
    node = tree.body[-1]
    assert [id(n) for n in walk(node)] == _ast_walk(node)


def test_clone_with_replaces_loaded_names_only():
    template = gast.parse("g = unbroadcast(g * b, np.shape(a)) + a").body[0]
    sub = gast.parse("x[i] + 1").body[0].value
    out = clone_with(template, {"g": sub, "a": gast.parse("y").body[0].value})
    assert to_source(out).strip() == "g = unbroadcast((x[i] + 1) * b, np.shape(y)) + y"
    assert to_source(template).strip() == "g = unbroadcast(g * b, np.shape(a)) + a"
    kept = {id(n) for n in walk(template)} | {id(n) for n in walk(sub)}
    # fresh nodes everywhere (the contexts Load/Store are gast's shared singletons or not)
    assert not {id(n) for n in walk(out) if not isinstance(n, gast.expr_context)} & kept
    # with nothing to replace it is clone
    assert ast.dump(clone_with(template, {})) == ast.dump(clone(template))


class _Negate(Transformer):
    """Drops ``pass``, splits ``del`` into two statements, rewrites names and constants."""

    def visit_Name(self, node):
        return gast.Name(id=node.id.upper(), ctx=node.ctx, annotation=None, type_comment=None)

    def visit_Constant(self, node):
        return gast.UnaryOp(op=gast.USub(), operand=node) if node.value == 1 else node

    def visit_Pass(self, node):
        return None

    def visit_Delete(self, node):
        return [node, gast.Expr(value=gast.Constant(value=0, kind=None))]

    def visit_Return(self, node):
        self.generic_visit(node)
        return node


class _Standard(gast.NodeTransformer):
    visit_Name = _Negate.visit_Name
    visit_Constant = _Negate.visit_Constant
    visit_Pass = _Negate.visit_Pass
    visit_Delete = _Negate.visit_Delete
    visit_Return = _Negate.visit_Return


def test_transformer_does_what_node_transformer_does():
    source = (ROOT / "transforms" / "cleanup.py").read_text() + (
        "\ndef f(x):\n    pass\n    del x\n    return 1 + x\n")
    fast = _Negate().visit(gast.parse(source))
    slow = _Standard().visit(gast.parse(source))
    assert ast.dump(fast, include_attributes=True) == ast.dump(slow, include_attributes=True)
    assert "-1 + X" in to_source(fast)
    # a removed optional field (a return without value) is deleted, as the standard one does
    node = gast.parse("def g():\n    return x").body[0]

    class _Drop(Transformer):
        def visit_Name(self, node):
            return None

    _Drop().visit(node)
    assert not hasattr(node.body[0], "value") or node.body[0].value is None


# The fields walk, children and Transformer skip as never holding a node (identifiers, strings
# and numbers of the grammar), and the expression's context (a leaf no pass looks for)
_SCALAR_FIELDS = {"id", "attr", "type_comment", "kind", "module", "level", "conversion",
                  "simple", "is_async"}
_CONTEXT = "ctx"
# Each appears in this source, beside fields that do hold nodes in gast (an except handler's
# name, an argument's annotation, a keyword's value).
_EVERY_SCALAR_FIELD = '''
from ..pkg import mod as alias_name
import os.path as p
x: int = 1
(y): "str" = 2
def f(a: int, *args: float, k=3, **kw) -> "r":
    global g
    s = f"{a!r:>{k}} {b!s} {c!a}"
    t = [v async for v in a if v] if a else {k: v for k, v in kw.items()}
    try:
        u = a.attr.other(1, key=a, **kw)
    except (ValueError, TypeError) as err:
        u = err
    match u:
        case [1, *rest] if rest:
            pass
        case {"k": v, **others}:
            pass
        case Point(x=0, y=yy) | None as whole:
            pass
    return lambda q, *, r=1: q + r + u[1:2, ...]
'''


def test_walk_and_children_skip_no_node():
    tree = gast.parse(_EVERY_SCALAR_FIELD)
    assert [id(n) for n in walk(tree)] == _ast_walk(tree)
    for node in ast.walk(tree):
        assert [id(c) for c in children(node)] == _ast_children(node)
    # the skipped fields hold no node anywhere in this tree (and each is met in it); a
    # context field holds a context, which has no child
    met = set()
    for node in ast.walk(tree):
        for field in node._fields:
            if field in _SCALAR_FIELDS and hasattr(node, field):
                met.add(field)
                assert not isinstance(getattr(node, field), (gast.AST, list)), (node, field)
            if field == _CONTEXT:
                met.add(field)
                ctx = getattr(node, field)
                assert isinstance(ctx, gast.expr_context) and not ctx._fields, (node, field)
    assert met == set(_SCALAR_FIELDS) | {_CONTEXT}


def test_transformer_visits_what_walk_visits():
    seen = []

    class _Every(Transformer):
        def visit(self, node):
            seen.append(id(node))
            return super().visit(node)

    tree = gast.parse(_EVERY_SCALAR_FIELD)
    _Every().visit(tree)
    assert sorted(seen) == sorted(_ast_walk(tree))


def test_written_pushers_push_what_ast_reads():
    """walk reads the fields of a class's first nodes one by one, then through a function
    written out for the class (gast's field types): both push the same children, in order,
    also for nodes that do not hold what the types say (a field missing, gast's one-node
    type for Match.cases, which holds a list; None in a dict display's keys)."""
    tree = gast.parse(_EVERY_SCALAR_FIELD + "\nd = {**a, 'k': 1}\n")
    loop = gast.parse("for i in r:\n    s = s + i\n").body[0]
    del loop.orelse  # (a pass's node without one of its fields)
    for root in (tree, loop):
        for node in ast.walk(root):
            if isinstance(node, (gast.Name, gast.Constant, gast.expr_context)):
                continue  # (walk reads these itself)
            out = []
            _written_pusher(node.__class__)(node, out.append, out.extend)
            assert [id(c) for c in out] == [id(c) for c in children(node)], node
            assert [id(c) for c in out] == [
                id(c) for c in ast.iter_child_nodes(node) if not isinstance(c, gast.expr_context)]
