"""Bound callees: a method or a ``functools.partial`` that writes its arguments, called as the
function it runs.

adgen follows an in-place write of an argument through a call of a user function by its name
(``step(u, dt)``): the caller's analyses see which arguments the callee writes
(``pipeline._compile``'s ``mutating_call``) and its code saves, guards or refuses there. A
call resolved only when it runs (``self.step(u, dt)``, ``op(u)``) goes through
``dispatch.forward_of``, which cannot tell the caller's compiled code what the callee wrote,
and refuses it. Where the function a call runs is known when the caller compiles, this pass
writes the call as a call of that function by a name, the bound values first:

    self.step(u, dt)        ->  step_of_Model(self, u, dt)     (the receiver's class known)
    model.step(u)           ->  step_of_Model(model, u)        (model: a global object, a
                                 parameter compiled for its class or an object built here:
                                 object_classes)
    advance(model, u)       ->  advance_for_Model(model, u)    (advance compiled for Model)
    OP(u)                   ->  laplace_of_OP(u, out=out_of_OP)   (OP: a global partial)
    op = partial(lap, out=np.empty(6)); op(u)
                            ->  op_out = np.empty(6); lap(u, out=op_out)   (a local partial)

Only calls of a function that writes a parameter in place are rewritten (other calls keep
their run-time dispatch, which serves them). The names the rewrite reads are bound in the
generated code's namespace (``Parsed.bound``), and each resolution is an assumption of the
compiled code, checked at every call (``Parsed.bound_guards``, bindings' guards): the method
the class (and a global object's own ``__dict__``) holds under that name, the partial the
global name holds. ``self``'s class is known where the method is compiled for its receiver's
class (:func:`receiver_clone`: ``dispatch`` compiles one copy of the method per class of the
objects it is called on, so a subclass overriding ``step`` gets its own code); a method set
on the object itself (``m.step = other``) is not the class's, and ``dispatch`` then compiles
the method as it would without this pass (:func:`shadowed`).

Input: the parsed function, before any other pass (its tree as the user wrote it).
Output: the same tree with those calls rewritten; ``parsed.bound`` (name -> object) and
``parsed.bound_guards``. Calls inside nested defs and lambdas are left as they are.
"""

from __future__ import annotations

import copy
import functools
import types
import weakref
from typing import Any

import gast
from adgen.transforms.bindings import NOT_FOUND, UNBOUND, Guard, dotted_object
from adgen.transforms.keyword_shims import for_keywords, takes_keywords
from adgen.transforms.object_classes import (
    built_objects,
    class_attribute,
    function_copy,
    insert_checks,
    is_user_class,
    original_guards,
    param_classes,
    plain_function,
    receiver_of,
    typed_clone,
    wants_class,
)
from adgen.transforms.walk import walk

from adgen.rules import registry

__all__ = ["bind_callees", "bound_method_for", "method_for", "receiver_clone", "shadowed",
           "wants_receiver"]

# (function, class) -> the function's copy compiled for receivers of that class
_CLONES: dict[tuple[Any, type], types.FunctionType] = {}
# class -> the names of its methods a copy's code calls on its receiver as a direct call
_REWRITTEN: dict[type, set[str]] = {}
# (code, class) -> wants_receiver's answer
_WANTS: dict[tuple[Any, type], bool] = {}
# (function, class, id of an object) -> (a weak reference to it, the copy for it)
_OWNED: dict[tuple[Any, type, int], tuple[Any, types.FunctionType]] = {}


def receiver_clone(fn: types.FunctionType, cls: type) -> types.FunctionType:
    """``fn`` (a method's function) as a function of its own, compiled for receivers of class
    ``cls`` (one per function and class: the compile cache keys it by identity)."""
    key = (fn, cls)
    clone = _CLONES.get(key)
    if clone is None:
        clone = _CLONES[key] = function_copy(fn, cls)
    return clone


