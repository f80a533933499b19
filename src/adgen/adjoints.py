"""Adjoint values: zeros of a value's structure, sums of adjoints, gradients as the API hands
them back, and the complex mode (what generated pullbacks add and hand over).

Generated code imports these from :mod:`adgen.runtime`; each is a plain top-level function or
class using only numpy, so ``-o`` modules copy its source (transforms/standalone.py).
"""

from __future__ import annotations

import collections
import contextlib
import copy
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

# --------------------------------------------------------------------------------------------
# Zeros and accumulation of adjoints (values, not buffers)


_F64 = np.dtype(np.float64)


class _AdjointMode(threading.local):
    """Whether this thread's pullback gives real buffers complex adjoints (see
    :func:`complex_adjoints`)."""

    def __init__(self) -> None:
        self.complex = False


_ADJOINTS = _AdjointMode()


@contextlib.contextmanager
def complex_adjoints() -> Iterator[None]:
    """Runs the pullbacks inside with complex adjoints for real buffers too.

    A real value that meets a complex one (``z = x * c``) receives a complex cotangent, whose
    real part is its gradient (JAX's convention). A pullback adds cotangents into an array
    adjoint in place (``x_bar += ...``), which NumPy refuses for a float64 adjoint and a complex
    cotangent; the API runs such a pullback again in this mode, where those adjoints are
    complex128, and takes the real part of a real argument's gradient (``as_gradient``). The
    real part commutes with every pullback of a real operation (their coefficients are real),
    so taking it at the end is the same as taking it where the cotangent lands.
    """
    before = _ADJOINTS.complex
    _ADJOINTS.complex = True
    try:
        yield
    finally:
        _ADJOINTS.complex = before


def is_enum_member(x: Any) -> bool:
    """An Enum member (a scheme chosen by ``Scheme.HEUN``): a constant, as a str is."""
    import enum  # here: the standalone module copies this function, not runtime's imports

    return isinstance(x, enum.Enum)


def is_constant_object(x: Any) -> bool:
    """An object with attributes that no gradient flows through: an Enum member, a class
    (np.float64 passed as a dtype) or a module. Not a function or bound method: one that
    reaches shadow memory is a value the compiler took for an array (self.rhs taken under
    hessian), which ShadowMap.of refuses at the user's line."""
    import types  # here: the standalone module copies this function, not runtime's imports

    return is_enum_member(x) or isinstance(x, (type, types.ModuleType))


def is_function_like(x: Any) -> bool:
    """Whether ``x`` is called rather than differentiated through its attributes: a function,
    method, class, partial or builtin. An instance of the user's class with a ``__call__``
    written in Python (a layer called as ``layer(x)``) is an object like any other: its float
    attributes get gradients."""
    import types  # here: the standalone module copies this function, not runtime's imports

    if not callable(x) or isinstance(x, type):
        # a module too (np in call_starred(np, 'stack', ...)): it holds functions
        return isinstance(x, (type, types.ModuleType))
    call = getattr(type(x), "__call__", None)
    return not isinstance(call, types.FunctionType) or isinstance(
        x, (types.FunctionType, types.MethodType)) or type(x).__module__.startswith("numba.")


