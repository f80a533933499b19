"""Forward mode's tangents of global objects a function changes through their methods.

A loss reading a module-level object its calls change (``kf.update(z)`` setting ``self.x``,
``cell.step(x)`` setting ``self.h``, ``helper(x, CELL)``) is differentiated with the object's
state a constant at the call: the jvp code binds ``kf_dot = global_object_tangent(kf, key)``
at entry (a zero tangent of the object as the call finds it, :func:`global_object_tangent`),
and the method calls take it as their owner's tangent (``call_jvp(kf.update, ..., kf,
kf_dot)``), so the attributes they set get tangents. Until session 29 forward mode refused
such calls (tangent_call_forms.refuse_global_object_changed), having no tangent for the
object's attributes.

Reverse mode over that jvp code (hessian, hvp, jacfwd or jacrev of grad) and forward mode
over it do not follow the global object's attributes through the calls (the owner's
cotangents have nowhere to go: hvp was off by 0.5 to 5.6 in look-alikes), so both refuse a
function whose code calls :func:`global_object_tangent`, at the user's call
(:func:`refuse_differentiated_again`); :data:`SITES` keeps where each call is. A method
changing an object reached through a module's attribute (``cellmod.CELL.setup(x)``) is refused
at the call in both modes (:func:`refuse_module_path_methods`: a zero gradient, silently).

Input: the Tangent writer of one function (:func:`changed_global_objects`). Output: the names
of the globals to give such a tangent.
"""

from __future__ import annotations

import types
from typing import Any

import gast

from adgen.errors import Location, UnsupportedError

__all__ = ["SITES", "changed_global_objects", "global_object_tangent",
           "refuse_differentiated_again", "refuse_module_path_methods"]

# the key a jvp code's global_object_tangent call passes -> (the global's name, the call)
SITES: dict[str, tuple[str, Location]] = {}


def global_object_tangent(obj: Any, key: str) -> Any:
    """The zero tangent of the global object ``obj`` as the call finds it (``key``: where,
    for :func:`refuse_differentiated_again`)."""
    from adgen.rules.helpers_tangent import zero_tangent

    return zero_tangent(obj)


def changed_global_objects(tg: Any) -> dict[str, str]:
    """The globals the function's calls may change (tangent_call_forms'
    ``global_object_changed``, ``global_objects_given``: the calls forward mode refused), by
    name, each with the key of its first such call (noted in :data:`SITES`)."""
    from adgen.transforms.bindings import NOT_FOUND, dotted_object
    from adgen.transforms.tangent_ast import is_user_function
    from adgen.transforms.tangent_call_forms import (
        checkpointed_function,
        global_object_changed,
        global_objects_given,
    )
    from adgen.transforms.walk import walk

    from adgen.rules import registry

    out: dict[str, str] = {}
    for s in walk(tg.fn):
        v = getattr(s, "value", None) if isinstance(s, (gast.Assign, gast.Expr)) else None
        if not isinstance(v, gast.Call):
            continue
        found: list[str] = []
        if isinstance(v.func, gast.Attribute):
            if not isinstance(v.func.value, gast.Name) or tg.parsed.is_local(v.func.value.id):
                continue
            held = dotted_object(tg.parsed, v.func.value)
            if held is NOT_FOUND or isinstance(held, (type, types.ModuleType)) or \
                    not isinstance(getattr(held, "__dict__", None), dict):
                continue  # (np.sum(x), math.exp(t): no object; checked before the walks)
            held = global_object_changed(tg, s, v)
            found = [held] if held is not None else []
        else:
            obj = tg.resolve(v.func)
            if obj is not None:
                ref = registry.reference_of(obj)
                obj = checkpointed_function(ref if ref is not None else obj)
                if registry.lookup(obj) is None and is_user_function(obj) and \
                        registry.refusal_of(obj) is None:
                    found = global_objects_given(tg, s, v, obj)
        for n in found:
            if n not in out:
                loc = tg.parsed.location(s)
                key = f"{loc.file}:{loc.line}:{loc.col}:{n}"
                SITES[key] = (n, loc)
                out[n] = key
    return out