def bound_method_for(fn: Any, obj: Any) -> Any:
    """The function to compile for ``obj.method`` given to adgen itself (``grad(model.loss)``,
    ``jvp(model.loss, ...)``: arguments.split_receiver), ``fn`` its function: a copy for the
    object's class, as :func:`method_for`'s, whose compiled code also checks at every call
    that this object holds nothing of its own under the names of the methods it calls on it
    (``model.step = other`` after the gradient was made: compiled again, without the direct
    call). ``fn`` itself where :func:`method_for` gives it, or for an object without weak
    references."""
    if method_for(fn, (obj,)) is fn:
        return fn
    try:
        owner = weakref.ref(obj)
    except TypeError:
        return fn
    key = (fn, type(obj), id(obj))
    found = _OWNED.get(key)
    if found is not None and found[0]() is obj:
        return found[1]
    clone = function_copy(fn, type(obj))
    clone.__adgen_owner__ = owner  # type: ignore[attr-defined]
    _OWNED[key] = (owner, clone)
    return clone


def wants_receiver(fn: types.FunctionType, cls: type) -> bool:
    """Whether ``fn``'s code reads a name that ``cls`` holds as a plain function (a method it
    may call on its receiver): then :func:`receiver_clone` compiles it for ``cls``. (Asked at
    every call through the dispatch: remembered per code and class.)"""
    key = (fn.__code__, cls)
    found = _WANTS.get(key)
    if found is None:
        found = _WANTS[key] = any(isinstance(class_attribute(cls, n), types.FunctionType)
                                  for n in fn.__code__.co_names)
    return found


def shadowed(receiver: Any, cls: type) -> bool:
    """Whether the object has a value of its own under the name of a method that copies
    compiled for ``cls`` call on it directly (``m.step = other``): then they do not run."""
    names = _REWRITTEN.get(cls)
    own = getattr(receiver, "__dict__", None)
    return bool(names) and isinstance(own, dict) and any(n in own for n in names)


def method_for(fn: Any, receiver: tuple[Any, ...]) -> Any:
    """The function to compile for a method's function ``fn`` called on ``receiver`` (a
    tuple of the object, or empty): its copy for the object's class where its code calls
    methods of the class (``self.step(u)`` writing ``u`` is then a call the compiled code
    follows); ``fn`` itself for no receiver, a class, or an object that holds a value of its
    own under a name of such a method (``m.step = other``), which then runs as Python finds
    it, through the dispatch."""
    if not receiver or not isinstance(fn, types.FunctionType) or \
            isinstance(receiver[0], type):
        return fn
    cls = type(receiver[0])
    if not wants_receiver(fn, cls) or shadowed(receiver[0], cls):
        return fn
    from adgen.transforms.pipeline import compile_function

    clone = receiver_clone(fn, cls)
    try:
        compile_function(clone)  # (the names it calls on its receiver: shadowed reads them)
    except Exception:  # noqa: BLE001 - the call compiles it again and reports it
        return clone
    return fn if shadowed(receiver[0], cls) else clone


class _StoredCell:
    """What a guard reads for ``obj.name``: ``obj``'s own ``__dict__`` first when ``obj`` is
    an instance, then its class's MRO, as stored (a function, not a bound method)."""

    def __init__(self, obj: Any, name: str, instance: bool) -> None:
        self.obj, self.name, self.instance = obj, name, instance

    @property
    def cell_contents(self) -> Any:
        if self.instance:
            obj = self.obj() if isinstance(self.obj, weakref.ref) else self.obj
            own = getattr(obj, "__dict__", None)
            if isinstance(own, dict) and self.name in own:
                return own[self.name]
            cls = type(obj)
        else:
            cls = self.obj
        found = class_attribute(cls, self.name)
        return UNBOUND if found is NOT_FOUND else found


