"""Objects of a class known when a function compiles: the function's copies compiled for
them, and the check of an object the function builds.

``bound_callees`` writes ``model.step(u)`` as the call of the function the class holds
(``Heat.step(model, u)``, which adgen follows where it writes ``u``) when it knows the class
of ``model`` as it compiles. It knows it for

- ``self`` of a method compiled for its receiver's class (``receiver_of``: the dispatch and
  ``grad(model.loss)`` compile one copy per class);
- a parameter the function is compiled for: an argument of a user's class is part of the
  signature (``analyses.kinds.OBJECT``), and :func:`typed_for` gives the pipeline a copy of
  the function for those classes (:func:`typed_clone`, ``__adgen_param_classes__``), where its
  code may call their methods (:func:`wants_class`); the signature has no entry for an object
  holding a value of its own under the name of a function of its class (``model.step =
  other``), which then runs as Python finds it. A helper handed such a parameter is compiled
  for its class alike (``advance(model, u)``);
- an object the function builds from a class of the user's, bound once (:func:`built_objects`:
  ``sim = Heat(dt)``), whose ``__init__`` may still give it a value of its own under a
  method's name (``self.step = self.rk4``): :func:`insert_checks` puts the check of that
  (``adgen.receiver_checks.method_of_class``) before each call rewritten on it.

Every copy is one per function and classes (the compile cache keys it by identity).
"""

from __future__ import annotations

import copy
import types
from typing import Any

import gast
from adgen.transforms.analyses.kinds import is_object_entry
from adgen.transforms.bindings import NOT_FOUND, Guard, dotted_object
from adgen.transforms.walk import body_nodes

__all__ = ["built_objects", "class_attribute", "function_copy", "insert_checks",
           "original_guards", "param_classes", "plain_function", "receiver_of", "typed_clone",
           "typed_for", "typed_method", "wants_class"]

# (function, ((position, class), ...)) -> the function's copy compiled for parameters of
# those classes (typed_clone)
_TYPED: dict[tuple[Any, tuple[tuple[int, type], ...]], types.FunctionType] = {}
# (code, class) -> wants_class's answer
_WANTS_CLASS: dict[tuple[Any, type], bool] = {}
# modules whose classes and functions are not the user's
_NOT_USERS = ("numpy", "adgen.", "builtins")


def receiver_of(fn: Any) -> type | None:
    """The class of the first parameter a copy made by ``bound_callees.receiver_clone`` is
    compiled for, or None."""
    return getattr(fn, "__adgen_receiver__", None)


def param_classes(fn: Any) -> dict[int, type]:
    """The classes of the parameters a copy is compiled for, by position: its receiver's
    (``bound_callees.receiver_clone``) and those :func:`typed_clone` gives."""
    out = dict(getattr(fn, "__adgen_param_classes__", ()))
    cls = receiver_of(fn)
    if cls is not None:
        out[0] = cls
    return out


def function_copy(fn: types.FunctionType, cls: type | None) -> types.FunctionType:
    """``fn`` as a new function object (its code, globals, defaults and closure), its
    receiver's class ``cls`` (or None) and the function it copies recorded on it."""
    clone = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                               fn.__closure__)
    clone.__kwdefaults__ = fn.__kwdefaults__
    clone.__qualname__ = fn.__qualname__
    clone.__module__ = fn.__module__
    clone.__doc__ = fn.__doc__
    clone.__dict__.update(fn.__dict__)
    clone.__adgen_receiver__ = cls  # type: ignore[attr-defined]
    clone.__adgen_method__ = fn  # type: ignore[attr-defined]
    return clone


def typed_clone(fn: types.FunctionType, classes: tuple[tuple[int, type], ...]
                ) -> types.FunctionType:
    """``fn`` as a function of its own, compiled for arguments of the given classes at the
    given positions (``loss(model, u)`` for a ``Heat`` model: ``model.step(u)`` is then a
    call of ``Heat.step`` the compiled code follows). One per function and classes."""
    key = (fn, classes)
    clone = _TYPED.get(key)
    if clone is None or clone.__code__ is not fn.__code__ or \
            clone.__defaults__ is not fn.__defaults__ or \
            clone.__kwdefaults__ is not fn.__kwdefaults__:
        # (new, or fn's code or defaults replaced since: autoreload, a redefinition in place)
        clone = function_copy(fn, receiver_of(fn))
        clone.__adgen_param_classes__ = tuple(sorted(  # type: ignore[attr-defined]
            {**dict(getattr(fn, "__adgen_param_classes__", ())), **dict(classes)}.items(),
            key=lambda kc: kc[0]))
        clone.__adgen_method__ = getattr(fn, "__adgen_method__", fn)  # type: ignore
        _TYPED[key] = clone
    return clone


