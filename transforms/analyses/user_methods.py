"""Calls ``x.m(...)`` named like an ndarray method with a rule (``copy``, ``sum``, ``reshape``
... : rules.methods.METHODS) that the code shows to be a method of an object of the user's.

The compiler takes ``x.copy()`` of a receiver it cannot resolve for ``np.copy(x)`` (an array
is by far the common receiver). A class of the user's with its own ``copy()`` (a state, a
configuration) then had ``np.copy``'s pullback applied to its result: ``c = cam.copy()`` with
``Cam.copy`` returning ``Cam(2 * self.w)`` gave ``cam.w`` the gradient ``v`` for ``2 v``, with
no error. This analysis reads the evidence the function itself gives that the receiver, or
the call's result, is not an ndarray:

- the result is read by an attribute no ndarray, list, dict or tuple has (``c = cam.copy();
  c.w``);
- the receiver is, or is read by such an attribute elsewhere in the function (``cam.w``);
- the receiver is bound to an instance of a class of the user's (``cam = Cam(w)``);
- the receiver is ``self`` in a method of a class that defines the method itself.

Input: the function after SSA (names as the reverse pass and forward mode see them).
Output: the ids of the call nodes that are the object's own method (called through adgen's
dispatch, which runs the method as written and differentiates it).
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any

import gast
import numpy as np
from adgen.transforms.object_classes import param_classes
from adgen.transforms.walk import walk

# a list's or dict's (xs.append, d.items): their copy() is the compiler's own container copy
_CONTAINER_ATTRIBUTES = frozenset(dir(list)) | frozenset(dir(dict)) | frozenset(dir(tuple))


def user_method_calls(fn: gast.FunctionDef, method_names: frozenset[str] | set[str],
                      resolve: Callable[[gast.expr], Any], function: Any = None) -> set[int]:
    """The ids of the calls ``x.m(...)`` (``m`` in ``method_names``, ``x`` a name) that the
    function shows to be a method of an object of the user's (see the module docstring).

    Args:
        fn: the function's tree.
        method_names: the ndarray method names the compiler maps to rules.
        resolve: the object a global name is bound to (None: a local or unknown).
        function: the Python function compiled (its class, for ``self.m()``), or None.
    """
    objects: set[str] = set()  # names read by an attribute no ndarray has
    built: set[str] = set()  # names bound to an instance of a class of the user's
    results: dict[int, str] = {}  # id(call) -> the name its result is bound to
    calls: list[gast.Call] = []
    for node in walk(fn):
        if isinstance(node, gast.Attribute) and isinstance(node.value, gast.Name) and \
                not hasattr(np.ndarray, node.attr) and node.attr not in _CONTAINER_ATTRIBUTES:
            objects.add(node.value.id)
        elif isinstance(node, gast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], gast.Name) and isinstance(node.value, gast.Call):
            results[id(node.value)] = node.targets[0].id
            if _users_class(resolve(node.value.func)):
                built.add(node.targets[0].id)
        if isinstance(node, gast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], gast.Name) and \
                isinstance(node.value, (gast.Name, gast.Attribute)) and \
                _users_object(resolve(node.value)):
            built.add(node.targets[0].id)  # s = model.scaler, an object of a global's
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and \
                node.func.attr in method_names and \
                isinstance(node.func.value, (gast.Name, gast.Attribute)):
            calls.append(node)
    if not calls:
        return set()
    own = _own_methods(fn, function)
    # a parameter compiled for an object of a class of the user's (object_classes.typed_for:
    # loss(v, s) given a Scaler s, whose s.dot(v) is Scaler.dot)
    classes = {fn.args.args[k].id: cls for k, cls in param_classes(function).items()
               if k < len(fn.args.args) and isinstance(fn.args.args[k], gast.Name)} \
        if function is not None else {}
    found = set()
    for call in calls:
        head = call.func.value  # type: ignore[union-attr]
        if not isinstance(head, gast.Name):
            # model.scaler.dot(v): the method of a global object's attribute
            if _users_object(resolve(head)):
                found.add(id(call))
            continue
        recv = head.id
        if isinstance(resolve(head), types.ModuleType):
            continue  # np.var(m): a function of a module (np read by np.ptp is no object)
        if recv in objects or recv in built or results.get(id(call)) in objects or \
                (recv in own and call.func.attr in own[recv]) or \
                (recv in classes and hasattr(classes[recv], call.func.attr)) or \
                _users_object(resolve(head)):  # type: ignore[union-attr]
            found.add(id(call))
    # the result of such a method (c = cam.copy(): a Cam, or anything) is not known to be an
    # array: its ndarray-named methods run as they are found too (c.sum() ran the rule of
    # np.sum on a Cam's tangent, a silently wrong jvp, before session 23)
    named = {results[k] for k in found if k in results}
    while named:
        more = {id(c) for c in calls if id(c) not in found and
                isinstance(c.func.value, gast.Name) and  # type: ignore[union-attr]
                c.func.value.id in named}  # type: ignore[union-attr]
        found |= more
        named = {results[k] for k in more if k in results}
    return found


def _users_object(obj: Any) -> bool:
    """``obj`` (a global's value) is an object of a class of the user's own code (not of an
    installed package's: a scipy.sparse matrix's ``R.T.dot(v)`` keeps its rule)."""
    import sys

    from adgen.errors import installed_file

    cls = type(obj)
    if not _users_class(cls):
        return False
    file = getattr(sys.modules.get(cls.__module__), "__file__", None)
    return not (file and installed_file(file))


def _users_class(cls: Any) -> bool:
    """``cls`` is a class of the user's (not an array's, a container's, a builtin's or
    NumPy's)."""
    return isinstance(cls, type) and \
        not issubclass(cls, (np.ndarray, np.generic, list, dict, tuple, set, type(None))) and \
        cls.__module__ not in ("builtins", "numpy") and \
        not cls.__module__.startswith(("numpy.", "adgen."))  # (the plan's MISSING)


def _own_methods(fn: gast.FunctionDef, function: Any) -> dict[str, set[str]]:
    """``{"self": {names of the methods its class defines}}`` for a method's first parameter
    (none for a function that is not a method of a class)."""
    if function is None or not fn.args.args or \
            not isinstance(getattr(function, "__qualname__", None), str):
        return {}
    owner: Any = inspect.getmodule(function)
    for part in function.__qualname__.split(".")[:-1]:
        owner = getattr(owner, part, None)
    if not isinstance(owner, type):
        return {}
    names = {n for klass in owner.__mro__ if klass is not object
             for n, v in vars(klass).items()
             if isinstance(v, (types.FunctionType, staticmethod, classmethod))}
    return {fn.args.args[0].id: names}
