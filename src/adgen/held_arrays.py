"""The arrays a pullback from ``adgen.vjp`` reads that the program can still change in place.

A pullback reads the values its forward saved by reference, not copies. Those the forward
computed are its own; the arguments, the output and the global and closure arrays it reads
are checked by :func:`argument_snapshots` and :func:`free_snapshots`. What is left is an array held
by a global or closure *object* the function reads: ``cfg.A``, ``D["A"]``, ``self.W`` of a
global model whose method the function calls, an array a method hands out (``cfg.make()``
returning ``self.M``), or a view of one. Changed in place between ``vjp`` and the pullback
(``cfg.A[1] = 100``), it gave a silently wrong cotangent.

:func:`held_snapshots` finds the saved arrays that are such an array or a view of one (by the
array that owns their memory), right after the forward ran, and copies them; the pullback
compares them before it runs (``api.vjp``). It runs in ``vjp`` only: ``grad`` runs its
pullback at once.

What is searched: the values of the compiled function's free names (its callees' too; the
guards hold them), and inside them, three levels down, the items of dicts, lists and
tuples, the attributes of objects (their ``__dict__``, ``__slots__`` and the class
attributes the code names) and the attributes of modules the code names. A search that
meets more than ``LIMIT`` values stops and copies every saved array instead (an array the
forward made compares equal: never a false error).
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from adgen.adjoints import is_function_like
from adgen.arguments import leaves_of, primal_function

LIMIT = 100_000
_DEPTH = 3
_ATOMS = (str, bytes, int, float, complex, bool, type(None), np.generic)
_LIBRARIES = frozenset({"numpy", "math", "scipy", "adgen"})
_PLAIN_CLASSES = frozenset({"builtins", "types"})  # (SimpleNamespace: no class attributes)
# the types of what a module mostly holds, skipped without asking is_function_like
_CALLED = frozenset({types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                     np.ufunc, type(np.sum), functools.partial})


def held_snapshots(compiled: Any, saved: Any, seen: set[int]
                   ) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """``(what, array, copy)`` for each array in ``saved`` (not in ``seen``, by id) whose
    memory belongs to an array a free object of ``compiled`` holds."""
    values = free_values(compiled)
    if not values:
        return []  # (a function of its arguments, NumPy and global numbers alone)
    leaves = [a for a in _arrays(saved) if id(a) not in seen]
    if not leaves:
        return []
    held = _held(compiled, values)
    found: list[tuple[str, np.ndarray, np.ndarray]] = []
    for leaf in leaves:
        owner = owner_of(leaf)
        what = "a saved value" if held is None else held.get(id(owner))
        if what is not None and id(leaf) not in seen:
            seen.add(id(leaf))
            found.append((what if owner is leaf or held is None else f"a part of {what}",
                          leaf, leaf.copy()))
    return found


def free_values(compiled: Any) -> list[tuple[str, Any]]:
    """(name, value) of the free names of ``compiled`` (its callees' too) that may hold an
    array of the program: arrays, objects, containers, modules of the user's (not functions,
    numbers or NumPy). Their kinds are guarded: another kind of value there recompiles."""
    return [(g.name, v) for g in getattr(compiled, "guards", ()) if g.mode != "attr"
            for v in [g.current()] if _searched(v)]


def held_owners(compiled: Any) -> dict[int, str] | None:
    """id(owner array) -> where the program holds it (``G``, ``cfg.W``, ``D['w']``), for
    every array the compiled function's free names hold or hold three levels down (the
    arrays of global and closure names themselves too); None: too many values to search."""
    values = free_values(compiled)
    if all(type(v) is np.ndarray for _, v in values):  # (no object to search: the common case)
        return {id(owner_of(v)): name for name, v in reversed(values) if v.dtype.kind != "O"}
    return _held(compiled, values)


def owner_of(a: np.ndarray) -> np.ndarray:
    """The array that owns ``a``'s memory (``a`` itself if it is not a view)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _arrays(saved: Any) -> list[np.ndarray]:
    """The numeric ndarrays in the saved values (tuples, lists and dicts of them)."""
    out: list[np.ndarray] = []
    todo = [saved]
    while todo:
        v = todo.pop()
        if isinstance(v, np.ndarray):
            if v.dtype.kind != "O":
                out.append(v)
        elif isinstance(v, (tuple, list)):
            todo.extend(v)
        elif isinstance(v, dict):
            todo.extend(v.values())
    return out


def refuse_held_write(array: Any, values: tuple[tuple[str, Any], ...],
                      attrs: tuple[str, ...]) -> None:
    """Refuses, in forward mode, an in-place write into ``array`` where it shares memory with
    an array the ``values`` of the function's free names hold (three levels down, the
    attributes ``attrs`` the code reads of modules and classes): the jvp code has no tangent
    for a global array (``transforms/built_object_writes.py``).

    Raises:
        UnsupportedError: naming the global array (located at the user's line by the caller).
    """
    if not isinstance(array, np.ndarray) or not values:
        return
    search = _Search(set(attrs))
    done = all(search.walk(value, path, _DEPTH) for path, value in values)
    what = search.held.get(id(owner_of(array))) if done else "an array it could not search"
    if what is None:
        return
    from adgen.errors import UnsupportedError

    raise UnsupportedError(
        f"forward mode (jvp, jacfwd, hvp, hessian) does not follow an in-place write of a "
        f"global or closure array: the array written here is {what} (or shares its memory), "
        "held by a value the function reads as a global or closure variable",
        hint=f"write into a copy ({what}.copy() where the object is built), or use grad or "
             "jacrev")


def _codes(compiled: Any) -> list[Any]:
    codes = []
    todo = [compiled]
    while todo:
        c = todo.pop()
        for f in (getattr(c, "forward", None), getattr(c, "pullback", None)):
            code = getattr(f, "__code__", None)
            if code is not None:
                codes.append(code)
        todo.extend((getattr(c, "callees", None) or {}).values())
    return codes


