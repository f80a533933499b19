"""Where a container's arrays keep their adjoints around a call: shadow memory or the
container's adjoint.

A function that writes an array in place keeps that array's adjoint in shadow memory
(``ShadowMap.of``); a callee it hands the container to (``g.scale(3.0)``, ``helper(d)``) reads
and gives back adjoints per slot of the container (``ObjectAdjoint``, a dict, a list). At the
call's pullback the two meet: the adjoints of the arrays the container held after the call
go from shadow memory into the adjoint the callee takes over (:func:`shadows_to_items`), and
the callee's cotangent per slot goes back to the shadows of the arrays the container held
before the call (:func:`items_to_shadows` given :func:`items_at` of that moment). Read at
pullback time instead, the container holds its last arrays: a callee rebinding a slot
(``self.u = self.u * c``) lost the gradient of what the caller wrote in place (zero, silently,
until session 21).

Generated code imports these from :mod:`adgen.runtime`; each is a plain top-level function
using only numpy, so ``-o`` modules copy its source (transforms/standalone.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adgen.adjoints import ObjectAdjoint, add, is_function_like, zeros_like


class ListItems(list):
    """:func:`items_at` of a list or tuple: its items (records of the containers among them).
    ``arrays``: at the top of a record, the ids of every array it reaches."""
    __slots__ = ("arrays",)


class DictItems(dict):
    """:func:`items_at` of a dict (see :class:`ListItems`)."""
    __slots__ = ("arrays",)


class ObjectItems:
    """:func:`items_at` of an object: its attributes in ``__dict__`` (see :class:`ListItems`)."""
    __slots__ = ("__dict__", "arrays")


class SlotChanges:
    """The count of the statements that may have changed a slot of a list, dict or object
    (``obj.a = v``, ``d[k] = v``, ``lst.append(v)``, a call of code adgen does not compile)
    since the process started: compiled forward code bumps it after each such statement
    (:func:`slots_changed`, transforms/slot_changes.py). A record of :func:`items_at` is
    taken again for the same container while the count has not moved since it was made, in
    the same forward pass (issue 15: a model's layers walked at every step)."""
    count = 0


def slots_changed() -> None:
    """A statement that may have changed a slot of a list, dict or object ran."""
    SlotChanges.count += 1


def slots_changed_by(value: Any) -> None:
    """``value`` was written in place or into (``x += v``, ``x[i] = v``): that changes no
    slot when it is an array or a number (their contents are no slot; a record holds an
    array by reference), and may otherwise (a list's ``+=``, a dict's item, a user's
    ``__iadd__``)."""
    t = type(value)
    if t is not np.ndarray and t is not float and t is not int and t is not complex and \
            t is not bool:
        SlotChanges.count += 1


def slots_changed_by_call(saved: Any) -> None:
    """After a call found when it runs (``runtime.call_forward``), given its saved values:
    a compiled callee's own forward notes the changes it makes; any other (a rule, a
    builtin, a library function, a partial) may change any slot."""
    if type(saved) is not tuple or not saved or saved[0] not in (
            "compiled", "compiled alone", "closure", "init"):
        SlotChanges.count += 1


def _pass_records() -> Any:
    """The records of :func:`items_at` kept for the running forward pass (its guard scope,
    pushed by compiled_calls.run_forward for each pass of a function that calls another);
    None outside one (the thread's first scope: nothing tells two passes apart there)."""
    from adgen.guards import scope_stack

    scopes = scope_stack()
    return scopes[-1].records if len(scopes) > 1 else None


def items_at(container: Any, saved: Any = None, before: Any = None,
             written: tuple[Any, ...] | None = None) -> Any:
    """The slots of a list, tuple, dict or object as they are now, and of the containers in
    them (new containers holding the same arrays: no copy of any value), for a pullback that
    runs after they change: lists, dicts, and namespaces holding an object's attributes. The
    record knows the arrays it reaches (``arrays``), so a pullback given arrays it does not
    hold (a model's many layers around a call writing a state array the model does not
    hold) moves nothing without walking it again. After a call found when it runs, given its
    saved values and ``before``, the record made before it: that record again where the
    callee changed no object (a method that only reads its object, ``self.rhs(u)``). As the
    function returns, given the record after its last call and ``written``, the values the
    lines since wrote in place (transforms/exit_records.py): that record where each is an
    array or a number (their writes leave every slot holding what it held). The record of
    the same container made earlier in the forward pass, where no statement since may have
    changed a slot (:class:`SlotChanges`): one walk of a model per pass, not one per step."""
    from adgen.runtime import changes_no_object

    if before is not None:
        if written is not None:
            if all(type(v) is np.ndarray or type(v) is float or type(v) is int
                   for v in written):
                return before
        elif changes_no_object(saved):
            return before
    records = _pass_records()
    if records is not None:
        kept = records.get(id(container))
        if kept is not None and kept[0] is container and kept[1] == SlotChanges.count:
            return kept[2]
    arrays: set[int] = set()
    out = _record(container, {}, arrays)
    if isinstance(out, (ListItems, DictItems, ObjectItems)):
        out.arrays = arrays
    if records is not None:
        records[id(container)] = (container, SlotChanges.count, out)
    return out


def _record(container: Any, made: dict[int, Any], arrays: set[int]) -> Any:
    """items_at's walk; ``made``: the copies made so far, by the id of what they copy
    (objects that refer to each other are copied once each), and the classes found to be
    objects' (keys that are types, not ids); ``arrays``: the ids of the
    arrays met. Arrays and numbers in a slot are taken there without a call of their own:
    a model's layers are mostly that, and the walk runs at every call handed the model."""
    if id(container) in made:
        return made[id(container)]
    out: Any
    if isinstance(container, np.ndarray):
        arrays.add(id(container))
        return container
    if isinstance(container, (list, tuple)):
        out = made[id(container)] = ListItems()
        items: Any = container
        add = out.append
    elif isinstance(container, dict):
        out = made[id(container)] = DictItems()
        items = container.items()
    elif type(container) in made or _is_object(container):
        made[type(container)] = True  # (an object of this class: asked once per walk)
        out = made[id(container)] = ObjectItems()
        items = vars(container).items()
        into = out.__dict__
    else:
        return container
    if type(out) is ListItems:
        for v in items:
            t = type(v)
            if t is np.ndarray:
                arrays.add(id(v))
                add(v)
            elif t is float or t is int or t is bool or t is str or v is None:
                add(v)
            elif t in made and id(v) not in made:
                add(_object_record(v, made, arrays))
            else:
                add(_record(v, made, arrays))
        return out
    if type(out) is DictItems:
        into = out
    for k, v in items:
        t = type(v)
        if t is np.ndarray:
            arrays.add(id(v))
            into[k] = v
        elif t is float or t is int or t is bool or t is str or v is None:
            into[k] = v
        else:
            into[k] = _record(v, made, arrays)
    return out


def _object_record(obj: Any, made: dict[int, Any], arrays: set[int]) -> ObjectItems:
    """_record of an object of a class already found to be objects' and not met yet in this
    walk: its attributes taken in place, arrays and numbers without a call of their own (a
    list of a model's layers, each an object of the same class, is walked at every call)."""
    out = made[id(obj)] = ObjectItems()
    into = out.__dict__
    for k, v in vars(obj).items():
        t = type(v)
        if t is np.ndarray:
            arrays.add(id(v))
            into[k] = v
        elif t is float or t is int or t is bool or t is str or v is None:
            into[k] = v
        else:
            into[k] = _record(v, made, arrays)
    return out


def _shadowed_ids(arrays: tuple[Any, ...], sh: Any = None) -> set[int]:
    """The ids of the arrays whose adjoints ``arrays`` keep in shadow memory: each array, and
    the arrays a list or tuple among them holds (numbers and arrays only, at any depth of
    tuples), whose shadow memory is its items' (``ShadowMap.of``: the adjoint of
    ``np.array(s.history)`` goes to the shadows of the arrays ``s.history`` holds, where a
    callee that appended them must find it; zero, silently, before session 23). With ``sh``,
    also the array a guard's copy stands for (``ShadowMap.through_stand_in``): a callee's
    saved arrays redirected to its caller's copies (remap_saved) share the original's shadow,
    and the slots of an object's record hold the original (``u = self.u; u *= 0.9`` around a
    call of ``self.rhs()``, stepped twice: the second step's ``* 0.9`` missed the adjoint
    left in the object's, silently, until session 28)."""
    ids: set[int] = set()
    for a in arrays:
        if isinstance(a, np.ndarray):
            ids.add(id(a))
            if sh is not None and a.base is None:  # (a guard's copy is a whole array)
                ids.add(id(sh.through_stand_in(a)))
        elif type(a) is list or type(a) is tuple:
            if all(isinstance(v, (np.ndarray, list, tuple)) or not _is_container(v)
                   for v in a):
                ids.update(_shadowed_ids(tuple(v for v in a if not isinstance(v, list)), sh))
    return ids


def _is_container(x: Any) -> bool:
    return isinstance(x, (list, tuple, dict)) or _is_object(x)


def _holds_none(items: Any, ids: set[int]) -> bool:
    """Whether ``items``, a record of :func:`items_at`, reaches none of the arrays ``ids``."""
    held = getattr(items, "arrays", None) if isinstance(
        items, (ListItems, DictItems, ObjectItems)) else None
    return held is not None and held.isdisjoint(ids)


def items_to_shadows(sh: Any, container: Any, adjoint: Any, arrays: tuple[Any, ...]) -> Any:
    """Moves the adjoints of the items of a list, tuple, dict or object that are among
    ``arrays`` (arrays the pullback keeps in shadow memory, as they are written in place) into
    their shadows, and returns the container's adjoint with zeros there. A container's adjoint
    may arrive (returned, or from a callee) before the pullback of an in-place write into one
    of its arrays reads that array's shadow: it must be there by then. ``container``: the
    container, or its :func:`items_at` where the adjoint is that of the slots at an earlier
    moment (a callee's cotangent is that of the slots it was given)."""
    ids = _shadowed_ids(arrays, sh)
    if _holds_none(container, ids):
        return adjoint
    return _to_shadows(sh, container, adjoint, ids, set())


def _to_shadows(sh: Any, container: Any, adjoint: Any, ids: set[int], inside: set[int]) -> Any:
    slots = _slots(container, adjoint)
    if slots is None or id(container) in inside:
        return adjoint
    inside.add(id(container))
    keys, items, out = slots
    for k in keys:
        value, g = items[k], out[k]
        if id(value) in ids and g is not None:
            sh.of(value)[...] += g
            out[k] = zeros_like(g)
        elif g is not None and not isinstance(value, np.ndarray):
            # an array inside an item (m.layers[0].w written in place, m's cotangent from
            # a call holding it three levels down)
            out[k] = _to_shadows(sh, value, g, ids, inside)
    inside.discard(id(container))
    return out


def shadows_to_items(sh: Any, items: Any, adjoint: Any, arrays: tuple[Any, ...]) -> Any:
    """The container's adjoint (``adjoint``, zeros where None) plus the shadows of the arrays
    among ``arrays`` that its slots held (``items``: :func:`items_at` right after a call),
    taken out of shadow memory: what the call's pullback, which may take over the container's
    adjoint (``ShadowMap.withdraw``), needs of the arrays this function writes in place."""
    ids = _shadowed_ids(arrays, sh) | _left_in_shadows(sh, items)
    if _holds_none(items, ids):
        return adjoint
    return _from_shadows(sh, items, adjoint, ids, set())


def _left_in_shadows(sh: Any, items: Any) -> set[int]:
    """The ids of the arrays ``items`` reaches that have a shadow: a callee sharing ``sh``
    that wrote one in place left its adjoint there (``s.add(v)`` running ``self.x += v``),
    which the pullback of an earlier call that put the array into its slot (``s.rebind()``
    running ``self.x = 2.0 * self.x``) reads in the container's adjoint. (Among the arrays
    this function writes only, the gradient through the earlier call was lost: add, rebind,
    add, rebind on one object gave the first add none, silently, until session 23.)"""
    roots = getattr(sh, "_roots", None)
    if not roots:
        return set()
    held = getattr(items, "arrays", None) if isinstance(
        items, (ListItems, DictItems, ObjectItems)) else None
    if held is None:
        return set(roots)
    # (the smaller side walked in a C loop: a record of a model reaches every layer's
    # arrays, at each step of its pullback: issue 15)
    if len(held) > len(roots):
        return set(filter(held.__contains__, roots))
    return set(filter(roots.__contains__, held))


def _from_shadows(sh: Any, items: Any, adjoint: Any, ids: set[int], inside: set[int]) -> Any:
    slots = _slots(items, adjoint, every_slot=True)
    if slots is None or id(items) in inside:
        return adjoint
    inside.add(id(items))
    keys, values, out = slots
    found = False
    for k in keys:
        value = values[k]
        if isinstance(value, np.ndarray):
            if id(value) in ids and value.dtype.kind in "fc":
                shadow = sh.of(value)
                g = shadow.copy()
                shadow[...] = 0.0
                out[k] = add(out[k], g)
                found = True
        else:
            nested = _from_shadows(sh, value, out[k], ids, inside)
            if nested is not out[k]:
                out[k] = nested
                found = True
    inside.discard(id(items))
    return out if found else adjoint


def _slots(container: Any, adjoint: Any, every_slot: bool = False) -> Any:
    """(the slots to look at, the container's items by slot, a new adjoint by slot to fill
    in), or None for a container of another kind than its adjoint. ``every_slot``: every
    slot of the container (None where the adjoint has none), not only the adjoint's."""
    if isinstance(container, (list, tuple)) and (
            isinstance(adjoint, (list, tuple)) or (every_slot and adjoint is None)):
        out: Any = list(adjoint) if adjoint is not None else [None] * len(container)
        out += [None] * (len(container) - len(out)) if every_slot else []
        return range(min(len(out), len(container))), container, out
    if isinstance(container, dict) and not isinstance(adjoint, ObjectAdjoint) and (
            isinstance(adjoint, dict) or (every_slot and adjoint is None)):
        out = dict(adjoint or {})
        if every_slot:
            out.update((k, None) for k in container if k not in out)
        return [k for k in container if k in out], container, out
    if _is_object(container) and (isinstance(adjoint, dict) or (every_slot and adjoint is None)):
        # an object's attributes (g = Grid(u); g.u[1:] *= 2.0; g.energy(): the method's
        # cotangent for g.u must be in g.u's shadow before the write's pullback reads it)
        attrs = vars(container)
        out = ObjectAdjoint(adjoint or {})
        if every_slot:
            out.update((k, None) for k in attrs if k not in out)
        return [k for k in attrs if k in out], attrs, out
    return None


def _is_object(x: Any) -> bool:
    return hasattr(x, "__dict__") and not isinstance(x, (dict, type, np.generic, np.ndarray)) \
        and not is_function_like(x)