class _Shadowing:
    """What a guard reads for a global object whose method a copy compiled for its class
    runs: whether the object holds a value of its own under a name that code calls
    (:func:`shadowed`)."""

    def __init__(self, obj: Any, cls: type) -> None:
        self.obj, self.cls = obj, cls

    @property
    def cell_contents(self) -> bool:
        obj = self.obj() if isinstance(self.obj, weakref.ref) else self.obj
        return obj is not None and shadowed(obj, self.cls)


class _Rewriter:
    def __init__(self, parsed: Any, writes: Any) -> None:
        self.parsed = parsed
        self.writes = writes  # a function -> whether it writes a parameter in place
        self.taken = {n.id for n in walk(parsed.tree) if isinstance(n, gast.Name)} | \
            set(parsed.namespace)
        self.stores: dict[str, int] = {}
        for n in walk(parsed.tree):
            if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
                self.stores[n.id] = self.stores.get(n.id, 0) + 1
        params = parsed.tree.args.args
        cls = receiver_of(parsed.fn)
        self.receiver = (params[0].id, cls) if cls is not None and params and \
            not self.stores.get(params[0].id) else None
        # the one object a copy for grad(model.loss) runs on (bound_method_for)
        self.owner = getattr(parsed.fn, "__adgen_owner__", None)
        self.owner_guarded = False
        # the other parameters of a known class (typed_clone), never rebound here
        self.typed = {params[k].id: c for k, c in param_classes(parsed.fn).items()
                      if k < len(params) and not (k == 0 and cls is not None) and
                      not self.stores.get(params[k].id)}
        # objects, not arrays an argument may share, for reverse mode (model and its tangent
        # model_dot in the jvp code of a copy compiled for Heat: step_jvp(model, u, model_dot,
        # u_dot) calls no method on them; hessian(loss, argnums=1)(model, u))
        parsed.objects.update(params[k].id for k in param_classes(parsed.fn) if k < len(params))
        # objects the function builds from a class of the user's (sim = Heat(dt)), bound
        # once: their calls are checked when they run (receiver_checks), where an __init__
        # may have set a method of the object's own
        self.made = {n: c for n, c in built_objects(parsed, self.stores).items()
                     if n not in self.typed}
        self.checks: list[tuple[gast.Call, str, type, str]] = []
        # attributes the function sets or deletes (model.step = other): not followed
        self.set_attrs = {(n.value.id, n.attr) for n in walk(parsed.tree)
                          if isinstance(n, gast.Attribute) and isinstance(n.value, gast.Name)
                          and isinstance(n.ctx, (gast.Store, gast.Del))}

    def fresh(self, base: str) -> str:
        name, k = base, 1
        while name in self.taken or not name.isidentifier():
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name

    def bind(self, base: str, value: Any) -> str:
        for name, held in self.parsed.bound.items():
            if held is value:
                return name
        name = self.fresh(base)
        self.parsed.bound[name] = self.parsed.namespace[name] = value
        return name

    def guard(self, obj: Any, name: str, instance: bool, expected: Any) -> None:
        cell = _StoredCell(obj, name, instance)
        self.parsed.bound_guards.append(Guard(name, name, {}, cell, "same", expected))

    # -- methods ------------------------------------------------------------------------

    def method_call(self, call: gast.Call) -> bool:
        func = call.func
        if not isinstance(func, gast.Attribute) or not isinstance(func.value, gast.Name):
            return False
        who = func.value.id
        if self.receiver is not None and who == self.receiver[0]:
            cls, instance, holder = self.receiver[1], False, self.receiver[1]
            owner = self.owner() if self.owner is not None else None
            if owner is not None and func.attr in getattr(owner, "__dict__", {}):
                # model.step = other: as Python finds it, through the dispatch, until deleted
                self.guard(self.owner, func.attr, True, owner.__dict__[func.attr])
                return False
        elif who in self.typed:
            # a parameter of a known class (loss(model, u) compiled for a Heat: typed_for)
            if (who, func.attr) in self.set_attrs:
                return False
            cls, instance, holder = self.typed[who], False, self.typed[who]
        elif who in self.made:
            # an object the function builds (sim = Heat(dt)): Heat's, checked when it runs
            if (who, func.attr) in self.set_attrs:
                return False
            cls, instance, holder = self.made[who], False, self.made[who]
        elif not self.parsed.is_local(who):
            obj = dotted_object(self.parsed, func.value)
            if obj is NOT_FOUND or isinstance(obj, (type, types.ModuleType)) or \
                    not isinstance(getattr(obj, "__dict__", None), dict):
                return False
            cls, instance, holder = type(obj), True, obj
            if registry.reference_of(getattr(obj, func.attr, None)) is not None:
                return False  # multivariate_normal.logpdf: adgen's reference, not scipy's
            if func.attr in obj.__dict__:
                # set on the object itself: not a method of its class, until deleted
                self.guard(obj, func.attr, True, obj.__dict__[func.attr])
                return False
        else:
            return False
        method = class_attribute(cls, func.attr)
        if registry.has_method_reference(method):
            # d.logpdf(x) of a frozen scipy multivariate_normal given: adgen's reference (the
            # dispatch finds it), not scipy's source
            return False
        if not isinstance(method, types.FunctionType) or \
                method.__code__.co_flags & 0x20 or not method.__code__.co_argcount:
            return False  # a staticmethod, classmethod, property, or generator: as it is
        if any(k.arg is None for k in call.keywords) and takes_keywords(method):
            return False  # m.step(u, **opts): the dispatch takes its keywords when it runs
        # (def step(self, u, **kw): the copy compiled for this call's keywords)
        clone = receiver_clone(for_keywords(method, [k.arg for k in call.keywords]), cls)
        # self.v += dt * a on an object built here or given: followed as a write, whatever
        # the attribute holds; on a global or closure object (kf.update(z) writing self.x +=
        # K @ y) where an attribute it updates holds an array (refused by the dispatch until
        # session 29; counters and properties still go there, which checks them as it runs)
        if not (self.writes(clone) or (not instance and _updates_attributes(clone)) or
                (instance and _updates_arrays(clone, holder))) or \
                (instance and shadowed(holder, cls)):
            return False  # (m.step = other on a global object: its code runs as it is)
        name = self.bind(f"{method.__name__}_of_{cls.__name__}", clone)
        self.guard(holder, func.attr, instance, method)
        if instance:
            # the method's code calls methods of its class on self directly: the object
            # must not get one of its own under their names later
            self.parsed.bound_guards.append(Guard(
                f"{who}'s own methods", who, {}, _Shadowing(holder, cls), "value", False))
        else:
            _REWRITTEN.setdefault(cls, set()).add(func.attr)
            if who in self.made:
                self.checks.append((call, who, cls, func.attr))
                self.parsed.objects.add(who)
            elif who in self.typed:
                # (its object's class and own attributes: the signature, typed_for)
                self.parsed.objects.add(who)
            elif self.owner is not None and not self.owner_guarded:
                self.owner_guarded = True
                self.parsed.bound_guards.append(Guard(
                    f"{who}'s own methods", who, {}, _Shadowing(self.owner, cls), "value", False))
        call.func = gast.copy_location(gast.Name(name, gast.Load(), None, None), func)
        call.args.insert(0, gast.copy_location(gast.Name(who, gast.Load(), None, None),
                                               func.value))
        return True

    def object_call(self, call: gast.Call) -> bool:
        """``bn(x)`` of an object of a class of the user's whose ``__call__`` writes in place
        (a batch norm updating ``self.mean *= 0.9`` on each call), the object a parameter of
        a known class or one the function builds: read as ``bn.__call__(x)``, the method call
        :meth:`method_call` rewrites (through the dispatch, an object called as a function
        whose ``__call__`` writes its attributes was refused)."""
        func = call.func
        if not isinstance(func, gast.Name) or (func.id not in self.typed and
                                               func.id not in self.made):
            return False
        call.func = gast.copy_location(gast.Attribute(value=func, attr="__call__",
                                                      ctx=gast.Load()), func)
        if self.method_call(call):
            return True
        call.func = func
        return False

    def parent_call(self, call: gast.Call) -> bool:
        """``Base.step(self, u)`` (``super().step(u)`` is read so, parse) on the receiver of
        a method compiled for its class: ``Base.step`` compiled for that class too."""
        func = call.func
        if self.receiver is None or not isinstance(func, gast.Attribute) or \
                not call.args or not isinstance(call.args[0], gast.Name) or \
                call.args[0].id != self.receiver[0]:
            return False
        owner = dotted_object(self.parsed, func.value)
        cls = self.receiver[1]
        if not isinstance(owner, type) or owner not in cls.__mro__:
            return False
        method = class_attribute(owner, func.attr)
        if not isinstance(method, types.FunctionType) or method.__code__.co_flags & 0x20:
            return False
        clone = receiver_clone(method, cls)
        if not self.writes(clone):
            return False
        name = self.bind(f"{method.__name__}_of_{owner.__name__}", clone)
        self.guard(owner, func.attr, False, method)
        call.func = gast.copy_location(gast.Name(name, gast.Load(), None, None), func)
        return True

    def typed_call(self, call: gast.Call) -> bool:
        """``helper(model, u)`` of a global user function given a parameter of a known class
        whose methods it may call: a copy of ``helper`` compiled for that class
        (:func:`typed_clone`), where it writes a parameter in place."""
        func = call.func
        # (an object the function builds, acc = Acc(3), too: its class is known as a typed
        # parameter's is, checked when the call runs as a method call on it is)
        known = {**self.made, **self.typed}
        if not known or not isinstance(func, gast.Name) or \
                self.parsed.is_local(func.id) or \
                any(isinstance(a, gast.Starred) for a in call.args):
            return False
        obj = dotted_object(self.parsed, func)
        if not plain_function(obj) or param_classes(obj):
            return False
        wanted = tuple((k, known[a.id]) for k, a in enumerate(call.args)
                       if isinstance(a, gast.Name) and a.id in known and
                       k < obj.__code__.co_argcount and wants_class(obj, known[a.id]))
        if not wanted:
            return False
        clone = typed_clone(obj, wanted)
        if not self.writes(clone):
            return False
        for k, cls in wanted:
            who = call.args[k].id  # type: ignore[attr-defined]
            if who in self.made:
                # the copy calls cls's methods on it: no method of its own may hide one
                self.checks += [(call, who, cls, m) for m in sorted(_method_names(cls))]
        # the call no longer reads the name: its own guard (helper rebound: compiled again)
        scope = getattr(self.parsed.fn, "__globals__", {})
        self.parsed.bound_guards.append(Guard(func.id, func.id, scope,
                                              self.parsed.cells.get(func.id), "same", obj))
        name = self.bind(f"{obj.__name__}_for_{'_'.join(c.__name__ for _, c in wanted)}",
                         clone)
        self.parsed.objects.update(call.args[k].id for k, _ in wanted)  # type: ignore[attr-defined]
        call.func = gast.copy_location(gast.Name(name, gast.Load(), None, None), func)
        return True

    # -- partials -----------------------------------------------------------------------

    def global_partial(self, call: gast.Call) -> bool:
        func = call.func
        if not isinstance(func, gast.Name):
            return False
        obj = dotted_object(self.parsed, func)
        if not isinstance(obj, functools.partial) or not plain_function(obj.func) or \
                not self.writes(obj.func):
            return False
        base = func.id
        # the call no longer reads the name: its own guard, as the free name's would be
        # (OP rebound to another partial runs that one)
        scope = getattr(self.parsed.fn, "__globals__", {})
        self.parsed.bound_guards.append(Guard(base, base, scope, self.parsed.cells.get(base),
                                              "same", obj))
        fname = self.bind(f"{obj.func.__name__}_of_{base}", obj.func)
        lead = [gast.Name(self.bind(f"arg{k}_of_{base}", v), gast.Load(), None, None)
                for k, v in enumerate(obj.args)]
        given = {k.arg for k in call.keywords}
        bound = [gast.keyword(k, gast.Name(self.bind(f"{k}_of_{base}", v), gast.Load(),
                                           None, None))
                 for k, v in obj.keywords.items() if k not in given]
        call.func = gast.copy_location(gast.Name(fname, gast.Load(), None, None), func)
        call.args = [gast.copy_location(n, func) for n in lead] + call.args
        call.keywords = bound + call.keywords
        return True

    def local_partials(self, body: list[gast.stmt]) -> None:
        """``op = functools.partial(f, a, k=v)`` at the top level of the body, ``op`` bound
        there only and read only as ``op(...)`` after it: the bound values into names of
        their own at that line (evaluated where Python evaluates them), each call a call of
        ``f``."""
        for at, st in enumerate(list(body)):
            if not (isinstance(st, gast.Assign) and len(st.targets) == 1 and
                    isinstance(st.targets[0], gast.Name) and isinstance(st.value, gast.Call)):
                continue
            op, made = st.targets[0].id, st.value
            if dotted_object(self.parsed, made.func) is not functools.partial or \
                    not made.args or self.stores.get(op) != 1 or \
                    any(isinstance(a, gast.Starred) for a in made.args[1:]) or \
                    any(k.arg is None for k in made.keywords):
                continue
            target = dotted_object(self.parsed, made.args[0])
            if not plain_function(target) or not self.writes(target):
                continue
            uses = [n for n in walk(self.parsed.tree)
                    if isinstance(n, gast.Name) and n.id == op and isinstance(n.ctx, gast.Load)]
            calls = [n for s in body[at + 1:] for n in _walk_here(s)
                     if isinstance(n, gast.Call) and isinstance(n.func, gast.Name) and
                     n.func.id == op]
            if len(calls) != len(uses) or not calls:
                continue  # read as a value, or in a nested def or lambda: as it is
            names, temps = [], []
            for k, a in enumerate(made.args[1:]):
                names.append(self.fresh(f"{op}_arg{k}"))
                temps.append((names[-1], a))
            keys = {}
            for kw in made.keywords:
                keys[kw.arg] = self.fresh(f"{op}_{kw.arg}")
                temps.append((keys[kw.arg], kw.value))
            new = [gast.copy_location(gast.Assign([gast.Name(n, gast.Store(), None, None)], v,
                                                  None), st) for n, v in temps]
            body[body.index(st):body.index(st) + 1] = new
            for c in calls:
                given = {k.arg for k in c.keywords}
                c.func = gast.copy_location(copy.deepcopy(made.args[0]), c.func)
                c.args = [gast.Name(n, gast.Load(), None, None) for n in names] + c.args
                c.keywords = [gast.keyword(k, gast.Name(n, gast.Load(), None, None))
                              for k, n in keys.items() if k not in given] + c.keywords

    def run(self) -> None:
        self.local_partials(self.parsed.tree.body)
        for node in _walk_here(self.parsed.tree):
            if isinstance(node, gast.Call):
                self.method_call(node) or self.object_call(node) or self.parent_call(node) or \
                    self.typed_call(node) or self.global_partial(node)
        if self.checks:
            checked: dict[int, list[tuple[str, type, str]]] = {}
            for call, *found in self.checks:
                checked.setdefault(id(call), []).append(tuple(found))  # type: ignore[arg-type]
            insert_checks(self.parsed, self.parsed.tree.body, checked, self.bind, self.fresh)

