"""Operators on objects of the user's classes: ``p + q`` as the call of the class's method.

The compiler reads ``a + b``, ``-a``, ``a[i]`` and ``abs(a)`` as arithmetic and indexing on
numbers, arrays, lists and tuples. When ``a`` is an object of a class of the user's that
defines the operator (``Vec.__add__``, ``Vec.__getitem__``), Python runs that method, and the
rules of NumPy arithmetic gave its operands a zero gradient or crashed in the pullback
(``Vec(v) + Vec(w)`` had the gradient 0). Where the code shows that an operand may be such
an object, the operator is written as the call of the method, which adgen differentiates like
any method of the user's:

    p + q        ->  type(p).__add__(p, q)
    -p           ->  type(p).__neg__(p)
    p[1:]        ->  type(p).__getitem__(p, slice(1, None, None))
    2.0 * p      ->  type(p).__rmul__(p, 2.0)

The names the code shows to hold such an object (of a class that defines one of the
operators as a plain function, not a NumPy or builtin class):

- certain: a local bound once, to ``Cls(...)`` or with the class as its annotation
  (``pos: Vec = p.pos``); the first parameter of a method of the class (``self``); a
  parameter annotated with the class (``def loss(p: Vec)``);
- possible: a name bound (in a loop, more than once) to ``Cls(...)`` or to an operator's
  result where an operand may be one; the result of a rewritten operator (``(p + q) * 2``:
  ``Vec.__add__`` may return a ``Vec``, or an array); a parameter with no annotation that
  the function reads as an object (``p.norm2()``, ``(p * 2.0 + v).norm2()``), of one of the
  classes the function sees.

A certain operand is rewritten as above. A possible one is chosen as the code runs, with the
value computed once, by whether its class defines the method as a Python function (a test
that needs no class by name, so a class defined after the function was compiled is seen):

    (p + q) * 2  ->  type(t).__mul__(t, 2)
                     if type(getattr(type(t := type(p).__add__(p, q)), '__mul__', None)
                             ).__name__ == 'function'
                     else t * 2

``type(x)`` is looked up as the code runs, so a subclass's own method is the one called, as
Python does; a right operand of a subclass that redefines the reflected method
(``Vec(a) + Sub(b)``: ``Sub.__radd__``) calls that one first, as Python does, when both
classes are known. A left operand of unknown class (a parameter) with a right operand of such
a class: the left's method if it is an object of the class, the reflected method of the right
operand if the left is a Python number (``s * p``), the operator as written otherwise.

``p += q`` on such a name is ``p = type(p).__iadd__(p, q)`` where the class defines
``__iadd__`` (Python rebinds ``p`` to what it returns), else ``p = p + q`` as above.

``g[i] = v`` on such a name is ``type(g).__setitem__(g, i, v)`` where the class defines
``__setitem__``; on a name bound once to ``Grid(n)``, ``Grid.__setitem__(g, i, v)``, a call by
the class's name that adgen follows where the method writes an array of its object.

Not rewritten: ``self.pos += v`` (an attribute), an item store into an object reached
through an attribute or an item (``self.grid[i] = v``, ``grids[0][i] = v``), operands
in a comprehension's or lambda's body that need the value held in a name (a ``:=`` would bind
it in the function), and a parameter with no annotation that the function reads only
through operators (``def f(p, v): return (p * v)[0]``: nothing shows it is an object). There
the pullback meets the object's adjoint where an array's was expected, and
``adjoints.ObjectAdjoint`` refuses it at the line.

Input: the parsed function, before ``lift_lambdas`` and ``validate``. Output: the same tree
with those operators written as calls; nothing changes in a function where no name may hold
such an object.
"""

from __future__ import annotations

import copy
from typing import Any

import gast
import numpy as np
from adgen.transforms.operator_classes import (
    BINARY,
    UNARY,
    classes_seen,
    method_owner,
    user_class,
    user_method,
)
from adgen.transforms.walk import walk

__all__ = ["call_operator_methods"]

