"""AST helpers of the tangent pass (transforms/tangent.py): markers for statements that
replace the primal one, substitution of rule templates and call arguments, constant folding of
a template's arms, and the comment lines over each tangent block.
"""

from __future__ import annotations

import copy
import types
from typing import Any

import gast
from adgen.transforms.analyses.reports import reports
from adgen.transforms.desugar import name

from adgen.rules import registry


def at(new: gast.AST, old: gast.AST) -> gast.AST:
    """``new`` with ``old``'s position on every node that has none (tracebacks and comments
    name the user's line)."""
    for n in gast.walk(new):
        if getattr(n, "lineno", None) is None and hasattr(old, "lineno"):
            n.lineno = old.lineno
            n.col_offset = old.col_offset
            n.end_lineno = getattr(old, "end_lineno", old.lineno)
            n.end_col_offset = getattr(old, "end_col_offset", old.col_offset)
    return new


class Replace(gast.Assign):
    """Marks a statement that replaces the primal one (a callee's jvp computes both)."""


class ReplaceExpr(gast.Expr):
    """As Replace, for a call whose result is discarded."""


def finish(stmts: list[gast.stmt]) -> list[gast.stmt]:
    """Drops the primal statement where a replacement (``Replace``) stands before it."""
    out: list[gast.stmt] = []
    skip = False
    for s in stmts:
        if skip:
            skip = False
            continue
        if isinstance(s, Replace):
            out.append(gast.Assign(targets=s.targets, value=s.value, type_comment=None,
                                   lineno=getattr(s, "lineno", 1),
                                   col_offset=getattr(s, "col_offset", 0)))
            skip = True
            continue
        if isinstance(s, ReplaceExpr):
            out.append(gast.Expr(value=s.value, lineno=getattr(s, "lineno", 1),
                                 col_offset=getattr(s, "col_offset", 0)))
            skip = True
            continue
        for attr in ("body", "orelse", "finalbody"):
            if isinstance(getattr(s, attr, None), list):
                setattr(s, attr, finish(getattr(s, attr)))
        if isinstance(s, gast.Try):
            for h in s.handlers:
                h.body = finish(h.body)
        out.append(s)
    return out


def comment(text: str) -> gast.stmt:
    return gast.Expr(value=gast.Constant(value=f"\x00# {text}", kind=None))


def source_of(node: gast.AST) -> str:
    import ast

    try:
        tree = gast.gast_to_ast(copy.deepcopy(node))
        ast.fix_missing_locations(tree)
        return ast.unparse(tree).splitlines()[0]
    except Exception:  # noqa: BLE001 - only a comment's text
        return type(node).__name__


def opsym(op: gast.operator) -> str:
    return {gast.Pow: "**", gast.Mod: "%", gast.FloorDiv: "//", gast.MatMult: "@",
            gast.BitAnd: "&", gast.BitOr: "|", gast.BitXor: "^", gast.LShift: "<<",
            gast.RShift: ">>"}.get(type(op), "op")


def retarget(t: gast.expr, old: str, new: str) -> gast.expr:
    t = copy.deepcopy(t)
    node = t
    while isinstance(node.value, (gast.Subscript, gast.Attribute)):
        node = node.value
    node.value = name(new)
    return t


def as_node(v: Any) -> Any:
    """A bound argument as an AST node (a Default's value as a constant; varargs a tuple)."""
    if isinstance(v, registry.Default):
        return constant(v.value)
    if isinstance(v, tuple):
        return gast.Tuple(elts=[as_node(x) for x in v], ctx=gast.Load())
    return v


def constant(value: Any) -> gast.expr:
    return gast.parse(repr(value)).body[0].value if not isinstance(value, (int, float, str,
                                                                          bool, type(None))) \
        else gast.Constant(value=value, kind=None)


def sum_of(terms: list[gast.expr]) -> gast.expr:
    out = terms[0]
    for t in terms[1:]:
        out = gast.BinOp(left=out, op=gast.Add(), right=t)
    return out


def substitute_call(node: gast.expr, repl: dict[int, gast.expr]) -> gast.expr:
    """A copy of ``node`` (a call, operator or attribute) with the argument nodes whose id is
    in ``repl`` replaced, and without ``out=``."""

    def sub(x: gast.AST) -> gast.AST:
        return copy.deepcopy(repl[id(x)]) if id(x) in repl else copy.deepcopy(x)

    if isinstance(node, gast.BinOp):
        return gast.BinOp(left=sub(node.left), op=copy.deepcopy(node.op), right=sub(node.right))
    if isinstance(node, gast.UnaryOp):
        return gast.UnaryOp(op=copy.deepcopy(node.op), operand=sub(node.operand))
    if isinstance(node, gast.Attribute):
        return gast.Attribute(value=sub(node.value), attr=node.attr, ctx=gast.Load())
    assert isinstance(node, gast.Call)
    f = node.func
    func = gast.Attribute(value=sub(f.value), attr=f.attr, ctx=gast.Load()) \
        if isinstance(f, gast.Attribute) and id(f.value) in repl else copy.deepcopy(f)
    args = []
    for a in node.args:
        if isinstance(a, (gast.List, gast.Tuple)) and id(a) not in repl and \
                any(id(e) in repl for e in a.elts):
            args.append(type(a)(elts=[sub(e) for e in a.elts], ctx=gast.Load()))
        else:
            args.append(sub(a))
    keywords = [gast.keyword(arg=k.arg, value=sub(k.value)) for k in node.keywords
                if k.arg != "out"]
    return gast.Call(func=func, args=args, keywords=keywords)


