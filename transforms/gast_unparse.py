"""``unparse``: the source text of a gast tree, printed without converting it to ``ast`` first.

``ast.unparse(to_ast(node))`` made a second tree of the generated code only to print it (a
twentieth of a cold build of pb-adi: 3,012 nodes made and dropped per build, Update 19 of
docs/performance.md). The standard library's printer reads its nodes by class name and by
field, and gast's nodes have the class names and fields of ``ast``'s, except where gast
differs: a function's parameters and an ``except ... as`` name are ``Name`` nodes (``ast``:
``arg`` and a string). ``GastUnparser`` is that printer, with the few methods that test a
node's class (``isinstance(..., ast.If)``: an ``elif`` chain; a subscript's tuple; a
docstring; an int before ``.attr``) taking gast's classes too, and every node kind it has not
been checked on (parameters, handlers, f-strings, annotated assignments, class definitions,
``match``) converted by ``to_ast`` and printed as before. The text is the one
``ast.unparse(to_ast(node))`` gives, character for character (tests/transforms/test_gast_unparse.py
compares both on the generated code of tests/e2e's programs).

Without ``ast._Unparser`` (the standard library's printer class; Python 3.9 to 3.13 have it),
``unparse`` is ``ast.unparse(to_ast(node))``.
"""

from __future__ import annotations

import ast
from typing import Any

import gast
from adgen.transforms.gast_ast import to_ast
from adgen.transforms.getattr_constant import OBJECT_SETATTR

__all__ = ["unparse"]

# node kinds whose printing reads no class and no field that gast's node lacks: printed as
# they are; any other kind is converted to ``ast`` (with what it holds) and printed so
_DIRECT = frozenset((
    "Module", "FunctionDef", "Expr", "Assign", "AugAssign", "Return", "Pass", "Break",
    "Continue", "Delete", "Assert", "Global", "Nonlocal", "Raise", "Try", "If", "For",
    "While", "With", "withitem", "Name", "Constant", "List", "Tuple", "Set", "Dict",
    "ListComp", "GeneratorExp", "SetComp", "DictComp", "comprehension", "IfExp", "UnaryOp",
    "BinOp", "Compare", "BoolOp", "Attribute", "Call", "keyword", "Subscript", "Starred",
    "Slice", "Lambda", "NamedExpr", "Yield",
))
_IF = (gast.If, ast.If)
_TUPLE = (gast.Tuple, ast.Tuple)
_CONSTANT = (gast.Constant, ast.Constant)
_EXPR = (gast.Expr, ast.Expr)
_DOCUMENTED = (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef, gast.Module,
               ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)
_PASS = ast.Pass()


def _is_comment(node: Any) -> bool:
    """A comment marker of the reverse pass (an expression statement of a string)."""
    return isinstance(node, _EXPR) and isinstance(node.value, _CONSTANT) and \
        isinstance(node.value.value, str) and node.value.value.startswith("\x00#")


def _object_setattr_calls(node: Any) -> Any:
    """``node`` with each store ``object.__setattr__`` made (getattr_constant.OBJECT_SETATTR)
    written as that call again, which bypasses the class's ``__setattr__`` (in place)."""
    for parent in gast.walk(node):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(parent, field, None)
            if not isinstance(block, list):
                continue
            for i, s in enumerate(block):
                if isinstance(s, gast.Assign) and len(s.targets) == 1 and \
                        getattr(s.targets[0], OBJECT_SETATTR, False) is True:
                    t = s.targets[0]
                    func = gast.Attribute(value=gast.Name("object", gast.Load(), None, None),
                                          attr="__setattr__", ctx=gast.Load())
                    block[i] = gast.copy_location(gast.Expr(value=gast.Call(
                        func=func, args=[t.value, gast.Constant(t.attr, None), s.value],
                        keywords=[])), s)
    return node


_Base: Any = getattr(ast, "_Unparser", None)