# a list's, dict's or tuple's attributes (xs.append): not evidence of an object of a class
_CONTAINER_ATTRIBUTES = frozenset(dir(list)) | frozenset(dir(dict)) | frozenset(dir(tuple))
# the builtins the rewritten code calls (a function that binds one of them is left alone)
_BUILTINS = {"type": type, "isinstance": isinstance, "slice": slice, "int": int,
             "float": float, "abs": abs, "getattr": getattr}


class _Held:
    """What the code shows a value to be: an object of one of ``classes`` (each with the
    expression that names it where the code runs); ``certain`` when it cannot be anything
    else."""

    def __init__(self, classes: list[tuple[type, gast.expr]], certain: bool) -> None:
        self.classes = classes
        self.certain = certain
        # bound once, to ``Cls(...)`` (its class is Cls itself, not a subclass)
        self.built = False

    def defining(self, name: str) -> list[tuple[type, gast.expr]]:
        return [(c, e) for c, e in self.classes if user_method(c, name) is not None]


def call_operator_methods(parsed: Any) -> None:
    """Writes the operators on objects of the user's classes as their methods' calls."""
    from adgen.transforms.front import resolve  # front runs this pass

    tree = parsed.tree
    # the classes the function can name (its globals and closure, and the globals of modules
    # of the user's it imports: vecs.Vec), and its own class: most functions see none
    seen = classes_seen(parsed.namespace)
    params = tree.args.args
    owner = method_owner(parsed.fn, parsed.namespace) if params else None
    if not seen and not user_class(owner):
        return
    if any(parsed.namespace.get(n, b) is not b for n, b in _BUILTINS.items()) or \
            any(isinstance(n, gast.Name) and n.id in _BUILTINS and
                isinstance(n.ctx, (gast.Store, gast.Param)) for n in walk(tree)):
        return  # the rewrite's builtins would not be the builtins there
    names = {c.__name__ for c, _ in seen} | {getattr(e, 'id', getattr(e, 'attr', '')) for _, e in seen}
    if owner is not None:
        names.add(owner.__name__)

    def made(func: gast.expr) -> Any:
        """The class of the user's ``func(...)`` makes an object of, or None."""
        last = func.id if isinstance(func, gast.Name) else getattr(func, "attr", None)
        if last not in names:
            return None
        cls = resolve(parsed, func)
        return cls if user_class(cls) else None

    stores: dict[str, int] = {}
    built: list[tuple[str, gast.expr, Any]] = []  # (name, value, its class)
    assigned: list[tuple[str, gast.expr]] = []
    annotated: list[tuple[str, gast.expr, Any]] = []  # (name, annotation, its class)
    inline = False
    for node in walk(tree):
        if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Del)):
            stores[node.id] = stores.get(node.id, 0) + 1
        if isinstance(node, (gast.BinOp, gast.UnaryOp, gast.Subscript, gast.Call)) and \
                not inline and not isinstance(getattr(node, "func", None), gast.Attribute):
            # Vec(v) + w: an object made where it is used
            operands = [getattr(node, f, None) for f in ("left", "right", "operand", "value")]
            if isinstance(node, gast.Call):  # abs(Vec(v))
                operands = node.args if isinstance(node.func, gast.Name) and \
                    node.func.id == "abs" else []
            inline = any(isinstance(o, gast.Call) and made(o.func) is not None
                         for o in operands)
        if isinstance(node, gast.AnnAssign) and isinstance(node.target, gast.Name) and \
                node.value is not None and isinstance(node.annotation, (gast.Name,
                                                                        gast.Attribute)):
            cls = resolve(parsed, node.annotation)  # pos: Vec = p.pos
            if user_class(cls):
                annotated.append((node.target.id, node.annotation, cls))
        if isinstance(node, gast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], gast.Name):
            assigned.append((node.targets[0].id, node.value))
            if isinstance(node.value, gast.Call):
                cls = made(node.value.func)
                if cls is not None:
                    built.append((node.targets[0].id, node.value.func, cls))
    held: dict[str, _Held] = {}
    for name, func, cls in built:
        entry = held.setdefault(name, _Held([], stores.get(name) == 1))
        entry.classes.append((cls, func))
        entry.certain = entry.certain and len(entry.classes) == 1
        entry.built = entry.certain
    if user_class(owner) and not stores.get(params[0].id):
        first = params[0].id
        held[first] = _Held([(owner, _call("type", _name(first, tree), at=tree))], True)
    for name, ann, cls in annotated:  # pos: Vec = p.pos, a name bound once
        if name not in held:
            held[name] = _Held([(cls, ann)], stores.get(name) == 1)
    for p in params:  # def loss(p: Vec, x): an annotation that names a class
        ann = getattr(p, "annotation", None)
        cls = resolve(parsed, ann) if isinstance(ann, (gast.Name, gast.Attribute)) else None
        if user_class(cls) and not stores.get(p.id) and p.id not in held:
            held[p.id] = _Held([(cls, ann)], True)
    # a parameter of unknown class (def loss(p, x)) that the function shows to be an object:
    # one of the user's classes the function sees, chosen as the code runs
    unknown = {p.id for p in params if p.id not in held and not stores.get(p.id) and
               getattr(p, "annotation", None) is None}
    for name in _read_as_objects(tree, unknown, assigned) if seen else ():
        held[name] = _Held(list(seen), False)
    if not held and not inline:
        return
    # names bound to an operator's result where an operand may be such an object
    changed = True
    while changed:
        changed = False
        for name, value in assigned:
            found = _operand_classes(value, held)
            if found and name not in held:
                held[name] = _Held(list(found), False)
                changed = True
    _Rewriter(held, _fresh_names(tree, parsed), made).visit(tree)