class Subst(gast.NodeTransformer):
    def __init__(self, mapping: dict[str, Any]) -> None:
        self.mapping = mapping

    def visit_Name(self, node: gast.Name) -> gast.expr:
        if isinstance(node.ctx, gast.Load) and node.id in self.mapping and \
                self.mapping[node.id] is not None:
            return copy.deepcopy(self.mapping[node.id])
        return node


class Fold(gast.NodeTransformer):
    """Chooses the arm of ``a if c else b`` where ``c`` compares two constants (a rule's
    ``ord is None`` once ``ord`` is bound): the code keeps only what runs. Also folds
    ``2 - 1`` of two numbers and ``a ** 1`` (``x ** 2``'s term ``d * 2 * x ** (2 - 1)``), and
    writes ``d * c * x ** -e`` as ``d * c / x ** e``."""

    def visit_BinOp(self, node: gast.BinOp) -> gast.expr:
        self.generic_visit(node)
        left, right = node.left, node.right

        def number(e: gast.expr) -> bool:
            return isinstance(e, gast.Constant) and type(e.value) in (int, float)

        if number(left) and number(right) and isinstance(node.op, (gast.Add, gast.Sub,
                                                                    gast.Mult)):
            a, b = left.value, right.value
            value = a + b if isinstance(node.op, gast.Add) else \
                a - b if isinstance(node.op, gast.Sub) else a * b
            return gast.Constant(value=value, kind=None)
        if isinstance(node.op, gast.Sub) and number(left) and isinstance(right, gast.Compare) \
                and len(right.ops) == 1 and isinstance(right.ops[0], gast.NotEq) and \
                number(right.left) and right.left.value == left.value and \
                number(right.comparators[0]) and right.comparators[0].value == 0:
            # b - (b != 0) of a number b (the power rule's exponent): b - 1, or 0 for b == 0
            return gast.Constant(value=left.value - (left.value != 0), kind=None)
        if isinstance(node.op, gast.Pow) and number(right) and right.value == 1 and \
                type(right.value) is int:
            return left  # x ** 1 is x (an int exponent: the value and dtype are x's)
        if isinstance(node.op, gast.Mult) and isinstance(right, gast.BinOp) and \
                isinstance(right.op, gast.Pow) and number(right.right) and right.right.value < 0:
            # d * c * x ** -0.5 (x ** 0.5's term) as d * c / x ** 0.5: the same number (to a
            # rounding), and inf with NumPy's warning at x == 0.0 where the tangent d is a
            # NumPy number, where Python's 0.0 ** -0.5 raised ZeroDivisionError
            return gast.BinOp(left=left, op=gast.Div(), right=gast.BinOp(
                left=right.left, op=gast.Pow(),
                right=gast.Constant(value=-right.right.value, kind=None)))
        return node

    def visit_IfExp(self, node: gast.IfExp) -> gast.expr:
        self.generic_visit(node)
        t = node.test
        if isinstance(t, gast.Compare) and len(t.ops) == 1 and \
                _literal(t.left) is not _NOT_LITERAL and \
                _literal(t.comparators[0]) is not _NOT_LITERAL:
            # (a negative number too: norm(A, -2) left "-2 is None", Python's SyntaxWarning
            # '"is" with a literal' when the generated code was compiled)
            a, b = _literal(t.left), _literal(t.comparators[0])
            op = type(t.ops[0])
            if op in (gast.Is, gast.IsNot, gast.Eq, gast.NotEq):
                same = a is b if op in (gast.Is, gast.IsNot) else a == b
                taken = same if op in (gast.Is, gast.Eq) else not same
                return node.body if taken else node.orelse
        return node


_NOT_LITERAL = object()


def _literal(e: gast.expr) -> Any:
    """The value of a constant written in the code, a signed number included (``-2``);
    ``_NOT_LITERAL`` for anything else."""
    if isinstance(e, gast.Constant):
        return e.value
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)) and \
            isinstance(e.operand, gast.Constant) and type(e.operand.value) in (int, float):
        return -e.operand.value if isinstance(e.op, gast.USub) else e.operand.value
    return _NOT_LITERAL


def is_user_function(obj: Any) -> bool:
    """A plain Python function that is not NumPy's own (adgen compiles its jvp)."""
    if registry.is_reference_impl(obj) and isinstance(obj, types.FunctionType):
        return True  # (a reference's class, registry.defreference_class: built as a class)
    return isinstance(obj, types.FunctionType) and not reports(obj) and \
        not str(getattr(obj, "__module__", "") or "").startswith(("numpy", "adgen."))
