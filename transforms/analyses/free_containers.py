"""Values put into a global or closure list, dict or set: a log, or a value read back.

A function that logs what it computes into a list it does not own (``HIST.append(y)`` with
``HIST`` a global, ``lambda y: HIST.append(y)`` given as a callback) changes nothing the
result depends on: the call runs as it is, its result (None) has no derivative, and neither
mode writes a tangent or an adjoint for the list. Where the function reads that container
back into its result (``return np.sum(HIST[-1] ** 2)``), the derivative of what it put there
would be lost (a gradient of zero, silently): adgen follows lists it is given or makes, not
a global's, so that is refused at the line.

- :func:`filled_container` -- the receiver of ``G.append(v)`` (``extend``, ``insert``,
  ``update``, ``add``, ``setdefault``) where ``G`` is a global or closure list, dict or set:
  activity keeps ``G`` a constant (what the function reads of it before the call is what
  earlier calls put there), and the call's result carries no derivative
  (:func:`logs_into_container`, for ``activity.nondiff_call``); forward mode gives ``G`` no
  tangent (:func:`filled_names`);
- :func:`refuse_read_back` -- refuses, at the write, a value with a derivative put into such a
  container that the function reads back into its result after the write, and, at the read,
  a read of a global list or dict into the result after a call that may put one there: a
  function given as an argument (``cb(y)``), or a function of the user's whose code fills
  that container (``log(y)``, by its bytecode's names: a filling method or an item store,
  ``CACHE["y"] = y``); where the callee is known only when the call runs (a dict after a
  callback parameter, ``hook["log"](y)``, ``opts.hook(y)``), the call is marked instead
  (``READS_AFTER``: the containers and the read's location), and the forward checks it as it
  runs (transforms/unseen_calls.py, src/adgen/callbacks.py).

Input: the function in SSA form, its activity and the resolver (read only); output: nothing
(but the marks on calls), or an ``UnsupportedError`` naming the line.
"""

from __future__ import annotations

import collections
import dis
import types
from collections.abc import Callable
from typing import Any

import gast
from adgen.transforms.node_index import loaded_names, nodes_of
from adgen.transforms.parse import Parsed

from adgen.errors import UnsupportedError

# methods that put their arguments into the container (their result: None, or the value
# itself for setdefault, which the container then holds)
_FILLS = frozenset({"append", "extend", "insert", "update", "add", "setdefault", "appendleft",
                    "extendleft"})
_CONTAINERS = (list, dict, set, collections.deque)
# the attribute of a call node that names the global or closure containers the function
# reads into its result after the call, with the read's location (:func:`_watch`)
READS_AFTER = "adgen_reads_after"
_HINT = ("make the list in the function (hist = [] ... hist.append(y)) or pass it as an "
         "argument: adgen follows the lists and dicts a function is given or makes; a log "
         "the result does not read back is fine as it is")


def filled_container(call: gast.Call, resolve: Callable[[gast.expr], Any] | None) -> str | None:
    """The name of the global or closure container ``call`` puts its arguments into
    (``HIST.append(y)``: ``HIST``), else None."""
    f = call.func
    if resolve is None or not isinstance(f, gast.Attribute) or f.attr not in _FILLS or \
            not isinstance(f.value, gast.Name):
        return None
    obj = resolve(f)
    owner = getattr(obj, "__self__", None)
    if isinstance(owner, _CONTAINERS) and getattr(obj, "__name__", None) == f.attr:
        return f.value.id
    return None


def filled_names(fn: gast.FunctionDef, resolve: Callable[[gast.expr], Any]) -> set[str]:
    """The global or closure containers ``fn`` puts values into (:func:`filled_container`),
    and the global or closure dicts it stores an item into (``CACHE["y"] = y``)."""
    stored = {t.value.id for a in nodes_of(fn, gast.Assign) for t in a.targets
              if isinstance(t, gast.Subscript) and isinstance(t.value, gast.Name) and
              isinstance(resolve(t.value), dict)}
    return stored | {g for c in nodes_of(fn, gast.Call) if (g := filled_container(c, resolve))}


def logs_into_container(call: gast.Call, obj: Any) -> bool:
    """Whether ``call``, of the object ``obj``, fills a global or closure container and
    returns None (``HIST.append(y)``; not ``setdefault``, whose result is the item): its
    result has no derivative (``activity.nondiff_call``)."""
    f = call.func
    return isinstance(f, gast.Attribute) and f.attr in _FILLS and f.attr != "setdefault" \
        and isinstance(getattr(obj, "__self__", None), _CONTAINERS) and \
        getattr(obj, "__name__", None) == f.attr