def original_guards(fn: Any) -> list[Guard]:
    """For a :func:`typed_clone`: the guards that the function it copies still has the code
    and defaults the copy was made with (``loss.__code__`` replaced: compiled again, from a
    new copy), as the function's own guards are for the function compiled."""
    original = getattr(fn, "__adgen_method__", None)
    if not getattr(fn, "__adgen_param_classes__", ()) or original is None:
        return []
    return [Guard(attr, attr, original, None, "attr", getattr(original, attr))
            for attr in ("__code__", "__defaults__", "__kwdefaults__")
            if getattr(original, attr, None) is not None]


def class_attribute(cls: type, name: str) -> Any:
    """What ``cls`` holds under ``name`` (its own or a base's ``__dict__``, in MRO order), as
    stored: a function, not the method Python makes of it; NOT_FOUND when none holds it."""
    for k in cls.__mro__:
        found = k.__dict__.get(name, NOT_FOUND)
        if found is not NOT_FOUND:
            return found
    return NOT_FOUND


def plain_function(fn: Any) -> bool:
    """A plain Python function (not a method, a builtin, NumPy's or adgen's own)."""
    return isinstance(fn, types.FunctionType) and \
        not str(getattr(fn, "__module__", "")).startswith(("numpy", "adgen."))


def wants_class(fn: types.FunctionType, cls: type) -> bool:
    """Whether ``fn``'s code, or that of a global user function it names (and so on), reads
    a name that ``cls`` holds as a plain function, or ``cls`` has a ``__call__`` of the
    user's: a method it may call on an object of the class, which :func:`typed_clone` then
    lets it follow. (Remembered per code and class.)"""
    key = (fn.__code__, cls)
    found = _WANTS_CLASS.get(key)
    if found is None:
        _WANTS_CLASS[key] = False  # (a recursive helper)
        names = _code_names(fn.__code__)
        # (a __call__ of the user's: the object may be called, bn(x), which
        # bound_callees.object_call reads as bn.__call__(x))
        found = any(isinstance(class_attribute(cls, n), types.FunctionType)
                    for n in names | {"__call__"}) \
            or any(plain_function(g) and wants_class(g, cls)
                   for g in (fn.__globals__.get(n) for n in names))
        _WANTS_CLASS[key] = found
    return found