def refuse_differentiated_again(fn: Any) -> None:
    """Refuses differentiating again (reverse or forward mode) jvp code that gave a global
    object a tangent (it calls :func:`global_object_tangent`), at the user's call."""
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType) or "global_object_tangent" not in code.co_names:
        return
    if getattr(fn, "__globals__", {}).get("global_object_tangent") is not global_object_tangent:
        return
    for c in code.co_consts:
        if isinstance(c, str) and c in SITES:
            name, loc = SITES[c]
            raise UnsupportedError(
                "second derivatives (hessian, hvp, jacfwd or jacrev of grad, jvp of jvp) of a "
                f"function whose calls change the global object {name} (set its attributes) "
                "are not supported: the jvp follows its attributes, with its state as the call "
                "finds it, but differentiated again the object's derivatives are not followed",
                loc,
                hint=f"make {name} an argument (def loss(x, {name}): ...), then "
                     f"adgen.hessian(loss)(x, {name}) (each run from the arguments as given, "
                     f"{name} ends as one call of loss leaves it); first derivatives (grad, "
                     "jvp) work as it is")


def refuse_module_path_methods(parsed: Any, tree: gast.FunctionDef) -> None:
    """Refuses ``cellmod.CELL.setup(x)``: a method that may change its object (not only count
    its calls), called on an object of a class of the user's reached through a module's
    attribute. Neither mode followed the object's attributes there (``cellmod.CELL.w`` read
    after it had a zero gradient and a zero tangent, silently, where ``CELL`` imported by
    name is followed: ``CELL.setup(x)``)."""
    from adgen.transforms.feature_names import names_a_user_module

    code = getattr(parsed.fn, "__code__", None)
    if not names_a_user_module(parsed.namespace, getattr(code, "co_names", ())):
        return  # (most functions: no module of the user's, no walk, no imports)
    from adgen.transforms.analyses.number_updates import holds_numbers
    from adgen.transforms.argument_writes import leaves_arguments
    from adgen.transforms.bindings import NOT_FOUND, dotted_object
    from adgen.transforms.object_classes import class_attribute, is_user_class
    from adgen.transforms.pipeline import compile_function
    from adgen.transforms.walk import walk

    from adgen.errors import AdgenError
    for c in walk(tree):
        if not (isinstance(c, gast.Call) and isinstance(c.func, gast.Attribute) and
                isinstance(c.func.value, gast.Attribute)):
            continue
        root = c.func.value
        while isinstance(root, gast.Attribute):
            root = root.value
        if not isinstance(root, gast.Name) or parsed.is_local(root.id) or \
                not isinstance(dotted_object(parsed, root), types.ModuleType):
            continue
        held = dotted_object(parsed, c.func.value)
        if held is NOT_FOUND or isinstance(held, (type, types.ModuleType)) or \
                not is_user_class(type(held)) or \
                not isinstance(getattr(held, "__dict__", None), dict) or \
                c.func.attr in held.__dict__:
            continue
        fn = class_attribute(type(held), c.func.attr)
        if not isinstance(fn, types.FunctionType) or leaves_arguments(fn):
            continue
        try:
            if holds_numbers(compile_function(fn).number_updates, (held,)):
                continue
        except AdgenError:
            pass
        from adgen.transforms.tangent_ast import source_of

        path = source_of(c.func.value)
        last = path.rsplit(".", 1)[-1]
        raise UnsupportedError(
            f"{source_of(c.func)}(...), a method that may change {path} (set its attributes), "
            f"an object reached through a module's attribute: adgen does not follow its "
            "attributes there", parsed.location(c),
            hint=f"import it by name (from {path.rsplit('.', 1)[0]} import {last}) and call "
                 f"{last}.{c.func.attr}(...), which grad and jvp follow, or pass it to the "
                 "function as an argument")