def zeros_like(x: Any) -> Any:
    """A zero adjoint of the structure of ``x``: float, array, list, tuple, dict, object."""
    if type(x) is np.ndarray:  # the common case first
        dtype = x.dtype
        if dtype is _F64 and not _ADJOINTS.complex:
            return np.zeros(x.shape)  # (float64, NumPy's default: the fastest call)
        if dtype.kind == "f" and not _ADJOINTS.complex:
            return np.zeros(x.shape, dtype)
        if dtype.names is not None:
            refuse_array_form(f"a structured array (dtype {dtype}) read or written by field",
                               "keep each field in a float array of its own (a dict of "
                               "arrays)")
        return np.zeros(x.shape, shadow_dtype(x) if dtype.kind != "c" else dtype)
    if isinstance(x, np.flatiter):
        # y.flat read by index (y.flat[i], y.flat[1:3]): its adjoint is flat, in C order, and
        # goes back to y's shape as np.ravel's does (writes through y.flat: ShadowMap.of)
        return zeros_like(x.base).reshape(-1)
    if isinstance(x, np.ndarray):
        return np.zeros(x.shape, dtype=x.dtype if x.dtype.kind in "fc" and
                        not _ADJOINTS.complex else shadow_dtype(x))
    if isinstance(x, (complex, np.complexfloating)):
        return 0j
    if isinstance(x, (float, np.floating, int, np.integer)) and not isinstance(x, (bool,
                                                                                 np.bool_)):
        return 0.0  # an int's adjoint is computed and dropped: the gradient of an int is None
    if isinstance(x, (bool, np.bool_, str, bytes, type(None))) or is_enum_member(x):
        return None
    if isinstance(x, (list, tuple, dict)) or (hasattr(x, "__dict__")
                                              and not is_function_like(x)):
        return _zero_items(x, set())
    if isinstance(x, collections.deque):
        # values with a derivative kept in a deque (q.append(h), q[0]): its adjoint had no
        # items (None: a raw TypeError), and a deque(maxlen=n) drops items a list's adjoint
        # would give back in the wrong places
        refuse_array_form("a collections.deque holding values with a derivative",
                          "keep them in a list: q.append(v), and q = q[-n:] for a "
                          "deque(maxlen=n)")
    return None


def _zero_items(x: Any, inside: set[int]) -> Any:
    """zeros_like of a container or object, ``inside`` the ones around it: a way back to one
    of those (a tree's node and its parent refer to each other) gets None, no adjoint."""
    if id(x) in inside:
        return None
    inside.add(id(x))
    try:
        if isinstance(x, (list, tuple)):
            # a tuple's adjoint is a list the pullback may fill in; gradients turn it back
            if x and _plain_objects(x):
                # a list of objects (a model's layers): an empty adjoint each, made in a C
                # loop (no object is one of the containers around: those are lists, tuples
                # and dicts, an object's zero walks nothing). ObjectAdjoint() called without
                # an argument: about 780 instructions an item, against 1,030 in a Python
                # loop and 1,470 for ObjectAdjoint(()) by map (cachegrind)
                import itertools  # here: the standalone module copies this function

                return list(itertools.starmap(ObjectAdjoint, itertools.repeat((), len(x))))
            out: list[Any] = []
            objects: set[type] = set()  # the classes of the objects met (a list of layers)
            for v in x:
                if type(v) in objects:
                    out.append(None if id(v) in inside else ObjectAdjoint())
                elif _holds_items(v):
                    if not isinstance(v, (list, tuple, dict)):
                        objects.add(type(v))
                    out.append(_zero_items(v, inside))
                else:
                    out.append(zeros_like(v))
            return out
        if not isinstance(x, dict):
            # an object's adjoint holds the attributes that have one: a missing one is zero
            # (add, as_gradient), so a model's zero is one empty dict, not a zero per array
            # it holds (at every call handed the model: issue 15's layer model)
            return ObjectAdjoint()
        return {k: _zero_items(v, inside) if _holds_items(v) else zeros_like(v)
                for k, v in x.items()}
    finally:
        inside.discard(id(x))


def _plain_objects(x: list | tuple) -> bool:
    """Whether every item of ``x`` is an object of the user's whose zero adjoint is an empty
    ``ObjectAdjoint`` (as :func:`_zero_items` makes one for each), judged once per class: a
    class with no ``__getattr__`` or ``__getattribute__`` of its own, whose instances all
    have a ``__dict__`` or none, is judged by its first item."""
    if issubclass(type(x[0]), (np.ndarray, np.generic, float, int, complex, str, bytes, list,
                               tuple, dict, type, type(None))):
        return False  # (a list of arrays or numbers, at once)
    kinds = list(map(type, x))  # (C loops over the items, as the index below)
    classes = set(kinds)
    if len(classes) > 4:
        return False
    for kind in classes:
        if issubclass(kind, (list, tuple, dict, np.ndarray, np.generic, type)) or \
                kind.__getattribute__ is not object.__getattribute__ or \
                hasattr(kind, "__getattr__") or not _holds_items(x[kinds.index(kind)]):
            return False
    return True


def _holds_items(x: Any) -> bool:
    return isinstance(x, (list, tuple, dict)) or (
        hasattr(x, "__dict__") and not isinstance(x, (np.ndarray, np.generic, type))
        and not is_function_like(x))


_NUMERIC = (float, np.ndarray, np.float64)


