"""``@property`` values read in the differentiated code: ``self.scale`` as the getter's call.

A property's value is computed when it is read, from attributes the getter reads; adgen keeps
an object's adjoint per stored attribute, so a gradient of the value read as an attribute
would not reach them (runtime.stored_attribute refuses it). Where the object's class is known
when the function compiles, a read of a property whose getter is a plain function is written
as a call of the getter, which adgen differentiates like any method:

    self.scale           ->  type(self).scale.fget(self)

``type(self)`` is looked up as the code runs, so a subclass's own property is the one called,
as Python does. The objects whose class is known: ``self``, the first parameter of a method
(its class from ``__qualname__``, or the ``__class__`` cell), a parameter annotated with a
class (``def loss(m: Model, x)``), a local name bound once, to ``Cls(...)`` of a class, and
the object a call ``Cls(...)`` makes read at once (``Circle(r).area`` ->
``Circle.area.fget(Circle(r))``, where the class has no ``__new__`` or metaclass of its own,
so that the call makes an object of that class). ``functools.cached_property`` is not rewritten (its value, once
cached, is a stored attribute that a new call would not give), nor a read that is assigned to
or deleted.

A parameter of unknown class (``def loss(m)``, ``lambda m: ...``: the function is compiled
once, before any argument is seen, in forward mode too) has its reads of a name that is a
property of one of the user's classes the function sees (its globals and closure: ``M.w2``)
chosen as the code runs:

    m.w2   ->  type(m).w2.fget(m) if isinstance(getattr(type(m), 'w2', None), property)
               else m.w2

the getter's call for an object whose class has that property, the stored attribute
otherwise. Other reads of a property (a class the function does not see, a descriptor, a
getter that is not a plain function) stay refused when their value has a gradient
(runtime.stored_attribute).

``front`` imports this module where the function reads an attribute of a value (a call's
result, a name it binds: ``front._reads_attributes_of_values``); a function reading only
attributes of modules (``np.sin``) does not (issue 15's cold start).
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

import gast
from adgen.transforms.operator_classes import method_owner
from adgen.transforms.walk import clone, replace_children, walk

__all__ = ["read_properties"]


def _getter(cls: Any, name: str) -> Any:
    """The getter of ``cls``'s property ``name`` when it is a plain function, else None."""
    try:
        found = inspect.getattr_static(cls, name)
    except AttributeError:
        return None
    if isinstance(found, property) and inspect.isfunction(found.fget):
        return found.fget
    return None


def read_properties(parsed: Any) -> None:
    """Writes each read of a property of an object of known class as its getter's call."""
    from adgen.transforms.front import resolve  # front runs this pass

    tree = parsed.tree
    if parsed.is_local("type") or parsed.namespace.get("type", type) is not type:
        return  # the rewrite's type() would not be the builtin
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
    for p in params:  # def loss(m: Model, x): an annotation that names a class
        ann = getattr(p, "annotation", None)
        cls = resolve(parsed, ann) if isinstance(ann, (gast.Name, gast.Attribute)) else None
        if isinstance(cls, type) and not stores.get(p.id):
            classes.setdefault(p.id, cls)
    # parameters of unknown class, and the names of the properties they may have
    unknown = {p.id for p in params if p.id not in classes and not stores.get(p.id)}
    if any(parsed.is_local(n) or parsed.namespace.get(n, b) is not b
           for n, b in (("getattr", getattr), ("isinstance", isinstance),
                        ("property", property))):
        unknown = set()  # the choice's builtins are not the builtins there
    names = _user_property_names(parsed.namespace) if unknown else set()
    # Circle(r).area: the object a call of a class makes, read at once
    made = {id(n.value): cls for n in walk(tree)
            if isinstance(n, gast.Attribute) and isinstance(n.ctx, gast.Load) and
            isinstance(n.value, gast.Call) and
            (cls := _exact_class(resolve(parsed, n.value.func))) is not None and
            _getter(cls, n.attr) is not None}
    if not classes and not names and not made:
        return
    skip = {id(n.func) for n in walk(tree) if isinstance(n, gast.Call)}
    # a value written in place (m.head[0] = v, h = m.head; h += 1): a getter's array written
    # through is not followed (the read stays refused when it runs, at the line)
    written = {n.target.id for n in walk(tree) if isinstance(n, gast.AugAssign) and
               isinstance(n.target, gast.Name)}
    for n in walk(tree):
        if isinstance(n, gast.Subscript) and isinstance(n.ctx, gast.Store):
            skip.add(id(n.value))
            if isinstance(n.value, gast.Name):
                written.add(n.value.id)
    for n in walk(tree):
        if isinstance(n, gast.Assign) and any(isinstance(t, gast.Name) and t.id in written
                                              for t in n.targets):
            skip.add(id(n.value))
    replace_children(tree, lambda sub: _rewritten(sub, classes, skip) or
                     _made(sub, made, skip) or _chosen(sub, unknown, names, skip))