def _read_as_objects(tree: gast.AST, params: set[str],
                     assigned: list[tuple[str, gast.expr]]) -> set[str]:
    """The parameters in ``params`` the function reads as objects: by an attribute no
    ndarray, list, dict or tuple has (``p.norm2()``), or as an operand of an operator whose
    result is read so (``(p * 2.0 + v).norm2()``, ``r = p + q; r.w``)."""
    if not params:
        return set()
    bound = dict(assigned)
    found: set[str] = set()
    for node in walk(tree):
        if isinstance(node, gast.Attribute) and not hasattr(np.ndarray, node.attr) and \
                node.attr not in _CONTAINER_ATTRIBUTES:
            value = node.value
            if isinstance(value, gast.Name) and value.id not in params:
                value = bound.get(value.id, value)
            found |= _operand_names(value) & params
    return found


def _operand_names(node: gast.expr) -> set[str]:
    """The names an operator expression's operands are (``p`` and ``v`` of ``p * 2 + v``)."""
    if isinstance(node, gast.Name):
        return {node.id}
    if isinstance(node, gast.BinOp):
        return _operand_names(node.left) | _operand_names(node.right)
    if isinstance(node, gast.UnaryOp):
        return _operand_names(node.operand)
    return set()


def _load(name: str) -> gast.Name:
    return gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None)


def _operand_classes(node: gast.expr, held: dict[str, _Held]) -> list:
    """The classes an operator expression's operands may be objects of ([]: none)."""
    if isinstance(node, gast.Name) and node.id in held:
        return held[node.id].classes
    if isinstance(node, gast.BinOp) and type(node.op) in BINARY:
        return _operand_classes(node.left, held) + _operand_classes(node.right, held)
    if isinstance(node, gast.UnaryOp) and type(node.op) in UNARY:
        return _operand_classes(node.operand, held)
    return []


def _fresh_names(tree: gast.AST, parsed: Any) -> Any:
    """A generator of names the function does not use, for the values held while chosen."""
    used = {n.id for n in walk(tree) if isinstance(n, gast.Name)} | set(parsed.namespace)
    count = 0
    while True:
        count += 1
        if f"operand{count}" not in used:
            yield f"operand{count}"


def _name(n: str, at: Any, ctx: Any = None) -> gast.Name:
    return gast.Name(id=n, ctx=ctx or gast.Load(), annotation=None, type_comment=None,
                     **_place(at))


def _place(node: Any) -> dict[str, int]:
    line = getattr(node, "lineno", 1)
    col = getattr(node, "col_offset", 0)
    return dict(lineno=line, col_offset=col, end_lineno=getattr(node, "end_lineno", line),
                end_col_offset=getattr(node, "end_col_offset", col))