class ObjectAdjoint(dict):
    """The adjoint of a user object: attribute name -> adjoint of that attribute.

    It has no items and no arithmetic of its own: an object's adjoint indexed (``p[0]``) or
    in a product (``-p``, ``p * 3``) is a pullback that took the object for an array, where
    Python ran a method of its class (``Vec.__getitem__``, ``Vec.__neg__``) adgen did not
    see; that is refused at the line (operator_methods follows those it can see)."""

    def __missing__(self, key: Any) -> Any:
        if isinstance(key, str):
            raise KeyError(key)
        refuse_object_read_as_value(None)

    def __setitem__(self, key: Any, value: Any) -> None:
        if not isinstance(key, str):
            # a, b = p of an object with __iter__ (and __len__): indexed as a sequence, each
            # item's adjoint went to a key 0, 1 of the object's adjoint, which no attribute
            # reads (the gradient through p's arrays was zero, silently)
            refuse_object_read_as_value(None)
        super().__setitem__(key, value)

    def _arithmetic(self, *_: Any) -> Any:
        refuse_object_read_as_value(None)

    __neg__ = __pos__ = __abs__ = _arithmetic
    __mul__ = __rmul__ = __truediv__ = __rtruediv__ = __matmul__ = __rmatmul__ = _arithmetic
    __sub__ = __rsub__ = __pow__ = __rpow__ = __floordiv__ = __rfloordiv__ = _arithmetic


def refuse_object_read_as_value(obj: Any) -> None:
    """Refuses a gradient that took an object of the user's (``obj``, or None where it is not
    known here) for an array, a number or a list: an operator, an index or a loop over it ran
    a method of its class that the compiled code does not call.

    Raises:
        UnsupportedError: always, at the user's line when a pullback runs it.
    """
    from adgen.errors import UnsupportedError

    what = f"an object of class {type(obj).__name__}" if obj is not None else \
        "an object of one of your classes"
    raise locate(UnsupportedError(
        f"{what} was read as an array, a number or a list: an operator (p + q, -p), an index "
        "(p[i]) or a loop (for a in p) ran a method of its class (__add__, __getitem__, "
        "__iter__) where adgen could not tell the value was such an object",
        hint="adgen calls the class's method for p + q, 2 * p, -p, p[i] and abs(p) where the "
             "code shows p is one: built in the function (p = Vec(v)), self, or a parameter "
             "annotated with its class (def loss(p: Vec, x)); or call it yourself "
             "(p.__add__(q)), and loop over its array (for a in p.a)"),
                 skip=None if obj is None else _in_class_body(type(obj)))


def _in_class_body(cls: type) -> Any:
    """Whether a user's line is in the body of ``cls``: the pullback of its ``__init__`` or
    of another method of it, which receives the adjoint a caller's read gave the object
    (the line to show is the caller's: ``for a in p``, not ``self.v = v``)."""
    import inspect

    try:
        lines, first = inspect.getsourcelines(cls)
        file = inspect.getsourcefile(cls)
    except (OSError, TypeError):
        return None
    last = first + len(lines) - 1
    return lambda f, n: f == file and first <= n <= last


class Unbound:
    """What a local variable of generated code holds before its first assignment, where a
    read may find it so (``transforms/unbound.py``): the code checks ``x is Unbound`` there
    and raises UnboundLocalError, as Python does. The class itself is the value (a class:
    adjoint helpers give it none, as they give a function none; the ``-o`` module copies
    it)."""