def refuse_read_back(fn: gast.FunctionDef, parsed: Parsed, varied: set[str],
                     useful: set[str], resolve: Callable[[gast.expr], Any]) -> None:
    """Refuses what :func:`filled_container`'s containers cannot carry (see the module
    docstring): a value with a derivative put into one the function reads back into its
    result, and a read of a global list or dict into the result in a function that hands a
    value with a derivative to a function held in a variable.

    Raises:
        UnsupportedError: at the write (naming the read), or at the read (naming the call).
    """
    calls = [(st, c) for st, nodes in _statements(fn) for c in nodes
             if isinstance(c, gast.Call)]
    fills = []
    for st, call in calls:
        g = filled_container(call, resolve)
        if g is not None and g in useful and any(
                n in varied for a in [*call.args, *(k.value for k in call.keywords)]
                for n in loaded_names(a)):
            fills.append((st, call, g))
    for st, call, g in fills:
        read = _read_of(fn, g, {id(c.func.value) for _, c, _ in fills}, after=st)
        if read is not None:
            kind = type(resolve(call.func).__self__).__name__
            raise UnsupportedError(
                f"{_text(parsed, st)} puts a value with a derivative into {g}, a global or "
                f"closure {kind}, and line {_line(parsed, read)} reads {g} back into the "
                "result: adgen does not follow a derivative through a container the function "
                "does not own (the gradient would miss it)", parsed.location(st), hint=_HINT)
    # cb(y) of a function given as an argument (it may be lambda y: HIST.append(y)), or
    # log(y) of a function of the user's whose code fills the container
    given = [(st, c) for st, c in calls if any(
        n in varied for a in c.args for n in loaded_names(a))]
    callbacks = [(st, c) for st, c in given
                 if isinstance(c.func, (gast.Name, gast.Attribute)) and (
                     isinstance(c.func, gast.Name) and c.func.id in _parameters(fn) or
                     isinstance(resolve(c.func), types.FunctionType))]
    # hook["log"](y), opts.hook(y) (t1(y) for t1 = hook["log"]): a callee held by a
    # container or an object, known only when the call runs (watched there, as a dict
    # after a callback parameter)
    held_callees = [(st, c) for st, c in given
                    if isinstance(c.func, (gast.Subscript, gast.Attribute, gast.Name)) and
                    resolve(c.func) is None and (not isinstance(c.func, gast.Name) or
                                                 c.func.id not in _parameters(fn))]
    if not callbacks and not held_callees:
        return
    for g in sorted(useful):
        held = resolve(gast.Name(id=g, ctx=gast.Load(), annotation=None, type_comment=None))
        if not isinstance(held, (list, dict, collections.deque)):
            continue
        for cb, c in callbacks:
            callee = resolve(c.func)
            fixed: set[int] = set()
            if isinstance(callee, types.FunctionType):
                if not _may_fill(callee, held):
                    continue
            elif isinstance(held, dict):
                # a dict of options (CFG["scale"]) or a cache the callback stores into
                # (CACHE["y"] = y): which one is known when the call runs
                _watch(parsed, fn, c, g, cb)
                continue
            elif not _changed_here(fn, g):
                # a callback parameter, whose code is known only when it runs: a global
                # list read whole or from its end (HIST[-1], sum(HIST)); a fixed item of a
                # table (C[1], a Butcher tableau's) is what it was before the call, unless
                # the function fills or clears the list itself
                fixed = _fixed_items(fn, g)
            read = _read_of(fn, g, fixed, after=cb)
            if read is not None:
                raise UnsupportedError(
                    f"{_text(parsed, read)} reads {g}, a global or closure container, into "
                    f"the result, and {_text(parsed, cb)} (line "
                    f"{_line(parsed, cb)}) may put a value with a derivative into "
                    "it: adgen does not follow a derivative through a container the function "
                    "does not own (the gradient would miss it)", parsed.location(read),
                    hint=_HINT)
        for cb, c in held_callees:
            _watch(parsed, fn, c, g, cb)


def _watch(parsed: Parsed, fn: gast.FunctionDef, call: gast.Call, g: str,
           st: gast.stmt) -> None:
    """Notes on ``call`` (a callee known only when it runs) that ``fn`` reads the container
    ``g`` into its result after it: the forward calls it through ``checked_callable``, which
    refuses, at that read, a value with a derivative the callee put into ``g``
    (transforms/unseen_calls.py, src/adgen/callbacks.py)."""
    read = _read_of(fn, g, set(), after=st)
    if read is not None:
        reads = getattr(call, READS_AFTER, {})
        reads.setdefault(g, parsed.location(read))
        setattr(call, READS_AFTER, reads)


