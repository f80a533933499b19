"""walk.walk visits what ast.walk visits, in its order; clone_with is a clone with the loaded
names replaced, sharing nothing with the template or the substitutes."""

from __future__ import annotations

import ast
from pathlib import Path

import gast
from adgen.transforms.emit import to_source
from adgen.transforms.walk import Transformer, clone, clone_with, walk

ROOT = Path(__file__).resolve().parents[2]


def test_walk_is_ast_walk():
    tree = gast.parse((ROOT / "transforms" / "reverse_ops.py").read_text())
    assert [id(n) for n in walk(tree)] == [id(n) for n in ast.walk(tree)]
    node = tree.body[-1]
    assert [id(n) for n in walk(node)] == [id(n) for n in ast.walk(node)]


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
