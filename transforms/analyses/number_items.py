"""Number items: ``STATS["calls"] += 1`` and ``COUNT[0] += 1`` of a global or closure
container, which write nothing in place when the item holds a number.

Input: a function in SSA form after lower_mutation (read only), its :class:`Effects` and
:class:`Parsed`. Output: the :class:`NumberItem` updates among its in-place writes of free
buffers.

desugar writes ``STATS["calls"] += 1`` as ``t = STATS['calls']; t += 1; STATS['calls'] = t``
(with a copy ``t_1 = t`` in between at times). The effects analysis cannot tell an int item
from an array item, so ``t += 1`` counts as an in-place write of a global array
(transforms/free_writes.py), and a function calling this one was refused, though a callback
counting its calls writes no array: when the item holds an immutable value (an int, a float,
a NumPy scalar, a string, a tuple), ``+=`` rebinds it as ``STATS["calls"] = STATS["calls"] + 1``
does. The same for an attribute of a global object (``COUNTER.n += 1``).

What the item holds is known only at a call: the pipeline leaves out of ``free_writes`` the
updates whose item holds such a value when it compiles, and adds a guard
(``bindings.Guard``, mode ``item``) that fails when it holds something else (an array: the
next call compiles again, with the write, and is refused as before). A guard is checked when
a gradient is called (and when adgen's dispatch runs a callback), not when a callee compiled
into its caller runs, so what the run itself puts there counts too: :func:`number_items`
keeps only the updates whose item nothing else in the function can rebind first (the
container's name is used only as ``NAME[constant]`` or ``NAME.attr``, and no other statement
stores that item or attribute), and :func:`changed_by_caller` gives back to a caller's
refusal the updates (``Compiled.number_writes``, its callees' too) of a container the caller
may put an array into (``STATS["calls"] = np.zeros(3)`` before the call: the update would
write it in place under a value the caller's pullback reads). A function that reads such an
item back into its result after a call that may fill it is refused by analyses.free_containers.
A callback run during the gradient (which the caller cannot see) that puts an array there
is refused when it returns: :func:`item_guards` records each counter it keeps a number in
``adgen.counter_slots``, which adgen's dispatch and ``checked_callable`` check around such
calls.
"""

from __future__ import annotations

import types
from typing import Any

import gast
from adgen.transforms.analyses.effects import FREE, Effects, written_name
from adgen.transforms.bindings import Guard, holds_immutable, lookup
from adgen.transforms.node_index import nodes_of
from adgen.transforms.parse import Parsed


class NumberItem:
    """``NAME[key] op= v`` (``attr`` False) or ``NAME.key op= v`` (``attr`` True) at ``stmt``
    (the ``t += v`` of desugar's form), ``NAME`` a global or closure name (the user's). A
    plain class, compared by its fields: a dataclass is made when the module is imported,
    on the first gradient's path (tests/test_cold_start_records.py)."""

    __slots__ = ("stmt", "name", "key", "attr")

    def __init__(self, stmt: gast.stmt, name: str, key: Any, attr: bool) -> None:
        self.stmt = stmt
        self.name = name
        self.key = key
        self.attr = attr

    def _fields(self) -> tuple[Any, ...]:
        return (self.stmt, self.name, self.key, self.attr)

    def __eq__(self, other: object) -> bool:
        return type(other) is NumberItem and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return f"NumberItem({self.name!r}, {self.key!r}, attr={self.attr})"