def _method_names(cls: type) -> set[str]:
    """The names of the plain functions ``cls`` and its bases define (its methods)."""
    return {n for c in cls.__mro__ if c is not object for n, v in vars(c).items()
            if isinstance(v, types.FunctionType)}


def _walk_here(node: Any) -> list[Any]:
    """The nodes of ``node`` outside the nested defs and lambdas in it."""
    out, todo = [], [node]
    while todo:
        n = todo.pop()
        out.append(n)
        for child in gast.iter_child_nodes(n):
            if not isinstance(child, (gast.FunctionDef, gast.Lambda, gast.AsyncFunctionDef,
                                      gast.ClassDef)):
                todo.append(child)
    return out


def _updates_attributes(fn: types.FunctionType) -> bool:
    """Whether a method's writes are all updates of its object's attributes (``self.v +=
    dt * a``), which write an array in place where the attribute holds one: called by its
    name, the caller follows them whatever they hold."""
    from adgen.transforms.pipeline import compile_function

    from adgen.errors import AdgenError

    try:
        compiled = compile_function(fn)
    except AdgenError:
        return False  # (its call reports why)
    updates = compiled.number_updates
    return bool(compiled.mutates_params and updates is not None and updates.exact)


def _updates_arrays(fn: types.FunctionType, obj: Any) -> bool:
    """Whether a method's writes are all updates of its object's attributes
    (:func:`_updates_attributes`), one of which holds an array on ``obj`` now (read without
    running a property): a global object's ``self.x += K @ y``."""
    import inspect

    import numpy as np

    if not _updates_attributes(fn):
        return False
    from adgen.transforms.pipeline import compile_function

    updates = compile_function(fn).number_updates
    return any(u.index == 0 and isinstance(inspect.getattr_static(obj, u.attr, None), np.ndarray)
               for u in updates.sites)


