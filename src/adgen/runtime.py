"""What generated code imports: zeros, accumulation, shadow memory, guards, dynamic calls.

Generated modules do ``from adgen.runtime import ...`` and nothing else of adgen. Everything
here that a standalone module (``adgen FILE -o OUT``) needs is a plain top-level function or
class using only numpy, so the emitter can copy its source.
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:
    from adgen.rules.helpers import *  # noqa: F401,F403  (rule templates call these by name)
    from adgen.rules.helpers import __all__ as _helper_names
except ImportError:  # pragma: no cover - while the rules are being written
    _helper_names = []

from adgen.adjoints import (  # noqa: F401  (re-exported: generated code imports them here)
    ObjectAdjoint,
    Unbound,
    add,
    as_gradient,
    complex_adjoints,
    copy_adjoint,
    is_function_like,
    item,
    locate,
    made_list_adjoint,
    or_zeros,
    or_zeros_of_tree,
    refuse_array_form,
    refuse_object_read_as_value,
    shadow_dtype,
    zero_if_none,
    zeros_like,
    zeros_of_tree,
)
from adgen.callbacks import checked_callable  # noqa: F401  (re-exported: generated code)
from adgen.closure_tangents import closure_tangent  # noqa: F401  (re-exported: tangent code)
from adgen.constant_attributes import (  # noqa: F401  (re-exported: generated code)
    constant_attribute,
    plain_attribute_store,
)
from adgen.copy_hints import copy_hint  # noqa: F401  (re-exported: generated code)
from adgen.guards import (  # noqa: F401  (re-exported: generated code imports them here)
    Capture,
    GuardScope,
    before_write,
    capture,
    copy_before_loop,
    copy_when_read,
    current_scope,
    guard_scope,
    measure_saves,
    remap_saved,
    source_line,
)
from adgen.item_shadows import (  # noqa: F401  (re-exported: generated code imports them here)
    items_at,
    items_to_shadows,
    shadows_to_items,
    slots_changed,
    slots_changed_by,
    slots_changed_by_call,
)
from adgen.shadow_memory import (  # noqa: F401  (re-exported: generated code imports them here)
    ShadowMap,
    add_out,
    collect,
    data_address,
    entry_items,
    keyword_cotangent,
    root_of,
    shadow_of,
    with_shadows,
)
from adgen.shared_arguments import refuse_shared  # noqa: F401  (re-exported)
from adgen.write_regions import flat_target, write_region  # noqa: F401  (re-exported)

# --------------------------------------------------------------------------------------------
# In-place operators: `x += v` writes an ndarray in place and rebinds anything else.


def is_buffer(x: Any) -> bool:
    """True when an augmented assignment on ``x`` writes it in place (an ndarray)."""
    return isinstance(x, np.ndarray)


# --------------------------------------------------------------------------------------------
# Calls of user functions that are not known at compile time (closures, methods, arguments).


def plain_result(value: Any, what: str) -> None:
    """Refuses an np.matrix or masked array that ``what`` gave (code adgen runs as it is: an
    object's method, a function known only when it runs, a global object's item; its value
    meets values with a derivative: transforms.analyses.foreign_values), or that an object,
    list, tuple or dict it gave holds at any depth (``c = make_c()``, whose methods the
    function calls read ``self.M`` or ``self.inner.deep.M``): the rules that follow treat it
    as a plain ndarray, whose operators differ (a masked array's skip elements)."""
    if type(value) is np.ndarray or isinstance(value, (float, int, complex, str)):
        return
    # the whole object: an array a method reads as self.inner.deep.M is as wrong as
    # self.M (two levels were checked, and cfg.inner.deep.M + v was silently wrong)
    found = held_subclass(value, "", 64)
    if found is not None:
        from adgen.errors import NonDifferentiableError

        path, array = found
        kind = f"a {type(array).__module__}.{type(array).__qualname__}"
        raise NonDifferentiableError(
            (f"{what} gave {kind}" if not path else f"{what}{path} is {kind}") +
            ", an ndarray subclass: adgen "
            "differentiates plain ndarrays, and a subclass's operators mean something else "
            "(np.matrix: * is a matrix product; a masked array skips masked elements), "
            "which would make the gradient wrong",
            hint="return np.asarray(value) from it (for a masked array: "
                 "value.filled(fill), or its mask as an array used with np.where)")


def held_subclass(value: Any, path: str, depth: int) -> tuple[str, Any] | None:
    """``(path, array)`` of an np.matrix or masked array that ``value`` is or holds (in an
    object's stored attributes, lists, tuples and dicts, ``depth`` levels down; the first
    256 items of each, each object once, 4096 values in all), or None.
    np.memmap computes as an ndarray and is not one (arguments.is_array_subclass, written
    here for standalone modules)."""
    import types  # here: a standalone module copies this function, not runtime's imports

    # (value, depth left, (form, key, parent)): the path is built for the value found only
    todo: list[tuple[Any, int, Any]] = [(value, depth, None)]
    seen: set[int] = set()
    budget = 4096
    while todo and budget:
        value, left, where = todo.pop()
        budget -= 1
        if isinstance(value, np.ndarray):
            if type(value) is not np.ndarray and not isinstance(value, np.memmap):
                parts = []
                while where is not None:
                    form, key, where = where
                    parts.append(form.format(key))
                return path + "".join(reversed(parts)), value
            continue
        if left == 0 or isinstance(value, (float, int, complex, str, bytes)) or \
                id(value) in seen:
            continue
        seen.add(id(value))  # (an object that holds itself, or two paths to one object)
        if isinstance(value, dict):
            items: Any = value.items()
            form = "[{!r}]"
        elif isinstance(value, (list, tuple)):
            items = enumerate(value)
            form = "[{}]"
        else:
            stored = getattr(value, "__dict__", None)
            if not isinstance(stored, dict) or isinstance(value, (
                    type, types.ModuleType, types.FunctionType, types.MethodType)):
                continue  # a number, a module's or class's namespace, a function
            items = stored.items()
            form = ".{}"
        found = []
        for count, (k, v) in enumerate(items):
            if count == 256:  # (a long list of numbers: its first items only)
                break
            if not isinstance(v, (float, int, str)):
                found.append((v, left - 1, (form, k, where)))
        todo.extend(reversed(found))  # the first item first
    return None


def call_forward(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """Calls ``fn`` through its adgen forward (or its rule); returns (out, saved).
    ``kwargs`` may hold the caller's note of which values carry a derivative
    (adgen.passed_derivatives), which is not passed on."""
    from adgen.counter_slots import COUNTERS
    from adgen.dispatch import forward_of
    from adgen.passed_derivatives import split_mask

    kwargs, active = split_mask(kwargs)
    if COUNTERS:  # a counter updated as a number: the call must leave no array there
        from adgen.counter_slots import keeping_counters

        return keeping_counters(forward_of, fn)(fn, args, kwargs, active)
    return forward_of(fn, args, kwargs, active)


# --------------------------------------------------------------------------------------------
# with blocks (transforms.lower_control): a context manager that changes nothing a derivative
# depends on (np.errstate, ...) is made and entered, and left when the block ends or raises.


def call_starred(fn: Any, method: Any, args: Any, kwargs: Any, line: int = 0) -> Any:
    """``fn(*args, **kwargs)``, or ``fn.method(*args, **kwargs)`` where ``method`` is a
    name: the user's call with starred arguments at ``line`` (transforms.desugar); its rule
    (starred_calls.call_starred_rrule) differentiates the function when the call runs."""
    f = fn if method is None else getattr(fn, method)
    return f(*args, **kwargs)


def enter_context(make: Any, *args: Any, **kwargs: Any) -> list[Any]:
    """``with make(*args, **kwargs)``: makes the context manager and enters it; returns
    ``[manager, what __enter__ returned]`` for :func:`entered_value` and
    :func:`exit_context`."""
    manager = make(*args, **kwargs)
    return [manager, manager.__enter__()]


def entered_value(context: list[Any]) -> Any:
    """What the manager's ``__enter__`` returned (the ``as`` target of the with)."""
    return context[1]


def exit_context(context: list[Any]) -> None:
    """Leaves the context (these managers never suppress an exception)."""
    context[0].__exit__(None, None, None)


def call_jvp(fn: Any, args: tuple[Any, ...], tangents: tuple[Any, ...],
             kwargs: dict[str, Any], owner: Any = None, owner_dot: Any = None
             ) -> tuple[Any, Any]:
    """Forward mode's call of a function it could not name when it compiled: ``(out,
    out_dot)`` (a function from a list, a ``functools.partial``, a method of a local
    object). ``owner``: the object the function value was taken from (``m`` of
    ``m.step(x)``, ``layer`` of ``layer(x)``), ``owner_dot`` its tangent (None: none)."""
    from adgen.tangent_calls import tangent_of_call

    return tangent_of_call(fn, args, tangents, kwargs, owner, owner_dot)


def construct_jvp(cls: type, args: tuple[Any, ...], tangents: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """Forward mode's ``n = cls(*args)`` of a class of the user's: ``(n, n_dot)``, the new
    object and its tangent (adgen.built_inside)."""
    from adgen.built_inside import construct_jvp as built

    return built(cls, args, tangents, kwargs)


def call_pullback(saved: Any, out_bar: Any, sh: ShadowMap | None = None) -> tuple[Any, ...]:
    """The pullback of a :func:`call_forward`; one cotangent per positional argument."""
    from adgen.dispatch import pullback_of

    if sh is not None and sh._deposits and type(saved) is tuple and saved and (
            saved[0] == "compiled alone" or saved[0] == "rrule" and getattr(
                getattr(saved[1], "primal", None), "__name__", None) in (
                    "call_jvp", "call_jvp_tangent")):
        # a method updating a counter (self.calls += 1): its pullback runs alone, with a map
        # of its own, which starts from the adjoints this caller handed over (sh.deposit)
        # (s.advance(k) also setting self.u gave a zero gradient through it before). So does
        # the compiled jvp a call_jvp's rule runs (tangent_calls._jvp_rrule), handed the
        # adjoints of the object and its tangent (a method setting self.n at second order)
        ShadowMap._carried.deposits = dict(sh._deposits)
        try:
            return pullback_of(saved, out_bar, sh)
        finally:
            ShadowMap._carried.deposits = None
    return pullback_of(saved, out_bar, sh)


_ABSENT = object()


def with_receiver(cts: tuple[Any, ...], n: int, obj: Any = None,
                  attr: str | None = None, slots: Any = None) -> tuple[Any, ...]:
    """The cotangents of ``obj.f(*args)`` (``n`` = 1 + len(args), ``attr`` is ``f``): a
    method's come with its receiver's; a function held in an attribute was not passed
    ``obj``, which gets None. A callable object or another object's method held in an
    attribute of ``obj`` (``self.fc = Dense(w)``; ``self.fc(x)``, or ``h.fn = m.loss``) came
    with its own object's cotangent, which is obj's through the attribute (given to obj as its
    own, the layer's weights got a zero gradient, silently). ``slots``: obj's slots as the call
    found them (item_shadows.items_at), where the function stores the attribute later
    (``s = m.f(x); m.f = other.f``: read when the pullback runs, the method's receiver
    cotangent went to an attribute ``f`` of m's adjoint, and m.w's gradient through the call
    was lost, silently)."""
    if len(cts) != n:
        return (None, *cts)
    if attr is None or isinstance(obj, type):
        return tuple(cts)
    held = getattr(obj if slots is None else slots, "__dict__", {}).get(attr, _ABSENT)
    if held is not _ABSENT:
        if getattr(held, "__self__", None) is obj:
            return tuple(cts)  # obj's own method stored in itself (self.step = self.euler)
        return (ObjectAdjoint({attr: cts[0]}), *cts[1:])
    import inspect

    if inspect.getattr_static(obj, attr, _ABSENT) is _ABSENT and \
            hasattr(type(obj), "__getattr__"):
        from adgen.errors import UnsupportedError

        raise locate(UnsupportedError(
            f"a method found through {type(obj).__qualname__}.__getattr__ ({attr}, "
            "delegated to another object) is not differentiated: adgen cannot tell which "
            "object its gradient belongs to",
            hint=f"call the method on the object it belongs to (obj.{attr}(...) where obj is "
                 "the object the proxy holds)"))
    return tuple(cts)


class HeldItems:
    """A list, tuple, dict or object (``of``) and what its slots held when :func:`held_items`
    looked (``slots``: a list, or a dict by key or attribute name)."""

    __slots__ = ("of", "slots")

    def __init__(self, of: Any, slots: Any) -> None:
        self.of = of
        self.slots = slots


def held_items(x: Any, saved: Any = None, made: dict[int, Any] | None = None) -> Any:
    """What ``x`` (a name that may hold an object a call changes) holds right after the call,
    at any depth, for :func:`held_adjoint`, whose pullback runs after later lines may have
    rebound its slots (``h = self.fc(x); self.fc = self.other``: walked as it is then, the
    adjoint of what ``self.fc`` held went to the other layer's weights, silently). ``saved``:
    the call's saved values, as held_adjoint is given them (a call that changes no object:
    None, nothing is walked)."""
    if saved is not None and changes_no_object(saved):
        return None
    made = {} if made is None else made
    if id(x) in made:
        return made[id(x)]
    if isinstance(x, (list, tuple)):
        out = made[id(x)] = HeldItems(x, [])
        out.slots.extend(held_items(v, None, made) for v in x)
    elif isinstance(x, dict):
        out = made[id(x)] = HeldItems(x, {})
        out.slots.update((k, held_items(v, None, made)) for k, v in x.items())
    elif hasattr(x, "__dict__") and not isinstance(x, (type, np.ndarray, np.generic)) and \
            not is_function_like(x):
        out = made[id(x)] = HeldItems(x, {})
        out.slots.update((k, held_items(v, None, made)) for k, v in vars(x).items())
    else:
        return x
    return out


def held_adjoint(obj: Any, own: Any, saved: Any, *holders: Any) -> tuple[Any, ...]:
    """Before the pullback of a call that may change the object ``obj`` (``m.forward(x)``
    setting ``self.z``): its adjoint, and the adjoints of ``holders`` without it.

    A later read of the object through a container or object that holds it
    (``layers[0].z``, ``self.layers`` in another method) put the read's adjoint in the
    holder's adjoint, which the pullback hands to the object's name only once past the line
    that read the object out or stored it in (``m = layers[0]``, ``layers = [m]``): the
    call's pullback got a zero for what it set (a silently wrong gradient). ``holders`` are
    (value, adjoint) pairs, alternating: the names whose adjoint the pullback holds that may
    hold ``obj`` (by identity, at any depth of lists, tuples, dicts and objects). The adjoint
    found there is taken out of them (new containers along the way) and added to ``own``
    (None: none yet), so it reaches the object once. ``saved``: the call's saved values
    where it is resolved when it runs (None otherwise): a call that changes no object moves
    nothing (a loop over a model's layers is not walked at each step).

    Returns:
        (the object's adjoint, each holder's adjoint without it).
    """
    if changes_no_object(saved):
        # (the call changes no object: what the holders hold of obj reaches it as before)
        return (own if own is not None else zeros_like(obj), *holders[1::2])
    total = own
    out = []
    from types import MethodType

    if isinstance(obj, MethodType) and not isinstance(obj.__self__, type):
        # step = m.fit_step; step(x), the method setting self.h, read after (m.energy()):
        # the adjoint it starts from is its object's (held by m's name; it got a zero, and
        # the gradient through m.h was lost, silently); ShadowMap.deposit keys it so
        obj = obj.__self__
    for k in range(0, len(holders), 2):
        if holders[k] is None:  # (held_items: the call changes no object)
            out.append(holders[k + 1])
            continue
        if _held(holders[k]) is obj:  # another name of the object (m = Model(w); ms = [m]; ms[0]...)
            found, rest = holders[k + 1], zeros_like(obj)
        else:
            found, rest = _take_held(obj, holders[k], holders[k + 1], set())
        if found is not None:
            total = add(total, found)
        out.append(rest)
    if total is None:
        total = zeros_like(obj)
    return (total, *out)


def changes_no_object(saved: Any) -> bool:
    """Whether the call whose saved values (dispatch.forward_of's) are ``saved`` changes no
    list, dict or object it is given: a builtin, or a function whose compiled code writes none
    of its parameters (``layer(x)`` returning ``np.tanh(x @ self.w)``)."""
    if type(saved) is not tuple or not saved:
        return False
    if saved[0] == "builtin":
        return True
    if saved[0] in ("compiled", "compiled alone") and len(saved) > 1:
        compiled = saved[1]
        return not getattr(compiled, "mutates_containers", True) and \
            not getattr(compiled, "mutates_params", True)
    return False


def _held(value: Any) -> Any:
    return value.of if isinstance(value, HeldItems) else value


def _take_held(obj: Any, value: Any, adjoint: Any, inside: set[int]) -> tuple[Any, Any]:
    """(the adjoint of ``obj`` where ``value`` holds it, ``adjoint`` without it); (None,
    adjoint) when ``value`` does not hold it or its adjoint has no entry there."""
    slots = value.slots if isinstance(value, HeldItems) else None
    value = _held(value)
    if adjoint is None or id(value) in inside or isinstance(value, (np.ndarray, np.generic)):
        return None, adjoint
    if isinstance(value, (list, tuple)) and isinstance(adjoint, (list, tuple)):
        pairs = list(enumerate(value if slots is None else slots))
    elif isinstance(value, dict) and isinstance(adjoint, dict):
        pairs = list((value if slots is None else slots).items())
    elif isinstance(adjoint, ObjectAdjoint) and hasattr(value, "__dict__") and \
            not is_function_like(value):
        pairs = list((vars(value) if slots is None else slots).items())
    else:
        return None, adjoint
    inside.add(id(value))
    total: Any = None
    rest = None
    for key, v in pairs:
        if isinstance(adjoint, dict):
            if key not in adjoint:
                continue
            g = adjoint[key]
        elif key < len(adjoint):
            g = adjoint[key]
        else:
            continue
        if _held(v) is obj:
            found, left = g, None
        else:
            found, left = _take_held(obj, v, g, inside)
        if found is None:
            continue
        total = add(total, found)
        if rest is None:
            rest = type(adjoint)(adjoint) if not isinstance(adjoint, tuple) else list(adjoint)
        rest[key] = left
    inside.discard(id(value))
    return (total, adjoint) if rest is None else (total, rest)


# --------------------------------------------------------------------------------------------
# Containers: adjoints of list/dict reads and writes


def getitem_adjoint(container: Any, index: Any, g: Any) -> Any:
    """The adjoint of ``container`` for ``out = container[index]`` with out's adjoint g."""
    if isinstance(container, dict):
        return {k: (g if k == index else None) for k in container}
    if isinstance(container, (list, tuple)):
        n = len(container)
        if isinstance(index, slice):
            out: list[Any] = [None] * n
            for pos, gi in zip(range(*index.indices(n)), g):
                out[pos] = gi
        else:
            out = [None] * n
            out[index] = g
        return tuple(out) if isinstance(container, tuple) else out
    return None


def attr(adjoint: Any, name: str) -> Any:
    """The adjoint of attribute ``name`` in an object's adjoint (None: zero)."""
    if adjoint is None:
        return None
    return adjoint.get(name)


def attr_adjoint(obj: Any, name: str, g: Any) -> Any:
    """The adjoint of ``obj`` for ``out = obj.name`` with out's adjoint g (a namedtuple's
    field is its item: the adjoint is the tuple's)."""
    if isinstance(obj, tuple) and name in getattr(type(obj), "_fields", ()):
        return getitem_adjoint(obj, type(obj)._fields.index(name), g)  # a namedtuple's item
    if name not in getattr(obj, "__dict__", ()) or _cached(obj, name):
        stored_attribute(obj, name)
        if isinstance(g, ObjectAdjoint) and _own_method(obj, name):
            # f = m.loss (then f(x), or held in a list or an object): the call's pullback gave
            # the method's receiver its cotangent as f's adjoint, which is m's own (it went
            # to a field 'loss' of m's adjoint: the gradient through m.w was zero, silently)
            return g
    return ObjectAdjoint({name: g})


def _own_method(obj: Any, name: str) -> bool:
    """Whether ``obj.name`` is a method bound to ``obj`` itself (a function of its class)."""
    import types

    found = getattr(type(obj), name, None)
    return isinstance(found, types.FunctionType) and not isinstance(obj, type)


def _cached(obj: Any, name: str) -> bool:
    """Whether ``obj.name`` is a functools.cached_property (its value, once read, is stored
    in the object's ``__dict__``, but computed from other attributes all the same)."""
    import functools

    return isinstance(getattr(type(obj), name, None), functools.cached_property)


def stored_attribute(obj: Any, name: str) -> None:
    """Refuses ``obj.name`` when it is computed as it is read (a property, a cached_property
    not cached yet, a descriptor or ``__getattr__`` of the user's) where its value has a
    gradient: the pullback keeps an object's adjoint per stored attribute, and the gradient
    would not reach the attributes the getter read (it was dropped, silently).

    Raises:
        UnsupportedError: at the user's line.
    """
    import functools
    import types

    if (name in getattr(obj, "__dict__", ()) and not _cached(obj, name)) or \
            isinstance(obj, (types.ModuleType, type)) or \
            (isinstance(obj, tuple) and name in getattr(type(obj), "_fields", ())):
        return  # stored (a namedtuple's field is its item)
    found = getattr(type(obj), name, None)
    if found is None:
        computed = hasattr(type(obj), "__getattr__")
    else:
        computed = isinstance(found, (property, functools.cached_property)) or (
            hasattr(type(found), "__get__") and type(found).__module__ != "builtins" and
            not isinstance(found, (types.FunctionType, staticmethod, classmethod)))
    if computed:
        from adgen.errors import UnsupportedError

        raise locate(UnsupportedError(
            f"{type(obj).__name__}.{name} is computed when it is read (a property or a "
            "descriptor), and its value has a gradient here: adgen differentiates stored "
            "attributes only, and the gradient would not reach what the getter reads",
            hint=f"annotate the parameter with its class (def loss(m: {type(obj).__name__})) "
                 f"or read it in a method of the class: adgen then calls the getter; or call a "
                 f"method instead (def {name}(self): ... read as obj.{name}()), or store the "
                 "value as an attribute"))


def array_attribute_stored(obj: Any, attr_name: str) -> None:
    """Refuses, in forward mode, ``y.shape = s`` (``y.strides``, ``y.dtype``, ``y.data``)
    where ``y`` is an array, as reverse mode does (:func:`take_attr`): the store changes the
    array's layout. The tangent code stored the tangent of the value there (``y_dot.shape =
    (0.0, 0.0)``: Python's TypeError). An object of the user's with such an attribute (``self.shape = s``) passes.

    Raises:
        UnsupportedError: at the user's line.
    """
    if isinstance(obj, np.ndarray):
        from adgen.adjoints import refuse_array_form

        refuse_array_form(f"storing the attribute .{attr_name} of an array "
                          f"(y.{attr_name} = ...)",
                          "write the elements instead: y[...] = v (y.real[...] = v for the "
                          "real part), or rebind the name: y = y.reshape(shape)")


def namedtuple_of(cls: Any, items: tuple[Any, ...]) -> Any:
    """``cls(*items)`` for a namedtuple class ``cls``, every field given: lower_mutation writes
    the user's ``Point(x, y=v)`` so (``__new__`` is made by ``exec``, without source); the
    rule routes the result's cotangent, field by field, back to the items."""
    return cls._make(items)


def match_sequence(x: Any, n: int) -> bool:
    """Python's test for a sequence pattern of ``n`` items (lower_match): a Sequence other
    than str, bytes and bytearray, of length ``n`` (a NumPy array is not a Sequence)."""
    import collections.abc

    return isinstance(x, collections.abc.Sequence) and \
        not isinstance(x, (str, bytes, bytearray)) and len(x) == n


def field_default(cls: Any, field: str) -> Any:
    """The default of a namedtuple class's field (a constant: no derivative)."""
    return cls._field_defaults[field]


def namedtuple_replace(obj: Any, kwargs: dict[str, Any]) -> Any:
    """``obj._replace(**kwargs)`` (lower_mutation writes the user's call so): the fields
    replaced take their cotangents from the result, the others pass on to ``obj``."""
    if not (isinstance(obj, tuple) and hasattr(type(obj), "_fields")):
        from adgen.errors import UnsupportedError

        raise locate(UnsupportedError(
            f"{type(obj).__name__}._replace: adgen differentiates the _replace of namedtuples "
            "only", hint="give the method another name"))
    return obj._replace(**kwargs)


def flat_view(x: np.ndarray) -> np.ndarray:
    """``x`` as a 1-D view (what ``x.put`` writes through); refused when that needs a copy."""
    flat = x.reshape(-1)
    if not np.shares_memory(flat, x):
        from adgen.errors import UnsupportedError

        raise UnsupportedError("x.put / np.put on an array that has no flat view (not "
                               "contiguous) is not supported", hint="write x[index] = values")
    return flat


def diagonal_index(x: np.ndarray) -> tuple[np.ndarray, ...]:
    """The index np.fill_diagonal writes: (i, i, ..., i) for i below the smallest side."""
    i = np.arange(min(x.shape))
    return (i,) * x.ndim


def dataclass_replacer(obj: Any, names: tuple[str, ...]) -> Any:
    """The function ``dataclasses.replace(obj, **changes)`` with these keywords is a call of
    (lower_mutation writes the user's call so; adgen.dataclass_replace): no derivative."""
    from adgen.dataclass_replace import replacer

    return replacer(obj, names)


def dict_keys(d: Any) -> list[Any]:
    """The keys a ``for ... in d.items()`` loop visits, in order (they carry no derivative)."""
    return list(d.keys())


def index_with_derivative(base: Any) -> None:
    """Runs before ``t = base[index]`` where the index carries a derivative and the compiler
    could not see what ``base`` is: an array, list, tuple, dict or str is read by an index
    whose derivative means nothing (an array's is an int); anything else computes its items
    from the index (``np.r_`` reached through a default, a dict item or a lambda's closure),
    which adgen follows only where the code names it (``np.r_[...]`` written out). grad gave
    -0.5 for -1.0 and jvp 0.0 for -0.26, silently.

    Raises:
        UnsupportedError: for any other ``base``, at the user's line.
    """
    if isinstance(base, (np.ndarray, list, tuple, dict, str)):
        return
    from adgen.errors import UnsupportedError

    raise locate(UnsupportedError(
        f"an index that carries a derivative reads a {type(base).__name__} object, which "
        "computes its items from the index (np.r_, np.c_, an object of yours with "
        "__getitem__): adgen follows that only where the code names it",
        hint="write np.r_[...] (or np.concatenate) where you index, or call the object's "
             "method by its class (Cls.__getitem__(obj, i))"))


def unpacked_len(x: Any) -> int:
    """The length of what ``a, b = x`` unpacks, which the compiled code reads by index
    (desugar): a tuple, list, array, str, bytes or range, whose items are what Python's
    unpacking gives. Anything else is refused: Python unpacks it through its ``__iter__``
    (a dict gives its keys, an object of the user's its own items), which indexing does not
    follow (an object whose ``__getitem__`` and ``__iter__`` disagreed gave jvp a wrong value
    and tangent, silently; one without ``__len__`` raised TypeError).

    Raises:
        UnsupportedError: for any other value, at the user's line.
    """
    if isinstance(x, (tuple, list, np.ndarray, str, bytes, range)):
        return len(x)
    from adgen.errors import UnsupportedError

    kind = "a dict" if isinstance(x, dict) else f"a {type(x).__name__} object"
    raise locate(UnsupportedError(
        f"unpacking {kind} (a, b = v) runs its __iter__, which adgen does not follow (it "
        "reads the items of a tuple, a list or an array by position)",
        hint="unpack a list or a tuple of it (a, b = list(v) for a dict's keys, a, b = "
             "d.values() as a list: list(d.values())), or unpack the arrays an object "
             "holds (a, b = p.w[:2], p.w[2:])"))


def loop_sequence(x: Any) -> Any:
    """What a for loop indexes: arrays, lists and tuples as they are, anything else as a list."""
    if isinstance(x, (np.ndarray, list, tuple)):
        return x
    return list(x)


def list_snapshot(x: Any) -> Any:
    """A copy of the list ``x`` as it is now, for a read the function makes before it grows
    ``x`` in place (transforms/grown_list_reads.py): its pullback sees the items read."""
    return list(x) if type(x) is list else x


def concatenator_piece(concatenator: str, item: Any) -> Any:
    """The piece ``np.r_`` or ``np.c_`` (``concatenator``: ``"r_"`` or ``"c_"``) makes of one
    item of its index (transforms/index_tricks.py): an array of at least its ``ndmin``
    dimensions, a slice's ``arange``; the pieces are then joined by ``np.concatenate``."""
    return getattr(np, concatenator)[item]


def add_item(adjoint: Any, index: Any, g: Any) -> None:
    """Adds g to ``adjoint[index]`` in place (repeated array indices add up, as np.add.at)."""
    if g is None:
        return
    if type(adjoint) is np.ndarray and (type(index) is int or (
            type(index) is tuple and all(type(i) is int for i in index))):
        adjoint[index] += g
        return
    if isinstance(adjoint, np.ndarray):
        if isinstance(index, (list, np.ndarray)) or (
                isinstance(index, tuple) and any(isinstance(i, (list, np.ndarray))
                                                 for i in index)):
            np.add.at(adjoint, index, g)
        else:
            adjoint[index] += g
        return
    adjoint[index] = add(item(adjoint, index), g)


def pop_number(sh: ShadowMap, x: Any) -> Any:
    """The adjoint of ``x`` taken out of shadow memory when ``x`` is a number that has one
    there (None otherwise: an array keeps its adjoint in its shadow). An item of a list or
    dict read and then updated in place (``xs[k] *= 2.0``) leaves its adjoint in the shadow
    of the object it is; for a number, the read hands it to the container's adjoint, since
    what made the number (``list(xs)``, an array's items) may never read that shadow."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, complex, np.number)):
        return None
    if id(x) not in sh._roots:
        return None
    return sh.pop(x)


def take_item(adjoint: Any, index: Any) -> Any:
    """Removes and returns ``adjoint[index]`` (the adjoint of a value a store wrote)."""
    if isinstance(adjoint, dict):
        return adjoint.pop(index, None)
    if isinstance(adjoint, list) and isinstance(index, slice):
        # l[a:b] = [...] may change the list's length, which moves every later item: the
        # adjoints of the items before the store would be read at the wrong positions
        from adgen.errors import UnsupportedError

        raise locate(UnsupportedError(
            "assigning to a slice of a list (l[a:b] = [...]) is not supported",
            hint="store the items one by one (l[a] = v), or build a new list: "
                 "l = l[:a] + [...] + l[b:]"))
    g = adjoint[index]
    # None stands for zero: the value the store overwrote may be of another kind (a number
    # replaced by an array), and a zero of the stored value's shape would broadcast its
    # adjoint up to that shape
    adjoint[index] = None
    return g


def take_attr(adjoint: Any, attr_name: str, obj: Any = None, bypass: bool = False) -> Any:
    """Removes and returns the adjoint of attribute ``attr_name`` (a store of ``obj`` wrote
    it; ``bypass``: ``object.__setattr__(obj, attr_name, v)`` wrote it, which the class's
    ``__setattr__`` does not see).

    Raises:
        UnsupportedError: for an attribute of an array (``y.real = v``, ``y.shape = s``,
            ``y.flat = v``), whose store changes the array's elements or layout; for a store
            through a property's setter or another descriptor of the user's, which stores
            something else (the value's gradient was taken from an attribute no read
            gives it to: a silently wrong gradient).
    """
    if obj is not None and not isinstance(obj, (np.ndarray, dict)):
        stored_as_written(obj, attr_name, bypass)
        if isinstance(adjoint, (np.ndarray, list, float, int, np.number)) and \
                hasattr(obj, "__dict__"):
            # the object's adjoint is an array's, a list's or a number's: an operator, an
            # index or a loop ran a method of its class the compiled code does not call
            refuse_object_read_as_value(obj)
    if isinstance(adjoint, np.ndarray):
        parts = attr_name in ("real", "imag")  # z.real = x, z.imag = y on a complex buffer
        refuse_array_form(f"storing the attribute .{attr_name} of an array "
                          f"(y.{attr_name} = ...)",
                          "build the complex array from its parts instead: z = x + 1j * y "
                          "(z.real[...] = x writes the real parts in place)" if parts else
                          "write the elements instead: y[...] = v (y.real[...] = v for the "
                          "real part), or rebind the name: y = y.reshape(shape)")
    return adjoint.pop(attr_name, None) if adjoint is not None else None


def stored_as_written(obj: Any, name: str, bypass: bool = False) -> None:
    """Refuses ``obj.name = v`` when ``name`` is a property or another data descriptor of the
    user's on obj's class (the setter runs code adgen does not see), or the class defines
    ``__setattr__`` (unless ``bypass``: ``object.__setattr__(obj, "name", v)``, which the
    compiled code calls too, does not run it; a property's setter it still runs)."""
    import types

    store = getattr(type(obj), "__setattr__", None)
    if not bypass and isinstance(store, types.FunctionType) and not str(
            getattr(store, "__module__", "") or "").startswith(("numpy", "scipy", "adgen.")):
        # a class of the user's defining __setattr__: o.w = v runs it, and what it stores
        # (v * 2.0, a copy, another attribute) is not v (a silently wrong gradient: the
        # value's adjoint was taken from the attribute as if v were stored)
        from adgen.errors import UnsupportedError

        raise locate(UnsupportedError(
            f"{type(obj).__name__}.{name} = ... runs {type(obj).__name__}.__setattr__, which "
            "stores something adgen does not see: the gradient of the value assigned would "
            "not reach what it stores",
            hint=f"store it with object.__setattr__(obj, {name!r}, v), which stores v itself "
                 f"past {type(obj).__name__}.__setattr__ (as a frozen dataclass's __init__ "
                 f"does, and adgen follows), or drop the class's __setattr__"))
    found = getattr(type(obj), name, None)
    if found is None or not hasattr(type(found), "__set__"):
        return

    if isinstance(found, (types.MemberDescriptorType, types.GetSetDescriptorType)):
        return  # __slots__ and builtin attributes store the value itself
    from adgen.errors import UnsupportedError

    raise locate(UnsupportedError(
        f"{type(obj).__name__}.{name} = ... runs a property's setter (or a descriptor's "
        "__set__), which stores something adgen does not see: the gradient of the value "
        "assigned would not reach what the setter stores",
        hint=f"assign the attribute the setter writes, or call a method that does "
             f"(obj.set_{name}(v) returning the new value)"))


def list_adjoint(g: Any) -> Any:
    """A list's adjoint as a list (a rule may give it as an array of rows)."""
    if isinstance(g, np.ndarray):
        return [row.copy() if isinstance(row, np.ndarray) else float(row) for row in g]
    if isinstance(g, tuple):
        return list(g)
    return g


def pop_adjoint(adjoint: list[Any]) -> Any:
    """The adjoint of the item an append added: the last one, removed.

    Raises:
        UnsupportedError: where the receiver was an object of the user's whose class has an
            ``append`` of its own (a global or a parameter: ``D.append(v)``), which ran and
            which the compiler took for a list's (a raw TypeError before).
    """
    if isinstance(adjoint, ObjectAdjoint):
        from adgen.errors import UnsupportedError

        raise locate(UnsupportedError(
            "x.append(v) ran the append method of an object of one of your classes, which "
            "adgen took for a list's append when compiling (it knows the class of an object "
            "the function builds itself: d = Doubler(); d.append(v))",
            hint="call it through its class (Doubler.append(d, v)), or rename the method"))
    return adjoint.pop() if adjoint else None


def scatter_if_copy(sh: ShadowMap, x: np.ndarray, index: Any, out: Any) -> None:
    """For ``out = x[index]`` on a tracked x: a view already shares x's shadow; a copy (fancy
    index) adds its adjoint into x's shadow."""
    if isinstance(out, np.ndarray) and isinstance(x, np.ndarray) and root_of(out) is root_of(x):
        return
    if isinstance(x, (list, tuple, dict)):
        return  # an item of a container is the object itself: its adjoint stays its own
    add_item(sh.of(x), index, sh.of(out) if isinstance(out, np.ndarray) else
             sh.value(out) or 0.0)


def partial_try(ran: bool, file: str, line: int) -> None:
    """Runs first in an except handler of a differentiated try: refuses a body that raised
    after one of its statements the gradient depends on had run (the pullback of a handler
    arm undoes the handler, not part of the body)."""
    if not ran:
        return
    from adgen.errors import Location, UnsupportedError

    raise UnsupportedError(
        f"the try block at line {line} raised after some of its statements had run; adgen "
        "differentiates a try block that completes, or raises before anything in it ran",
        Location(file, line, 0, source_line(file, line)),
        hint="move the statements before the one that may raise out of the try block")


def list_iadd_error(file: str, line: int) -> Exception:
    """The error raised before ``x += items`` where ``x`` turns out to be a list adgen cannot
    tell the function made (an argument): extended in place, the gradient would not follow."""
    from adgen.errors import Location, UnsupportedError

    return UnsupportedError(
        "'+=' extends a list in place that adgen cannot tell was made in this function (an "
        "argument, an item of a container): the gradient would not follow it",
        Location(file, line, 0, source_line(file, line)),
        hint="write xs.extend([v]) for an argument: the same extension in place, which adgen "
             "follows (the caller's list grows as with +=); for a list held by a dict or an "
             "object, append the items one at a time (d['xs'].append(v)); or build a new "
             "list (xs = xs + [v]) where the caller's list should stay as it was")


# --------------------------------------------------------------------------------------------
# Typed tapes: a counted loop's recorded numbers, one array (column) each (Plan.counted)


_F64 = np.dtype(np.float64)
_COLUMN_DTYPES = {"float64": _F64, "int64": np.dtype(np.int64)}


def tape_columns(steps: range, *dtypes: str) -> list[np.ndarray]:
    """Uninitialised columns of the given dtypes, an element per step of ``steps``. An int
    column of a range reaching 2 ** 56 holds Python ints (dtype object): the ints a loop
    records are its counters plus a few terms, which int64 would not hold exactly."""
    n = len(steps)
    if len(dtypes) == 1 and dtypes[0] == "float64":  # the common case, without a loop
        return [np.empty(n, _F64)]
    huge = "int64" in dtypes and n and max(abs(steps[0]), abs(steps[-1])) >= 2 ** 56
    # "float64[r]": a column of arrays of rank r, allocated at the loop's first row (their
    # shape is known there); until then an empty array of rank r + 1
    return [np.empty((0,) * (int(d[8:-1]) + 1), _F64) if d.startswith("float64[") else
            np.empty(n, object if huge and d == "int64" else _COLUMN_DTYPES[d])
            for d in dtypes]


def unheld_write(array: Any, names: tuple[str, ...], values: tuple[Any, ...],
                 attrs: tuple[str, ...]) -> None:
    """Forward mode's check before an in-place write into an array of an object the function
    built (``s.x[:] = x0``): refused if the array is one a global or closure value holds
    (``held_arrays.refuse_held_write``; transforms/built_object_writes.py)."""
    from adgen.held_arrays import refuse_held_write

    refuse_held_write(array, tuple(zip(names, values)), attrs)


def reversed_rows(tape: list[np.ndarray], steps: range | None = None) -> Any:
    """The rows of a typed tape from the last to the first, each a tuple of NumPy scalars,
    preceded by its step of ``steps`` when given."""
    if steps is None:
        return zip(*[c[::-1] for c in tape])
    if len(tape) == 1:
        return zip(reversed(steps), tape[0][::-1])
    return zip(reversed(steps), *[c[::-1] for c in tape])


__all__ = [
    "Capture", "GuardScope", "ObjectAdjoint", "ShadowMap", "add", "as_gradient", "attr",
    "attr_adjoint", "before_write", "call_forward", "call_jvp", "call_pullback", "capture",
    "construct_jvp", "closure_tangent",
    "enter_context", "entered_value", "exit_context",
    "copy_before_loop", "copy_when_read",
    "getitem_adjoint", "guard_scope", "is_buffer", "item", "measure_saves", "root_of",
    "shadow_of", "items_to_shadows", "shadows_to_items", "items_at",
    "slots_changed", "slots_changed_by", "slots_changed_by_call", "write_region", "zeros_like", "loop_sequence", "add_item", "take_item", "pop_number",
    "take_attr", "pop_adjoint", "dict_keys", "unpacked_len", "index_with_derivative", "flat_view", "diagonal_index", "collect", "entry_items", "refuse_shared", "keyword_cotangent", "zeros_of_tree", "or_zeros_of_tree", "add_out", "remap_saved", "or_zeros", "list_adjoint", "copy_adjoint", "zero_if_none", "scatter_if_copy",
    "tape_columns", "reversed_rows", "partial_try", "plain_result", "held_subclass", "copy_hint", "with_receiver", "held_adjoint", "held_items",
    "stored_attribute", "array_attribute_stored", "constant_attribute", "plain_attribute_store", "with_shadows", "Unbound", "list_iadd_error", "call_starred", "namedtuple_of", "namedtuple_replace",
    "dataclass_replacer",
    "field_default", "made_list_adjoint", "list_snapshot", "concatenator_piece", "match_sequence", "checked_callable", "unheld_write",
    *_helper_names,
]


def _register_runtime_rules() -> None:
    # reverse mode of tangent code (hessian, hvp, grad of grad) through a dynamic call: the
    # compiled jvp it calls, differentiated in turn
    from adgen.rules.helpers import (  # noqa: F401 - the templates'
        array_vjp,
        fields_vjp,
        shape_tree,
    )
    from adgen.rules.registry import defjvp_kind, defrrule, defvjp
    from adgen.starred_calls import call_starred_rrule
    from adgen.tangent_calls import call_jvp_rrule

    defrrule(call_jvp, call_jvp_rrule)
    from adgen.closure_tangents import closure_tangent_rrule

    # (a nested def's tangent in tangent code differentiated again: its cotangent, a pair,
    # goes back to the values and tangents it holds)
    defrrule(closure_tangent, closure_tangent_rrule)
    from adgen.closure_tangents import closure_tangent_frule
    from adgen.rules.registry import deffrule

    deffrule(closure_tangent, closure_tangent_frule)  # (jacfwd of jacfwd: refused, in words)
    from adgen.built_inside import construct_jvp_rrule

    defrrule(construct_jvp, construct_jvp_rrule)  # (an object built inside, at second order)
    defrrule(call_starred, call_starred_rrule)

    @defvjp(loop_sequence, "x", linear=True, view=True, name="adgen.runtime.loop_sequence")
    def _loop_sequence(g, out, x):  # noqa: ANN001, ANN202 - a rule template
        return g

    @defvjp(concatenator_piece, "concatenator, item", diff="item", linear=True,
            name="adgen.runtime.concatenator_piece")
    def _concatenator_piece(g, out, concatenator, item):  # noqa: ANN001, ANN202 - a rule template
        return array_vjp(np.reshape(g, np.shape(item)), shape_tree(item))

    @defvjp(list_snapshot, "x", linear=True, name="adgen.runtime.list_snapshot")
    def _list_snapshot(g, out, x):  # noqa: ANN001, ANN202 - a rule template
        return g



    @defvjp(match_sequence, "x, n", diff=(), linear=True, name="adgen.runtime.match_sequence")
    def _match_sequence(g, out, x, n):  # noqa: ANN001, ANN202 - a rule template
        return ()

    @defvjp(field_default, "cls, field", diff=(), linear=True,
            name="adgen.runtime.field_default")
    def _field_default(g, out, cls, field):  # noqa: ANN001, ANN202 - a rule template
        return ()

    @defvjp(namedtuple_of, "cls, items", diff="items", reads="cls", linear=True,
            name="adgen.runtime.namedtuple_of")
    def _namedtuple_of(g, out, cls, items):  # noqa: ANN001, ANN202 - a rule template
        return fields_vjp(g, cls._fields, shape_tree(items))

    @defvjp(namedtuple_replace, "obj, kwargs", diff="obj, kwargs", reads="obj, kwargs",
            name="adgen.runtime.namedtuple_replace")
    def _namedtuple_replace(g, out, obj, kwargs):  # noqa: ANN001, ANN202 - a rule template
        return (fields_vjp(g, type(obj)._fields, shape_tree(obj), tuple(kwargs)),
                fields_vjp(g, type(obj)._fields, shape_tree(kwargs)))

    # forward mode: a namedtuple of the tangents; a default field is a constant
    defjvp_kind("linear", namedtuple_of, namedtuple_replace, list_snapshot, concatenator_piece)
    defjvp_kind("zero", field_default, match_sequence)

    @defvjp(flat_view, "x", linear=True, view=True, name="adgen.runtime.flat_view")
    def _flat_view(g, out, x):  # noqa: ANN001, ANN202 - a rule template
        return np.reshape(g, np.shape(x))


_register_runtime_rules()


def _register_second_order_rules() -> None:
    """The rules of the helpers above that generated pullbacks call, so that reverse mode can
    differentiate those pullbacks (adgen.second_order)."""
    from adgen.rules import runtime_rules

    runtime_rules.register()


_register_second_order_rules()