def number_items(fn: gast.FunctionDef, eff: Effects,
                 free: dict[str, str]) -> tuple[NumberItem, ...]:
    """The in-place writes of free buffers of ``fn`` (SSA form) that are updates of an item
    or attribute of a global or closure container, kept only where nothing else in ``fn``
    stores that item (the module's docstring).

    Args:
        fn: the function after ssa.
        eff: its effects.
        free: the free names the function reads, user's name -> the name in ``fn``
            (``Parsed.free``).
    """
    users = {key: name for name, key in free.items()}
    defs: dict[str, list[gast.Assign]] = {}
    for st in nodes_of(fn, gast.Assign):
        if len(st.targets) == 1 and isinstance(st.targets[0], gast.Name):
            defs.setdefault(st.targets[0].id, []).append(st)
    found: list[tuple[NumberItem, str, gast.expr]] = []
    for w in eff.writes:
        if w.container or FREE not in w.buffers or written_name(w.stmt) != w.target:
            continue
        site = _site_of(w.stmt, defs, users)
        if site is not None:
            found.append(site)
    if not found:
        return ()
    updated = {n: (item.key, item.attr) for item, n, _ in found}
    # the reads desugar wrote (t = STATS['calls']) and the stores back (STATS['calls'] = t)
    own = {id(read) for _, _, read in found}
    for st in nodes_of(fn, gast.Assign):
        t = st.targets[0] if len(st.targets) == 1 else None
        if t is not None and _item_of(t, users) is not None and \
                isinstance(st.value, gast.Name) and st.value.id in updated and \
                _item_of(t, users)[1:] == (updated[st.value.id][0], updated[st.value.id][1]):
            own.add(id(t))
    containers = {item.name for item, _, _ in found}
    used_as_item = {id(n.value) for n in nodes_of(fn, gast.Subscript, gast.Attribute)
                    if _item_of(n, users) is not None}
    spoiled: set[tuple[str, Any, bool]] = set()
    for node in nodes_of(fn, gast.Name):
        name = users.get(node.id, node.id)
        if name in containers and id(node) not in used_as_item:
            # passed on, aliased, rebound or called: another function may store its items
            spoiled.update((item.name, item.key, item.attr) for item, _, _ in found
                           if item.name == name)
    for node in nodes_of(fn, gast.Subscript, gast.Attribute):
        item = _item_of(node, users)
        if item is not None and not isinstance(node.ctx, gast.Load) and id(node) not in own:
            spoiled.add(item)  # another store of the item (STATS['calls'] = np.zeros(2))
    return tuple(item for item, _, _ in found
                 if (item.name, item.key, item.attr) not in spoiled)


def _site_of(st: gast.stmt, defs: dict[str, list[gast.Assign]],
             users: dict[str, str]) -> tuple[NumberItem, str, gast.expr] | None:
    """The update ``st`` is part of (``t += v`` after ``t = NAME[key]``, through copies
    ``t_1 = t``), with the updated name and the read, or None."""
    if not (isinstance(st, gast.AugAssign) and isinstance(st.target, gast.Name)):
        return None
    name = st.target.id
    for _ in range(4):  # t_1 = t; t_2 = t_1 ... (desugar and ssa write one or two)
        assigns = defs.get(name, [])
        if len(assigns) != 1:
            return None
        value = assigns[0].value
        if isinstance(value, gast.Name):
            name = value.id
            continue
        item = _item_of(value, users)
        if item is None:
            return None
        return NumberItem(st, *item), st.target.id, value
    return None


def _item_of(node: gast.expr, users: dict[str, str]) -> tuple[str, Any, bool] | None:
    """``(NAME, key, attr)`` for ``NAME[constant]`` or ``NAME.attr`` of a free name, else
    None."""
    if isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name) and \
            node.value.id in users and isinstance(node.slice, gast.Constant) and \
            isinstance(node.slice.value, (int, str)) and \
            not isinstance(node.slice.value, bool):
        return users[node.value.id], node.slice.value, False
    if isinstance(node, gast.Attribute) and isinstance(node.value, gast.Name) and \
            node.value.id in users:
        return users[node.value.id], node.attr, True
    return None


def item_guards(items: tuple[NumberItem, ...],
                parsed: Parsed) -> tuple[tuple[NumberItem, ...], list[Guard]]:
    """The updates of ``items`` whose item holds an immutable value now, and one ``item``
    guard per item they update, which fails when that changes (either way: an array there
    compiles again, with the write; a number again, without)."""
    numbers: list[NumberItem] = []
    out: list[Guard] = []
    for i in items:
        cell = parsed.cells.get(i.name)
        if cell is not None:
            try:
                container = cell.cell_contents
            except ValueError:
                continue  # an empty cell: the write stays a free write
        else:
            container = lookup(parsed.fn.__globals__, i.name)
        held = holds_immutable(container, i.key, i.attr)
        if held:
            numbers.append(i)
            # a callback run during the gradient must not put an array there (the update
            # would write it in place): checked around such calls (adgen.counter_slots)
            from adgen.counter_slots import hold_counter

            hold_counter(container, i.key, i.attr, i.name, parsed.location(i.stmt))
        if not any(o.name == i.name and o.expected[:2] == (i.key, i.attr) for o in out):
            out.append(Guard(i.name, i.name, parsed.fn.__globals__, cell, "item",
                             (i.key, i.attr, held)))
    return tuple(numbers), out