if _Base is not None:
    class GastUnparser(_Base):
        """``ast``'s printer, reading gast's nodes (see the module's docstring)."""

        def traverse(self, node: Any) -> None:
            if isinstance(node, list):
                if node and all(_is_comment(n) for n in node):
                    # an arm whose statements a later pass dropped keeps its comment: the
                    # text needs a statement under it (an IndentationError otherwise)
                    node = [*node, _PASS]
                for item in node:
                    self.traverse(item)
            else:
                visit = _VISITS.get(type(node))
                if visit is None:
                    visit = _VISITS[type(node)] = _visit_of(type(node))
                visit(self, node)

        def _converted(self, node: Any) -> None:
            """A node kind not printed directly: as ``ast``, with the precedence its parent
            gave it."""
            made = to_ast(node)
            if node in self._precedences:
                self._precedences[made] = self._precedences[node]
            self.traverse(made)

        def _write_docstring_and_traverse_body(self, node: Any) -> None:
            body = node.body
            if body and all(_is_comment(n) for n in body):
                body = [*body, _PASS]
            if (docstring := self._docstring(body, node)) is not None:
                self._write_docstring(docstring)
                body = body[1:]
            for item in body:
                self.traverse(item)

        def _docstring(self, body: list[Any], node: Any) -> Any:
            if not isinstance(node, _DOCUMENTED) or not body or \
                    not isinstance(body[0], _EXPR):
                return None
            value = body[0].value
            if isinstance(value, _CONSTANT) and isinstance(value.value, str):
                return value
            return None

        def get_raw_docstring(self, node: Any) -> Any:
            return self._docstring(node.body, node) if hasattr(node, "body") else None

        def get_type_comment(self, node: Any) -> str | None:
            comment = self._type_ignores.get(getattr(node, "lineno", None)) or \
                getattr(node, "type_comment", None)
            return f" # type: {comment}" if comment is not None else None

        def visit_If(self, node: Any) -> None:
            self.fill("if ")
            self.traverse(node.test)
            with self.block():
                self.traverse(node.body)
            # nested ifs as elifs
            while node.orelse and len(node.orelse) == 1 and isinstance(node.orelse[0], _IF):
                node = node.orelse[0]
                self.fill("elif ")
                self.traverse(node.test)
                with self.block():
                    self.traverse(node.body)
            if node.orelse:
                self.fill("else")
                with self.block():
                    self.traverse(node.orelse)

        def visit_Assign(self, node: Any) -> None:
            target = node.targets[0]
            if len(node.targets) == 1 and getattr(target, OBJECT_SETATTR, False) is True:
                # object.__setattr__(o, "name", v) lowered to o.name = v (getattr_constant):
                # printed as the call, which bypasses the class's __setattr__ (a frozen
                # dataclass's refuses every store)
                self.fill("object.__setattr__(")
                self.traverse(target.value)
                self.write(f", {target.attr!r}, ")
                self.traverse(node.value)
                self.write(")")
                return
            super().visit_Assign(node)

        def visit_Attribute(self, node: Any) -> None:
            self.set_precedence(ast._Precedence.ATOM, node.value)
            self.traverse(node.value)
            # 3 .__abs__(): an int literal needs a space before the dot
            if isinstance(node.value, _CONSTANT) and isinstance(node.value.value, int):
                self.write(" ")
            self.write(".")
            self.write(node.attr)

        def visit_Subscript(self, node: Any) -> None:
            self.set_precedence(ast._Precedence.ATOM, node.value)
            self.traverse(node.value)
            with self.delimit("[", "]"):
                if isinstance(node.slice, _TUPLE) and node.slice.elts:
                    self.items_view(self.traverse, node.slice.elts)
                else:
                    self.traverse(node.slice)

    # node class -> the method printing it (ast.NodeVisitor.visit's lookup, once a class)
    _VISITS: dict[type, Any] = {}

    def _visit_of(cls: type) -> Any:
        if getattr(gast, cls.__name__, None) is cls and cls.__name__ not in _DIRECT:
            return GastUnparser._converted
        return getattr(GastUnparser, "visit_" + cls.__name__, GastUnparser.generic_visit)

    def unparse(node: gast.AST) -> str:
        """The text ``ast.unparse(to_ast(node))`` gives, the pass-padding of comment-only
        arms included."""
        return GastUnparser().visit(node)
else:  # pragma: no cover - a Python without ast._Unparser
    def unparse(node: gast.AST) -> str:
        """``ast.unparse(to_ast(node))``, a ``pass`` under each comment-only arm."""
        from adgen.transforms.walk import clone

        tree = to_ast(_object_setattr_calls(clone(node)))
        todo = [tree]
        while todo:
            node = todo.pop()
            if isinstance(node, ast.stmt) and getattr(node, "lineno", None) is None:
                node.lineno = 1
            for field in ("body", "orelse", "finalbody", "handlers"):
                block = getattr(node, field, None)
                if isinstance(block, list):
                    if block and all(_is_comment(b) for b in block):
                        block.append(ast.Pass(lineno=1))
                    todo.extend(b for b in block if isinstance(b, ast.AST))
        return ast.unparse(tree)
