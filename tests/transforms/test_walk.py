"""walk.walk visits what ast.walk visits, in its order; clone_with is a clone with the loaded
names replaced, sharing nothing with the template or the substitutes."""

from __future__ import annotations

import ast
from pathlib import Path

import gast
from adgen.transforms.emit import to_source
from adgen.transforms.walk import clone, clone_with, walk

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
