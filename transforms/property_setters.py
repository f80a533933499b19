"""Stores through a ``@property``'s setter in the differentiated code: ``m.scale = s`` as the
setter's call.

A store ``obj.name = v`` where ``name`` is a property with a setter runs the setter, which
stores something else than ``v`` (``self._scale = 2.0 * v``); adgen keeps an object's adjoint
per stored attribute, so taken as a store of ``v`` itself its gradient would be wrong
(runtime.stored_as_written refuses it). A store of a name that is a property with a
plain-function setter on one of the user's classes the function sees (its globals and
closure, the class a method is defined in, a class a parameter is annotated with) is written
as the setter's call, chosen as the code runs, which adgen differentiates like any method:

    m.scale = v   ->  if isinstance(getattr(type(m), 'scale', None), property) and \\
                             type(m).scale.fset is not None:
                          type(m).scale.fset(m, v)
                      else:
                          m.scale = v

``type(m)`` is looked up as the code runs, so a subclass's own property is the one called,
as Python does, and an object of a class without the property stores the value as before
(``v`` is evaluated once, in the branch that runs). ``m.scale += v`` is
``m.scale = m.scale + v`` first (the read is then the getter's call, properties.py). Stores
whose object is not a name (``self.inner.scale = v``) stay as they are (refused when a setter
runs, at the line).
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

import gast
from adgen.transforms.operator_classes import method_owner
from adgen.transforms.walk import as_load, clone, replace_children, walk

__all__ = ["call_property_setters"]

_BUILTINS = (("type", type), ("getattr", getattr), ("isinstance", isinstance),
             ("property", property))


def call_property_setters(parsed: Any) -> None:
    """Writes each store ``obj.name = v`` of a name that is a property with a setter of the
    user's as the setter's call, chosen as the code runs."""
    tree = parsed.tree
    stores = [n for n in walk(tree) if isinstance(n, (gast.Assign, gast.AugAssign)) and
              _target(n) is not None]
    if not stores:
        return  # (most functions store no attribute of a name)
    if any(parsed.is_local(n) or parsed.namespace.get(n, b) is not b for n, b in _BUILTINS):
        return  # the rewrite's builtins would not be the builtins there
    from adgen.transforms.front import resolve  # front runs this pass

    known = _known_classes(parsed, resolve)
    classes = [v for v in list(parsed.namespace.values()) if isinstance(v, type)]
    names = _setter_names(classes + list(known.values()))
    if not any(_target(n).attr in names for n in stores):
        return
    replace_children(tree, lambda sub: _chosen(sub, names, known))


def _known_classes(parsed: Any, resolve: Any) -> dict[str, type]:
    """The names whose object's class is known when the function compiles (as
    properties.read_properties finds them): the first parameter of a method, a parameter
    annotated with a class, a local name bound once, to ``Cls(...)``."""
    tree = parsed.tree
    stores: dict[str, int] = {}
    built: dict[str, Any] = {}
    for node in walk(tree):
        if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Del)):
            stores[node.id] = stores.get(node.id, 0) + 1
        if isinstance(node, gast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], gast.Name) and isinstance(node.value, gast.Call):
            cls = resolve(parsed, node.value.func)
            if isinstance(cls, type):
                built[node.targets[0].id] = cls
    classes = {n: c for n, c in built.items() if stores.get(n) == 1}
    params = tree.args.args
    owner = method_owner(parsed.fn, parsed.namespace) if params else None
    if owner is not None and not stores.get(params[0].id):
        classes[params[0].id] = owner
    for p in params:  # def loss(m: Model, x)
        ann = getattr(p, "annotation", None)
        cls = resolve(parsed, ann) if isinstance(ann, (gast.Name, gast.Attribute)) else None
        if isinstance(cls, type) and not stores.get(p.id):
            classes.setdefault(p.id, cls)
    return classes


def _target(node: Any) -> Any:
    """The target ``obj.name`` of ``obj.name = v`` (or ``obj.name += v``), else None."""
    if isinstance(node, gast.Assign):
        if len(node.targets) != 1:
            return None
        target = node.targets[0]
    else:
        target = node.target
    if isinstance(target, gast.Attribute) and isinstance(target.value, gast.Name):
        return target
    return None


def _setter_names(classes: list[type]) -> set[str]:
    """The names of the properties with a plain-function setter of the user's own code (not
    of an installed package, the standard library or adgen) on ``classes``."""
    found: set[str] = set()
    library = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix})
    for value in classes:
        for klass in value.__mro__:
            if str(getattr(klass, "__module__", "")).startswith("adgen."):
                continue
            for name, attr in vars(klass).items():
                if isinstance(attr, property) and inspect.isfunction(attr.fset) and \
                        not attr.fset.__code__.co_filename.startswith(library):
                    found.add(name)
    return found


def _chosen(node: Any, names: set[str], known: dict[str, type]) -> Any:
    """The setter's call for a store of a name in ``names`` on an object of a known class
    with that property (none where it has no such property), else the ``if`` choosing
    between the setter's call and the store as the code runs."""
    if not isinstance(node, (gast.Assign, gast.AugAssign)):
        return None
    target = _target(node)
    if target is None or target.attr not in names:
        return None
    at = dict(lineno=node.lineno, col_offset=node.col_offset,
              end_lineno=getattr(node, "end_lineno", node.lineno),
              end_col_offset=getattr(node, "end_col_offset", node.col_offset))
    obj = target.value.id

    def load(n: str) -> gast.Name:
        return gast.Name(id=n, ctx=gast.Load(), annotation=None, type_comment=None, **at)

    def call(f: Any, *args: Any) -> gast.Call:
        return gast.Call(func=f, args=list(args), keywords=[], **at)

    def prop() -> gast.Attribute:
        return gast.Attribute(value=call(load("type"), load(obj)), attr=target.attr,
                              ctx=gast.Load(), **at)

    def value() -> Any:
        if isinstance(node, gast.Assign):
            return node.value
        return gast.BinOp(left=as_load(target), op=node.op, right=node.value, **at)

    held = call(load("getattr"), call(load("type"), load(obj)),
                gast.Constant(target.attr, None, **at), gast.Constant(None, None, **at))
    has_setter = gast.Compare(
        left=gast.Attribute(value=prop(), attr="fset", ctx=gast.Load(), **at),
        ops=[gast.IsNot()], comparators=[gast.Constant(None, None, **at)], **at)
    body = [gast.Expr(value=call(gast.Attribute(value=prop(), attr="fset", ctx=gast.Load(),
                                                **at), load(obj), value()), **at)]
    if obj in known:
        try:
            found = inspect.getattr_static(known[obj], target.attr)
        except AttributeError:
            return None
        if isinstance(found, property) and inspect.isfunction(found.fset):
            return body[0]
        return None
    test = gast.BoolOp(op=gast.And(), values=[call(load("isinstance"), held,
                                                   load("property")), has_setter], **at)
    store = gast.Assign(targets=[clone(target)], value=clone(value()), type_comment=None, **at)
    return gast.If(test=test, body=body, orelse=[store], **at)