def _exact_class(obj: Any) -> Any:
    """``obj`` when it is a class whose call makes an object of that class itself (no
    ``__new__`` of its own, no metaclass), else None."""
    if type(obj) is not type or getattr(obj, "__new__", None) is not object.__new__:
        return None
    return obj


def _made(node: Any, made: dict[int, Any], skip: set[int]) -> Any:
    """``Cls(...).name`` of a property: ``Cls.name.fget(Cls(...))`` (the call makes an
    object of ``Cls`` exactly, :func:`_exact_class`), differentiated as the getter's call
    on a name bound to it is."""
    if not (isinstance(node, gast.Attribute) and isinstance(node.ctx, gast.Load) and
            id(node.value) in made and id(node) not in skip):
        return None
    at = _place(node)
    prop = gast.Attribute(value=clone(node.value.func), attr=node.attr, ctx=gast.Load(), **at)
    getter = gast.Attribute(value=prop, attr="fget", ctx=gast.Load(), **at)
    return gast.Call(func=getter, args=[node.value], keywords=[], **at)


def _user_property_names(namespace: dict[str, Any]) -> set[str]:
    """The names of the properties with a plain-function getter of the user's own code (not
    of an installed package, the standard library or adgen) on the classes in
    ``namespace``."""
    found: set[str] = set()
    library = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix})
    for value in list(namespace.values()):
        if not isinstance(value, type):
            continue
        for klass in value.__mro__:
            if str(getattr(klass, "__module__", "")).startswith("adgen."):
                continue  # adgen's own classes (its errors' location): not the user's
            for name, attr in vars(klass).items():
                if isinstance(attr, property) and inspect.isfunction(attr.fget) and \
                        not attr.fget.__code__.co_filename.startswith(library):
                    found.add(name)
    return found


def _chosen(node: Any, unknown: set[str], names: set[str], skip: set[int]) -> Any:
    """``p.name`` of a parameter of unknown class, for a name in ``names``: the getter's call
    when the object's class has the property as the code runs, else the stored attribute."""
    if not (isinstance(node, gast.Attribute) and isinstance(node.ctx, gast.Load) and
            isinstance(node.value, gast.Name) and node.value.id in unknown and
            node.attr in names and id(node) not in skip):
        return None
    at = _place(node)

    def load(n: str) -> gast.Name:
        return gast.Name(id=n, ctx=gast.Load(), annotation=None, type_comment=None, **at)

    def call(f: Any, *args: Any) -> gast.Call:
        return gast.Call(func=f, args=list(args), keywords=[], **at)

    kind = call(load("type"), load(node.value.id))
    held = call(load("getattr"), kind, gast.Constant(node.attr, None, **at),
                gast.Constant(None, None, **at))
    test = call(load("isinstance"), held, load("property"))
    stored = gast.Attribute(value=load(node.value.id), attr=node.attr, ctx=gast.Load(), **at)
    skip.add(id(stored))  # (the walk goes on into the new nodes: the read stays as it is)
    return gast.IfExp(test=test, body=_getter_call(node), orelse=stored, **at)


def _place(node: Any) -> dict[str, int]:
    return dict(lineno=node.lineno, col_offset=node.col_offset,
                end_lineno=getattr(node, "end_lineno", node.lineno),
                end_col_offset=getattr(node, "end_col_offset", node.col_offset))


def _rewritten(node: Any, classes: dict[str, Any], skip: set[int]) -> Any:
    if not (isinstance(node, gast.Attribute) and isinstance(node.ctx, gast.Load) and
            isinstance(node.value, gast.Name) and node.value.id in classes and
            id(node) not in skip):
        return None
    if _getter(classes[node.value.id], node.attr) is None:
        return None
    return _getter_call(node)


def _getter_call(node: gast.Attribute) -> gast.Call:
    """``type(obj).name.fget(obj)`` for the read ``obj.name``."""
    at = _place(node)

    def obj() -> gast.Name:
        return gast.Name(id=node.value.id, ctx=gast.Load(), annotation=None,
                         type_comment=None, **at)

    kind = gast.Call(func=gast.Name(id="type", ctx=gast.Load(), annotation=None,
                                    type_comment=None, **at), args=[obj()], keywords=[], **at)
    prop = gast.Attribute(value=kind, attr=node.attr, ctx=gast.Load(), **at)
    getter = gast.Attribute(value=prop, attr="fget", ctx=gast.Load(), **at)
    return gast.Call(func=getter, args=[obj()], keywords=[], **at)
