"""gast_unparse.unparse prints a gast tree as ast.unparse(to_ast(tree)) did, character for
character, a ``pass`` under each arm left with comments only included (emit.to_source's text
before gast_unparse; the generated code of tests/transforms/test_snapshots.py is the same)."""

from __future__ import annotations

import ast
import copy
from pathlib import Path

import gast
import pytest
from adgen.transforms.gast_ast import to_ast
from adgen.transforms.gast_unparse import unparse

_ROOT = Path(__file__).resolve().parents[2]


def _is_comment(node):
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and \
        isinstance(node.value.value, str) and node.value.value.startswith("\x00#")


def _reference(node: gast.AST) -> str:
    """The text as emit.to_source made it before: to_ast, a pass under comment-only arms,
    ast.unparse."""
    tree = to_ast(copy.deepcopy(node))
    todo = [tree]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.stmt) and getattr(n, "lineno", None) is None:
            n.lineno = 1
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(n, field, None)
            if isinstance(block, list):
                if block and all(_is_comment(b) for b in block):
                    block.append(ast.Pass(lineno=1))
                todo.extend(b for b in block if isinstance(b, ast.AST))
    return ast.unparse(tree)


def _comment(text: str) -> gast.Expr:
    return gast.Expr(value=gast.Constant(value="\x00# " + text, kind=None))


SNIPPETS = [
    "if a:\n    x = 1\nelif b:\n    x = 2\nelif c:\n    x = 3\nelse:\n    x = 4",
    "if a:\n    x = 1\nelse:\n    if b:\n        x = 2\n    y = 3",
    "y = x[1:2, ::3, i]\nz = x[(1, 2)]\nw = x[()]\nv = x[i, ...]\nu = x[*idx]",
    "a = 3 .real + (1).imag + 2.5.real + (-1).real + x.y.z",
    "def f(x, /, y: int = 1, *args, z=2, w, **kw) -> float:\n    'doc'\n    return x",
    "def g(a=(1, 2), *, b=lambda q, r=3: q + r):\n    return [t for t in a if t]",
    "try:\n    x = 1\nexcept (ValueError, KeyError) as e:\n    raise e from None\n"
    "except Exception:\n    pass\nelse:\n    y = 2\nfinally:\n    z = 3",
    "s = f'{x!r:>{w}} and {y + 1:.3f} {{}}' + 'plain'",
    "x: int = 1\n(y): float\nz.w: list[int] = []",
    "class C(B, metaclass=M):\n    '''doc'''\n    a: int = 0\n\n    def m(self):\n        return self.a",
    "r = -x ** 2 + (-x) ** 2 + (a if b else c) * d - (e - f) - (g or h and not i)",
    "r = (yield x)\nq = [(u := v) for v in w]\nt = not (a < b <= c is not d in e)",
    "with open(p) as f, lock:\n    for i, (j, k) in enumerate(z):\n        while True:\n"
    "            break\n        else:\n            continue\n    else:\n        del a[i], b.c",
    "global G\nassert x > 0, 'message'\nx += 1\nx @= m\nf(*a, b, *c, d=1, **e)",
    "d = {**a, 'k': 1, None: 2}\ns = {1, 2}\ne = set()\nt = (1,)\nu = ()\nv = ...\n"
    "l = lambda: 0\nb = b'\\x00\\n'\nc = 1e309\nn = -1j\nstr_ = 'a\\'\"b'",
    "async def f():\n    async with a as b:\n        async for c in d:\n            await e\n"
    "    return [x async for x in y]",
    "match p:\n    case [1, *rest] if rest:\n        pass\n    case {'k': v, **kw}:\n"
    "        pass\n    case C(a, b=c) | None:\n        pass\n    case _:\n        pass",
]


@pytest.mark.parametrize("text", SNIPPETS)
def test_snippets_print_as_before(text):
    tree = gast.parse(text)
    assert unparse(tree) == _reference(tree)
    for node in tree.body:
        assert unparse(node) == _reference(node)


def test_comment_markers_and_arms_left_with_comments_only():
    tree = gast.parse("def f(x):\n    y = x\n    if x:\n        z = 1\n    else:\n"
                      "        z = 2\n    for i in x:\n        w = i\n    return y")
    fn = tree.body[0]
    fn.body.insert(0, _comment("line 2: y = x"))
    branch, loop = fn.body[2], fn.body[3]
    branch.body = [_comment("line 4: z = 1"), _comment("again")]
    branch.orelse = [_comment("line 6: z = 2")]
    loop.body = [_comment("line 8: w = i")]
    only = gast.parse("def g():\n    pass").body[0]
    only.body = [_comment("nothing left")]
    for node in (tree, fn, branch, loop, only):
        text = unparse(node)
        assert text == _reference(node)
    assert "pass" in unparse(only)
    # the tree is not changed by printing it
    assert only.body == [only.body[0]] and len(branch.orelse) == 1


def test_a_shared_subtree_prints_as_before():
    # a sub-expression object held in two places (precedences are looked up by node)
    tree = gast.parse("r = (a + b) * c")
    inner = tree.body[0].value.left
    tree.body[0].value.right = inner
    assert unparse(tree) == _reference(tree)


@pytest.mark.parametrize("folder", ["transforms", "src/adgen"])
def test_adgens_own_modules_print_as_before(folder):
    # the node kinds adgen's own code has (classes, f-strings, annotations, handlers, ...):
    # every module of the folder
    files = sorted((_ROOT / folder).glob("*.py"))
    assert len(files) > 20
    for path in files:
        tree = gast.parse(path.read_text())
        assert unparse(tree) == _reference(tree), path


def test_a_store_object_setattr_made_prints_as_that_call():
    # object.__setattr__(o, "w", v), lowered to o.w = v (getattr_constant), bypasses o's
    # __setattr__ (a frozen dataclass's refuses every store): it is printed as the call
    from adgen.transforms.gast_unparse import _object_setattr_calls
    from adgen.transforms.getattr_constant import OBJECT_SETATTR

    tree = gast.parse("def f(o, v):\n    o.w = v\n    o.x = v")
    setattr(tree.body[0].body[0].targets[0], OBJECT_SETATTR, True)
    want = "def f(o, v):\n    object.__setattr__(o, 'w', v)\n    o.x = v"
    assert unparse(tree) == want
    assert ast.unparse(to_ast(_object_setattr_calls(copy.deepcopy(tree)))) == want