def _code_names(code: Any) -> set[str]:
    """The names a code object and the code objects in it (comprehensions, lambdas) read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def typed_for(fn: Any, sig: tuple[Any, ...]) -> tuple[Any, tuple[Any, ...]]:
    """``fn`` and ``sig`` as ``pipeline.compile_function`` compiles them: the objects'
    entries of the signature (``analyses.kinds.OBJECT``: the argument's class) without their
    class (``(OBJECT, None)``: the pipeline takes those parameters for objects, never for
    arrays an argument may share), and ``fn`` a :func:`typed_clone` for those classes where
    its code may call their methods (else ``fn`` itself)."""
    if not any(is_object_entry(k) for k in sig):
        return fn, sig
    plain = tuple((k[0], None) if is_object_entry(k) else k for k in sig)
    if not isinstance(fn, types.FunctionType):
        return fn, plain
    have = param_classes(fn)
    wanted = tuple((n, k[1]) for n, k in enumerate(sig)
                   if is_object_entry(k) and k[1] is not None and
                   n < fn.__code__.co_argcount and n not in have and wants_class(fn, k[1]))
    return (typed_clone(fn, wanted) if wanted else fn), plain


def typed_method(fn: Any, params: list[str], recv: str, attr: str) -> bool:
    """Whether ``recv.attr(...)`` in ``fn`` (a copy compiled for its parameters' classes,
    ``params`` its parameter names) calls a plain function of the user's class: ``recv`` is
    a parameter the copy is compiled for an object of that class, which defines ``attr``
    (``m.update(w)`` of a model given: its own method, though a dict has one of that name)."""
    import inspect

    classes = param_classes(fn)
    for k, cls in classes.items():
        if k < len(params) and params[k] == recv:
            return is_user_class(cls) and \
                isinstance(inspect.getattr_static(cls, attr, None), types.FunctionType)
    return False


def is_user_class(obj: Any) -> bool:
    """A class of the user's (not NumPy's, adgen's or a builtin)."""
    return isinstance(obj, type) and \
        not str(getattr(obj, "__module__", "")).startswith(_NOT_USERS)


def built_objects(parsed: Any, stores: dict[str, int]) -> dict[str, type]:
    """The names bound once, by a call of a class of the user's whose objects Python makes
    the usual way (``sim = Heat(dt)``: a ``Heat``), to that class."""
    out: dict[str, type] = {}
    params = {a.id for a in parsed.tree.args.args}
    for st in body_nodes(parsed.tree.body):
        if not (isinstance(st, gast.Assign) and len(st.targets) == 1 and
                isinstance(st.targets[0], gast.Name) and isinstance(st.value, gast.Call)):
            continue
        name = st.targets[0].id
        if stores.get(name) != 1 or name in params:
            continue
        cls = dotted_object(parsed, st.value.func)
        if is_user_class(cls) and type(cls).__call__ is type.__call__ and \
                cls.__new__ is object.__new__:
            out[name] = cls
    out.update(_built_with_tangent(parsed, stores, params))
    return out


def _built_with_tangent(parsed: Any, stores: dict[str, int], params: set[str]
                        ) -> dict[str, type]:
    """``n, n_dot = construct_jvp(Heat, ...)`` of jvp code (tangent_call_forms.construction),
    which reverse mode differentiates again (hessian), as the front end leaves it (``t3 =
    construct_jvp(Heat, ...); n = t3[0]; n_dot = t3[1]``): both names, each bound once, to
    the class (the object and its tangent object are objects of it, not arrays)."""
    from adgen import runtime

    binds = [(st.targets[0].id, st.value) for st in body_nodes(parsed.tree.body)
             if isinstance(st, gast.Assign) and len(st.targets) == 1 and
             isinstance(st.targets[0], gast.Name) and stores.get(st.targets[0].id) == 1]
    pairs: dict[str, type] = {}
    for name, v in binds:
        if isinstance(v, gast.Call) and v.args and \
                dotted_object(parsed, v.func) is runtime.construct_jvp:
            cls = dotted_object(parsed, v.args[0])
            if is_user_class(cls) and type(cls).__call__ is type.__call__ and \
                    cls.__new__ is object.__new__:
                pairs[name] = cls
    return {name: pairs[v.value.id] for name, v in binds
            if isinstance(v, gast.Subscript) and isinstance(v.value, gast.Name) and
            v.value.id in pairs and isinstance(v.slice, gast.Constant) and
            v.slice.value in (0, 1) and name not in params}


def insert_checks(parsed: Any, body: list[gast.stmt],
                  checked: dict[int, Any], bind: Any, fresh: Any) -> None:
    """Before each statement of ``body`` (and of the bodies in it) that makes one of the
    calls ``checked`` (by id: the object's name, its class, the method's name, or a list of
    those: a helper given the object, bound_callees.typed_call) on an object
    the function built, that object's check (``receiver_checks.method_of_class``) at the
    user's line. ``bind(base, value)`` gives the name the generated code reads ``value`` by,
    ``fresh(base)`` a new local name.

    Where code of the statement other than the call may run between the check and the call
    (another call in it, the call in a comprehension, a while's condition evaluated again),
    the check runs again after it: an object given a method of its own there is refused,
    not run as its class's method."""
    from adgen.receiver_checks import method_of_class

    for st in list(body):
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(st, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], gast.stmt):
                insert_checks(parsed, inner, checked, bind, fresh)
        for handler in getattr(st, "handlers", ()):
            insert_checks(parsed, handler.body, checked, bind, fresh)
        for case in getattr(st, "cases", ()):
            insert_checks(parsed, case.body, checked, bind, fresh)
        if isinstance(st, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            continue
        checks = []
        for node in _own_nodes(st):
            found = checked.get(id(node))
            if found is None:
                continue
            for who, cls, attr in found if isinstance(found, list) else [found]:
                check = bind("method_of_class", method_of_class)
                held = cls.__name__ if parsed.namespace.get(cls.__name__) is cls and \
                    not parsed.is_local(cls.__name__) else bind(cls.__name__, cls)
                line = getattr(node, "lineno", 0) or getattr(st, "lineno", 0)
                call = gast.Call(gast.Name(check, gast.Load(), None, None), [
                    gast.Name(who, gast.Load(), None, None),
                    gast.Name(held, gast.Load(), None, None),
                    gast.Constant(attr, None), gast.Constant(parsed.file, None),
                    gast.Constant(line, None)], [])
                checks.append(gast.copy_location(gast.Expr(call), st))
        at = body.index(st)
        body[at:at] = checks
        if checks and isinstance(st, gast.While):
            # Python evaluates a while's condition before each turn: the checks run again
            # where a turn ends (the body's end, each continue of this loop)
            _before_next_turn(st.body, checks)
        if checks and _may_run_between(st, checked):
            _after(st, body, checks, fresh)


def _may_run_between(st: gast.stmt, checked: dict[int, Any]) -> bool:
    """Whether code other than a checked call may run after the statement's checks and
    before that call: another call in the statement's own expressions, or the call inside a
    comprehension (run once per item)."""
    calls = [n for n in _own_nodes(st) if isinstance(n, gast.Call)]
    if len(calls) > 1:
        return True
    comps = (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)
    return any(isinstance(n, comps) and any(id(c) in checked for c in body_nodes([n]))
               for n in _own_nodes(st))


def _after(st: gast.stmt, body: list[gast.stmt], checks: list[gast.stmt], fresh: Any) -> None:
    """``checks`` (copies) right after the statement's expressions have run."""
    if isinstance(st, (gast.Expr, gast.Assign, gast.AugAssign, gast.AnnAssign)):
        at = body.index(st) + 1
        body[at:at] = copy.deepcopy(checks)
    elif isinstance(st, (gast.If, gast.While, gast.For)):
        # after the condition (the iterable): first in each arm
        st.body[:0] = copy.deepcopy(checks)
        st.orelse[:0] = copy.deepcopy(checks)
    elif isinstance(st, gast.Return) and st.value is not None:
        # return e  ->  result = e; <checks>; return result
        held = fresh("result")
        at = body.index(st)
        body[at:at] = [gast.copy_location(gast.Assign(
            [gast.Name(held, gast.Store(), None, None)], st.value, None), st),
            *copy.deepcopy(checks)]
        st.value = gast.Name(held, gast.Load(), None, None)


def _before_next_turn(body: list[gast.stmt], checks: list[gast.stmt]) -> None:
    """``checks`` (copies) at the end of a loop's ``body`` and before each ``continue`` of
    that loop in it (not of a loop nested in it)."""
    body.extend(copy.deepcopy(checks))
    _before_next_turn_here(body, checks)


def _before_next_turn_here(body: list[gast.stmt], checks: list[gast.stmt]) -> None:
    """``checks`` before each ``continue`` of the enclosing loop in ``body``."""
    for st in list(body):
        if isinstance(st, gast.Continue):
            at = body.index(st)
            body[at:at] = copy.deepcopy(checks)
        elif isinstance(st, (gast.If, gast.Try, gast.With, gast.Match)):
            for inner in _inner_bodies(st):
                _before_next_turn_here(inner, checks)


def _inner_bodies(st: gast.stmt) -> list[list[gast.stmt]]:
    """The statement lists of a compound statement that is not a loop or a def."""
    out = [getattr(st, f) for f in ("body", "orelse", "finalbody")
           if isinstance(getattr(st, f, None), list)]
    out += [h.body for h in getattr(st, "handlers", ())]
    out += [c.body for c in getattr(st, "cases", ())]
    return out


def _own_nodes(st: gast.stmt) -> list[Any]:
    """The nodes of a statement's own expressions (not of the statements in its body, nor
    inside nested defs and lambdas)."""
    own = [c for c in gast.iter_child_nodes(st)
           if not isinstance(c, (gast.stmt, gast.excepthandler, gast.match_case))]
    return list(body_nodes(own))