def changed_by_caller(fn: gast.FunctionDef, free: dict[str, str],
                      writes: tuple[tuple[str, Any, bool, Any], ...]) -> tuple[Any, ...]:
    """The locations of a callee's number updates (``writes``: ``(NAME, key, attr,
    location)``, ``Compiled.number_writes``) whose container ``fn``, a caller (SSA form),
    may put an array into before the call: it stores an item or attribute of it with
    anything but a number constant (``STATS["calls"] = np.zeros(3)``; ``= 0`` passes), or uses
    the name otherwise than as ``NAME[constant]`` or ``NAME.attr`` (passes it on). The
    callee's update would then write that array in place, under a value the caller's
    pullback may read (a guard checks the item when the gradient is called, not when the
    callee runs)."""
    if not writes:
        return ()
    users = {key: name for name, key in free.items()}
    names = {w[0] for w in writes}
    spoiled: set[str] = set()
    item_bases = set()
    for node in nodes_of(fn, gast.Subscript, gast.Attribute):
        item = _item_of(node, users)
        if item is None or item[0] not in names:
            continue
        item_bases.add(id(node.value))
    for st in nodes_of(fn, gast.Assign, gast.AugAssign, gast.Delete):
        targets = st.targets if isinstance(st, (gast.Assign, gast.Delete)) else [st.target]
        for t in targets:
            item = _item_of(t, users)
            if item is None or item[0] not in names:
                continue
            value = getattr(st, "value", None)
            number = isinstance(st, gast.Assign) and isinstance(value, gast.Constant) and \
                type(value.value) in (int, float)
            if not number:
                spoiled.add(item[0])
    for node in nodes_of(fn, gast.Name):
        name = users.get(node.id)
        if name in names and id(node) not in item_bases:
            spoiled.add(name)
    return tuple(w[3] for w in writes if w[0] in spoiled)


def counter_stores(fn: gast.FunctionDef, parsed: Parsed,
                   numbers: tuple[NumberItem, ...]) -> tuple[tuple[Any, ...], ...]:
    """The items of global or closure containers (dicts, lists, objects) that ``fn`` (SSA
    form) may put something other than a number into: ``(NAME, key, attr, location)`` for a
    store ``NAME[key] = v`` or ``NAME.key = v`` of anything but a number constant, and
    ``(NAME, None, None, location)`` for a container used otherwise than as
    ``NAME[constant]`` or ``NAME.attr`` (passed on, aliased, ``NAME.update(...)``), which may
    store any of its items. The stores back of ``numbers``' updates (``STATS['calls'] = t``
    after ``t += 1``) are left out. A caller that also runs a number update of that item
    (``Compiled.number_writes``) is refused (:func:`refuse_counter_stores`)."""
    # the free names holding a dict, list or object (most functions read none but np)
    users = {key: name for name, key in parsed.free.items() if _container(parsed, name)}
    if not users:
        return ()
    updated = {i.stmt.target.id: (i.name, i.key, i.attr) for i in numbers
               if isinstance(i.stmt, gast.AugAssign) and isinstance(i.stmt.target, gast.Name)}
    out: list[tuple[Any, ...]] = []
    item_bases: set[int] = set()
    for node in nodes_of(fn, gast.Subscript, gast.Attribute):
        if _item_of(node, users) is not None:
            item_bases.add(id(node.value))
    for st in nodes_of(fn, gast.Assign, gast.AugAssign, gast.Delete):
        targets = st.targets if isinstance(st, (gast.Assign, gast.Delete)) else [st.target]
        value = getattr(st, "value", None)
        for t in targets:
            item = _item_of(t, users)
            if item is None:
                continue
            if isinstance(st, gast.Assign) and (
                    isinstance(value, gast.Constant) and type(value.value) in (int, float) or
                    isinstance(value, gast.Name) and updated.get(value.id) == item):
                continue  # a number, or the store back of a number's update
            out.append((*item, parsed.location(st)))
    # reads that put nothing anywhere: len(STATS), print(STATS), for k in STATS,
    # STATS.get("calls"); a method call of anything else (STATS.update(...), O.reset()) may
    # store any item
    harmless: set[int] = set()
    for call in nodes_of(fn, gast.Call):
        f = call.func
        if isinstance(f, gast.Name) and f.id in _READING_BUILTINS:
            harmless.update(id(a) for a in call.args)
        elif isinstance(f, gast.Attribute):
            item_bases.discard(id(f.value))
            if f.attr in _READING_METHODS:
                harmless.add(id(f.value))
    for loop in nodes_of(fn, gast.For):
        harmless.add(id(loop.iter))
    for node in nodes_of(fn, gast.Name):
        name = users.get(node.id)
        if name is not None and id(node) not in item_bases and id(node) not in harmless:
            out.append((name, None, None, parsed.location(node)))
    return tuple(dict.fromkeys(out))