def bind_callees(parsed: Any, writes: Any) -> None:
    """Rewrites the calls of ``parsed``'s tree described in the module docstring.

    Args:
        parsed: the parsed function (``parse.Parsed``); its ``bound`` and ``bound_guards``
            are filled in.
        writes: a user function -> whether a call of it may write a parameter in place.
    """
    if not _may_bind(parsed):
        return  # (most functions: no walk of the tree, a first gradient pays nothing here)
    parsed.bound_guards.extend(original_guards(parsed.fn))  # (a copy for its objects' classes)
    # Net(3).forward(x): the object bound to a name first, as net = Net(3) (imported here:
    # most functions call no method of an object built in the call's own expression)
    if any(isinstance(n, gast.Attribute) and isinstance(n.value, gast.Call)
           for n in walk(parsed.tree)):
        from adgen.transforms.temporary_receivers import name_built_receivers

        name_built_receivers(parsed, lambda func: _builds_plainly(dotted_object(parsed, func)))
    _Rewriter(parsed, writes).run()
    parsed.forget_locals()  # (a local partial's values got names of their own)


def _builds_plainly(cls: Any) -> bool:
    """A class of the user's whose objects Python makes the usual way (as
    object_classes.built_objects takes them)."""
    return is_user_class(cls) and type(cls).__call__ is type.__call__ and \
        cls.__new__ is object.__new__


def _may_bind(parsed: Any) -> bool:
    """Whether the function may make a call this pass rewrites: a copy compiled for a class
    (``self.step``), or a global name (its code's names) bound to an object of a user class
    or to such a class (``sim = Heat(dt)``), to a ``functools.partial``, or to ``partial``
    itself."""
    if param_classes(parsed.fn):
        return True
    code = getattr(parsed.fn, "__code__", None)
    if code is None:
        return True
    for n in code.co_names + code.co_freevars:
        v = parsed.namespace.get(n)
        if n == "partial" or v is functools.partial or isinstance(v, functools.partial) or (
                isinstance(getattr(v, "__dict__", None), dict) and
                not isinstance(v, (type, types.ModuleType, types.FunctionType))) or \
                is_user_class(v):
            return True
    return False
