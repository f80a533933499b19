"""A-normal form: one operation per statement, every intermediate in a fresh ``tN`` name.

Input: a desugared, control-lowered FunctionDef. Output: the same function in which every
assignment has one Name (or one ``name[index]`` / ``name.attr``) target and a right-hand side
that is an *atom* or *one* operation on atoms:

- atom: a Name, a Constant, ``-constant``; in call arguments and indices also a tuple/list of
  atoms and slices of atoms;
- operation: BinOp, UnaryOp, Compare, BoolOp of names (flags), Call (function: a Name or a
  dotted path on a Name, or a method on an atom), Subscript (atom[index]), Attribute
  (atom.attr), List/Tuple/Dict of atoms.

``x op= atom`` (x a name), ``Expr(call)``, ``return atom``, if/for/while/try keep their shape
with atoms in their tests and iterators (a while test may be any expression of names: it is
re-evaluated each iteration and never differentiated).
"""

from __future__ import annotations

from collections.abc import Callable

import gast
from adgen.transforms.desugar import assign, located_at, name
from adgen.transforms.names import Namer
from adgen.transforms.walk import walk

from adgen.rules import methods


def to_anf(fn: gast.FunctionDef, namer: Namer,
           holds_array: Callable[[gast.expr], bool] | None = None) -> gast.FunctionDef:
    """Returns ``fn`` in A-normal form (changed in place).

    ``holds_array``: whether a dotted path on a global (``W.T``, ``m.W``) holds an array (a
    NumPy or scipy.sparse one) as the function compiles. A method of ndarrays called on such
    a path (``W.T.dot(v)``) gets the path as an atom of its own (``t = W.T; t.dot(v)``,
    the same Python), so that the method reads as NumPy's function of its receiver, as
    ``W.dot(v)`` does; any other dotted callee stays whole (``np.linalg.solve``)."""
    local = {a.id for a in fn.args.args} | {
        n.id for n in walk(fn) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
    fn.body = _Anf(namer, local, holds_array).block(fn.body)
    return fn


def is_atom(node: gast.expr) -> bool:
    """True for names and constants (including a negated constant)."""
    if isinstance(node, (gast.Name, gast.Constant)):
        return True
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        return isinstance(node.operand, gast.Constant)
    return False


class _Anf:
    def __init__(self, namer: Namer, local: set[str],
                 holds_array: Callable[[gast.expr], bool] | None) -> None:
        self.namer = namer
        self.local = local  # names bound in the function: x.T.dot is an operation on x
        self.holds_array = holds_array

    def block(self, stmts: list[gast.stmt]) -> list[gast.stmt]:
        out: list[gast.stmt] = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, s: gast.stmt) -> list[gast.stmt]:
        pre: list[gast.stmt] = []
        if isinstance(s, gast.Assign):
            target = s.targets[0]
            if isinstance(target, gast.Name):
                s.value = self.operation(s.value, pre, s)
            else:
                s.value = self.atom(s.value, pre, s)
                if isinstance(target, gast.Subscript):
                    target.value = self.atom(target.value, pre, s)
                    target.slice = self.index(target.slice, pre, s)
                elif isinstance(target, gast.Attribute):
                    target.value = self.atom(target.value, pre, s)
            return pre + [s]
        if isinstance(s, gast.AugAssign):
            s.value = self.atom(s.value, pre, s)
            return pre + [s]
        if isinstance(s, gast.Expr):
            if isinstance(s.value, gast.Call):
                s.value = self.call(s.value, pre, s)
                return pre + [s]
            if isinstance(s.value, gast.Constant):
                return []  # a docstring or a bare constant
            self.atom(s.value, pre, s)
            return pre
        if isinstance(s, gast.Return):
            s.value = self.atom(s.value, pre, s) if s.value is not None else None
            return pre + [s]
        if isinstance(s, gast.If):
            s.test = self.atom(s.test, pre, s)
            s.body = self.block(s.body) or [located_at(gast.Pass(), s)]
            s.orelse = self.block(s.orelse)
            return pre + [s]
        if isinstance(s, gast.For):
            call = s.iter
            call.args = [self.atom(a, pre, s) for a in call.args]
            s.body = self.block(s.body)
            return pre + [s]
        if isinstance(s, gast.While):
            s.body = self.block(s.body)
            return [s]
        if isinstance(s, gast.Try):
            s.body = self.block(s.body)
            for h in s.handlers:
                h.body = self.block(h.body) or [located_at(gast.Pass(), h)]
            s.orelse = self.block(s.orelse)
            return [s]
        return [s]

    def temp(self, value: gast.expr, pre: list[gast.stmt], like: gast.AST) -> gast.Name:
        t = self.namer.fresh("t")
        pre.append(assign(name(t, gast.Store), value, like))
        return located_at(name(t), like)

    def atom(self, node: gast.expr, pre: list[gast.stmt], like: gast.AST) -> gast.expr:
        if is_atom(node):
            return node
        return self.temp(self.operation(node, pre, like), pre, like)

    def arg(self, node: gast.expr, pre: list[gast.stmt], like: gast.AST) -> gast.expr:
        """A call argument: an atom, or a tuple/list literal of atoms."""
        if isinstance(node, (gast.Tuple, gast.List)):
            node.elts = [self.arg(e, pre, like) for e in node.elts]
            return node
        return self.atom(node, pre, like)

    def index(self, node: gast.expr, pre: list[gast.stmt], like: gast.AST) -> gast.expr:
        if isinstance(node, gast.Slice):
            for field in ("lower", "upper", "step"):
                v = getattr(node, field)
                if v is not None:
                    setattr(node, field, self.atom(v, pre, like))
            return node
        if isinstance(node, gast.Tuple):
            node.elts = [self.index(e, pre, like) for e in node.elts]
            return node
        if isinstance(node, gast.List):
            return self.atom(node, pre, like)
        return self.atom(node, pre, like)

    def call(self, node: gast.Call, pre: list[gast.stmt], like: gast.AST) -> gast.Call:
        node.func = self.callee(node.func, pre, like)
        node.args = [self.arg(a, pre, like) for a in node.args]
        for k in node.keywords:
            k.value = self.arg(k.value, pre, like)
        return node

    def callee(self, func: gast.expr, pre: list[gast.stmt], like: gast.AST) -> gast.expr:
        if isinstance(func, gast.Name):
            return func
        if isinstance(func, gast.Attribute):
            if _dotted(func) and (isinstance(func.value, gast.Name) or
                                  _root(func) not in self.local) and \
                    not (isinstance(func.value, gast.Attribute) and
                         func.attr in methods.METHODS and self.holds_array is not None and
                         self.holds_array(func.value)):
                return func  # np.linalg.solve, math.sin, obj.method on a name
            func.value = self.atom(func.value, pre, like)
            return func
        return self.atom(func, pre, like)

    def operation(self, node: gast.expr, pre: list[gast.stmt], like: gast.AST) -> gast.expr:
        if is_atom(node):
            return node
        if isinstance(node, gast.BinOp):
            node.left = self.atom(node.left, pre, like)
            node.right = self.atom(node.right, pre, like)
            return node
        if isinstance(node, gast.UnaryOp):
            node.operand = self.atom(node.operand, pre, like)
            return node
        if isinstance(node, gast.Compare):
            node.left = self.atom(node.left, pre, like)
            node.comparators = [self.atom(c, pre, like) for c in node.comparators]
            return node
        if isinstance(node, gast.BoolOp):
            node.values = [self.atom(v, pre, like) for v in node.values]
            return node
        if isinstance(node, gast.Call):
            return self.call(node, pre, like)
        if isinstance(node, gast.Subscript):
            node.value = self.atom(node.value, pre, like)
            node.slice = self.index(node.slice, pre, like)
            return node
        if isinstance(node, gast.Attribute):
            if _dotted(node) and (isinstance(node.value, gast.Name) or
                                  _root(node) not in self.local):
                return node
            node.value = self.atom(node.value, pre, like)
            return node
        if isinstance(node, (gast.List, gast.Tuple)):
            node.elts = [self.atom(e, pre, like) for e in node.elts]
            return node
        if isinstance(node, gast.Dict):
            node.keys = [None if k is None else self.atom(k, pre, like)  # (None: **d)
                         for k in node.keys]
            node.values = [self.atom(v, pre, like) for v in node.values]
            return node
        if isinstance(node, gast.JoinedStr):
            return node  # an f-string: never differentiated
        if isinstance(node, gast.Set):
            return node  # of constants (validate): never differentiated
        from adgen.errors import UnsupportedError

        raise UnsupportedError(f"the expression {type(node).__name__} is not supported")


def _root(node: gast.expr) -> str:
    while isinstance(node, gast.Attribute):
        node = node.value
    return node.id if isinstance(node, gast.Name) else ""


def _dotted(node: gast.expr) -> bool:
    while isinstance(node, gast.Attribute):
        node = node.value
    return isinstance(node, gast.Name)