def _may_fill(fn: types.FunctionType, held: Any, depth: int = 0) -> bool:
    """Whether ``fn``'s code may put values into the container ``held``: it names a method
    that fills one, or stores an item, and a global or closure variable bound to ``held``
    (or calls a function of the user's that may, two levels down)."""
    code = fn.__code__
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    values = [fn.__globals__.get(n) for n in code.co_names] + [
        c.cell_contents for c in cells.values() if _filled(c)]
    if (_FILLS & set(code.co_names) or _stores_items(code)) and any(v is held for v in values):
        return True  # (HIST.append(y); CACHE["y"] = y)
    return depth < 2 and any(isinstance(v, types.FunctionType) and v is not fn and
                             _may_fill(v, held, depth + 1) for v in values)


def _stores_items(code: types.CodeType) -> bool:
    """Whether ``code`` stores an item or a slice (``CACHE["y"] = y``)."""
    return any(i.opname in ("STORE_SUBSCR", "STORE_SLICE") for i in dis.get_instructions(code))


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (an empty cell raises)
    except ValueError:
        return False
    return True


def _changed_here(fn: gast.FunctionDef, g: str) -> bool:
    """Whether ``fn`` calls a method of the container ``g`` that changes it (a log the
    function clears, appends to, pops)."""
    return any(isinstance(c.func, gast.Attribute) and isinstance(c.func.value, gast.Name) and
               c.func.value.id == g and c.func.attr in _FILLS | {"clear", "pop", "remove"}
               for c in nodes_of(fn, gast.Call))


def _fixed_items(fn: gast.FunctionDef, g: str) -> set[int]:
    """The ids of the loads of ``g`` that read an item at a constant index from its start
    (``C[1]``), which an append does not change."""
    return {id(sub.value) for sub in nodes_of(fn, gast.Subscript)
            if isinstance(sub.value, gast.Name) and sub.value.id == g and
            isinstance(sub.slice, gast.Constant) and type(sub.slice.value) is int and
            sub.slice.value >= 0}


def _parameters(fn: gast.FunctionDef) -> set[str]:
    return {a.id for a in fn.args.args} | {a.id for a in fn.args.kwonlyargs}


def _statements(fn: gast.FunctionDef) -> list[tuple[gast.stmt, list[gast.AST]]]:
    """Each statement of ``fn`` with its own nodes: a simple statement's, a loop's or an
    if's head (not their bodies, listed as statements of their own)."""
    out = []
    for st in nodes_of(fn, gast.stmt):
        if st is fn or isinstance(st, (gast.FunctionDef, gast.Try)):
            continue
        if isinstance(st, (gast.For, gast.While, gast.If)):
            heads = [h for h in (getattr(st, "iter", None), getattr(st, "test", None))
                     if h is not None]
            out.append((st, [n for h in heads for n in nodes_of(h)]))
        else:
            out.append((st, list(nodes_of(st))))
    return out


def _read_of(fn: gast.FunctionDef, g: str, receivers: set[int],
             after: gast.stmt | None = None) -> gast.stmt | None:
    """The first statement that reads container ``g`` other than as the receiver of a call
    that fills it (``len(g)`` reads no item); with ``after``, one that may run after that
    statement (later in the code, or in a loop around both: ``prev = HIST[-1]`` before
    ``HIST.append(y)`` reads what an earlier call put there)."""
    lens = {id(c.args[0]) for c in nodes_of(fn, gast.Call)
            if isinstance(c.func, gast.Name) and c.func.id == "len" and len(c.args) == 1}
    loops, order = _loops(fn)
    for st, nodes in _statements(fn):
        if after is not None and order[id(st)] < order[id(after)] and \
                not loops[id(st)] & loops[id(after)]:
            continue
        for n in nodes:
            if isinstance(n, gast.Name) and n.id == g and isinstance(n.ctx, gast.Load) and \
                    id(n) not in receivers and id(n) not in lens:
                return st
    return None


def _loops(fn: gast.FunctionDef) -> tuple[dict[int, set[int]], dict[int, int]]:
    """Each statement's enclosing loops (ids), itself included if it is one, and its place
    in the code's order."""
    out: dict[int, set[int]] = {}
    order: dict[int, int] = {}

    def visit(st: gast.stmt, around: set[int]) -> None:
        here = around | {id(st)} if isinstance(st, (gast.For, gast.While)) else around
        out[id(st)] = here
        order[id(st)] = len(order)
        for field in ("body", "orelse", "finalbody"):
            for child in getattr(st, field, []) or []:
                visit(child, here)
        for handler in getattr(st, "handlers", []) or []:
            for child in handler.body:
                visit(child, here)

    for st in fn.body:
        visit(st, set())
    return out, order


def _text(parsed: Parsed, node: gast.stmt) -> str:
    return parsed.location(node).source_line.strip()


def _line(parsed: Parsed, node: gast.stmt) -> int:
    return parsed.location(node).line
