"""Bindings: a function's free names as Python binds them at a call, and the guards that keep
compiled code true to them.

Not a pass: the facts every pass resolves names through. Python looks a free name up when the
line runs (closure cell, then the module's globals, then builtins); a compiler that reads them
once must check, at each call, that what it assumed still holds. :func:`bind` reads every free
name of the function once, at compile time, and makes one :class:`Guard` per name:

- ``same``: a function, class, module or any other object the compiler may have decided
  something about (a rule, a callee it compiled, a view) -- the guard fails when the name is
  bound to another object (a redefined helper, a re-run notebook cell);
- ``value``: an int, bool, str or None, which the compiler may fold into a decision (a loop
  bound, a typed tape's column) -- the guard fails when the value changes;
- ``kind``: a float or an array, read as a value only -- the guard fails when its kind
  changes (a float becomes an array, an array changes rank or dtype); otherwise the generated
  code's namespace is refreshed with the current value, so a gradient sees ``scale = 10.0``
  assigned after it was compiled, as a plain call does;
- ``unbound``: a name not bound yet (a helper defined below a decorated function) -- the
  guard fails once it is bound;
- ``attr``: the function's ``__defaults__`` and ``__kwdefaults__``, which the compiled forward
  shares -- the guard fails when they are replaced;
- ``item``: an item or attribute of a global container the function updates
  (``STATS["calls"] += 1``, analyses/number_items.py), compiled as a number's update (no
  in-place write) where it holds an immutable value (:func:`holds_immutable`), else as an
  in-place write -- the guard fails when that changes.

A failed guard makes the caller compile again (``pipeline.compile_function``).
"""

from __future__ import annotations

import builtins
import importlib
import sys
import types
from typing import Any

import gast
import numpy as np
from adgen.transforms.walk import walk

UNBOUND = object()  # a name with no binding yet

# Values read as data: a change of value keeps the compiled code (only its kind is assumed).
_DATA = (float, complex, np.floating, np.complexfloating, np.ndarray)
# Values the compiler may fold (loop bounds, int columns): a change recompiles.
_FOLDED = (int, bool, str, bytes, type(None), np.integer, np.bool_)


class Guard:
    """One free name of one compiled function and what its compiled code assumes of it.

    Attributes:
        name: the user's name.
        key: the name the generated code reads it by (``name``, or ``name_1`` when ``name`` is
            one of the generated code's own names).
        scope: the function's ``__globals__`` (for ``attr``: the function).
        cell: the closure cell when the name is a free variable of a closure, else None.
        mode: ``same``, ``value``, ``kind``, ``unbound`` or ``item`` (see the module
            docstring).
        expected: the object, the value, or the kind; for ``item``, ``(key, attr, held)``:
            the item's key (its attribute's name when ``attr``), and whether it held an
            immutable value.
        ns: the generated code's namespace, refreshed for ``kind`` guards (set by the pipeline).

    A plain class (what ``@dataclass(eq=False)`` gave it, written out: a dataclass compiles
    its methods when ``import adgen`` defines it, issue 15's cold start).
    """

    name: str
    key: str
    scope: dict[str, Any]
    cell: Any
    mode: str
    expected: Any
    ns: dict[str, Any] | None

    def __init__(self, name: str, key: str, scope: dict[str, Any], cell: Any, mode: str,
                 expected: Any, ns: dict[str, Any] | None = None) -> None:
        self.name = name
        self.key = key
        self.scope = scope
        self.cell = cell
        self.mode = mode
        self.expected = expected
        self.ns = ns

    def __repr__(self) -> str:
        return (f"Guard(name={self.name!r}, key={self.key!r}, scope={self.scope!r}, "
                f"cell={self.cell!r}, mode={self.mode!r}, expected={self.expected!r}, "
                f"ns={self.ns!r})")

    def current(self) -> Any:
        """The value the name has now, as Python would look it up (UNBOUND if none)."""
        if self.cell is not None:
            try:
                return self.cell.cell_contents
            except ValueError:
                return UNBOUND
        return lookup(self.scope, self.name)

    def describe(self) -> str:
        return {"attr": f"{self.name} was replaced",
                "same": f"{self.name} is bound to another object",
                "value": f"{self.name} has another value",
                "kind": f"{self.name} holds a value of another kind",
                "unbound": f"{self.name} is now defined",
                "item": f"{self.name}{_item_text(self.expected)} holds a value of another "
                        "kind"}[self.mode]


def lookup(scope: dict[str, Any], name: str) -> Any:
    """``name`` in a module's globals, then its builtins (UNBOUND when in neither)."""
    # get, not scope[name] in a try: a builtin's lookup (len, range) is in every gradient
    # call's guards, and raising the KeyError cost about 0.6 us of it
    now = scope.get(name, UNBOUND)
    if now is not UNBOUND:
        return now
    b = scope.get("__builtins__", builtins)
    if isinstance(b, dict):
        return b.get(name, UNBOUND)
    return getattr(b, name, UNBOUND)