def _call(fn: str | gast.expr, *args: gast.expr, at: Any) -> gast.Call:
    func = _name(fn, at) if isinstance(fn, str) else fn
    return gast.Call(func=func, args=list(args), keywords=[], **_place(at))


def _method_call(obj: gast.expr, method: str, args: list[gast.expr], at: Any,
                 then: gast.expr | None = None) -> gast.Call:
    """``type(obj).method(obj, *args)``: ``obj`` a name, read twice, or ``(t := value)``,
    computed once in ``type(...)`` and read as ``then`` (its name) after."""
    kind = _call("type", obj if then is not None else copy.deepcopy(obj), at=at)
    func = gast.Attribute(value=kind, attr=method, ctx=gast.Load(), **_place(at))
    return _call(func, then if then is not None else obj, *args, at=at)


def _defines(value: gast.expr, method: str, at: Any) -> gast.Compare:
    """``type(getattr(type(value), method, None)).__name__ == "function"``: whether the
    value's class defines ``method`` as a Python function, as the code runs (a class
    defined after the function was compiled too; NumPy's and the builtins' are not)."""
    found = _call("getattr", _call("type", value, at=at), gast.Constant(method, None,
                                                                         **_place(at)),
                  gast.Constant(None, None, **_place(at)), at=at)
    kind = gast.Attribute(value=_call("type", found, at=at), attr="__name__",
                          ctx=gast.Load(), **_place(at))
    return gast.Compare(left=kind, ops=[gast.Eq()],
                        comparators=[gast.Constant("function", None, **_place(at))],
                        **_place(at))


def _numbers(at: Any) -> gast.Tuple:
    """``(int, float)``: the numbers whose operator gives way to an object's reflected one."""
    return gast.Tuple(elts=[_name("int", at), _name("float", at)], ctx=gast.Load(),
                      **_place(at))


def _index(node: gast.expr) -> gast.expr:
    """A subscript's index as a value: ``1:n`` as ``slice(1, n, None)``."""
    if isinstance(node, gast.Slice):
        parts = [p if p is not None else gast.Constant(None, None, **_place(node))
                 for p in (node.lower, node.upper, node.step)]
        return _call("slice", *parts, at=node)
    if isinstance(node, gast.Tuple):
        return gast.Tuple(elts=[_index(e) for e in node.elts], ctx=gast.Load(),
                          **_place(node))
    return node