def _searched(value: Any) -> bool:
    """Whether a free name's value may hold an array of the program: an array, an object, a
    container or a module of the user's (not a function, a number, or NumPy)."""
    if isinstance(value, np.ndarray):
        return True
    if isinstance(value, _ATOMS) or type(value) in _CALLED:
        return False
    if isinstance(value, types.ModuleType):
        return value.__name__.partition(".")[0] not in _LIBRARIES
    if isinstance(value, type):  # a class of the user's (range, list: none of its arrays)
        return value.__module__ not in _PLAIN_CLASSES
    return not is_function_like(value)


def _held(compiled: Any, values: list[tuple[str, Any]]) -> dict[int, str] | None:
    """id(owner array) -> where the program holds it (``cfg.A``), for the free names'
    ``values``; None: too many values to search."""
    search = _Search({n for code in _codes(compiled) for n in code.co_names})
    for name, value in values:
        if not search.walk(value, name, _DEPTH):
            return None
    return search.held


class _Search:
    """One search of the values a compiled function's free names hold (no closure: a
    recursive one is a reference cycle, left to the garbage collector at every vjp)."""

    def __init__(self, names: set[str]) -> None:
        self.names = names  # the attribute names the code reads
        self.held: dict[int, str] = {}
        self.visited: set[int] = set()
        self.budget = LIMIT

    def walk(self, v: Any, path: str, depth: int) -> bool:
        """Records the arrays in ``v``; False when the budget ran out."""
        self.budget -= 1
        if self.budget < 0:
            return False
        if isinstance(v, np.ndarray):
            if v.dtype.kind != "O":
                self.held.setdefault(id(owner_of(v)), path)
            return True
        if depth == 0 or id(v) in self.visited or isinstance(v, _ATOMS):
            return True
        self.visited.add(id(v))
        names = self.names
        items: list[tuple[str, Any]]
        if isinstance(v, dict):
            items = [(f"{path}[{k!r}]", x) for k, x in v.items()]
        elif isinstance(v, (list, tuple)):
            items = [(f"{path}[{i}]", x) for i, x in enumerate(v)]
        elif isinstance(v, types.ModuleType) and \
                v.__name__.partition(".")[0] in _LIBRARIES:
            return True  # NumPy's arrays (np.pi's kin) are no program's data
        elif isinstance(v, (types.ModuleType, type)):  # what the code names of them
            space = vars(v)
            items = [(f"{path}.{n}", space[n]) for n in names if n in space]
        elif callable(v) and is_function_like(v):
            return True  # a function, a method, a builtin, a ufunc: no arrays of the program
        else:
            space = getattr(v, "__dict__", None) or {}
            items = [(f"{path}.{n}", x) for n, x in space.items()]
            kind = type(v)
            for n in getattr(kind, "__slots__", ()) or ():
                if isinstance(n, str) and hasattr(v, n):
                    items.append((f"{path}.{n}", getattr(v, n)))
            if kind.__module__ not in _PLAIN_CLASSES:  # class attributes the code reads
                cls = vars(kind)
                items += [(f"{path}.{n}", cls[n]) for n in names if n in cls and
                          n not in space]
        for p, x in items:
            if isinstance(x, np.ndarray):
                if x.dtype.kind != "O":
                    self.held.setdefault(id(owner_of(x)), p)
                continue
            if isinstance(x, _ATOMS) or type(x) in _CALLED or (
                    callable(x) and is_function_like(x) and
                    not isinstance(x, (types.ModuleType, type))):
                continue
            if not self.walk(x, p, depth - 1):
                return False
        return True


def argument_snapshots(fun: Callable[..., Any], args: tuple[Any, ...], out: Any,
               reads: Any) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Copies of the arrays in the arguments the pullback reads, and in the output."""
    code = getattr(primal_function(fun), "__code__", None)
    names = code.co_varnames[:code.co_argcount] if code is not None else ()
    found: list[tuple[str, np.ndarray, np.ndarray]] = []
    seen: set[int] = set()
    parts = [(f"argument {k} ({names[k]})" if k < len(names) else f"argument {k}", a)
             for k, a in enumerate(args)
             if reads is True or (k < len(names) and names[k] in reads) or k >= len(names)]
    for what, value in parts + [("the output", out)]:
        for leaf in leaves_of(value):
            # (an object array's copy is shallow: what its items hold is not checked)
            if type(leaf) is np.ndarray and leaf.dtype.kind != "O" and id(leaf) not in seen:
                seen.add(id(leaf))
                found.append((what, leaf, leaf.copy()))
    return found


def free_snapshots(compiled: Any) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Copies of the global and closure arrays a pullback (the function's or a callee's)
    reads: they travel with its saved values by reference (free_values.py), so one changed
    in place after vjp returned (a data buffer refilled) would give a wrong gradient."""
    pullbacks = []
    todo = [compiled]
    while todo:
        c = todo.pop()
        pullbacks.append(getattr(c, "pullback", None))
        todo.extend((getattr(c, "callees", None) or {}).values())
    read: set[str] = set()
    for pb in pullbacks:
        code = getattr(pb, "__code__", None)
        if code is not None:
            read.update(code.co_names, code.co_varnames)
    found: list[tuple[str, np.ndarray, np.ndarray]] = []
    seen: set[int] = set()
    for g in compiled.guards:
        value = g.ns.get(g.key) if g.mode == "kind" and isinstance(g.ns, dict) else None
        if type(value) is np.ndarray and g.key in read and id(value) not in seen:
            seen.add(id(value))
            found.append((f"the global {g.name}", value, value.copy()))
    return found