def kind_of(value: Any) -> tuple[Any, ...]:
    """What compiled code may assume of a data value: its type, and an array's rank and dtype."""
    if isinstance(value, np.ndarray):
        return (type(value), value.ndim, value.dtype)
    return (type(value),)


def guard_for(name: str, key: str, scope: dict[str, Any], cell: Any, value: Any) -> Guard:
    """The guard of a free name bound to ``value`` at compile time."""
    if value is UNBOUND:
        return Guard(name, key, scope, cell, "unbound", UNBOUND)
    if isinstance(value, _DATA):
        return Guard(name, key, scope, cell, "kind", kind_of(value))
    if isinstance(value, _FOLDED):
        return Guard(name, key, scope, cell, "value", value)
    return Guard(name, key, scope, cell, "same", value)


def failed(guards: tuple[Guard, ...]) -> Guard | None:
    """The first guard that no longer holds, or None; refreshes the values of ``kind`` guards.

    This runs at every call of a gradient, so it is one loop with no calls but ``current``.
    """
    for g in guards:
        if g.mode == "attr":  # the function's own __defaults__ / __kwdefaults__
            if getattr(g.scope, g.name, None) is not g.expected:
                return g
            continue
        if g.cell is not None:
            try:
                now = g.cell.cell_contents
            except ValueError:
                now = UNBOUND
        else:
            now = g.scope.get(g.name, UNBOUND)
            if now is UNBOUND:
                now = lookup(g.scope, g.name)
        mode = g.mode
        if mode == "same":
            if now is not g.expected:
                return g
        elif mode == "kind":
            if type(now) is not g.expected[0] or (
                    len(g.expected) > 1 and (now.ndim != g.expected[1] or
                                             now.dtype != g.expected[2])):
                return g
            g.ns[g.key] = now  # type: ignore[index]
        elif mode == "value":
            if type(now) is not type(g.expected) or now != g.expected:
                return g
        elif mode == "item":
            if holds_immutable(now, g.expected[0], g.expected[1]) is not g.expected[2]:
                return g
        elif now is not UNBOUND:
            return g
    return None


# Values an augmented assignment rebinds rather than writes in place (ndarray is none of them)
_IMMUTABLE = (int, float, complex, np.generic, str, bytes, tuple, frozenset)


def holds_immutable(container: Any, key: Any, attr: bool) -> bool:
    """Whether ``container[key]`` (``container.key`` when ``attr``) holds an immutable value,
    read without running a property's getter or a dict subclass's ``__getitem__``."""
    import inspect

    if attr:
        value = inspect.getattr_static(container, key, UNBOUND)
    elif type(container) is dict:
        value = container.get(key, UNBOUND)
    elif type(container) is list and type(key) is int and -len(container) <= key < len(container):
        value = container[key]
    else:
        return False
    return isinstance(value, _IMMUTABLE) and not isinstance(value, np.ndarray)


def _item_text(expected: tuple[Any, bool, bool]) -> str:
    key, attr, _ = expected
    return f".{key}" if attr else f"[{key!r}]"


class _NotFound:
    def __repr__(self) -> str:
        return "NOT_FOUND"


NOT_FOUND = _NotFound()  # dotted_object: the name or attribute chain is bound to nothing


def dotted_object(parsed: Any, node: gast.expr, *, builtin_names: bool = False,
                  stored_only: bool = False, also_local: Any = frozenset()) -> Any:
    """The object a free name, or an attribute chain from one (``np.linalg.solve``,
    ``cfg.W``, ``Model.f``), is bound to in the function's namespace: the one walk every
    resolver of a dotted name shares (:func:`chain_value`, ``front.resolve``,
    ``reverse_plan.Plan.resolve``, ``lower_mutation``'s). What each does with the object
    (a bound method, an ``lru_cache`` wrapper, a NumPy function's reference implementation)
    is its own; see their docstrings.

    Args:
        parsed: the parsed function (its ``namespace`` and ``is_local``).
        node: an expression; only a ``gast.Name`` or a chain of ``gast.Attribute`` on one
            can resolve.
        builtin_names: a name the namespace does not hold is looked up in ``builtins``
            (``len``, ``isinstance``: the passes write calls of them that the user's code
            never read).
        stored_only: read only the attributes objects and modules store (their
            ``__dict__``), running no code (no property, no ``__getattr__``; nothing of an
            ndarray), where a check must not run the user's code; else ``getattr``, as the
            function's own code would.
        also_local: names bound in the function besides ``parsed``'s locals (names the
            passes made).

    Returns:
        The object, or :data:`NOT_FOUND` for anything but a dotted name, a local, a name
        bound nowhere, or an attribute that is not there (an attribute chain of a None it
        holds is read from None).
    """
    parts = []
    while isinstance(node, gast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, gast.Name) or parsed.is_local(node.id) or node.id in also_local:
        return NOT_FOUND
    obj = parsed.namespace.get(node.id, NOT_FOUND)
    if obj is NOT_FOUND and builtin_names:
        obj = getattr(builtins, node.id, NOT_FOUND)
    for p in reversed(parts):
        if obj is NOT_FOUND:
            break
        if not stored_only:
            obj = getattr(obj, p, NOT_FOUND)
            continue
        stored = getattr(obj, "__dict__", None)
        if isinstance(obj, np.ndarray) or not hasattr(stored, "get"):
            return NOT_FOUND
        obj = stored.get(p, NOT_FOUND)
    return obj


