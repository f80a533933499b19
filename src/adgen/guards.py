"""Guards: values a pullback reads that a later in-place write may overwrite.

Captures of the values a pullback reads, kept live per buffer in a ``capture_index.CaptureIndex``,
the check every in-place write makes against them (``before_write``: free, a copy under
"save", MutationError under "strict"), and the remapping of a callee's saved values onto the
copies its caller's guards took (``remap_saved``). Generated code imports these from
:mod:`adgen.runtime`; each is a plain top-level function or class using only numpy, so ``-o``
modules copy its source (transforms/standalone.py).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import types
from collections.abc import Iterator
from typing import Any

import numpy as np

from adgen.capture_index import CaptureIndex, extent
from adgen.copy_hints import copy_hint
from adgen.handoffs import handing, handoff_error, note_handoff
from adgen.memory_layout import elements_overlap
from adgen.shadow_memory import (
    ShadowMap,
    note_overlapped_write,
    root_of,
)
from adgen.write_regions import flat_target

# --------------------------------------------------------------------------------------------
# Guards: values a pullback reads that a later in-place write may overwrite.


class Capture:
    """A value kept for a pullback, which a guarded write may overwrite.

    ``value`` is the value as it was at capture: the live array until a guarded write
    overlaps it, then the copy the guard took just before the write.
    """

    __slots__ = ("array", "snapshot", "line", "what", "file")

    def __init__(self, array: Any, file: str, line: int, what: str) -> None:
        self.array = array
        self.snapshot: Any = None
        self.file = file
        self.line = line
        self.what = what

    @property
    def value(self) -> Any:
        return self.array if self.snapshot is None else self.snapshot


class RuleArgument(Capture):
    """An array passed to a user's ``adgen.rrule``, whose pullback (a closure) may read it:
    a guarded write that overwrites it copies it under either policy, and the pullback runs
    with the copy's values put back (dispatch.pullback_of). Strict refuses a write only of a
    value adgen's own code reads; a rule reads what it was called with (session 28's
    copies at every call gave the same under strict)."""

    __slots__ = ()


def _users_rule_record(saved: Any) -> bool:
    """Whether ``saved`` is dispatch's record of a call of a user's ``adgen.rrule``."""
    return type(saved) is tuple and len(saved) == 7 and saved[0] == "rrule" and \
        not str(getattr(getattr(saved[1], "primal", None), "__module__", "") or ""
                ).startswith("adgen")


class GuardScope:
    """The live captures of one forward pass, indexed by the buffer they view."""

    def __init__(self, policy: str = "save") -> None:
        # the mutation policy of the forward pass (compiled_calls.run_forward): what dispatch
        # compiles the calls it resolves when they run under ("strict" stays strict there)
        self.policy = policy
        self.live: dict[int, CaptureIndex] = {}
        self.saved_bytes: dict[tuple[str, int, int], int] = {}
        # functions compiled or run through a dynamic call in this pass (for explain)
        self.dynamic: list[Any] = []
        # under "strict": the call that handed each watched buffer to a callee inside a
        # container or object (root id -> handoffs.Handoff)
        self.handed: dict[int, Any] = {}
        # the records of containers' slots made in this pass (item_shadows.items_at: id ->
        # (container, item_shadows.SlotChanges.count then, record)), taken again while no
        # statement may have changed a slot since
        self.records: dict[int, tuple[Any, int, Any]] = {}


class _ThreadScopes(threading.local):
    """Per thread: the stack of guard scopes (the last is the running forward pass's) and of
    save measurements. Each thread starts with a scope of its own, so the forward passes of two
    threads never see (or save into) each other's captures."""

    def __init__(self) -> None:
        self.scopes: list[GuardScope] = [GuardScope()]
        self.measure: list[dict[tuple[str, int, int], int]] = []


_THREAD = _ThreadScopes()


@contextlib.contextmanager
def guard_scope(policy: str = "save") -> Iterator[GuardScope]:
    """A fresh scope of captures for one top-level forward pass, under ``policy``."""
    scope = GuardScope(policy)
    scopes = _THREAD.scopes
    scopes.append(scope)
    try:
        yield scope
    finally:
        scopes.pop()


def scope_stack() -> list[GuardScope]:
    """This thread's stack of guard scopes (api.py pushes a fresh one for each forward pass)."""
    return _THREAD.scopes


def current_scope() -> GuardScope:
    """The scope of the forward pass that is running."""
    return _THREAD.scopes[-1]


@contextlib.contextmanager
def measure_saves(policy: str = "save") -> Iterator[dict[tuple[str, int, int], int]]:
    """Collects the bytes each guarded write saves, keyed by (file, line, col), in a forward
    pass under ``policy``."""
    measured: dict[tuple[str, int, int], int] = {}
    measures = _THREAD.measure
    measures.append(measured)
    try:
        with guard_scope(policy) as scope:
            measured["__scope__"] = scope  # type: ignore[index]
            yield measured
    finally:
        measures.pop()


def copy_before_loop(x: Any, file: str, line: int, col: int) -> Any:
    """A copy of ``x`` taken before a loop whose iterations read rows of ``x`` that no
    earlier iteration wrote (rows ahead of its counter): the pullback reads them here, so the
    writes of the loop need no guard. Its size counts as saved at the write of ``line``,
    ``col`` (for ``adgen.explain``)."""
    return copy_when_read(x, file, line, col)


def copy_when_read(x: Any, file: str, line: int, col: int) -> Any:
    """A copy of the part ``x`` of an array, taken where the pullback reads it because a
    later write of the same array (``line``, ``col``) will overwrite it: cheaper than a guard
    at every write that would copy it then. Its size counts as saved at that write (for
    ``adgen.explain``)."""
    copied = x.copy()
    measures = _THREAD.measure
    if measures:
        key3 = (file, line, col)
        measures[-1][key3] = measures[-1].get(key3, 0) + copied.nbytes
    return copied


def capture(x: Any, file: str, line: int, what: str, within: Any = None,
            passed: tuple[int | str, ...] = (), watch: bool = True) -> Any:
    """Keeps ``x`` for a pullback; a later guarded write that overlaps it saves or raises.

    ``within``: for ``x`` passed to a call, what the callee saved (the capture of an object
    covers only the arrays of it the callee's saved values hold). ``passed``: for ``x``
    passed to a call resolved when it ran (dispatch.forward_of), where (:func:`callee_reads`):
    a callee whose pullback does not read it keeps it only as the argument its adjoint goes
    to, and a later write of it overwrites nothing the gradient reads. ``watch=False``: an
    argument of a compiled callee that reads it only through captures of its own, which
    stay live and guard it (``Compiled.reads_uncaptured``)."""
    if not watch or (passed and not callee_reads(within, passed)):
        return _Unread(x)
    if _THREAD.measure:  # adgen.explain with example arguments: what each capture held
        note_captured(_THREAD.measure[-1], file, line, what, x)
    if not isinstance(x, np.ndarray):
        attrs = getattr(x, "__dict__", None)
        if isinstance(attrs, dict) and type(x) is not type:
            # an object (a method's self): the arrays of it the callee kept are captured, so
            # that a later write into one is guarded and the callee's saved views redirected
            kept = None if within is None else _roots_held(within, x)
            held = [Capture(v, file, line, f"{what}.{k}") for k, v in attrs.items()
                    if isinstance(v, np.ndarray) and (kept is None or
                                                      id(root_of(v)) in kept)]
            # and those of its lists and dicts (self.state[0], read by the callee and
            # written by the caller after the call: unguarded, the callee's pullback read
            # the new values, silently, until session 28)
            held += [Capture(w, file, line, f"{what}.{k}[{j!r}]")
                     for k, v in attrs.items() if type(v) in (list, dict)
                     for j, w in _arrays_of(v) if kept is None or id(root_of(w)) in kept]
            for cap in held:
                _watch(cap)
            return _Held(x, held)
        if type(x) is tuple and any(isinstance(v, np.ndarray) for v in x):
            # a tuple of arrays (an index (rows, 1)): its arrays are captured
            caps = [Capture(v, file, line, what) if isinstance(v, np.ndarray) else v
                    for v in x]
            for cap in caps:
                if isinstance(cap, Capture):
                    _watch(cap)
            return _HeldItems(caps)
        if within is not None and type(x) in (list, dict):
            # a list or dict handed to a call: the arrays of it the callee kept (its tape of
            # sin(w) for w in ws) are captured, so that the caller's later write into one (w
            # = ws[i]; w -= lr * g) is guarded and the callee's saved values redirected.
            # Unwatched, the callee's pullback read the new values (a wrong gradient under
            # both policies until session 25)
            kept = _roots_kept(within, x)
            held = [Capture(v, file, line, f"{what}[{k!r}]") for k, v in _arrays_of(x)
                    if kept is None or id(root_of(v)) in kept]
            for cap in held:
                _watch(cap)
            if held:
                return _Held(list(x) if type(x) is list else x, held)
        # a list (an index a later store may change): its items as they are now
        return _Kept(list(x) if type(x) is list else x)
    cap = (RuleArgument if within is not None and _users_rule_record(within)
           else Capture)(x, file, line, what)
    _watch(cap)
    return cap


def callee_reads(saved: Any, passed: tuple[int | str, ...]) -> bool:
    """Whether the pullback of a call the dispatch ran (``saved``: what it returned) may read
    the value of the argument it was given at ``passed`` (positions counted from the last
    positional argument, -1 the last, and keyword names) where no capture of the callee's
    own watches it (``Compiled.reads_uncaptured``: those stay live, and a later guarded
    write checks them). Anything it cannot tell (a rule, ``*args``, a ``**kw`` keyword):
    it may."""
    kind = saved[0] if type(saved) is tuple and saved else None
    if kind in ("compiled", "compiled alone") and len(saved) == 5:
        compiled, ncalled = saved[1], saved[3]  # (receiver and arguments)
    elif kind == "closure":
        compiled, ncalled = saved[1], saved[5]
    elif kind == "init":
        compiled, ncalled = saved[1], 1 + saved[4]  # (self first)
    else:
        return True
    reads = getattr(compiled, "reads_uncaptured", True)
    code = getattr(compiled.forward, "__code__", None)
    if reads is True or code is None:
        return True
    # (the forward's parameters are the names it holds: the callee's own, then a closure's
    # cells)
    params = code.co_varnames[:code.co_argcount]
    for slot in passed:
        k = ncalled + slot if isinstance(slot, int) else -1
        param = slot if isinstance(slot, str) else params[k] if 0 <= k < len(params) else None
        if param is None or param not in params or param in reads:
            return True
    return False


def note_captured(measured: dict[Any, Any], file: str, line: int, what: str, x: Any) -> None:
    """Notes in ``measured`` (of :func:`measure_saves`) whether the value ``what`` captured
    at ``line`` was a number, which no in-place write can change, or something else, so
    ``explain`` names only what a write may overwrite in the run it measured."""
    held = measured.setdefault("__captured__", {}).setdefault((file, line, what), set())
    held.add("number" if isinstance(x, (int, float, complex, np.number)) else "other")


def _watch(cap: Capture) -> None:
    """Makes ``cap`` live in the running forward pass: guarded writes check it."""
    if cap.array.size == 0:
        return  # no element of it can be overwritten
    root = root_of(cap.array)
    live = _THREAD.scopes[-1].live
    watch = live.get(id(root))
    if watch is None:
        watch = live[id(root)] = CaptureIndex(root)
    watch.add(cap)


def _roots_held(saved: Any, obj: Any) -> set[int] | None:
    """The ids of the root buffers of the arrays in a callee's saved values. A compiled
    pullback reads an attribute's value from the array its forward saved, never through the
    object, so ``obj`` itself in there adds nothing; a rule's pullback (``rrule``) may read
    anything of it (None: every array of ``obj``)."""
    roots: set[int] = set()
    todo = [saved]
    seen: set[int] = set()
    while todo:
        v = todo.pop()
        if id(v) in seen or v is obj:
            continue
        seen.add(id(v))
        if type(v) is tuple and v and isinstance(v[0], str) and v[0] in ("rrule", "rule"):
            return None
        if isinstance(v, np.ndarray):
            roots.add(id(root_of(v)))
        elif isinstance(v, (tuple, list)):
            todo.extend(v)
        elif isinstance(v, dict):
            todo.extend(v.values())
    return roots


def _arrays_of(x: list[Any] | dict[Any, Any]) -> list[tuple[Any, np.ndarray]]:
    """The float arrays a list or dict holds, with their keys (one level of nested lists and
    dicts too, keyed by the pair of keys)."""
    out: list[tuple[Any, np.ndarray]] = []
    if not _may_hold_arrays(x.values() if isinstance(x, dict) else x):
        return out  # (a model's list of layers, captured with the model at every step)
    for k, v in (x.items() if isinstance(x, dict) else enumerate(x)):
        if isinstance(v, np.ndarray):
            if v.dtype.kind in "fc":
                out.append((k, v))
        elif type(v) in (list, dict):
            out += [((k, j), w) for j, w in (v.items() if isinstance(v, dict) else enumerate(v))
                    if isinstance(w, np.ndarray) and w.dtype.kind in "fc"]
    return out


def _may_hold_arrays(values: Any, kinds: tuple[type, ...] = (np.ndarray, list, dict)) -> bool:
    """Whether an item of ``values`` may be an instance of ``kinds`` (or of a subclass): the
    items' classes found in a C loop, so that a list of many objects (a model's layers) is not
    walked item by item in Python where none is (issue 15)."""
    return any(issubclass(kind, kinds) for kind in set(map(type, values)))


def _roots_kept(saved: Any, container: Any) -> set[int] | None:
    """The ids of the root buffers of the arrays in a callee's saved values, the items of
    ``container`` included where the saved values hold it (a compiled pullback may read an
    item again through it: ``seq1[i1]`` of the list it walked, where nothing wrote the item
    in the callee); None where a rule's pullback may read anything. A dict view's or
    ``d.get``'s record (dispatch) reads no value."""
    roots: set[int] = set()
    todo = [saved]
    seen: set[int] = set()
    while todo:
        v = todo.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if isinstance(v, np.ndarray):
            roots.add(id(root_of(v)))
        elif v is container:
            roots |= {id(root_of(a)) for _, a in _arrays_of(container)}
        elif type(v) is tuple and v and isinstance(v[0], str) and v[0] in ("rrule", "rule"):
            return None
        elif type(v) is tuple and v and isinstance(v[0], str) and \
                v[0] in ("dict view", "dict get"):
            continue
        elif isinstance(v, (tuple, list)):
            todo.extend(v)
        elif isinstance(v, dict):
            todo.extend(v.values())
    return roots


class _Held:
    """A captured object, with captures of the arrays it holds."""

    __slots__ = ("value", "held")

    def __init__(self, value: Any, held: list[Capture]) -> None:
        self.value = value
        self.held = held


class _HeldItems:
    """A captured tuple: its arrays as they were at capture (their guards' copies, if a
    write came since), its other items as they are."""

    __slots__ = ("items",)

    def __init__(self, items: list[Any]) -> None:
        self.items = items

    @property
    def held(self) -> list[Capture]:
        return [c for c in self.items if isinstance(c, Capture)]

    @property
    def value(self) -> tuple[Any, ...]:
        return tuple(c.value if isinstance(c, Capture) else c for c in self.items)


class _Kept:
    """A captured value that cannot be overwritten in place (a float, a tuple)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class _Unread(_Kept):
    """An argument of a callee whose pullback does not read its values where no capture of
    its own watches them (:func:`capture`'s ``passed`` and ``watch``): watched by no guard
    of the caller's, and left as it is in the callee's saved values (:func:`remap_saved`),
    where it stands for the argument its adjoint goes to."""

    __slots__ = ()


def before_write(target: Any, region: Any, policy: str, file: str, line: int, col: int,
                 construct: str, value: Any = None) -> None:
    """Runs just before an in-place write of ``region`` (a view of ``target``, or ``target``).

    Every live capture whose memory overlaps the region is saved (policy "save") or reported
    (policy "strict", MutationError naming both lines).
    """
    if isinstance(target, np.flatiter):  # y.flat[i] = v writes y
        target = flat_target(target)
    if not isinstance(target, np.ndarray):
        # a list, tuple or dict (or an object) handed to a callee that writes it in place
        # (step({'a': buf}, x * buf), step(ps, g) with ps = [W]): the callee may write any
        # array in it, or only rebind a slot (st['v'] = st['v'].copy()), which writes none.
        # Under "save" the captures of each are saved here. (Returning left a capture of
        # buf made before the call unsaved: the pullback read the written values, a
        # silently wrong gradient.) Under "strict" nothing is copied behind the user's
        # back: the callee's own guards check its writes (reverse_captures.
        # guard_parameter_writes), and one that overwrites a capture refuses, naming this
        # call (handoffs)
        if policy == "strict":
            scope = _THREAD.scopes[-1]
            roots = [id(root_of(item)) for item in _arrays_inside(target)]
            note_handoff(scope.handed, [k for k in roots if k in scope.live],
                         sys._getframe(1), file, line, col, construct)
            return
        for item in _arrays_inside(target):
            before_write(item, item, "save", file, line, col, construct)
        return
    scope = _THREAD.scopes[-1]
    key = id(root_of(target))
    watch = scope.live.get(key)
    if watch is None:
        return
    if isinstance(region, tuple):
        # the rows a fancy index writes (write_region): the captures any of them overlaps
        found: dict[int, Capture] = {}
        for part in region:
            for cap in watch.overlapping(part):
                found.setdefault(id(cap), cap)
        hits = list(found.values())
    else:
        region = target if not isinstance(region, np.ndarray) else region
        if isinstance(value, np.ndarray) and value.shape == region.shape and \
                value.strides == region.strides and \
                value.__array_interface__["data"][0] == region.__array_interface__["data"][0]:
            return  # x[:] = x writes every element with itself: nothing changes
        hits = watch.overlapping(region)
    if not hits:
        return
    if policy == "strict" and any(type(c) is not RuleArgument for c in hits):
        from adgen.errors import Location, MutationError, users_line

        hits = [c for c in hits if type(c) is not RuleArgument]

        handoff = scope.handed.get(key)
        if handing(handoff, sys._getframe(1)):
            # a callee's write of an array its caller handed it inside a container or object
            raise handoff_error(handoff, hits, file, line, col, construct)
        first = hits[0]
        # (code adgen generated and compiles again, the jvp code of hessian: its lines are
        # said as the user's lines they came from, not the generated ones)
        at_line = users_line(file, line)[1]
        first_file, first_line = users_line(first.file, first.line)
        lines = sorted({users_line(c.file, c.line)[1] for c in hits})
        also = "".join(f"; the gradient of line {ln} reads it too" for ln in lines
                       if ln != first_line)
        raise MutationError(
            f"{construct} overwrites {first.what}, which the gradient of line {first_line} "
            f"reads{also}",
            Location(file, line, col, source_line(file, line)),
            # (where the write's own gradient reads the value too, a copy made before the
            # line is overwritten in its turn: the hint says to compute it out of place)
            hint=copy_hint(construct, first.what, at_line if any(
                users_line(c.file, c.line) == users_line(file, line) for c in hits)
                else first_line, at_line, first_file
                if first_file == users_line(file, line)[0] else None),
            captured_at=Location(first_file, first_line, 0,
                                 source_line(first_file, first_line)))
    for cap in hits:
        if isinstance(cap.array, np.ndarray) and elements_overlap(cap.array):
            # a view whose elements share memory (np.broadcast_to(y, s) read before y *= 2):
            # its copy serves the gradient's reads, but its adjoint has no map onto y's, and
            # the pullback refuses it: at this line (it names the read's)
            note_overlapped_write(cap.array, file, line, col, construct)
        cap.snapshot = cap.array.copy()
        watch.remove(cap)
        measures = _THREAD.measure
        if measures:
            key3 = (file, line, col)
            measures[-1][key3] = measures[-1].get(key3, 0) + cap.snapshot.nbytes
    if not watch:
        del scope.live[key]


def _arrays_inside(value: Any) -> list[np.ndarray]:
    """The arrays inside a list, tuple, dict or object (at any depth), each once. (An object's
    arrays are captured and guarded one by one: :func:`capture`.)"""
    found: list[np.ndarray] = []
    seen: set[int] = set()

    def walk(v: Any) -> None:
        if id(v) in seen:
            return
        seen.add(id(v))
        if isinstance(v, np.ndarray):
            found.append(v)
        elif isinstance(v, (list, tuple)):
            for item in v:
                walk(item)
        elif isinstance(v, dict):
            for item in v.values():
                walk(item)
        elif _holds_attributes(v):
            # an object handed to a callee that writes its arrays (step(m, u) writing m.lap,
            # self.step(u) writing self.lap): the captures of each of its arrays are saved
            # (a capture of m.lap made by the call before was left unsaved: the pullback
            # read the written values, a silently wrong gradient under both policies)
            for item in vars(v).values():
                walk(item)

    walk(value)
    return found


def _holds_attributes(v: Any) -> bool:
    """An object of the user's whose attributes are its ``__dict__`` (not a module, class,
    function, NumPy value, nor adgen's own: an object's tangent in jvp code)."""
    return isinstance(getattr(v, "__dict__", None), dict) and \
        not isinstance(v, (type, types.ModuleType, types.FunctionType, types.MethodType,
                           np.generic)) and \
        not str(getattr(type(v), "__module__", "")).startswith(("adgen.", "numpy"))


def source_line(file: str, line: int) -> str:
    import linecache

    return linecache.getline(file, line)


def remap_saved(saved: Any, captures: list[Any], sh: ShadowMap | None = None) -> Any:
    """A callee's saved values, with views of an argument that was overwritten after the
    call redirected to the copy its guard took (``captures`` are the caller's captures).
    ``sh`` learns that the copy stands for the argument, so adjoints still land on it."""
    from adgen.errors import AdgenError

    moved: dict[int, list[Capture]] = {}
    # (an argument the callee does not read: itself, even where a capture of a view of it,
    # its result, was saved)
    unread = {id(c.value) for c in captures if isinstance(c, _Unread)}
    captures = [h for c in captures for h in (c.held if isinstance(c, (_Held, _HeldItems))
                                              else [c])]
    for c in captures:
        if isinstance(c, Capture) and c.snapshot is not None:
            moved.setdefault(id(root_of(c.array)), []).append(c)
    if not moved:
        return saved
    if sh is not None:
        for caps in moved.values():
            for cap in caps:
                sh.stand_in(cap.snapshot, cap.array)
    done: dict[int, Any] = {}  # one redirected object per original: identity tests still hold

    def redirect_array(x: np.ndarray) -> np.ndarray:
        if id(x) in unread:
            return x
        caps = moved.get(id(root_of(x)))
        if caps is None and sh is not None:
            # the caller's copy of the argument as it was after this call (its own guard, a
            # loop's next call writing it): this callee read the argument before its own
            # write, whose copy is the value it read; the caller's copy stood for it, and the
            # callee's callee computed its gradient from the later value (silently wrong)
            original = sh.through_stand_in(x)
            if original is not x:
                caps = moved.get(id(root_of(original)))
                x = original if caps is not None else x
        if caps is None:
            return x
        for cap in caps:
            if x is cap.array:
                return cap.snapshot
        # a view: of a capture it lies in, a contiguous one first (its copy has its layout)
        failure = None
        for cap in sorted(caps, key=lambda c: not c.array.flags.c_contiguous):
            try:
                return _redirect_view(x, cap.array, cap.snapshot, sh)
            except AdgenError as err:
                failure = err
        assert failure is not None
        raise failure

    def redirect(x: Any) -> Any:
        if isinstance(x, np.ndarray):
            if id(x) not in done:
                done[id(x)] = (x, redirect_array(x))
            return done[id(x)][1]
        if isinstance(x, Capture):
            if x.snapshot is None and id(root_of(x.array)) in moved:
                c = Capture(redirect(x.array), x.file, x.line, x.what)
                return c
            return x
        # (an item that is none of these is itself: no call for it, a model's many layers)
        if isinstance(x, (tuple, list)) and not _may_hold_arrays(x, walked):
            # (a saved list of layers: none of its items is walked, a C loop says so)
            return tuple(x) if isinstance(x, tuple) else list(x)
        if isinstance(x, tuple):
            return tuple(redirect(v) if isinstance(v, walked) else v for v in x)
        if isinstance(x, list):
            return [redirect(v) if isinstance(v, walked) else v for v in x]
        return x

    walked = (np.ndarray, Capture, tuple, list)
    return redirect(saved)


def _redirect_view(x: np.ndarray, base: np.ndarray, snapshot: np.ndarray,
                   sh: ShadowMap | None = None) -> np.ndarray:
    """The view of ``snapshot`` that ``x`` is of ``base`` (x inside base's memory). Where
    ``base`` is strided (``y[::-1]``), the snapshot is laid out as ``base`` lies in memory
    (:func:`_laid_out`), and ``sh`` learns that the new buffer stands for that memory."""
    if x is base:
        return snapshot
    xl, xh = extent(x)
    bl, bh = extent(base)
    if xh <= bl or xl >= bh:
        return x  # a part of the buffer the write did not touch
    if bl <= xl and xh <= bh and base.flags.c_contiguous:
        offset = x.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        return np.ndarray(x.shape, dtype=snapshot.dtype, buffer=snapshot, offset=offset,
                          strides=x.strides)
    laid = _laid_out(x, base, snapshot) if sh is not None else None
    if laid is not None and laid[0] is x:
        return x  # interleaved with base (y[1::2] and y[::2]): no element of it was written
    if laid is not None:
        view, memory, lo = laid
        root = root_of(base)
        start = lo - root.__array_interface__["data"][0]
        if root.flags.c_contiguous and 0 <= start and \
                start + memory.nbytes <= root.nbytes:
            sh.stand_in(memory, np.ndarray(memory.shape, dtype=memory.dtype, buffer=root,
                                           offset=start))
            return view
        laid = None
    if laid is None:
        from adgen.errors import AdgenError

        raise AdgenError("a callee saved a view that only partly overlaps an argument the "
                         "caller overwrote later; adgen cannot recover its old value",
                         hint='copy the argument before the call, or use mutation="save" '
                              "with a contiguous array")
    return laid


def _laid_out(x: np.ndarray, base: np.ndarray, snapshot: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, int] | None:
    """``x``'s elements as ``snapshot`` (the old values of ``base``, a strided view such as
    ``y[::-1]`` or ``y[::2]``) holds them: the snapshot is laid out in a new buffer as ``base``
    lies in memory, and ``x`` viewed there. Returns (that view, the buffer, the address in
    memory where the buffer starts); ``x`` itself first when none of its elements is one of
    ``base``'s; None when some are and some are not (their old values were not all kept) or
    the layouts do not match element for element."""
    item = base.itemsize
    if x.dtype != base.dtype or snapshot.dtype != base.dtype or x.size == 0 or \
            any(st % item for st in (*x.strides, *base.strides)):
        return None
    xl, xh = extent(x)
    bl, bh = extent(base)
    lo, hi = min(xl, bl), max(xh, bh)
    if (xl - lo) % item or (bl - lo) % item:
        return None
    memory = np.zeros((hi - lo) // item, dtype=base.dtype)
    known = np.zeros(memory.shape, dtype=bool)
    base_at = base.__array_interface__["data"][0] - lo
    x_at = x.__array_interface__["data"][0] - lo
    np.ndarray(base.shape, dtype=base.dtype, buffer=memory, offset=base_at,
               strides=base.strides)[...] = snapshot
    unit = tuple(st // item for st in base.strides)
    np.ndarray(base.shape, dtype=bool, buffer=known, offset=base_at // item,
               strides=unit)[...] = True
    marks = np.ndarray(x.shape, dtype=bool, buffer=known, offset=x_at // item,
                       strides=tuple(st // item for st in x.strides))
    if not marks.any():
        return x, memory, lo  # no element of x is one of base's
    if not marks.all():
        return None
    return np.ndarray(x.shape, dtype=base.dtype, buffer=memory, offset=x_at,
                      strides=x.strides), memory, lo