class _Rewriter(gast.NodeTransformer):
    """Rewrites the operators, innermost first; ``results`` holds the classes a rewritten
    call's result may be an object of."""

    def __init__(self, held: dict[str, _Held], fresh: Any, resolve: Any) -> None:
        self.held = held
        self.resolve = resolve
        self.fresh = fresh
        self.results: dict[int, _Held] = {}
        self.nested = 0  # inside a lambda or a comprehension: no := there

    def _visit_scope(self, node: gast.AST) -> gast.AST:
        # the names a lambda or comprehension binds are its own (lambda p: p + 1)
        bound = {n.id for n in walk(node) if isinstance(n, gast.Name) and
                 isinstance(n.ctx, (gast.Store, gast.Param))}
        hidden = {n: self.held.pop(n) for n in bound if n in self.held}
        self.nested += 1
        self.generic_visit(node)
        self.nested -= 1
        self.held.update(hidden)
        return node

    visit_Lambda = visit_ListComp = visit_SetComp = visit_DictComp = _visit_scope
    visit_GeneratorExp = _visit_scope

    def visit_FunctionDef(self, node: gast.FunctionDef) -> gast.AST:
        if self.nested or node is not getattr(self, "top", node):
            return node  # a nested def: its names are its own
        self.top = node
        self.generic_visit(node)
        return node

    def _of(self, node: gast.expr) -> _Held | None:
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load):
            return self.held.get(node.id)
        if isinstance(node, gast.Call) and id(node) not in self.results:
            cls = self.resolve(node.func)
            if user_class(cls):  # Vec(v) + w: an object of the class, for certain
                return _Held([(cls, node.func)], True)
        return self.results.get(id(node))

    def _hold(self, node: gast.expr) -> tuple[gast.expr, gast.expr] | None:
        """(the expression that computes ``node`` once, the name that reads it after), or
        None where no name can hold it (in a lambda or comprehension)."""
        if isinstance(node, (gast.Name, gast.Constant)):
            return node, copy.deepcopy(node)
        if self.nested:
            return None
        name = next(self.fresh)
        return (gast.NamedExpr(target=_name(name, node, gast.Store()), value=node,
                               **_place(node)), _name(name, node))

    def _chosen(self, held: _Held, method: str, operand: gast.expr,
                call: Any, plain: Any, at: Any) -> gast.expr | None:
        """``call(t)`` for an object of ``held``'s classes that defines ``method``,
        ``plain(t)`` otherwise, with ``t`` the operand computed once."""
        classes = held.defining(method)
        if not classes:
            return None
        pair = self._hold(operand)
        if pair is None:
            return None
        first, then = pair
        if held.certain:
            return call(first, then) if first is not operand or not isinstance(
                operand, gast.Name) else call(operand, None)
        return gast.IfExp(test=_defines(first, method, at), body=call(then),
                          orelse=plain(copy.deepcopy(then)), **_place(at))

    def _result(self, new: gast.expr | None, node: gast.expr, *held: _Held | None
                ) -> gast.expr:
        if new is None:
            return node
        classes = [c for h in held if h is not None for c in h.classes]
        self.results[id(new)] = _Held(classes, False)
        return new

    def visit_BinOp(self, node: gast.BinOp) -> gast.expr:
        self.generic_visit(node)
        if type(node.op) not in BINARY:
            return node
        forward, reflected = BINARY[type(node.op)]
        left, right = self._of(node.left), self._of(node.right)
        op = node.op

        def plain(a: gast.expr, b: gast.expr) -> gast.BinOp:
            return gast.BinOp(left=a, op=copy.deepcopy(op), right=b, **_place(node))

        if left is not None:
            if right is not None and right.certain and left.certain and \
                    isinstance(node.left, (gast.Name, gast.Call)) and \
                    isinstance(node.right, (gast.Name, gast.Call)):
                # Vec(a) + Sub(b) with Sub redefining __radd__: Python calls that first (the
                # right operand is computed first here: a name, or an object made)
                (lc, _), (rc, _) = left.classes[0], right.classes[0]
                pair = self._hold(node.right) if rc is not lc and issubclass(rc, lc) and \
                    user_method(rc, reflected) is not None and \
                    user_method(rc, reflected) is not user_method(lc, reflected) else None
                if pair is not None:
                    first, then = pair
                    call = _method_call(first, reflected, [node.left], node,
                                        then if first is not node.right or
                                        not isinstance(first, gast.Name) else None)
                    return self._result(call, node, right)
            def otherwise(a: gast.expr) -> gast.expr:
                # not an object of the class (s - p with s a number): p's reflected method
                classes = right.defining(reflected) if right is not None and \
                    isinstance(node.right, gast.Name) else []
                if not classes:
                    return plain(a, copy.deepcopy(node.right))
                number = _call("isinstance", copy.deepcopy(a), _numbers(node), at=node)
                test = number if right.certain else gast.BoolOp(
                    op=gast.And(), values=[_defines(copy.deepcopy(node.right), reflected, node),
                                           number], **_place(node))
                return gast.IfExp(test=test, body=_method_call(
                    copy.deepcopy(node.right), reflected, [copy.deepcopy(a)], node),
                    orelse=plain(a, copy.deepcopy(node.right)), **_place(node))

            new = self._chosen(left, forward, node.left,
                               lambda a, t=None: _method_call(a, forward, [node.right], node, t),
                               otherwise, node)
            return self._result(new, node, left, right)
        if right is None or not isinstance(node.left, (gast.Name, gast.Constant)):
            return node
        return self._result(self._reflected(node, right, forward, reflected), node, right)

    def _reflected(self, node: gast.BinOp, right: _Held, forward: str, reflected: str
                   ) -> gast.expr | None:
        """``x * p`` with ``x`` a number or a name of unknown class, ``p`` an object: Python
        asks ``x`` first (``p``'s class's own method if ``x`` is one of its objects), then
        ``p``'s reflected method."""
        classes = right.defining(reflected)
        if not classes:
            return None
        pair = self._hold(node.right)
        if pair is None:
            return None
        first, then = pair
        # the operand is tested (and computed once, where it is not a name) unless certain
        certain = right.certain and isinstance(node.right, gast.Name)
        left = node.left
        op = node.op

        def plain() -> gast.BinOp:
            return gast.BinOp(left=copy.deepcopy(left), op=copy.deepcopy(op),
                              right=copy.deepcopy(then), **_place(node))

        reflected_call = _method_call(copy.deepcopy(then), reflected, [copy.deepcopy(left)],
                                      node)
        held = _defines(first, reflected, node)  # (computes a possible operand, once)
        if isinstance(left, gast.Constant):
            if not isinstance(left.value, (int, float)) or isinstance(left.value, bool):
                return None
            if certain:
                return reflected_call
            return gast.IfExp(test=held, body=reflected_call, orelse=plain(), **_place(node))
        number = _call("isinstance", copy.deepcopy(left), _numbers(node), at=node)
        test = number if certain else gast.BoolOp(op=gast.And(), values=[held, number],
                                                         **_place(node))
        otherwise: gast.expr = plain()
        own = right.defining(forward)
        if own:  # an object of the class on the left too: its own method
            otherwise = gast.IfExp(
                test=_defines(copy.deepcopy(left), forward, node),
                body=_method_call(copy.deepcopy(left), forward, [copy.deepcopy(then)], node),
                orelse=otherwise, **_place(node))
        return gast.IfExp(test=test, body=reflected_call, orelse=otherwise, **_place(node))

    def visit_AugAssign(self, node: gast.AugAssign) -> gast.stmt:
        """``p += q`` as Python runs it on an object: ``p = type(p).__iadd__(p, q)`` where
        the class defines ``__iadd__``, else ``p = p + q`` (its ``__add__``, or ``q``'s
        ``__radd__``)."""
        self.generic_visit(node)
        if not (isinstance(node.target, gast.Name) and type(node.op) in BINARY):
            return node
        held = self.held.get(node.target.id)
        if held is None:
            return node
        forward = BINARY[type(node.op)][0]
        inplace = "__i" + forward[2:]
        name = node.target.id
        binary = self.visit_BinOp(gast.BinOp(left=_name(name, node), op=copy.deepcopy(node.op),
                                             right=copy.deepcopy(node.value),
                                             **_place(node)))
        value: gast.expr | None = None
        if held.defining(inplace):
            call = _method_call(_name(name, node), inplace, [node.value], node)
            # (where no class defines the operator itself, p + q would fail in Python: the
            # in-place method is the one that runs)
            value = call if held.certain or isinstance(binary, gast.BinOp) else gast.IfExp(
                test=_defines(_name(name, node), inplace, node), body=call, orelse=binary,
                **_place(node))
            named = held.classes[0][1]
            if len(held.classes) == 1 and isinstance(named, (gast.Name, gast.Attribute)):
                # v = Vec(x); v += w: Vec.__iadd__ by the class's name where v is a Vec (a
                # call adgen follows into, to second order too: through type(v).__iadd__,
                # a call found when it runs, hessian refused a method setting self.a)
                by_name = _call(gast.Attribute(value=copy.deepcopy(named), attr=inplace,
                                               ctx=gast.Load(), **_place(node)),
                                _name(name, node), copy.deepcopy(node.value), at=node)
                test = gast.Compare(left=_call("type", _name(name, node), at=node),
                                    ops=[gast.Is()], comparators=[copy.deepcopy(named)],
                                    **_place(node))
                value = gast.IfExp(test=test, body=by_name, orelse=value, **_place(node))
        elif not isinstance(binary, gast.BinOp):
            value = binary  # rewritten: the class's __add__ (or the right one's __radd__)
        if value is None:
            return node
        return gast.Assign(targets=[_name(name, node, gast.Store())], value=value,
                           type_comment=None, **_place(node))

    def visit_UnaryOp(self, node: gast.UnaryOp) -> gast.expr:
        self.generic_visit(node)
        if type(node.op) not in UNARY:
            return node
        held = self._of(node.operand)
        if held is None:
            return node
        method = UNARY[type(node.op)]
        op = node.op
        new = self._chosen(held, method, node.operand,
                           lambda a, t=None: _method_call(a, method, [], node, t),
                           lambda a: gast.UnaryOp(op=copy.deepcopy(op), operand=a,
                                                  **_place(node)), node)
        return self._result(new, node, held)

    def visit_Subscript(self, node: gast.Subscript) -> gast.expr:
        self.generic_visit(node)
        held = self._of(node.value)
        if held is None or not isinstance(node.ctx, gast.Load):
            return node
        index = node.slice
        new = self._chosen(held, "__getitem__", node.value,
                           lambda a, t=None: _method_call(
                               a, "__getitem__", [_index(copy.deepcopy(index))], node, t),
                           lambda a: gast.Subscript(value=a, slice=copy.deepcopy(index),
                                                    ctx=gast.Load(), **_place(node)), node)
        # an item of an object is not known to be one of its class
        return node if new is None else new

    def visit_Assign(self, node: gast.Assign) -> gast.stmt:
        """``g[i] = v`` on an object whose class defines ``__setitem__``:
        ``type(g).__setitem__(g, i, v)`` (chosen as the code runs where ``g`` only may be
        such an object)."""
        self.generic_visit(node)
        target = node.targets[0]
        if len(node.targets) != 1 or not isinstance(target, gast.Subscript) or \
                not isinstance(target.value, gast.Name):
            return node
        held = self.held.get(target.value.id)
        if held is None or not held.defining("__setitem__"):
            return node
        g = target.value.id
        args = [_index(copy.deepcopy(target.slice)), node.value]
        if held.built:
            # sim = Grid(n): Grid.__setitem__ by the class's name, a call adgen follows into
            # (type(g).__setitem__ would be a call through a variable, refused where the
            # method writes an array of its object)
            cls = gast.Attribute(value=copy.deepcopy(held.classes[0][1]), attr="__setitem__",
                                 ctx=gast.Load(), **_place(node))
            return gast.Expr(value=_call(cls, _name(g, node), *args, at=node), **_place(node))
        call = gast.Expr(value=_method_call(_name(g, node), "__setitem__", args, node),
                         **_place(node))
        named = held.classes[0][1]
        if held.certain and len(held.classes) == 1 and \
                isinstance(named, (gast.Name, gast.Attribute)):
            # def loss(g: Grid, x): Grid.__setitem__ where g is a Grid (a call adgen
            # follows), a subclass's own as Python finds it otherwise
            cls = gast.Attribute(value=copy.deepcopy(named), attr="__setitem__",
                                 ctx=gast.Load(), **_place(node))
            by_name = gast.Expr(value=_call(cls, _name(g, node), *copy.deepcopy(args),
                                            at=node), **_place(node))
            test = gast.Compare(left=_call("type", _name(g, node), at=node),
                                ops=[gast.Is()], comparators=[copy.deepcopy(named)],
                                **_place(node))
            return gast.If(test=test, body=[by_name], orelse=[call], **_place(node))
        if held.certain:
            return call
        return gast.If(test=_defines(_name(g, node), "__setitem__", node),
                       body=[call], orelse=[node], **_place(node))

    def visit_Call(self, node: gast.Call) -> gast.expr:
        self.generic_visit(node)
        if not (isinstance(node.func, gast.Name) and node.func.id == "abs" and
                len(node.args) == 1 and not node.keywords):
            return node
        held = self._of(node.args[0])
        if held is None:
            return node
        new = self._chosen(held, "__abs__", node.args[0],
                           lambda a, t=None: _method_call(a, "__abs__", [], node, t),
                           lambda a: _call("abs", a, at=node), node)
        return node if new is None else new