def add(a: Any, b: Any) -> Any:
    """Adds two adjoints of the same structure; None stands for zero."""
    if type(a) in _NUMERIC and type(b) in _NUMERIC:
        return a + b
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, ObjectAdjoint) or isinstance(b, ObjectAdjoint):
        # an object's zero (no attribute has an adjoint) adds nothing, as None above
        if not b and type(b) is ObjectAdjoint and type(a) is ObjectAdjoint:
            return a
        if not a and type(a) is ObjectAdjoint and type(b) is ObjectAdjoint:
            return b
        # the 0.0 or_zeros gives a class (a classmethod's cls, whose cls.sq(x) adds an
        # adjoint for the attribute read: hessian raised TypeError 'float' object is not
        # iterable)
        if type(a) in (float, np.float64) and a == 0 and isinstance(b, ObjectAdjoint):
            return b
        if type(b) in (float, np.float64) and b == 0 and isinstance(a, ObjectAdjoint):
            return a
        out = ObjectAdjoint(a)
        for k, v in b.items():
            out[k] = add(out.get(k), v)
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            _refuse_misplaced_items(a, b)
        return _add_items(a, b)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return tuple(add(x, y) for x, y in zip(a, b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        # one sequence's adjoint from two places, one a list, one a tuple (the *xs of a
        # callee's jvp, differentiated again by hessian): item by item
        return type(a)(add(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        out = dict(a)
        for k, v in b.items():
            out[k] = add(out.get(k), v)
        return out
    if isinstance(a, dict) and isinstance(b, list):
        return a  # b: the adjoint of the keys a loop `for k in d` visits (keys get none)
    return a + b


def _add_items(a: list, b: list) -> list:
    """``add`` of two list adjoints of one length, item by item. Where every item of both
    is an object's adjoint or None (a model's list of layers, whose adjoints are mostly
    empty: issue 15), only the items of ``b`` that are not zero (and those of ``a`` that
    are None) are added in Python; the rest is a copy of ``a``: a step's cotangent holding
    one layer's adjoint, added to the caller's adjoint of the model, costs O(1) calls, not
    one per layer (the copy and the scans are C loops). The result is the list the
    item-by-item ``add`` gives, item for item."""
    import itertools  # here: the standalone module copies this function, not runtime's imports
    import operator

    kinds = set(map(type, a))
    kinds.update(map(type, b))
    if kinds <= {ObjectAdjoint, type(None)}:
        # (an ObjectAdjoint or None is false exactly when it is zero; add(x, zero) is x
        # where x is an ObjectAdjoint, and add(None, y) is y)
        out = list(a)
        at = range(len(out))
        for i in itertools.compress(at, map(bool, b)):
            out[i] = add(a[i], b[i])
        if None in a:
            for i in itertools.compress(at, map(operator.is_, a, itertools.repeat(None))):
                out[i] = b[i]
        return out
    # item by item; an item without an adjoint, or an object's empty one, is taken as add
    # would take it, without a call
    items = []
    put = items.append
    for x, y in zip(a, b):
        if y is None or (type(y) is ObjectAdjoint and not y and type(x) is ObjectAdjoint):
            put(x)
        elif x is None or (type(x) is ObjectAdjoint and not x and type(y) is ObjectAdjoint):
            put(y)
        else:
            put(add(x, y))
    return items


def made_list_adjoint(adjoint: Any, n: int) -> None:
    """At a list display ``lst = [...]`` of ``n`` items, in reverse: the list's adjoint there
    has its items at most (those added later were taken back where they were appended).
    Items past ``n`` that are not zero were appended by code whose pullback did not take
    them back (a method of an object the list was handed to, ``o = Recorder(lst);
    o.add(h)``, the list then read by its own name): refused rather than dropped."""
    if isinstance(adjoint, list) and len(adjoint) > n:
        _refuse_misplaced_items(adjoint, adjoint[:n])


def _refuse_misplaced_items(a: list, b: list) -> None:
    """Two adjoints of one list of different lengths: one was made when the list was
    longer (a read of ``self.acts`` before a method appended to it, its adjoint built at the
    list's final length). Items past the shorter one's end that are zero lose nothing; any
    other was put at a position the list did not have there (``acts[-1]`` counted from the
    final end): refused rather than dropped.

    Raises:
        UnsupportedError: when such an item is not zero.
    """
    longer, n = (a, len(b)) if len(a) > len(b) else (b, len(a))
    if all(_is_zero(x) for x in longer[n:]):
        return
    from adgen.errors import UnsupportedError

    raise locate(UnsupportedError(
        "a list read by a position counted from its end (acts[-1] of a method's list, a "
        "position held in a name, a slice, a loop over it), then grown (by a method it calls, "
        "or an append), or a list handed to an object (o = Recorder(lst)) that a method of it "
        "grows (o.add(h) appending to self.lst), read by the list's own name: adgen builds "
        "the read's adjoint at the list's final length, which puts it at the wrong item",
        hint="read it after the calls that change it, or by a position from its start "
             "(acts[0]; k = len(acts) - 1 before the call, then acts[k]); a list an object "
             "holds, through the object (o.lst[0])"))


def _is_zero(x: Any) -> bool:
    if x is None:
        return True
    if isinstance(x, (list, tuple)):
        return all(_is_zero(v) for v in x)
    if isinstance(x, dict):
        return all(_is_zero(v) for v in x.values())
    try:
        return not np.any(x)
    except (TypeError, ValueError):
        return False


def as_gradient(ct: Any, primal: Any, inside: frozenset[int] = frozenset()) -> Any:
    """Shapes a cotangent like its primal: float for a float, object for an object; complex
    for a complex primal, and the real part for a real one (JAX's convention: the cotangent
    of z = x + iy is dL/dx - i dL/dy, so a real x's is its real part). An array's gradient
    has its dtype (a float32 parameter's is float32, as in JAX and PyTorch: a training loop
    stays in float32), and so has a NumPy float32 scalar's; adjoints are computed in float64
    (complex128) and cast here, at the API's boundary. ``inside``: the ids of the containers
    and objects around ``primal``; a way back to one of them (a tree's node and its parent
    refer to each other) has no gradient of its own (None): its values have theirs at their
    first place."""
    if type(ct) is np.ndarray and type(primal) is np.ndarray and ct.dtype is _F64 and \
            ct.shape == primal.shape and primal.dtype is _F64:
        return ct  # the common case first
    if type(primal) is float and (type(ct) is float or type(ct) is np.float64):
        return float(ct)
    if isinstance(primal, (bool, int, np.integer, np.bool_, str, bytes, type(None))):
        return None
    if isinstance(primal, np.ndarray) and primal.dtype.kind not in "fc":
        return None
    if id(primal) in inside:
        return None
    if ct is None:
        return as_gradient(zeros_like(primal), primal, inside) \
            if zeros_like(primal) is not None else None
    if isinstance(primal, (complex, np.complexfloating)) or (
            isinstance(primal, np.ndarray) and primal.dtype.kind == "c"):
        # JAX's convention: the gradient of a complex z = x + iy is dL/dx - i dL/dy
        if isinstance(primal, np.ndarray):
            ct = np.asarray(ct, dtype=primal.dtype)  # complex64 stays complex64
            return ct if ct.shape == primal.shape else np.broadcast_to(ct, primal.shape).copy()
        value = complex(np.sum(ct))
        return value if isinstance(primal, complex) else type(primal)(value)
    if (isinstance(ct, np.ndarray) and ct.dtype.kind == "c") or \
            isinstance(ct, (complex, np.complexfloating)):
        # a real argument's gradient through complex intermediates: dL/dx is the real part
        ct = np.real(ct)
    if isinstance(primal, np.ndarray):
        ct = np.asarray(ct, dtype=primal.dtype)  # float32 stays float32
        if ct.shape != primal.shape:
            ct = np.broadcast_to(ct, primal.shape).copy()
        return ct
    if isinstance(primal, (float, np.floating)):
        value = float(np.sum(ct)) if isinstance(ct, np.ndarray) else float(ct)
        # a float (np.float64 is one) for a float, np.float32 for np.float32
        return value if isinstance(primal, float) else type(primal)(value)
    if isinstance(primal, list):
        ct = list(ct) if isinstance(ct, (list, tuple)) else ct
        inside = inside | {id(primal)}
        return [as_gradient(c, p, inside) for c, p in zip(ct, primal)]
    if isinstance(primal, tuple):
        items = tuple(as_gradient(c, p, inside) for c, p in zip(ct, primal))
        # a namedtuple's gradient is one of its type, as a JAX pytree's
        return type(primal)._make(items) if hasattr(type(primal), "_fields") else items
    if isinstance(ct, dict) and not isinstance(ct, ObjectAdjoint) and \
            hasattr(primal, "__dict__"):
        ct = ObjectAdjoint(ct)
    if isinstance(primal, dict):
        inside = inside | {id(primal)}
        return {k: as_gradient(ct.get(k) if isinstance(ct, dict) else None, v, inside)
                for k, v in primal.items()}
    if isinstance(ct, ObjectAdjoint) and hasattr(primal, "__dict__"):
        out = _copied_object(primal)
        for k, v in vars(primal).items():
            # into the copy's __dict__: a frozen dataclass or a class whose __setattr__
            # refuses would keep the argument's own values (FrozenInstanceError is an
            # AttributeError), and they were returned as the gradient
            vars(out)[k] = as_gradient(ct.get(k), v, inside | {id(primal)})
        return out
    return ct


def _copied_object(primal: Any) -> Any:
    """A shallow copy of the object ``primal`` to hold its gradient. A proxy whose
    ``__getattr__`` reads an attribute its ``__init__`` sets (``getattr(self.m, name)``)
    recurses without end in ``copy.copy``, which looks for ``__setstate__`` on an instance
    made without ``__init__``: such an object is made by ``__new__`` with the attributes
    set in its ``__dict__`` (a RecursionError before)."""
    try:
        return copy.copy(primal)
    except RecursionError:
        pass
    try:
        out = type(primal).__new__(type(primal))
    except TypeError:
        from adgen.errors import UnsupportedError

        raise UnsupportedError(
            f"the gradient of a {type(primal).__qualname__} cannot be built: copying it "
            "recursed without end (its __getattr__ reads an attribute the copy lacks) and its "
            "class's __new__ needs arguments",
            hint="give the class a __getattr__ that raises AttributeError for names starting "
                 "with '_' and for attributes of the object itself, or differentiate "
                 "with respect to the object it delegates to") from None
    vars(out).update(vars(primal))
    return out


def shadow_dtype(x: Any) -> np.dtype:
    """The dtype of the adjoint of ``x``: complex128 for a complex value (and for every value
    under :func:`complex_adjoints`), else float64."""
    kind = x.dtype.kind if isinstance(x, (np.ndarray, np.generic)) else \
        "c" if isinstance(x, complex) else "f"
    return np.dtype(np.complex128) if kind == "c" or _ADJOINTS.complex else _F64


def refuse_array_form(what: str, hint: str) -> None:
    from adgen.errors import UnsupportedError

    raise locate(UnsupportedError(f"{what} is not supported: adgen cannot map its adjoint",
                                  hint=hint))


def locate(err: Any, tb: Any = None, skip: Any = None) -> Any:
    """``err`` (an AdgenError raised by the runtime) with the user's file and line, when a
    pullback on the stack is running the adjoint of that line (the ``# line N:`` comment
    above the statement it runs). ``tb``: the traceback of an exception caught above the
    pullback, whose frames are searched instead (innermost first). ``skip(file, line)``:
    true for a line to pass over (a frame further out names the line to show)."""
    import linecache
    import os
    import re
    import sys

    if getattr(err, "location", True) is not None:
        return err
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    frame = frames[-1] if frames else sys._getframe(1)
    inner = list(reversed(frames))
    # adgen's own NumPy compiled as a callee (a reference implementation, a forward-mode
    # tangent helper under hessian) is not the user's line: its caller's frame is
    own = os.path.dirname(os.path.abspath(__file__)) + os.sep
    while frame is not None:
        file = frame.f_globals.get("__adgen_file__")
        if file is not None and frame.f_code.co_filename.startswith("<adgen ") and \
                not os.path.abspath(file).startswith(own):
            lines = linecache.getlines(frame.f_code.co_filename)
            for k in range(min(frame.f_lineno, len(lines)) - 1, -1, -1):
                found = re.match(r"\s*# line (\d+):", lines[k])
                if found:
                    from adgen.errors import Location

                    n = int(found.group(1))
                    # generated code differentiated again (reverse over reverse): its
                    # "# line N:" comments name generated lines, whose own comments name
                    # the user's; adgen's helpers compiled there name none (the caller does)
                    file, n = through_generated(file, n)
                    if file is None or skip is not None and skip(file, n):
                        break
                    text = linecache.getline(file, n)
                    err.location = Location(file, n, len(text) - len(text.lstrip()), text)
                    err.args = (err.format(),)
                    return err
            # no '# line N:' above it (a callee's pullback reading its arguments' adjoints
            # before its first line): the caller's frame names the line of the call
        if inner:
            inner.pop(0)
            frame = inner[0] if inner else None
        else:
            frame = frame.f_back
    return err


def through_generated(file: str, n: int) -> tuple[Any, int]:
    """Line ``n`` of ``file`` as a line of the user's code: itself for a user's file; for
    generated code compiled again (a pseudo-file ``<adgen ...>``), the ``# line N:`` comment
    above that line, in the user's file its comments name (``emit.USER_FILES``); ``(None, 0)``
    where there is none (adgen's own helpers compiled as callees)."""
    import linecache
    import re
    import sys

    emit = sys.modules.get("adgen.transforms.emit")
    while file.startswith("<adgen "):
        user = getattr(emit, "USER_FILES", {}).get(file)
        lines = linecache.getlines(file)
        line = None
        for k in range(min(n, len(lines)) - 1, -1, -1):
            found = re.match(r"\s*# line (\d+):", lines[k])
            if found:
                line = int(found.group(1))
                break
        if user is None or line is None:
            return None, 0
        file, n = user, line
    return file, n


def item(adjoint: Any, index: Any) -> Any:
    """``adjoint[index]`` where a None adjoint (zero) has zero items."""
    if adjoint is None:
        return None
    if isinstance(adjoint, dict):
        return adjoint.get(index)
    return adjoint[index]


def copy_adjoint(adjoint: Any) -> Any:
    """A copy of an adjoint that the pullback may then change in place."""
    if isinstance(adjoint, np.ndarray):
        return adjoint.copy()
    if isinstance(adjoint, ObjectAdjoint):
        return ObjectAdjoint(adjoint)
    if isinstance(adjoint, (list, dict)):
        return copy.copy(adjoint)
    if isinstance(adjoint, tuple):
        return list(adjoint)
    return adjoint


def zero_if_none(g: Any) -> Any:
    """0.0 for a None (zero) adjoint."""
    return 0.0 if g is None else g


def zeros_of_tree(tree: Any) -> Any:
    """The zero adjoint of a value whose :func:`shape_tree` is ``tree`` (the pullback kept
    the tree, not the value: transforms/shape_saves.py): as :func:`zeros_like`, in float64
    (complex128 under :func:`complex_adjoints`)."""
    if type(tree) is tuple and (not tree or type(tree[0]) is int):
        if tree == ():
            return 0j if _ADJOINTS.complex else 0.0
        return np.zeros(tree, np.complex128 if _ADJOINTS.complex else _F64)
    if isinstance(tree, tuple) and tree and tree[0] == "tuple":
        return [zeros_of_tree(t) for t in tree[1:]]  # a tuple's adjoint is a list
    if isinstance(tree, list):
        return [zeros_of_tree(t) for t in tree]
    if isinstance(tree, dict):
        return {k: zeros_of_tree(t) for k, t in tree.items()}
    return None


def or_zeros_of_tree(g: Any, tree: Any) -> Any:
    """:func:`or_zeros` where the pullback kept the value's :func:`shape_tree` only."""
    if g is None:
        return zeros_of_tree(tree)
    if isinstance(g, (list, tuple)) and isinstance(tree, (list, tuple)):
        items = tree[1:] if isinstance(tree, tuple) and tree and tree[0] == "tuple" else tree
        if not (isinstance(tree, tuple) and (not tree or type(tree[0]) is int)):
            return [or_zeros_of_tree(a, b) for a, b in zip(g, items)]
    if isinstance(g, dict) and isinstance(tree, dict) and not isinstance(g, ObjectAdjoint):
        return {k: or_zeros_of_tree(g.get(k), v) for k, v in tree.items()}
    return g


def or_zeros(g: Any, like: Any) -> Any:
    """``g``, or the zero adjoint of ``like`` where g is None (a missing container entry).
    The zero of None, a str or a bool is 0.0: a call's result of no float content may have a
    shadow cell (a call that writes its argument), which the pullback adds this to."""
    if g is None:
        zero = zeros_like(like)
        # (a class or a dtype too: np.astype(y, np.float64, copy=False) may return y, so
        # its dtype argument shares y's shadow cell as any argument of such a call does)
        return 0.0 if zero is None and (isinstance(like, (type(None), str, bytes, bool,
                                                          np.bool_, type, np.dtype)) or
                                        is_enum_member(like)) \
            else zero
    if isinstance(g, (list, tuple)) and isinstance(like, (list, tuple)):
        return [or_zeros(a, b) for a, b in zip(g, like)]
    if isinstance(g, dict) and isinstance(like, dict) and not isinstance(g, ObjectAdjoint):
        return {k: or_zeros(g.get(k), v) for k, v in like.items()}
    return g
