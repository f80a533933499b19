"""``walk``: every node of a tree, in ``ast.walk``'s order (breadth first); ``body_nodes``: the
nodes of a function's body, outside nested functions (depth first); ``children``: as
``ast.iter_child_nodes``; ``clone``: a deep copy of a tree (``clone_with``: with names
replaced); ``names_read``: the names a tree reads; ``replace_children``: children put in
place of others. Faster than the standard
library's, which the passes call thousands of times.

Except ``clone``, they leave out the expression contexts (the ``Load``, ``Store``, ``Del`` or
``Param`` in a ``ctx`` field): leaves no pass looks for as nodes (they read ``n.ctx``), a
third of a function's nodes, and a fifth of a walk's time (``Transformer`` does not visit them
either).

The passes walk the function tree many times; ``ast.walk`` pays for two generator layers per
node (``iter_child_nodes`` over ``iter_fields``). This one reads the fields directly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import gast

_AST = gast.AST
_NAME = gast.Name
_CONSTANT = gast.Constant
_LOAD = gast.Load


# Fields the grammar gives an identifier, a string or a number, never a node: walk and
# children do not read them (a Name's id and type_comment, an Attribute's attr, a
# Constant's kind: a quarter of a walk's time); nor an expression's context (see above)
_SCALAR_FIELDS = frozenset({"id", "attr", "type_comment", "kind", "module", "level",
                            "conversion", "simple", "is_async", "ctx"})
_FIELDS: dict[type, tuple[str, ...]] = {}  # node class -> the fields that may hold nodes


def _node_fields(cls: type) -> tuple[str, ...]:
    found = _FIELDS[cls] = tuple(f for f in cls._fields if f not in _SCALAR_FIELDS)
    return found


# a class's nodes read field by field in walk so far, until _WRITTEN_AFTER: then through
# _written_pusher's function (its compile costs what reading a few hundred nodes does: a small
# function's first build meets most classes a few times only)
_SEEN: dict[type, int] = {}
_WRITTEN_AFTER = 400


def _written_pusher(cls: type) -> Any:
    """``kids(node, push, extend)``: pushes the child nodes of a node of class ``cls`` in the
    order of its fields, written out for them. A field the grammar (gast's ``_field_types``)
    types as one node is read without ``getattr``'s default, one typed as a list of nodes
    is pushed whole (``extend``: its items are nodes, except in the two lists of
    ``_LISTS_WITH_NONE``, read item by item). Where a node does not hold what its fields'
    types say (a field missing, an optional one empty, a list where gast's types say one
    node: ``Match.cases``), the node is read field by field as before (``_push_any``)."""
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = _node_fields(cls)
    types = getattr(cls, "_field_types", None) or {}
    checks: list[str] = []  # the typed fields' values, each read and checked once
    pushes: list[str] = []
    for k, field in enumerate(fields):
        typed = types.get(field)
        text = str(typed)
        if text.startswith("list[") and "str" not in text and \
                (cls.__name__, field) not in _LISTS_WITH_NONE:
            checks.append(f"v{k} = d[{field!r}]")
            checks.append(f"if v{k}.__class__ is not list: raise KeyError")
            pushes.append(f"extend(v{k})")
        elif isinstance(typed, type) and issubclass(typed, _AST) and field != "annotation":
            checks.append(f"v{k} = d[{field!r}]")
            checks.append(f"if not isinstance(v{k}, _AST): raise KeyError")
            pushes.append(f"push(v{k})")
        else:
            pushes.append(f"_push_field(d.get({field!r}), push)")
    lines = ["def kids(node, push, extend):", "    d = node.__dict__"]
    if checks:
        lines += ["    try:"] + [f"        {c}" for c in checks] + \
            ["    except KeyError:", "        return _push_any(node, push)"]
    lines += [f"    {p}" for p in pushes] or ["    pass"]
    namespace = {"_AST": _AST, "_push_any": _push_any, "_push_field": _push_field}
    exec(compile("\n".join(lines), f"<walk of {cls.__name__}>", "exec"), namespace)
    return namespace["kids"]


# the list fields gast types as lists of nodes that may hold None (a ** entry of a dict
# display, a keyword-only parameter without a default)
_LISTS_WITH_NONE = {("Dict", "keys"), ("arguments", "kw_defaults")}
_PUSHERS: dict[type, Any] = {}  # node class -> its _written_pusher, once written


def _push_field(value: Any, push: Any) -> None:
    if isinstance(value, _AST):
        push(value)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, _AST):
                push(item)


def _push_any(node: Any, push: Any) -> None:
    """The child nodes of ``node`` pushed field by field, whatever its fields hold."""
    fields = _FIELDS.get(node.__class__)
    if fields is None:
        fields = _node_fields(node.__class__)
    for name in fields:
        _push_field(getattr(node, name, None), push)


def walk(node: Any) -> Iterator[Any]:
    todo = [node]  # breadth first: the loop reads the nodes appended while it runs
    push = todo.append
    extend = todo.extend
    pusher_of = _PUSHERS.get
    fields_of = _FIELDS.get
    for node in todo:
        cls = node.__class__
        if cls is _NAME:  # two nodes in five: its one field that may hold a node
            annotation = getattr(node, "annotation", None)
            if annotation is not None and isinstance(annotation, _AST):
                push(annotation)
        elif cls is not _CONSTANT:  # (a constant's value is never a node)
            kids = pusher_of(cls)
            if kids is not None:
                kids(node, push, extend)
            else:
                fields = fields_of(cls)
                if fields is None:
                    fields = _node_fields(cls)
                for name in fields:
                    value = getattr(node, name, None)
                    if isinstance(value, _AST):
                        push(value)
                    elif isinstance(value, list):
                        for item in value:
                            if isinstance(item, _AST):
                                push(item)
                seen = _SEEN.get(cls, 0) + 1
                _SEEN[cls] = seen
                if seen == _WRITTEN_AFTER:
                    _PUSHERS[cls] = _written_pusher(cls)
        yield node


def replace_children(tree: Any, new_of: Callable[[Any], Any]) -> None:
    """Puts ``new_of(child)`` in place of each child of every node of ``tree`` (each item of a
    list field too) for which it returns something other than None. The walk is over the
    tree as it was: a child that is replaced is still visited, its replacement is not."""
    for node in walk(tree):
        for field, value in gast.iter_fields(node):
            items = value if isinstance(value, list) else [value]
            for i, sub in enumerate(items):
                new = new_of(sub)
                if new is None:
                    continue
                if isinstance(value, list):
                    value[i] = new
                else:
                    setattr(node, field, new)


def names_read(node: Any) -> set[str]:
    """The names ``node`` reads, the target of ``n += v`` included (it reads ``n``): a fresh
    walk (the lean passes ask it of trees they are changing, which a frozen index would not
    see)."""
    out = set()
    for n in walk(node):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
            out.add(n.id)
        elif isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Name):
            out.add(n.target.id)
    return out


def children(node: Any) -> list[Any]:
    """The child nodes of ``node``, as ``ast.iter_child_nodes`` gives them (in the order of
    its fields), in a list: without its two generator layers per node."""
    cls = node.__class__
    if cls is _NAME:  # (as in walk)
        annotation = getattr(node, "annotation", None)
        return [annotation] if isinstance(annotation, _AST) else []
    if cls is _CONSTANT:
        return []
    out = []
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = _node_fields(cls)
    for name in fields:
        value = getattr(node, name, None)
        if isinstance(value, _AST):
            out.append(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, _AST):
                    out.append(item)
    return out


_NESTED = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)


def body_nodes(stmts: list[Any]) -> Iterator[Any]:
    """Every node of ``stmts``, depth first from the last statement, not descending into
    nested functions, lambdas or classes (which are yielded themselves): the code that runs
    when the body runs."""
    todo: list[Any] = list(stmts)
    pop = todo.pop
    extend = todo.extend
    while todo:
        node = pop()
        yield node
        if not isinstance(node, _NESTED):
            extend(children(node))


def statement_blocks(st: Any) -> list[list[Any]]:
    """The lists of statements ``st`` holds (its body, else, finally, each handler's and
    each case's body), in that order; none for a nested function or class, whose body is
    not run with ``st``'s."""
    if isinstance(st, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
        return []
    out = [inner for inner in (getattr(st, f, None) for f in ("body", "orelse", "finalbody"))
           if isinstance(inner, list) and inner and isinstance(inner[0], gast.stmt)]
    out += [h.body for h in getattr(st, "handlers", ())]
    out += [c.body for c in getattr(st, "cases", ())]
    return out


def as_load(node: Any) -> Any:
    """A copy of the target ``node`` (a name, attribute or item) as read: every ``ctx``
    a ``Load``, so its ``gast.dump`` is that of its reads."""
    copy = clone(node)
    for n in walk(copy):
        if hasattr(n, "ctx"):
            n.ctx = gast.Load()
    return copy


def clone(node: Any) -> Any:
    """A deep copy of an AST (or a list of them), several times faster than copy.deepcopy:
    nodes are rebuilt field by field; leaves (names, constants' values) are shared."""
    if isinstance(node, list):
        return [clone(x) for x in node]
    if not isinstance(node, _AST):
        return node
    cls = node.__class__
    new = cls.__new__(cls)
    d = node.__dict__
    nd = new.__dict__
    for key, value in d.items():
        if isinstance(value, _AST):
            nd[key] = clone(value)
        elif isinstance(value, list):
            nd[key] = [clone(x) for x in value]
        else:
            nd[key] = value
    return new


def clone_with(node: Any, subst: dict[str, Any]) -> Any:
    """``clone(node)`` with each name of ``subst`` that is read (a ``Load``) replaced by a
    clone of what ``subst`` maps it to, in one copy: a rule's template instantiated (a clone
    then a substitution visited the template twice).

    A template's ``X if p is None else Y`` whose ``p`` is replaced by a constant is the arm
    that constant picks (an optional argument left out: ``logsumexp``'s weights ``b``), so
    the generated code does not test ``None is None``."""
    if isinstance(node, list):
        return [clone_with(x, subst) for x in node]
    if not isinstance(node, _AST):
        return node
    cls = node.__class__
    if cls is _NAME and node.id in subst and isinstance(node.ctx, _LOAD):
        return clone(subst[node.id])
    if cls is gast.IfExp:
        picked = _none_test(node.test, subst)
        if picked is not None:
            return clone_with(node.body if picked else node.orelse, subst)
    new = cls.__new__(cls)
    d = node.__dict__
    nd = new.__dict__
    for key, value in d.items():
        if isinstance(value, _AST):
            nd[key] = clone_with(value, subst)
        elif isinstance(value, list):
            nd[key] = [clone_with(x, subst) for x in value]
        else:
            nd[key] = value
    return new


def _none_test(test: Any, subst: dict[str, Any]) -> bool | None:
    """Whether ``p is None`` holds, for a test of that form whose ``p`` ``subst`` replaces by
    a constant; None for any other test."""
    if not (isinstance(test, gast.Compare) and len(test.ops) == 1 and
            isinstance(test.ops[0], gast.Is) and isinstance(test.left, gast.Name) and
            isinstance(test.comparators[0], gast.Constant) and
            test.comparators[0].value is None):
        return None
    bound = subst.get(test.left.id)
    return bound.value is None if isinstance(bound, gast.Constant) else None


class Transformer(gast.NodeTransformer):
    """``gast.NodeTransformer`` with the same results, faster: the ``visit_<Class>`` method of
    each node class is looked up once per transformer class (not by name at every node), a
    node without fields or method (a ``Load``, an operator) is returned without a call, and
    the fields are read without ``ast.iter_fields``'s generator. Subclasses define
    ``visit_<Class>`` methods and call ``self.generic_visit(node)`` as with the standard one
    (methods set on an instance are not seen)."""

    _dispatch: dict[type, Any] = {}  # per subclass: node class -> its method, or None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._dispatch = {}

    def _method(self, node_cls: type) -> Any:
        method = getattr(type(self), "visit_" + node_cls.__name__, None)
        if method is _VISIT_CONSTANT and not any(
                hasattr(type(self), "visit_" + old) for old in _OLD_CONSTANTS):
            method = None  # ast.NodeVisitor.visit_Constant: generic_visit, for our nodes
        if method is None and not node_cls._fields and \
                type(self).generic_visit is Transformer.generic_visit:
            method = _LEAF
        self._dispatch[node_cls] = method
        return method

    def visit(self, node: Any) -> Any:
        cls = node.__class__
        method = self._dispatch.get(cls, _MISSING)
        if method is _MISSING:
            method = self._method(cls)
        if method is None:
            return self.generic_visit(node)
        if method is _LEAF:
            return node
        return method(self, node)

    def generic_visit(self, node: Any) -> Any:
        fields = _FIELDS.get(node.__class__)
        if fields is None:
            fields = _node_fields(node.__class__)
        for name in fields:
            old = getattr(node, name, _MISSING)
            if isinstance(old, list):
                new_values = []
                for value in old:
                    if isinstance(value, _AST):
                        value = self.visit(value)
                        if value is None:
                            continue
                        if not isinstance(value, _AST):
                            new_values.extend(value)
                            continue
                    new_values.append(value)
                old[:] = new_values
            elif isinstance(old, _AST):
                new = self.visit(old)
                if new is None:
                    delattr(node, name)
                else:
                    setattr(node, name, new)
        return node


_MISSING = object()
_LEAF = object()  # a node class without fields nor method: visiting it returns it
_VISIT_CONSTANT = gast.NodeTransformer.visit_Constant
_OLD_CONSTANTS = ("Num", "Str", "Bytes", "NameConstant", "Ellipsis")
