"""Shadow memory: the adjoint of a buffer that is written in place or aliased, laid out like the
buffer (``ShadowMap``), and moving adjoints between containers and shadows.

Generated code imports these from :mod:`adgen.runtime`; each is a plain top-level function or
class using only numpy, so ``-o`` modules copy its source (transforms/standalone.py).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

from adgen.adjoints import (
    ObjectAdjoint,
    add,
    copy_adjoint,
    is_constant_object,
    is_enum_member,
    is_function_like,
    locate,
    or_zeros,
    refuse_array_form,
    shadow_dtype,
    zeros_like,
)
from adgen.memory_layout import (
    base_buffer,
    buffer_offset,
    data_address,
    element_strides,
    elements_overlap,
    memory_vector,
    refuse_reinterpreted,
    strided_zeros_like,
)

# the last guarded write under "save" that overwrote a captured view whose elements share
# memory, per root array: id(root) -> (a weak reference to root, file, line, col, construct);
# the refusal of the view's adjoint in the pullback (ShadowMap.of) names that write
_OVERLAPPED_WRITES: dict[int, tuple[Any, str, int, int, str]] = {}


# --------------------------------------------------------------------------------------------
# Shadow memory: the adjoint of a buffer that is written in place or aliased.


def root_of(x: np.ndarray) -> np.ndarray:
    """The ndarray that owns the memory ``x`` views; a number is its own (its shadow is a
    cell keyed by the object: a view rule's float tangent, float_part(x_dot), is x_dot)."""
    if not isinstance(x, (np.ndarray, np.flatiter)):  # y.flat's base is y
        return x
    while True:
        base = x.base
        if isinstance(base, np.ndarray):
            x = base
        elif base is not None and type(base).__name__ == "DummyArray" and \
                isinstance(getattr(base, "base", None), np.ndarray):
            # as_strided / sliding_window_view / broadcast_arrays keep the array they view in
            # the .base of a holder object (NumPy's DummyArray), not in .base: read as a
            # root of its own, the view was left out of its array's guards and adjoint
            x = base.base
        else:
            return x


def note_overlapped_write(array: np.ndarray, file: str, line: int, col: int,
                          construct: str) -> None:
    """Called by a guarded write under "save" (guards.before_write) that overwrites a
    captured view of ``array``'s memory whose elements share memory: the pullback cannot map
    that view's adjoint (:meth:`ShadowMap.of`), and its refusal names this write."""
    root = root_of(array)
    if len(_OVERLAPPED_WRITES) > 64:  # the latest ones are the ones a pullback refuses
        _OVERLAPPED_WRITES.clear()
    _OVERLAPPED_WRITES[id(root)] = (weakref.ref(root), file, line, col, construct)


def _refuse_overlapped_write(written: tuple[Any, str, int, int, str]) -> None:
    """The refusal of a view whose elements share memory, at the write that overwrote it
    (``written``: note_overlapped_write's record), naming the line whose gradient reads the
    view (the pullback running now)."""
    from adgen.errors import Location, UnsupportedError, users_line
    from adgen.guards import source_line

    _, file, line, col, construct = written
    read = locate(UnsupportedError("")).location
    file, line = users_line(file, line)
    reads = f"the gradient of line {read.line} reads" if read is not None else \
        "the gradient reads"
    raise UnsupportedError(
        f"{construct} writes in place an array that {reads} through a view whose elements "
        "share memory (np.broadcast_to, sliding_window_view, as_strided): adgen cannot map "
        "that view's adjoint", Location(file, line, col, source_line(file, line)),
        hint="copy the view where it is taken (w = np.broadcast_to(x, shape).copy()), or "
             "take it after the write")


def _as_items(ct: Any, x: list | tuple) -> Any:
    """The cotangent ``ct`` of a list or tuple ``x`` per item, where a rule gave it as one
    array (its rows); anything else as it is."""
    if not isinstance(ct, np.ndarray) or ct.ndim == 0 or len(ct) != len(x):
        return ct
    items = [row.copy() if isinstance(row, np.ndarray) else float(row) for row in ct]
    return items if isinstance(x, list) else tuple(items)


class ShadowMap:
    """The adjoints of buffers, laid out like the buffers (Enzyme's shadow memory).

    ``of(x)`` returns the adjoint of array ``x`` as an array of x's shape that views the
    shadow of x's root buffer at the same offset and strides, so the adjoint of a view is the
    same view of its base's adjoint, and two arguments that alias share one adjoint. A pullback
    and the pullbacks of its callees share one map.
    """

    # the deposits of the map of a pullback that hands a call to a callee whose pullback runs
    # alone (dispatch: a method updating a counter, self.calls += 1): the map that pullback
    # makes takes them, so the callee starts from the caller's adjoint of what it changes
    _carried = threading.local()

    def __init__(self) -> None:
        carried = getattr(ShadowMap._carried, "deposits", None)
        self._roots: dict[int, tuple[Any, np.ndarray]] = {}
        # id(root) -> (root, its address, its shadow's buffer, the shadow's offset in it)
        self._where: dict[int, tuple[Any, int, Any, int, Any]] = {}
        # adjoints of lists/dicts/objects handed to a callee that changes them in place: per
        # container, the deposits not merged yet, innermost last ([x, adjoint, withdrawn])
        self._deposits: dict[int, list[list[Any]]] = {}
        if carried:
            # (the entries themselves: the caller's merge sees what the callee withdrew)
            self._deposits.update(carried)
            ShadowMap._carried.deposits = None
        # guard copies that stand for the buffers they were taken from (remap_saved)
        self._stand_ins: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def stand_in(self, copy_: np.ndarray, original: np.ndarray) -> None:
        """``copy_`` (a guard's copy) stands for ``original``: its views share its shadow."""
        self._stand_ins[id(copy_)] = (copy_, original)

    def through_stand_in(self, x: np.ndarray) -> np.ndarray:
        """``x``, or the part of the original that ``x`` (a view of a guard's copy) stands
        for."""
        entry = self._stand_ins.get(id(root_of(x)))
        if entry is None:
            return x
        copy_, original = entry
        offset = x.__array_interface__["data"][0] - copy_.__array_interface__["data"][0]
        if offset == 0 and x.shape == copy_.shape and x.strides == copy_.strides:
            return original  # the whole copy stands for the whole original, whatever its layout
        if not original.flags.c_contiguous:
            # the copy is C-ordered: its views match the original's only if that is too
            from adgen.errors import AdgenError

            raise AdgenError("a callee's saved view of an argument overwritten after the call "
                             "does not map back onto the argument (it is not contiguous)",
                             hint="copy the argument before the call, or pass a contiguous "
                                  "array")
        base = root_of(original)
        start = original.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        return np.ndarray(x.shape, dtype=x.dtype, buffer=base,
                          offset=start + offset, strides=x.strides)

    def deposit(self, x: Any, adjoint: Any) -> None:
        """A caller hands over the adjoint of container ``x`` as it is after the call. The
        callee may hand ``x`` on to a call of its own (``self.rhs(u)`` in ``s.step(u)``):
        deposits of one container nest, each merged before the one it is inside (one entry
        per container lost the outer one, whose merge then added what its callee had already
        taken over: a method calling another, called twice, doubled its object's gradient
        until session 21). A bound method's (``step = m.fit_step``; ``step(x)``) is its
        object's, which the method's pullback withdraws as ``self``'s."""
        x = _receiver(x)
        self._deposits.setdefault(id(x), []).append([x, adjoint, False])

    def withdraw(self, x: Any) -> Any:
        """A callee that changes container ``x`` starts from the caller's adjoint of it."""
        stack = self._deposits.get(id(x))
        entry = stack[-1] if stack else None
        if entry is None:
            held = self._held_by_deposit(x)
            if held is not None:
                return or_zeros(copy_adjoint(held), x)
        if entry is None or entry[2]:
            return zeros_like(x)
        entry[2] = True
        return or_zeros(copy_adjoint(entry[1]), x)

    def _held_by_deposit(self, x: Any) -> Any:
        """The adjoint of object ``x`` taken out of the adjoint a caller deposited for the one
        object holding ``x`` in an attribute (its ``__call__`` changes it: ``self.norm(x)``
        with ``self.m = ...`` in ``Norm.__call__``; the caller deposits ``self``, the model,
        and with_receiver gives the call's cotangent of the norm back as the model's through
        the attribute, which merge adds where the attribute's was taken out). None where no
        caller's deposit (one not taken over) holds ``x``, or more than one does."""
        if not hasattr(x, "__dict__") or isinstance(x, (np.ndarray, type)):
            return None
        found = []
        for stack in self._deposits.values():
            holder, adjoint, taken = stack[-1]
            if taken or type(adjoint) is not ObjectAdjoint:
                continue
            found += [(adjoint, k) for k, v in getattr(holder, "__dict__", {}).items()
                      if v is x]
        if len(found) != 1:
            return None
        adjoint, k = found[0]
        return adjoint.pop(k, None)

    def merge(self, x: Any, current: Any, ct: Any) -> Any:
        """The caller's adjoint of ``x`` after the callee's pullback: the callee's cotangent
        replaces it when the callee took it over (it changed x), else adds to it."""
        x = _receiver(x)
        stack = self._deposits.get(id(x))
        entry = stack.pop() if stack else None
        if stack is not None and not stack:
            del self._deposits[id(x)]
        if isinstance(x, (list, tuple)):
            # a callee compiled without its argument's kind gives a list's cotangent as the
            # array a ufunc's rule made of it (np.sin(L)): per item, as the caller keeps it
            # (added to the caller's list it gave zeros, silently, before session 23)
            ct = _as_items(ct, x)
        if entry is not None and entry[2]:
            return ct
        # (entry[1] is ``current`` plus what add_deposited added while the callee ran)
        before = current if entry is None else entry[1]
        return add(_as_items(before, x) if isinstance(x, (list, tuple)) else before, ct)

    def add_deposited(self, x: Any, ct: Any) -> bool:
        """Adds ``ct`` to the adjoint of object ``x`` a caller deposited (the innermost deposit,
        not taken over by a callee), which that caller's merge takes: the cotangent of an
        object a function held in an attribute closes over (``self.act = lambda z:
        self.scale * np.tanh(z)``; ``h = self.act(h)``). False where there is none."""
        stack = self._deposits.get(id(x))
        if not stack or stack[-1][2]:
            return False
        stack[-1][1] = add(stack[-1][1], ct)
        return True

    def hand_back(self, x: Any, ct: Any) -> bool:
        """Where a callee took over the adjoint of object ``x`` a caller deposited (a nested
        def calling a method of an object it closes over: its pullback starts from that
        adjoint), its cotangent ``ct`` replaces it, for that caller's merge. False where the
        innermost deposit of ``x`` was not taken over, or there is none."""
        stack = self._deposits.get(id(x))
        if not stack or not stack[-1][2]:
            return False
        stack[-1][1], stack[-1][2] = ct, False
        return True

    def of(self, x: Any) -> np.ndarray:
        if isinstance(x, np.flatiter):
            # y.flat: the adjoint is y's, flat in C order (a view of its shadow when that is
            # C-contiguous); anything else would get a 0-d cell of its own while y's adjoint
            # kept the elements' gradient
            shadow = self.of(x.base)
            if shadow.flags.c_contiguous:
                return shadow.reshape(-1)
            refuse_array_form("y.flat of an array that is not C-contiguous (a transpose, a "
                               "strided slice), read by index or written",
                               "take y = y.copy() first, or index y itself: "
                               "y[np.unravel_index(i, y.shape)]")
        if isinstance(x, np.ndarray):
            if self._stand_ins:
                x = self.through_stand_in(x)
            root = root_of(x)
            entry = self._roots.get(id(root))
            if entry is None:
                if root.dtype.names is not None:
                    refuse_array_form(
                        f"a structured array (dtype {root.dtype}) read or written by field",
                        "keep each field in a float array of its own (a dict of arrays)")
                shadow = np.zeros_like(root, dtype=shadow_dtype(root), order="K")
                if shadow.strides != element_strides(root) and root.size > 1:
                    shadow = strided_zeros_like(root)
                entry = (root, shadow)
                self._roots[id(root)] = entry
            root, shadow = entry
            if x is root:
                return shadow
            where = self._where.get(id(root))
            if where is None or where[0] is not root:
                # the addresses of the root and of the shadow's buffer, once per root (a
                # pullback takes the shadow of a view of it at every iteration), and that
                # buffer as a vector in memory order where it is contiguous and holds
                # elements of the root's size
                buffer = base_buffer(shadow)
                where = self._where[id(root)] = (
                    root, data_address(root), buffer, buffer_offset(shadow),
                    memory_vector(buffer) if root.itemsize == shadow.itemsize else None)
            offset = data_address(x) - where[1]
            strides = x.strides
            if where[4] is not None and len(strides) == 1 and x.dtype is root.dtype:
                # a row or column (the common view in a loop): a basic slice of the vector,
                # without the ndarray constructor (about 1.5 us)
                item = root.itemsize
                first, rest = divmod(offset + where[3], item)
                step, odd = divmod(strides[0], item)
                if not rest and not odd and step:
                    stop: int | None = first + step * x.shape[0]
                    if stop < 0:  # type: ignore[operator]
                        stop = None  # a negative step down to the vector's first element
                    return where[4][first:stop:step]
            base = x.base
            if (not x.flags.writeable or not isinstance(base, np.ndarray) or
                    base.base is not None) and elements_overlap(x):
                # np.broadcast_to(x, s), sliding_window_view(x, 3): elements that share
                # memory; the same view of the shadow would add one cotangent where each
                # element should add its own (silently wrong under "save"). Asked of the
                # views NumPy makes so (read-only; built on a holder object: as_strided)
                # and of views of views it did not collapse onto an array owning its
                # memory (w[1:] of a writeable as_strided w, whose base is w)
                written = _OVERLAPPED_WRITES.get(id(root))
                if written is not None and written[0]() is root:
                    _refuse_overlapped_write(written)
                refuse_array_form(
                    "a view whose elements share memory (np.broadcast_to, "
                    "sliding_window_view, as_strided), read after its array is written in "
                    "place,", "copy the view where it is taken (w = np.broadcast_to(x, "
                    "shape).copy()), or take it after the write")
            size = root.itemsize
            item = shadow.itemsize
            dtype = shadow.dtype
            if root.dtype.kind == "c" and x.dtype.kind == "f" and \
                    x.itemsize * 2 == size and shadow.dtype.kind == "c":
                # z.real / z.imag of a complex buffer: a float view of its elements' parts
                _refuse_imaginary_part(x, root, offset % size)
                dtype = np.dtype(np.float64)  # the real parts of the shadow: dL/dRe(z)
                offset = offset // size * item
                strides = tuple(s // size * item for s in strides)
            elif size != item or x.itemsize != item:
                # shadows hold float64 (complex128 for complex buffers): map element by
                # element, never by raw bytes
                if x.itemsize != size or offset % size or any(s % size for s in strides):
                    refuse_reinterpreted(x, root)
                offset = offset // size * item
                strides = tuple(s // size * item for s in strides)
            return np.ndarray(x.shape, dtype=dtype, buffer=where[2],
                              offset=offset + where[3], strides=strides)
        if isinstance(x, tuple) and _held_by_identity(x) and \
                not str(getattr(type(x), "__module__", "")).startswith("numpy"):
            # a tuple the compiler could not tell from an array (t, s = pair(x); t -= 0.5;
            # both = (s, t)): immutable, so its adjoint is its items' shadows
            return ItemShadows(self, x)  # type: ignore[return-value]
        if type(x) is list and all(_held_by_identity(v) or _users_object(v) for v in x):
            # a list of arrays a helper loops over, compiled without knowing its parameter
            # holds a list (for p, g in zip(params, grads): p -= lr * g): its adjoint is its
            # items' shadows, as a tuple's; a store into one of its slots still refuses
            # (ItemShadows.__setitem__)
            return ItemShadows(self, x)  # type: ignore[return-value]
        if hasattr(x, "__dict__") and callable(x) and not isinstance(x, type) and \
                is_function_like(x) and not (hasattr(x, "__func__") and
                                             hasattr(getattr(x, "__self__", None), "__dict__")):
            # a function given as a value (compose(f, np.cos) in jvp code, hessian: g_bar =
            # sh.of(g)): it carries no derivative of its own; what it closes over or binds (a
            # cell's number, a partial's array) keeps its adjoint in its own shadow, by
            # identity. Its adjoint takes additions and holds nothing. (A method of an object
            # of the user's is refused below; a builtin, without attributes, gets a number's
            # cell, as before.)
            return NoShadow()  # type: ignore[return-value]
        if isinstance(x, (list, dict, tuple)) or (hasattr(x, "__dict__") and
                                                  not isinstance(x, np.generic) and
                                                  not is_constant_object(x)):
            from adgen.errors import UnsupportedError

            if callable(x) and hasattr(x, "__func__") and \
                    hasattr(getattr(x, "__self__", None), "__dict__"):
                # a.mean of a.mean() after a.add(v) set a's attributes, under hessian: the
                # method given to the call in adgen's jvp code, differentiated again (it said
                # "an object of class method that may share an array")
                owner = type(x.__self__).__name__
                method = x.__func__.__name__
                raise locate(UnsupportedError(
                    f"calling {x.__qualname__} on an object of class {owner} the function "
                    "changed before (by a method setting its attributes) is not supported yet "
                    "here (second derivatives: hessian, hvp, jacfwd or jacrev of grad): adgen "
                    "took the method for an array when compiling",
                    hint=f"read the attributes {method} computes its value from in the "
                         f"function itself (obj.total / obj.n rather than obj.{method}()), "
                         "which adgen follows"))
            if not isinstance(x, (list, dict, tuple)):
                # an object the compiler took for an array: it may share an array with a
                # value written in place (f = g.field(); f[1:] *= 2.0; g.energy())
                raise locate(UnsupportedError(
                    f"an object of class {type(x).__name__} that may share an array with "
                    "one written in place through another value is not supported yet: "
                    "adgen took it for an array when compiling. This happens to an object "
                    "read from one the function writes in place (self.layers[i] in a method "
                    "that also counts self.steps += 1), an array a method returned, an item "
                    "of a list, or an array a helper given the object writes and returns",
                    hint="count or record outside the differentiated function (model.steps "
                         "+= 1 next to the adgen.grad call) or on another object; copy the "
                         "array before writing it (f = g.field().copy()), or write it "
                         "through the object where the function holds it by name "
                         "(g.u[1:] *= 2.0); for a helper given the object and an array it "
                         "writes (u = step(u, cfg) in a loop), call it as a statement "
                         "(step(u, cfg)) or pass the numbers the object holds "
                         "(u = step(u, cfg.dt))"))
            if isinstance(x, tuple) and hasattr(type(x), "_fields") and \
                    str(getattr(type(x), "__module__", "")).startswith("numpy"):
                # w, V = np.linalg.eigh(A); V[0] = ...: an item of NumPy's result tuple
                raise locate(UnsupportedError(
                    f"an array of the {type(x).__name__} NumPy returned (w, V = "
                    "np.linalg.eigh(A), then V written in place) is not supported yet: "
                    "adgen keeps the adjoint of an array written in place apart from the "
                    "result it came from",
                    hint="write into a copy (V = V.copy(); V[:, 0] *= -1), or build the new "
                         "array (V = V * signs)"))
            _refuse_container(x)
        # An immutable scalar: its adjoint lives in a 0-d cell keyed by the object.
        entry = self._roots.get(id(x))
        if entry is None:
            entry = (x, np.zeros((), dtype=shadow_dtype(x)))
            self._roots[id(x)] = entry
        return entry[1]

    def pop(self, x: Any) -> Any:
        """Takes the adjoint of ``x`` out of shadow memory (zeroing it) and returns it; for a
        list, tuple or dict (a call's result the compiler could not tell from an array:
        ``p, q = pair(x)``), or an object of the user's (a method's receiver whose number
        attribute the method updated, ``self.calls += 1``), the adjoints of the arrays and
        numbers in it."""
        if isinstance(x, (list, tuple, dict)) or (
                hasattr(x, "__dict__") and not isinstance(x, (np.ndarray, np.generic, type))
                and not is_constant_object(x)):
            return _with_shadows(self, x, None)
        shadow = self.of(x)
        value = shadow.copy()
        shadow[...] = 0.0
        return value if isinstance(x, np.ndarray) else _scalar(value)

    def pop_each(self, xs: tuple[Any, ...]) -> tuple[Any, ...]:
        """:meth:`pop` of each of ``xs``, those of numbers and arrays first: a list, tuple,
        dict or object popped takes the adjoints of the values it holds, which are those
        values' own where they are also among ``xs`` (a pullback's parameters: the list a
        value was appended to, and the value)."""
        def container(x: Any) -> bool:
            return isinstance(x, (list, tuple, dict)) or (
                hasattr(x, "__dict__") and not isinstance(x, (np.ndarray, np.generic, type)))

        out: list[Any] = [None] * len(xs)
        for k in sorted(range(len(xs)), key=lambda k: container(xs[k])):
            out[k] = self.pop(xs[k])
        return tuple(out)

    def value(self, x: Any) -> Any:
        """The adjoint of ``x`` as a gradient value (a copy), or None if it never got one. A
        list, tuple or dict (an argument the compiler took for an array, a tuple of arrays
        written in place: ``a, b = t; a[1:] += b[:-1]``) gets the adjoints of what it holds."""
        if isinstance(x, (list, tuple, dict)):
            return collect(self, x, None)
        entry = self._roots.get(id(root_of(x) if isinstance(x, np.ndarray) else x))
        if entry is None:
            return None
        return self.of(x).copy() if isinstance(x, np.ndarray) else _scalar(entry[1])


def _refuse_container(x: Any) -> None:
    from adgen.errors import UnsupportedError

    hint = ("build a new one and store it (new = list(model.layers); new[0] = v; "
            "model.layers = new), write it in the function you differentiate (its list "
            "and dict arguments are supported), or have the helper return the new item "
            "(ws[0] = helper(ws[0]))")
    if isinstance(x, dict):
        # the optimizer step of a helper: for k in params: params[k] -= lr * grads[k]
        hint = ("have the helper return a new dict and rebind it (params = step(params, "
                "grads) with return {k: params[k] - lr * grads[k] for k in params}), or "
                "write the loop in the function you differentiate (its own dicts and its "
                "dict arguments are written in place); for values a method keeps on its "
                "object (self.cache[i] = h), append them to a list (self.acts.append(h)), "
                "which adgen follows, or return them")
    raise locate(UnsupportedError(
        f"a {type(x).__name__} written in place by index (x[i] = v) where adgen could "
        "not tell it from an array when compiling (a parameter of a function called by "
        "the one differentiated, an item of a list, an attribute of an object such as "
        "model.layers, or a value returned by a call) is not supported yet", hint=hint))


class NoShadow:
    """The adjoint :meth:`ShadowMap.of` gives a function, builtin, ufunc or partial that
    generated code took for an array (a function passed to a helper, in jvp code
    differentiated again): it takes any addition and holds nothing (a function value carries
    no derivative; the values it closes over keep theirs in their own shadows)."""

    def __iadd__(self, adjoint: Any) -> NoShadow:
        return self

    def __getitem__(self, key: Any) -> NoShadow:
        return self

    def __setitem__(self, key: Any, value: Any) -> None:
        pass

    def copy(self) -> None:
        return None


class ItemShadows:
    """The shadow of a tuple that generated code keeps in shadow memory because the compiler
    could not tell it from an array (an item of a call's result: ``t, s = pair(x)``, where
    ``t`` is written in place and ``s`` may share its memory). A tuple is never written in
    place, so its adjoint is the adjoints of its items, kept in their own shadows: adding an
    adjoint adds each item's part there, where :meth:`ShadowMap.pop` of the call's result
    (``_with_shadows``) and :meth:`ShadowMap.value` (``collect``) find them."""

    def __init__(self, sh: ShadowMap, x: tuple[Any, ...]) -> None:
        self.sh = sh
        self.x = x

    def __iadd__(self, adjoint: Any) -> ItemShadows:
        _add_to_items(self.sh, self.x, adjoint)
        return self

    def __getitem__(self, key: Any) -> ItemShadows:
        if key is not Ellipsis:
            _refuse_container(self.x)
        return self

    def __iter__(self) -> Any:
        # read as a value (a rule's cotangent of the tuple: w = np.unstack(z); w[1][0] = c):
        # the items' shadows may be views of a buffer whose own shadow the rule adds to too
        _refuse_container(self.x)

    def __len__(self) -> int:
        _refuse_container(self.x)
        return 0

    def __setitem__(self, key: Any, value: Any) -> None:
        # shadow[...] += v assigns the shadow back to itself; shadow[...] = 0.0 clears it
        if key is not Ellipsis:
            _refuse_container(self.x)
        if value is self:
            return
        if isinstance(value, (int, float)) and value == 0:
            if any(_users_object(v) for v in self.x):
                # popping would take the adjoints of the objects' own arrays (the layers'
                # weights), which are theirs, not the list's
                _refuse_container(self.x)
            _with_shadows(self.sh, self.x, None)  # pops (zeroes) every item's shadow
            return
        raise TypeError("the shadow of a tuple is set to zero only")

    def copy(self) -> Any:
        """The adjoint of the tuple as a value (a list per tuple, as :func:`collect`)."""
        return _collect(self.sh, self.x, None)


def _users_object(x: Any) -> bool:
    """An object of the user's whose arrays keep their own adjoints in shadow memory (a
    layer of a model), not a container, an array, a number or a constant."""
    return hasattr(x, "__dict__") and not isinstance(
        x, (np.ndarray, np.generic, type, list, tuple, dict)) and not is_constant_object(x)


def _held_by_identity(x: Any) -> bool:
    """A tuple holding (at any depth of tuples) only arrays, numbers and values without a
    derivative: its items are the objects the adjoints belong to for good (no list or dict
    whose items could be replaced after the adjoint was added)."""
    if isinstance(x, tuple):
        return all(_held_by_identity(v) for v in x)
    return isinstance(x, (np.ndarray, int, float, complex, np.number, str, bytes)) or \
        x is None


def _add_to_items(sh: ShadowMap, x: Any, adjoint: Any) -> None:
    """Adds each part of ``adjoint`` (a tuple's or list's, None for zero) into the shadow of
    the item of ``x`` it belongs to."""
    if adjoint is None:
        return
    if isinstance(x, (tuple, list)):
        for v, a in zip(x, adjoint):
            _add_to_items(sh, v, a)
    elif _users_object(x):
        # an object of a list of layers (for l in self.layers, in a method that also writes
        # self.cache[i] = h): its adjoint is the shadows of the arrays it holds, which its
        # own calls' pullbacks fill; an adjoint given to it as a whole is not followed
        _refuse_container([x])
    elif (isinstance(x, np.ndarray) and x.dtype.kind in "fc") or (
            _is_number(x) and not isinstance(x, (int, np.integer))):
        cell = sh.of(x)
        cell += adjoint


def _scalar(cell: np.ndarray) -> Any:
    """The number a 0-d shadow cell holds: a float, or a complex for a complex value."""
    return complex(cell) if cell.dtype.kind == "c" else float(cell)


def _refuse_imaginary_part(x: np.ndarray, root: np.ndarray, part: int) -> None:
    """Refuses a float view of a complex buffer other than its real parts. The shadow holds
    dL/dx - i dL/dy (JAX's convention), so the adjoint of ``z.imag`` (dL/dy) is minus the
    shadow's imaginary part: no view of the shadow holds it."""
    if part == 0 and not any(s % root.itemsize for s in x.strides):
        return
    from adgen.errors import UnsupportedError

    raise locate(UnsupportedError(
        "the imaginary parts (z.imag) of a complex array that is written in place or aliased "
        "are read as a view: adgen keeps the adjoint of a complex buffer as dL/dRe - 1j "
        "dL/dIm, of which no view holds dL/dIm",
        hint="read them as a product instead: np.real(-1j * z) is z.imag; to set them (z.imag[:] "
             "= y), build the array from its parts: z = x + 1j * y"))


def keyword_cotangent(ct: Any, keyword: str, function: str) -> Any:
    """The cotangent a user rule gave for a keyword argument whose value has a gradient.

    Raises:
        RuleError: when the rule returned cotangents for the positional arguments only
            (dispatch.NO_COTANGENT): this keyword's gradient would be dropped.
    """
    from adgen.dispatch import NO_COTANGENT

    if ct is NO_COTANGENT:
        from adgen.errors import RuleError

        raise locate(RuleError(
            f"the rule for {function} returned cotangents for the positional arguments only, "
            f"and {keyword}, passed by keyword, has a gradient here",
            hint=f"return one cotangent per argument passed, in the order of {function}'s "
                 f"parameters ({keyword}'s included), or pass {keyword} by position"))
    return ct


def entry_items(x: Any, made: dict[int, Any] | None = None) -> Any:
    """The structure of a list, tuple, dict or object argument as the function received it:
    new containers holding the same arrays and numbers (no copy of any value). A function
    that rebinds a slot (``ws[0] = ws[0] * 2`` after ``ws[0][1] = v``) leaves the caller's
    container holding new items; the gradient belongs to the items it was given, which
    :func:`collect` finds here. ``made``: the containers made so far, by the id of the one
    they stand for (objects that refer to each other get one copy each, referring likewise)."""
    made = {} if made is None else made
    if id(x) in made:
        return made[id(x)]
    if isinstance(x, tuple):
        return tuple(entry_items(v, made) for v in x)
    if isinstance(x, list):
        items: list[Any] = []
        made[id(x)] = items
        items.extend(entry_items(v, made) for v in x)
        return items
    out: dict[Any, Any]
    if isinstance(x, dict):
        out = made[id(x)] = {}
    elif hasattr(x, "__dict__") and not isinstance(x, (type, np.generic, np.ndarray)) and \
            not is_function_like(x):
        out = made[id(x)] = _EntryObject()
        out.class_name = type(x).__name__
        x = vars(x)
    else:
        return x
    for k, v in x.items():
        out[k] = entry_items(v, made)
    return out


class _EntryObject(dict):
    """An object's attributes as :func:`entry_items` found them; ``class_name``: its class's
    name, for messages."""

    class_name = "object"


def collect(sh: ShadowMap, x: Any, adjoint: Any, entry: Any = None) -> Any:
    """A container's adjoint plus the shadows of the arrays and numbers inside it (an item
    updated in place, ``ws[0] += v``, keeps its adjoint in shadow memory, not in the
    container's adjoint). ``entry``: the container's items as the function received them
    (:func:`entry_items`), where the function rebinds slots.

    Raises:
        UnsupportedError: when a number item of ``x`` has an adjoint in shadow memory (kept
            per object) and the same object sits at two places of ``x``.
    """
    received = x if entry is None else entry
    _refuse_number_cells(sh, received)
    return _collect(sh, received, adjoint)


def _collect(sh: ShadowMap, x: Any, adjoint: Any, inside: set[int] | None = None) -> Any:
    if is_enum_member(x):
        return None  # a constant: no gradient (its cell, if any, stays zero)
    if isinstance(x, np.ndarray):
        value = sh.value(x) if id(root_of(x)) in sh._roots else None
        return add(adjoint, value)
    if isinstance(x, (list, tuple, dict)) or (
            hasattr(x, "__dict__") and not isinstance(x, (type, np.generic))
            and not is_function_like(x)):
        inside = _entered(x, adjoint, inside)
        if inside is None:
            return None  # a way back to a container this one is inside: nothing flows
        try:
            return _collect_items(sh, x, adjoint, inside)
        finally:
            inside.discard(id(x))
    if _is_number(x) and id(x) in sh._roots:
        # a number item read where it may be updated in place: its adjoint is in a cell
        return add(adjoint, sh.value(x))
    if adjoint is None and (_is_number(x) or isinstance(x, np.ndarray)):
        return zeros_like(x)  # an item overwritten before anything read it
    return adjoint


def _collect_items(sh: ShadowMap, x: Any, adjoint: Any, inside: set[int]) -> Any:
    if isinstance(x, (list, tuple)):
        base = adjoint if isinstance(adjoint, (list, tuple)) else [None] * len(x)
        return [_collect(sh, v, a, inside) for v, a in zip(x, base)]
    base = adjoint if isinstance(adjoint, dict) else {}
    if isinstance(x, _EntryObject):
        return ObjectAdjoint({k: _collect(sh, v, base.get(k), inside) for k, v in x.items()})
    if isinstance(x, dict):
        return {k: _collect(sh, v, base.get(k), inside) for k, v in x.items()}
    return ObjectAdjoint({k: _collect(sh, v, base.get(k), inside)
                          for k, v in vars(x).items()})


def _entered(x: Any, adjoint: Any, inside: set[int] | None) -> set[int] | None:
    """``inside`` (the containers and objects the walk is in) with ``x`` added; None where
    ``x`` is one of them already (a tree's node and its parent refer to each other) and no
    adjoint comes this way: the walk stops there, each of x's items reached once. An adjoint
    coming this way (the function read ``node.parent.children[0].w``) is refused."""
    inside = set() if inside is None else inside
    if id(x) not in inside:
        inside.add(id(x))
        return inside
    if adjoint is None:
        return None
    from adgen.errors import UnsupportedError

    raise locate(UnsupportedError(
        f"the function reads an argument's {getattr(x, 'class_name', type(x).__name__)} "
        "again through a reference back "
        "to it (an object that refers to itself, as a tree's node and its parent do): adgen "
        "gives an object's gradient attribute by attribute and cannot follow the cycle",
        hint="read the arrays through one path (node.w, not node.parent.children[0].w), or "
             "pass the arrays you differentiate as arguments"))


def with_shadows(sh: ShadowMap, x: Any, adjoint: Any) -> Any:
    """The adjoint of ``x`` (the result of a call: a list, tuple, dict or object) as the
    call's pullback takes it, with the adjoints its arrays keep in shadow memory moved into
    it. The caller keeps an array's adjoint there once it writes the array in place
    (``d = make(x); d["a"] *= 3.0``), while the pullback of the call that made ``d`` reads
    ``d``'s adjoint only: without the move, that gradient was silently lost."""
    if not sh._roots or isinstance(x, (np.ndarray, float, int, complex, str, np.generic)) \
            or x is None:
        return adjoint
    return _with_shadows(sh, x, adjoint)


def _with_shadows(sh: ShadowMap, x: Any, adjoint: Any, inside: set[int] | None = None
                  ) -> Any:
    if isinstance(x, np.ndarray):
        if x.dtype.kind in "fc" and id(root_of(x)) in sh._roots:
            return add(adjoint, sh.pop(x))
        return adjoint
    if _is_number(x):
        return add(adjoint, sh.pop(x)) if id(x) in sh._roots else adjoint
    if not isinstance(x, (list, tuple, dict)) and not (
            hasattr(x, "__dict__") and not isinstance(x, (type, np.generic))
            and not is_function_like(x)):
        return adjoint
    inside = _entered(x, adjoint, inside)
    if inside is None:
        return None  # a way back to a container this one is inside: nothing flows
    try:
        if isinstance(x, (list, tuple)):
            base = list(adjoint) if isinstance(adjoint, (list, tuple)) else [None] * len(x)
            out = [_with_shadows(sh, v, a, inside) for v, a in zip(x, base)]
            return tuple(out) if isinstance(adjoint, tuple) else out
        base = adjoint if isinstance(adjoint, dict) else {}
        items = x.items() if isinstance(x, dict) else vars(x).items()
        shadowed = {k: _with_shadows(sh, v, base.get(k), inside) for k, v in items}
        return shadowed if isinstance(x, dict) and not isinstance(x, _EntryObject) \
            else ObjectAdjoint(shadowed)
    finally:
        inside.discard(id(x))


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def _refuse_number_cells(sh: ShadowMap, x: Any) -> None:
    """Number items of ``x`` (as the function received it) whose adjoints sit in shadow
    cells, kept per object: never right for one object at two places (Python shares equal
    numbers: [1.0, 1.0], [0.0] * n)."""
    from adgen.errors import UnsupportedError

    seen: dict[int, str] = {}
    walked: set[int] = set()  # containers met: a record of objects that refer to each other
    # (a tree whose nodes know their parent) has cycles, which the walk went round forever
    # until memory ran out (session 23)
    todo: list[tuple[Any, str]] = [(x, "")]
    while todo:
        v, where = todo.pop()
        if isinstance(v, (list, tuple, dict)):
            if id(v) in walked:
                continue
            walked.add(id(v))
        if isinstance(v, (list, tuple)):
            todo.extend((item, f"{where}[{k}]") for k, item in enumerate(v))
        elif isinstance(v, dict):
            todo.extend((item, f"{where}[{k!r}]") for k, item in v.items())
        elif _is_number(v) and id(v) in sh._roots:
            if id(v) in seen:
                raise locate(UnsupportedError(
                    f"an argument holds one number object at two places ({seen[id(v)]} and "
                    f"{where}, both {v!r}: Python shares equal numbers, as in [1.0, 1.0] or "
                    "[0.0] * n), and the function updates its items in place (x += v), where "
                    "adgen keeps a number's adjoint per object: the two places' gradients "
                    "cannot be told apart",
                    hint="pass the numbers as one np.ndarray instead of a list of numbers"))
            seen[id(v)] = where


def add_out(sh: ShadowMap, x: Any, out_bar: Any) -> Any:
    """The shadow of a returned buffer ``x`` after adding the caller's adjoint of it (unless
    that adjoint is the same shadow memory, handed over by a caller that shares the buffer)."""
    shadow = sh.of(x)
    if out_bar is None:
        return shadow
    if isinstance(out_bar, np.ndarray) and isinstance(shadow, np.ndarray) and \
            np.may_share_memory(out_bar, shadow):
        return shadow
    shadow += out_bar
    return shadow


def shadow_of(sh: ShadowMap, x: Any) -> Any:
    """The shadow of ``x`` in ``sh`` (for ndarrays and scalars)."""
    return sh.of(x)


def _receiver(x: Any) -> Any:
    """``x``, or the object a bound method ``x`` is bound to (not a class's: a classmethod
    changes no object): a call of the method changes that object."""
    import types

    if isinstance(x, types.MethodType) and not isinstance(x.__self__, type):
        return x.__self__
    return x