_READING_BUILTINS = frozenset({"len", "print", "repr", "str", "sorted", "list", "tuple",
                               "dict", "sum", "max", "min", "isinstance", "id", "type",
                               "enumerate", "zip", "iter", "bool", "any", "all",
                               "loop_sequence", "dict_keys"})  # (a for loop's, desugar's)
_READING_METHODS = frozenset({"get", "keys", "values", "items", "copy", "count", "index"})


def _container(parsed: Parsed, name: str) -> bool:
    """Whether the free name ``name`` holds a dict, a list or an object of the user's (not a
    module, function, class or number)."""
    cell = parsed.cells.get(name)
    try:
        value = cell.cell_contents if cell is not None else lookup(parsed.fn.__globals__, name)
    except (ValueError, KeyError, NameError):
        return False
    return isinstance(value, (dict, list)) or (
        hasattr(value, "__dict__") and not isinstance(value, (
            types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
            type)))


def refuse_counter_stores(parsed: Parsed, numbers: tuple[NumberItem, ...],
                          called: list[tuple[gast.Call, Any]]) -> None:
    """Refuses, at the call, a function ``fn`` calls that may put something other than a
    number into an item that ``fn`` or another function it calls updates as a number
    (``w = fill(x)`` storing ``STATS["calls"] = np.full(3, 2)``, then ``count(x)`` with
    ``STATS["calls"] += 1``): the update would change that array in place, under values the
    pullback reads, also where a later call puts a number back (which the check around the
    whole forward, ``adgen.counter_slots``, does not see). ``called``: the calls of user
    functions with what they compiled to (``Compiled.number_writes``,
    ``Compiled.counter_stores``)."""
    counters = [(None, i.name, i.key, i.attr, parsed.location(i.stmt)) for i in numbers]
    counters += [(id(call), *w[:4]) for call, c in called for w in c.number_writes]
    if not counters:
        return
    for call, c in called:
        for name, key, attr, where in c.counter_stores:
            hit = next((w for w in counters if w[0] != id(call) and w[1] == name and (
                key is None or (w[2], w[3]) == (key, attr))), None)
            if hit is None:
                continue
            from adgen.errors import UnsupportedError

            item = f"{name}.{hit[2]}" if hit[3] else f"{name}[{hit[2]!r}]"
            callee = getattr(c, "name", "this function")
            raise UnsupportedError(
                f"{callee} may put a value that is not a number into {item} (at {where}: "
                f"{where.source_line.strip()}), which the update at {hit[4]} "
                f"({hit[4].source_line.strip()}) changes as a counter (compiled as a number's "
                "update, with no in-place write): with an array there, Python's update "
                "changes it in place, under values the derivative reads",
                parsed.location(call),
                hint="keep the counter a number: put the array under another key, or return it "
                     "from the function and use what it returns")