def chain_value(parsed: Any, node: gast.expr, *, stored_only: bool) -> Any:
    """The object a free name, or an attribute chain from one, is bound to in the function's
    namespace (``parsed``: a ``parse.Parsed``); None for a local, a name the namespace does
    not hold (builtins are not looked up), or an attribute that is not there.

    Args:
        parsed: the parsed function (its ``namespace`` and ``is_local``).
        node: a ``gast.Name`` or a chain of ``gast.Attribute`` on one.
        stored_only: as :func:`dotted_object`'s.
    """
    obj = dotted_object(parsed, node, stored_only=stored_only)
    return None if obj is NOT_FOUND else obj


def read_names(tree: gast.FunctionDef, is_local: Any) -> list[str]:
    """The names ``tree`` reads that it does not bind, in order of first use."""
    seen: dict[str, None] = {}
    for n in walk(tree):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and \
                not is_local(n.id):
            seen.setdefault(n.id, None)
    return list(seen)


def local_imports(tree: gast.FunctionDef) -> dict[str, Any]:
    """``import numpy as onp`` / ``from math import exp`` at the top level of the function's
    body: the names they bind, to the modules and objects Python would bind them to. They are
    read like globals (the import statements are removed by the caller)."""
    out: dict[str, Any] = {}
    for s in tree.body:
        if isinstance(s, gast.Import):
            for a in s.names:
                if a.asname:
                    out[a.asname] = importlib.import_module(a.name)
                else:
                    top = a.name.split(".")[0]
                    importlib.import_module(a.name)
                    out[top] = importlib.import_module(top)
        elif isinstance(s, gast.ImportFrom) and s.level == 0 and s.module:
            mod = importlib.import_module(s.module)
            for a in s.names:
                if a.name == "*":
                    continue
                try:
                    out[a.asname or a.name] = getattr(mod, a.name)
                except AttributeError:
                    out[a.asname or a.name] = importlib.import_module(f"{s.module}.{a.name}")
    return out


def is_module(obj: Any) -> bool:
    return isinstance(obj, types.ModuleType)


# Libraries whose module attributes nobody rebinds between calls: guarding every np.sum a
# function reads would cost each gradient call a lookup per NumPy function.
_UNGUARDED = frozenset(sys.stdlib_module_names) | {"numpy", "scipy", "adgen", "gast"}


def module_attribute_guards(tree: gast.FunctionDef, roots: dict[str, Any]) -> list[Guard]:
    """Guards of the attributes the function reads through a module (``losses.l2(w)``,
    ``cfg.DT``), for modules of the user's own code, and of the functions it calls through a
    global object (``cfg.act(w)``, rebound to another function between calls).

    A name guard holds as long as ``losses`` is the same module; the function ``losses.l2``
    the compiled code calls can still be replaced (``importlib.reload(losses)``, a test's
    monkeypatch), and the compiled caller would keep the old one's derivative. Each step of
    a chain rooted at a module name in ``roots`` (name -> the object it is bound to) whose
    object is a module outside the standard library and NumPy gets a guard on the module's
    dict, of the mode :func:`guard_for` gives its value.

    Args:
        tree: the function's tree.
        roots: the function's free names and imports, with the objects they are bound to.

    Returns:
        The guards, one per (module, attribute) read.
    """
    out: dict[tuple[int, str], Guard] = {}
    for node in walk(tree):
        if not isinstance(node, gast.Attribute) or not isinstance(node.ctx, gast.Load):
            continue
        parts = []
        base: gast.expr = node
        while isinstance(base, gast.Attribute):
            parts.append(base.attr)
            base = base.value
        if not isinstance(base, gast.Name) or base.id not in roots:
            continue
        obj = roots[base.id]
        for k, attr in enumerate(reversed(parts)):
            if is_module(obj):
                if str(getattr(obj, "__name__", "")).split(".")[0] in _UNGUARDED:
                    break
                scope = vars(obj)
                value = scope.get(attr, UNBOUND)
            else:
                # a global object's attribute (cfg.act(w)): guarded when it holds what the
                # compiler resolved -- a function, or an object a longer chain goes through;
                # numbers and arrays are read as the code runs
                scope = getattr(obj, "__dict__", None)  # a class's: a mappingproxy
                if not isinstance(scope, (dict, types.MappingProxyType)) or attr not in scope:
                    break
                value = scope[attr]
                last = k == len(parts) - 1
                if isinstance(value, (_DATA, _FOLDED, list, dict, tuple)) or (
                        last and not callable(value)):
                    break
            if (id(obj), attr) not in out:
                g = guard_for(attr, f"{getattr(obj, '__name__', type(obj).__name__)}.{attr}",
                              scope, None, value)
                g.ns = {}  # a kind guard refreshes nothing: the code reads the attribute
                out[(id(obj), attr)] = g
            obj = value
    return list(out.values())
