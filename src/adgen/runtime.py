"""What generated code imports: zeros, accumulation, shadow memory, guards, dynamic calls.

Generated modules do ``from adgen.runtime import ...`` and nothing else of adgen. Everything
here that a standalone module (``adgen FILE -o OUT``) needs is a plain top-level function or
class using only numpy, so the emitter can copy its source.
"""

from __future__ import annotations

import contextlib
import copy
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

try:
    from adgen.rules.helpers import *  # noqa: F401,F403  (rule templates call these by name)
    from adgen.rules.helpers import __all__ as _helper_names
except ImportError:  # pragma: no cover - while the rules are being written
    _helper_names = []

# --------------------------------------------------------------------------------------------
# Zeros and accumulation of adjoints (values, not buffers)


_F64 = np.dtype(np.float64)
# data_address's reader, made at its first call
_ADDRESS_READER: list[Any] = []


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
            _refuse_array_form(f"a structured array (dtype {dtype}) read or written by field",
                               "keep each field in a float array of its own (a dict of "
                               "arrays)")
        return np.zeros(x.shape, _shadow_dtype(x) if dtype.kind != "c" else dtype)
    if isinstance(x, np.flatiter):
        # y.flat read by index (y.flat[i], y.flat[1:3]): its adjoint is flat, in C order, and
        # goes back to y's shape as np.ravel's does (writes through y.flat: ShadowMap.of)
        return zeros_like(x.base).reshape(-1)
    if isinstance(x, np.ndarray):
        return np.zeros(x.shape, dtype=x.dtype if x.dtype.kind in "fc" and
                        not _ADJOINTS.complex else _shadow_dtype(x))
    if isinstance(x, (complex, np.complexfloating)):
        return 0j
    if isinstance(x, (float, np.floating, int, np.integer)) and not isinstance(x, (bool,
                                                                                 np.bool_)):
        return 0.0  # an int's adjoint is computed and dropped: the gradient of an int is None
    if isinstance(x, (bool, np.bool_, str, bytes, type(None))):
        return None
    if isinstance(x, (list, tuple)):
        # a tuple's adjoint is a list the pullback may fill in; gradients turn it back
        return [zeros_like(v) for v in x]
    if isinstance(x, dict):
        return {k: zeros_like(v) for k, v in x.items()}
    if is_function_like(x):
        return None
    if hasattr(x, "__dict__"):
        return ObjectAdjoint({k: zeros_like(v) for k, v in vars(x).items()})
    return None


_NUMERIC = (float, np.ndarray, np.float64)


class ObjectAdjoint(dict):
    """The adjoint of a user object: attribute name -> adjoint of that attribute."""


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
        out = ObjectAdjoint(a)
        for k, v in b.items():
            out[k] = add(out.get(k), v)
        return out
    if isinstance(a, list) and isinstance(b, list):
        return [add(x, y) for x, y in zip(a, b)]
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


def as_gradient(ct: Any, primal: Any) -> Any:
    """Shapes a cotangent like its primal: float for a float, object for an object; complex
    for a complex primal, and the real part for a real one (JAX's convention: the cotangent
    of z = x + iy is dL/dx - i dL/dy, so a real x's is its real part)."""
    if type(ct) is np.ndarray and type(primal) is np.ndarray and ct.dtype is _F64 and \
            ct.shape == primal.shape and primal.dtype.kind == "f":
        return ct  # the common case first
    if type(primal) is float and (type(ct) is float or type(ct) is np.float64):
        return float(ct)
    if isinstance(primal, (bool, int, np.integer, np.bool_, str, bytes, type(None))):
        return None
    if isinstance(primal, np.ndarray) and primal.dtype.kind not in "fc":
        return None
    if ct is None:
        return as_gradient(zeros_like(primal), primal) if zeros_like(primal) is not None \
            else None
    if isinstance(primal, (complex, np.complexfloating)) or (
            isinstance(primal, np.ndarray) and primal.dtype.kind == "c"):
        # JAX's convention: the gradient of a complex z = x + iy is dL/dx - i dL/dy
        if isinstance(primal, np.ndarray):
            ct = np.asarray(ct, dtype=np.complex128)
            return ct if ct.shape == primal.shape else np.broadcast_to(ct, primal.shape).copy()
        return complex(np.sum(ct))
    if (isinstance(ct, np.ndarray) and ct.dtype.kind == "c") or \
            isinstance(ct, (complex, np.complexfloating)):
        # a real argument's gradient through complex intermediates: dL/dx is the real part
        ct = np.real(ct)
    if isinstance(primal, np.ndarray):
        ct = np.asarray(ct, dtype=np.float64)
        if ct.shape != primal.shape:
            ct = np.broadcast_to(ct, primal.shape).copy()
        return ct
    if isinstance(primal, (float, np.floating)):
        return float(np.sum(ct)) if isinstance(ct, np.ndarray) else float(ct)
    if isinstance(primal, list):
        ct = list(ct) if isinstance(ct, (list, tuple)) else ct
        return [as_gradient(c, p) for c, p in zip(ct, primal)]
    if isinstance(primal, tuple):
        return tuple(as_gradient(c, p) for c, p in zip(ct, primal))
    if isinstance(ct, dict) and not isinstance(ct, ObjectAdjoint) and \
            hasattr(primal, "__dict__"):
        ct = ObjectAdjoint(ct)
    if isinstance(primal, dict):
        return {k: as_gradient(ct.get(k) if isinstance(ct, dict) else None, v)
                for k, v in primal.items()}
    if isinstance(ct, ObjectAdjoint) and hasattr(primal, "__dict__"):
        out = copy.copy(primal)
        for k, v in vars(primal).items():
            # into the copy's __dict__: a frozen dataclass or a class whose __setattr__
            # refuses would keep the argument's own values (FrozenInstanceError is an
            # AttributeError), and they were returned as the gradient
            vars(out)[k] = as_gradient(ct.get(k), v)
        return out
    return ct


# --------------------------------------------------------------------------------------------
# Shadow memory: the adjoint of a buffer that is written in place or aliased.


def root_of(x: np.ndarray) -> np.ndarray:
    """The ndarray that owns the memory ``x`` views."""
    while isinstance(x.base, np.ndarray):
        x = x.base
    return x


class ShadowMap:
    """The adjoints of buffers, laid out like the buffers (Enzyme's shadow memory).

    ``of(x)`` returns the adjoint of array ``x`` as an array of x's shape that views the
    shadow of x's root buffer at the same offset and strides, so the adjoint of a view is the
    same view of its base's adjoint, and two arguments that alias share one adjoint. A pullback
    and the pullbacks of its callees share one map.
    """

    def __init__(self) -> None:
        self._roots: dict[int, tuple[Any, np.ndarray]] = {}
        # id(root) -> (root, its address, its shadow's buffer, the shadow's offset in it)
        self._where: dict[int, tuple[Any, int, Any, int, Any]] = {}
        # adjoints of lists/dicts/objects handed to a callee that changes them in place
        self._deposits: dict[int, list[Any]] = {}
        # guard copies that stand for the buffers they were taken from (remap_saved)
        self._stand_ins: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def stand_in(self, copy_: np.ndarray, original: np.ndarray) -> None:
        """``copy_`` (a guard's copy) stands for ``original``: its views share its shadow."""
        self._stand_ins[id(copy_)] = (copy_, original)

    def _through_stand_in(self, x: np.ndarray) -> np.ndarray:
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
        """A caller hands over the adjoint of container ``x`` as it is after the call."""
        self._deposits[id(x)] = [x, adjoint, False]

    def withdraw(self, x: Any) -> Any:
        """A callee that changes container ``x`` starts from the caller's adjoint of it."""
        entry = self._deposits.get(id(x))
        if entry is None or entry[2]:
            return zeros_like(x)
        entry[2] = True
        return or_zeros(copy_adjoint(entry[1]), x)

    def merge(self, x: Any, current: Any, ct: Any) -> Any:
        """The caller's adjoint of ``x`` after the callee's pullback: the callee's cotangent
        replaces it when the callee took it over (it changed x), else adds to it."""
        entry = self._deposits.pop(id(x), None)
        if entry is not None and entry[2]:
            return ct
        return add(current, ct)

    def of(self, x: Any) -> np.ndarray:
        if isinstance(x, np.flatiter):
            # y.flat: the adjoint is y's, flat in C order (a view of its shadow when that is
            # C-contiguous); anything else would get a 0-d cell of its own while y's adjoint
            # kept the elements' gradient
            shadow = self.of(x.base)
            if shadow.flags.c_contiguous:
                return shadow.reshape(-1)
            _refuse_array_form("y.flat of an array that is not C-contiguous (a transpose, a "
                               "strided slice), read by index or written",
                               "take y = y.copy() first, or index y itself: "
                               "y[np.unravel_index(i, y.shape)]")
        if isinstance(x, np.ndarray):
            if self._stand_ins:
                x = self._through_stand_in(x)
            root = root_of(x)
            entry = self._roots.get(id(root))
            if entry is None:
                if root.dtype.names is not None:
                    _refuse_array_form(
                        f"a structured array (dtype {root.dtype}) read or written by field",
                        "keep each field in a float array of its own (a dict of arrays)")
                shadow = np.zeros_like(root, dtype=_shadow_dtype(root), order="K")
                if shadow.strides != _element_strides(root) and root.size > 1:
                    shadow = _strided_zeros_like(root)
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
                buffer = _base_buffer(shadow)
                where = self._where[id(root)] = (
                    root, data_address(root), buffer, _shadow_offset(shadow),
                    _memory_vector(buffer) if root.itemsize == shadow.itemsize else None)
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
                    _refuse_reinterpreted(x, root)
                offset = offset // size * item
                strides = tuple(s // size * item for s in strides)
            return np.ndarray(x.shape, dtype=dtype, buffer=where[2],
                              offset=offset + where[3], strides=strides)
        if isinstance(x, (list, dict, tuple)) or (hasattr(x, "__dict__") and
                                                  not isinstance(x, np.generic)):
            from adgen.errors import UnsupportedError

            if not isinstance(x, (list, dict, tuple)):
                # an object the compiler took for an array: it may share an array with a
                # value written in place (f = g.field(); f[1:] *= 2.0; g.energy())
                raise locate(UnsupportedError(
                    f"an object of class {type(x).__name__} whose arrays are written in "
                    "place through another value (an array a method returned, an item of a "
                    "list) is not supported yet: adgen took it for an array when compiling",
                    hint="copy the array before writing it (f = g.field().copy()), or write "
                         "it through the object where the function holds it by name "
                         "(g.u[1:] *= 2.0)"))
            raise locate(UnsupportedError(
                f"a {type(x).__name__} written in place by index (x[i] = v) where adgen could "
                "not tell it from an array when compiling (a parameter of a function called by "
                "the one differentiated, an item of a list, or a value returned by a call) is "
                "not supported yet",
                hint="write it in the function you differentiate (its list and dict arguments "
                     "are supported), or have the helper return the new item "
                     "(ws[0] = helper(ws[0]))"))
        # An immutable scalar: its adjoint lives in a 0-d cell keyed by the object.
        entry = self._roots.get(id(x))
        if entry is None:
            entry = (x, np.zeros((), dtype=_shadow_dtype(x)))
            self._roots[id(x)] = entry
        return entry[1]

    def pop(self, x: Any) -> Any:
        """Takes the adjoint of ``x`` out of shadow memory (zeroing it) and returns it; for a
        list, tuple or dict (a call's result the compiler could not tell from an array:
        ``p, q = pair(x)``), the adjoints of the arrays and numbers in it."""
        if isinstance(x, (list, tuple, dict)):
            return _with_shadows(self, x, None)
        shadow = self.of(x)
        value = shadow.copy()
        shadow[...] = 0.0
        return value if isinstance(x, np.ndarray) else _scalar(value)

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


def _scalar(cell: np.ndarray) -> Any:
    """The number a 0-d shadow cell holds: a float, or a complex for a complex value."""
    return complex(cell) if cell.dtype.kind == "c" else float(cell)


def _shadow_dtype(x: Any) -> np.dtype:
    """The dtype of the adjoint of ``x``: complex128 for a complex value (and for every value
    under :func:`complex_adjoints`), else float64."""
    kind = x.dtype.kind if isinstance(x, (np.ndarray, np.generic)) else \
        "c" if isinstance(x, complex) else "f"
    return np.dtype(np.complex128) if kind == "c" or _ADJOINTS.complex else _F64


def _element_strides(root: np.ndarray) -> tuple[int, ...]:
    """The strides of a float64 (complex128) shadow laid out element by element like
    ``root``."""
    size = root.itemsize
    item = _shadow_dtype(root).itemsize
    if size == item:
        return root.strides
    if any(s % size for s in root.strides):
        _refuse_reinterpreted(root, root)
    return tuple(s // size * item for s in root.strides)


def _strided_zeros_like(root: np.ndarray) -> np.ndarray:
    # A root with holes in its layout (rare: as_strided, memmap slices): allocate the span.
    strides = _element_strides(root)
    dtype = _shadow_dtype(root)
    span = (np.array(root.shape) - 1) @ np.abs(np.array(strides)) + dtype.itemsize
    flat = np.zeros(int(span) // dtype.itemsize + 1, dtype=dtype)
    low = sum(s * (n - 1) for s, n in zip(strides, root.shape) if s < 0)
    return np.ndarray(root.shape, dtype, buffer=flat, offset=-low, strides=strides)


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
        hint="read them as a product instead: np.real(-1j * z) is z.imag"))


def _refuse_array_form(what: str, hint: str) -> None:
    from adgen.errors import UnsupportedError

    raise locate(UnsupportedError(f"{what} is not supported: adgen cannot map its adjoint",
                                  hint=hint))


def _refuse_reinterpreted(x: np.ndarray, root: np.ndarray) -> None:
    from adgen.errors import UnsupportedError

    raise locate(UnsupportedError(
        f"an array of dtype {x.dtype} views the memory of an array of dtype {root.dtype} "
        "with other element boundaries (x.view(dtype), a field of a structured array): adgen "
        "maps adjoints element by element and cannot map these",
        hint="pass a copy (x.astype(np.float64)) instead of the view"))


def locate(err: Any, tb: Any = None) -> Any:
    """``err`` (an AdgenError raised by the runtime) with the user's file and line, when a
    pullback on the stack is running the adjoint of that line (the ``# line N:`` comment
    above the statement it runs). ``tb``: the traceback of an exception caught above the
    pullback, whose frames are searched instead (innermost first)."""
    import linecache
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
    while frame is not None:
        file = frame.f_globals.get("__adgen_file__")
        if file is not None and frame.f_code.co_filename.startswith("<adgen "):
            lines = linecache.getlines(frame.f_code.co_filename)
            for k in range(min(frame.f_lineno, len(lines)) - 1, -1, -1):
                found = re.match(r"\s*# line (\d+):", lines[k])
                if found:
                    from adgen.errors import Location

                    n = int(found.group(1))
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


def _base_buffer(shadow: np.ndarray) -> Any:
    return shadow.base if isinstance(shadow.base, np.ndarray) else shadow


def _memory_vector(buffer: np.ndarray) -> np.ndarray | None:
    """``buffer``'s elements as a vector in memory order (a view), or None where they are
    not contiguous."""
    if buffer.flags.c_contiguous:
        return buffer.reshape(-1)
    if buffer.flags.f_contiguous:
        return buffer.T.reshape(-1)
    return None


def data_address(x: np.ndarray) -> int:
    """The address of ``x``'s first element (``x.ctypes.data``), fast.

    ``x.ctypes.data`` builds a ctypes object (about 2 us: most of a shadow lookup in a loop).
    The address is the first field after the object header of NumPy's ``PyArrayObject``
    (a public struct, ``ndarraytypes.h``); where objects are laid out as in CPython (checked
    once, on test arrays, against ``ctypes.data``) it is read in place."""
    if not _ADDRESS_READER:
        _ADDRESS_READER.append(_address_reader())
    return _ADDRESS_READER[0](x)


def _address_reader() -> Any:
    """A function ``x -> x.ctypes.data``: reading the struct field where that gives the
    same addresses (CPython), else ``ctypes.data`` itself (PyPy, a changed layout)."""
    import ctypes

    header = object.__basicsize__  # PyObject_HEAD: the struct's data pointer follows it
    field = ctypes.c_void_p.from_address

    def read(x: np.ndarray) -> int:
        return field(id(x) + header).value or 0

    try:
        probe = np.arange(12.0).reshape(3, 4)
        same = all(read(a) == a.ctypes.data for a in (
            probe, probe[1:, 2:], probe.T[::-1], probe[:, 1], np.zeros(3, np.int32)[1:]))
    except Exception:  # pragma: no cover - an interpreter where id() is no address
        same = False
    return read if same else (lambda x: x.ctypes.data)


def _shadow_offset(shadow: np.ndarray) -> int:
    base = _base_buffer(shadow)
    if base is shadow:
        return 0
    return shadow.__array_interface__["data"][0] - base.__array_interface__["data"][0]


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


def entry_items(x: Any) -> Any:
    """The structure of a list, tuple, dict or object argument as the function received it:
    new containers holding the same arrays and numbers (no copy of any value). A function
    that rebinds a slot (``ws[0] = ws[0] * 2`` after ``ws[0][1] = v``) leaves the caller's
    container holding new items; the gradient belongs to the items it was given, which
    :func:`collect` finds here."""
    if isinstance(x, list):
        return [entry_items(v) for v in x]
    if isinstance(x, tuple):
        return tuple(entry_items(v) for v in x)
    if isinstance(x, dict):
        return {k: entry_items(v) for k, v in x.items()}
    if hasattr(x, "__dict__") and not isinstance(x, (type, np.generic, np.ndarray)) and \
            not is_function_like(x):
        return _EntryObject({k: entry_items(v) for k, v in vars(x).items()})
    return x


class _EntryObject(dict):
    """An object's attributes as :func:`entry_items` found them."""


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


def _collect(sh: ShadowMap, x: Any, adjoint: Any) -> Any:
    if isinstance(x, np.ndarray):
        value = sh.value(x) if id(root_of(x)) in sh._roots else None
        return add(adjoint, value)
    if isinstance(x, (list, tuple)):
        base = adjoint if isinstance(adjoint, (list, tuple)) else [None] * len(x)
        return [_collect(sh, v, a) for v, a in zip(x, base)]
    if isinstance(x, _EntryObject):
        base = adjoint if isinstance(adjoint, dict) else {}
        return ObjectAdjoint({k: _collect(sh, v, base.get(k)) for k, v in x.items()})
    if isinstance(x, dict):
        base = adjoint if isinstance(adjoint, dict) else {}
        return {k: _collect(sh, v, base.get(k)) for k, v in x.items()}
    if hasattr(x, "__dict__") and not isinstance(x, (type, np.generic)) and \
            not is_function_like(x):
        base = adjoint if isinstance(adjoint, dict) else {}
        return ObjectAdjoint({k: _collect(sh, v, base.get(k)) for k, v in vars(x).items()})
    if _is_number(x) and id(x) in sh._roots:
        # a number item read where it may be updated in place: its adjoint is in a cell
        return add(adjoint, sh.value(x))
    if adjoint is None and (_is_number(x) or isinstance(x, np.ndarray)):
        return zeros_like(x)  # an item overwritten before anything read it
    return adjoint


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


def _with_shadows(sh: ShadowMap, x: Any, adjoint: Any) -> Any:
    if isinstance(x, np.ndarray):
        if x.dtype.kind in "fc" and id(root_of(x)) in sh._roots:
            return add(adjoint, sh.pop(x))
        return adjoint
    if _is_number(x):
        return add(adjoint, sh.pop(x)) if id(x) in sh._roots else adjoint
    if isinstance(x, (list, tuple)):
        base = list(adjoint) if isinstance(adjoint, (list, tuple)) else [None] * len(x)
        out = [_with_shadows(sh, v, a) for v, a in zip(x, base)]
        return tuple(out) if isinstance(adjoint, tuple) else out
    if isinstance(x, _EntryObject):  # an object's attributes as entry_items found them
        base = adjoint if isinstance(adjoint, dict) else {}
        return ObjectAdjoint({k: _with_shadows(sh, v, base.get(k)) for k, v in x.items()})
    if isinstance(x, dict):
        base = adjoint if isinstance(adjoint, dict) else {}
        return {k: _with_shadows(sh, v, base.get(k)) for k, v in x.items()}
    if hasattr(x, "__dict__") and not isinstance(x, (type, np.generic)) and \
            not is_function_like(x):
        base = adjoint if isinstance(adjoint, dict) else {}
        return ObjectAdjoint({k: _with_shadows(sh, v, base.get(k))
                              for k, v in vars(x).items()})
    return adjoint


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def _refuse_number_cells(sh: ShadowMap, x: Any) -> None:
    """Number items of ``x`` (as the function received it) whose adjoints sit in shadow
    cells, kept per object: never right for one object at two places (Python shares equal
    numbers: [1.0, 1.0], [0.0] * n)."""
    from adgen.errors import UnsupportedError

    seen: dict[int, str] = {}
    todo: list[tuple[Any, str]] = [(x, "")]
    while todo:
        v, where = todo.pop()
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


def items_to_shadows(sh: ShadowMap, container: Any, adjoint: Any,
                     arrays: tuple[Any, ...]) -> Any:
    """Moves the adjoints of the items of a list, tuple or dict that are among ``arrays``
    (arrays the pullback keeps in shadow memory, as they are written in place) into their
    shadows, and returns the container's adjoint with zeros there. A container's adjoint may
    arrive (returned, or from a callee) before the pullback of an in-place write into one of
    its arrays reads that array's shadow: it must be there by then."""
    if isinstance(adjoint, (list, tuple)) and isinstance(container, (list, tuple)):
        keys: Any = range(min(len(adjoint), len(container)))
        out: Any = list(adjoint)
    elif isinstance(adjoint, dict) and isinstance(container, dict) and \
            not isinstance(adjoint, ObjectAdjoint):
        keys = [k for k in container if k in adjoint]
        out = dict(adjoint)
    elif isinstance(adjoint, dict) and hasattr(container, "__dict__") and \
            not isinstance(container, (dict, type, np.generic)) and \
            not is_function_like(container):
        # an object's attributes (g = Grid(u); g.u[1:] *= 2.0; g.energy(): the method's
        # cotangent for g.u must be in g.u's shadow before the write's pullback reads it)
        attrs = vars(container)
        keys = [k for k in attrs if k in adjoint]
        out = ObjectAdjoint(adjoint)
        container = attrs
    else:
        return adjoint
    ids = {id(a) for a in arrays if isinstance(a, np.ndarray)}
    for k in keys:
        value, g = container[k], out[k]
        if id(value) in ids and g is not None:
            sh.of(value)[...] += g
            out[k] = zeros_like(g)
    return out


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


class GuardScope:
    """The live captures of one forward pass, indexed by the buffer they view."""

    def __init__(self) -> None:
        self.live: dict[int, _Watch] = {}
        self.saved_bytes: dict[tuple[str, int, int], int] = {}
        # functions compiled or run through a dynamic call in this pass (for explain)
        self.dynamic: list[Any] = []


class _ThreadScopes(threading.local):
    """Per thread: the stack of guard scopes (the last is the running forward pass's) and of
    save measurements. Each thread starts with a scope of its own, so the forward passes of two
    threads never see (or save into) each other's captures."""

    def __init__(self) -> None:
        self.scopes: list[GuardScope] = [GuardScope()]
        self.measure: list[dict[tuple[str, int, int], int]] = []


_THREAD = _ThreadScopes()


@contextlib.contextmanager
def guard_scope() -> Iterator[GuardScope]:
    """A fresh scope of captures for one top-level forward pass."""
    scope = GuardScope()
    scopes = _THREAD.scopes
    scopes.append(scope)
    try:
        yield scope
    finally:
        scopes.pop()


def current_scope() -> GuardScope:
    """The scope of the forward pass that is running."""
    return _THREAD.scopes[-1]


@contextlib.contextmanager
def measure_saves() -> Iterator[dict[tuple[str, int, int], int]]:
    """Collects the bytes each guarded write saves, keyed by (file, line, col)."""
    measured: dict[tuple[str, int, int], int] = {}
    measures = _THREAD.measure
    measures.append(measured)
    try:
        with guard_scope() as scope:
            measured["__scope__"] = scope  # type: ignore[index]
            yield measured
    finally:
        measures.pop()


def copy_before_loop(x: Any, file: str, line: int, col: int) -> Any:
    """A copy of ``x`` taken before a loop whose iterations read rows of ``x`` that no
    earlier iteration wrote (rows ahead of its counter): the pullback reads them here, so the
    writes of the loop need no guard. Its size counts as saved at the write of ``line``,
    ``col`` (for ``adgen.explain``)."""
    copied = x.copy()
    measures = _THREAD.measure
    if measures:
        key3 = (file, line, col)
        measures[-1][key3] = measures[-1].get(key3, 0) + copied.nbytes
    return copied


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


def capture(x: Any, file: str, line: int, what: str, within: Any = None) -> Any:
    """Keeps ``x`` for a pullback; a later guarded write that overlaps it saves or raises.

    ``within``: for ``x`` passed to a call, what the callee saved (the capture of an object
    covers only the arrays of it the callee's saved values hold)."""
    if not isinstance(x, np.ndarray):
        attrs = getattr(x, "__dict__", None)
        if isinstance(attrs, dict) and type(x) is not type:
            # an object (a method's self): the arrays of it the callee kept are captured, so
            # that a later write into one is guarded and the callee's saved views redirected
            kept = None if within is None else _roots_held(within, x)
            held = [Capture(v, file, line, f"{what}.{k}") for k, v in attrs.items()
                    if isinstance(v, np.ndarray) and (kept is None or
                                                      id(root_of(v)) in kept)]
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
        # a list (an index a later store may change): its items as they are now
        return _Kept(list(x) if type(x) is list else x)
    cap = Capture(x, file, line, what)
    _watch(cap)
    return cap


def _watch(cap: Capture) -> None:
    """Makes ``cap`` live in the running forward pass: guarded writes check it."""
    if cap.array.size == 0:
        return  # no element of it can be overwritten
    root = root_of(cap.array)
    live = _THREAD.scopes[-1].live
    watch = live.get(id(root))
    if watch is None:
        watch = live[id(root)] = _Watch(root)
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


def copy_hint(construct: str, captured: str, capture_line: int, line: int) -> str:
    """What to do instead of an in-place write that overwrites a value a gradient reads,
    said in the user's code: write into a copy of the written array, or, when the write's own
    gradient reads what it overwrites (``Z /= Z.std()``), compute the value out of place."""
    import re

    save = 'use mutation="save" (adgen keeps a copy)'
    aug = re.match(r"^\s*([A-Za-z_]\w*)(\[.*\])?\s*(\*\*|//|>>|<<|[-+*/@%&|^])=\s*(.+)$",
                   construct)
    if capture_line == line:
        if aug and not aug.group(2):
            return (f"{save}, or compute it out of place: {aug.group(1)} = {aug.group(1)} "
                    f"{aug.group(3)} {aug.group(4)}")
        if aug:
            item = aug.group(1) + aug.group(2)
            return (f"{save}, or read a copy of the old value: {item} = {item}.copy() "
                    f"{aug.group(3)} {aug.group(4)}")
        return f"{save}, or compute the new value into a new array instead of in place"
    called = re.match(r"^\s*([A-Za-z_]\w*)\(", construct)
    if called and not re.search(r"\bout=", construct):
        # a user function that writes an argument in place (scatter(x, v)): not its name
        return (f"{save}, or pass {called.group(1)} a copy of the array it writes in place "
                f"(a.copy() for an argument a) at line {line}")
    # the written array: out=..., the first argument of np.copyto / np.add.at / ..., or the
    # name the statement starts with (x.fill(0), x[i] = v)
    found = re.search(r"\bout=\s*\(?\s*([A-Za-z_]\w*)", construct) or \
        re.match(r"^\s*(?:np|numpy)\.[\w.]+\(\s*([A-Za-z_]\w*)", construct) or \
        re.match(r"^\s*([A-Za-z_]\w*)", construct)
    name = found.group(1) if found else captured
    return f"{save}, or write into a copy: {name} = {name}.copy() before line {line}"


def before_write(target: Any, region: Any, policy: str, file: str, line: int, col: int,
                 construct: str, value: Any = None) -> None:
    """Runs just before an in-place write of ``region`` (a view of ``target``, or ``target``).

    Every live capture whose memory overlaps the region is saved (policy "save") or reported
    (policy "strict", MutationError naming both lines).
    """
    if isinstance(target, np.flatiter):  # y.flat[i] = v writes y
        target = flat_target(target)
    if not isinstance(target, np.ndarray):
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
    if policy == "strict":
        from adgen.errors import Location, MutationError

        first = hits[0]
        lines = sorted({c.line for c in hits})
        also = "".join(f"; the gradient of line {ln} reads it too" for ln in lines
                       if ln != first.line)
        raise MutationError(
            f"{construct} overwrites {first.what}, which the gradient of line {first.line} "
            f"reads{also}",
            Location(file, line, col, _source_line(file, line)),
            hint=copy_hint(construct, first.what, first.line, line),
            captured_at=Location(first.file, first.line, 0,
                                 _source_line(first.file, first.line)))
    for cap in hits:
        cap.snapshot = cap.array.copy()
        watch.remove(cap)
        measures = _THREAD.measure
        if measures:
            key3 = (file, line, col)
            measures[-1][key3] = measures[-1].get(key3, 0) + cap.snapshot.nbytes
    if not watch:
        del scope.live[key]


class _Watch:
    """The live captures that view one root buffer, indexed by the elements they view, so
    that a guarded write costs about what the write itself costs, however many captures
    are live (an in-place factorisation keeps O(N^2) of them, and a write overlaps none).

    Until a write finds more than ``SMALL`` captures, they are a list checked one by one
    (exactly, as :func:`_overlaps`). Then ``counts`` (an int32 array laid out like the
    root's elements) holds, per element, how many live captures view it: a write whose
    region has no counted element overlaps no capture, which one NumPy reduction over the
    region decides exactly (two views of one buffer with the root's element size and
    alignment share memory exactly when they share an element). Only when it has one are
    the captures whose extents overlap the region looked up, in ``levels``: a capture
    spanning ``[lo, hi)`` elements sits in the one or two blocks of size ``2 ** shift >= hi
    - lo`` it touches (``levels[shift][block]``), so a lookup visits a few blocks per shift
    and checks only captures near the region. A capture or a region that does not map
    onto the root's elements (another dtype's view) is checked exactly against everything.
    """

    SMALL = 16
    __slots__ = (
        "added",
        "counts",
        "indexed",
        "levels",
        "listed",
        "loose",
        "low",
        "root",
        "unit",
    )

    def __init__(self, root: np.ndarray) -> None:
        self.root = root
        self.unit = root.itemsize
        self.low = 0
        self.counts: np.ndarray | None = None
        self.listed: list[Capture] = []  # before indexing: every live capture
        # once indexed: id(capture) -> (capture, counts view (None: 0-d), lo, hi, shift, rank)
        self.indexed: dict[int, tuple[Capture, np.ndarray | None, int, int, int, int]] = {}
        self.loose: list[Capture] = []  # once indexed: captures that do not map
        self.levels: dict[int, dict[int, dict[int, Capture]]] = {}
        self.added = 0  # captures indexed so far: hits are reported in capture order

    def __bool__(self) -> bool:
        return bool(self.listed or self.indexed or self.loose)

    def add(self, cap: Capture) -> None:
        if self.counts is None:
            self.listed.append(cap)
        else:
            self._index(cap)

    def remove(self, cap: Capture) -> None:
        if self.counts is None:
            self.listed.remove(cap)
            return
        entry = self.indexed.pop(id(cap), None)
        if entry is None:
            self.loose.remove(cap)
            return
        _, marks, lo, hi, shift, _ = entry
        if marks is None:
            self.counts[lo] -= 1
        else:
            marks -= 1
        level = self.levels[shift]
        for block in {lo >> shift, (hi - 1) >> shift}:
            level[block].pop(id(cap))
            if not level[block]:
                del level[block]
        if not level:
            del self.levels[shift]

    def overlapping(self, region: np.ndarray) -> list[Capture]:
        """The live captures that share memory with ``region`` (a view of the root)."""
        if region.size == 0:
            return []
        if self.counts is None and (len(self.listed) <= self.SMALL or
                                    not self._start_index()):
            return [c for c in self.listed if _overlaps(c.array, region)]
        hits = [c for c in self.loose if _overlaps(c.array, region)]
        mapped = self._map(region)
        if mapped is None:  # not on the root's element grid: every capture is a candidate
            hits += [e[0] for e in self.indexed.values() if _overlaps(e[0].array, region)]
            return hits
        marks, lo, hi = mapped
        if not (self.counts[lo] if marks is None else np.count_nonzero(marks)):
            return hits
        found: list[tuple[int, Capture]] = []
        seen: set[int] = set()
        for shift, level in self.levels.items():
            first, last = lo >> shift, (hi - 1) >> shift
            if last - first < len(level):
                blocks = [level[b] for b in range(first, last + 1) if b in level]
            else:
                blocks = [caps for b, caps in level.items() if first <= b <= last]
            for caps in blocks:
                for k, cap in caps.items():
                    if k in seen:
                        continue
                    seen.add(k)
                    _, _, clo, chi, _, rank = self.indexed[k]
                    if clo < hi and lo < chi and _overlaps(cap.array, region):
                        found.append((rank, cap))
        found.sort(key=lambda f: f[0])
        return [cap for _, cap in found] + hits

    def _start_index(self) -> bool:
        """Builds the element index over the listed captures (False: the root's layout
        does not allow one, and the list stays)."""
        root = self.root
        if any(s % self.unit for s in root.strides):
            return False
        low, high = _extent(root)
        self.low = low
        self.counts = np.zeros((high - low) // self.unit, dtype=np.int32)
        listed, self.listed = self.listed, []
        for cap in listed:
            self._index(cap)
        return True

    def _map(self, x: np.ndarray) -> tuple[np.ndarray | None, int, int] | None:
        """The view of ``counts`` that ``x`` is of the root, and x's extent in elements;
        None if x is not laid out on the root's elements. For a 0-d ``x`` (one element, a
        scalar loop's write) the view is None: its count is ``counts[lo]``."""
        unit = self.unit
        if x.itemsize != unit or root_of(x) is not self.root:
            return None
        first = x.__array_interface__["data"][0] - self.low  # bytes from the root's start
        if first % unit:
            return None
        lo = hi = first // unit  # x's extent, in elements of the root
        if not x.ndim:
            return None, lo, lo + 1
        strides = []
        for n, st in zip(x.shape, x.strides):
            if st % unit:
                return None
            st //= unit
            if st > 0:
                hi += (n - 1) * st
            else:
                lo += (n - 1) * st
            strides.append(st * 4)
        marks = np.ndarray(x.shape, np.int32, buffer=self.counts, offset=first // unit * 4,
                           strides=tuple(strides))
        return marks, lo, hi + 1

    def _index(self, cap: Capture) -> None:
        mapped = self._map(cap.array)
        if mapped is None:
            self.loose.append(cap)
            return
        marks, lo, hi = mapped
        if marks is None:
            self.counts[lo] += 1
        else:
            marks += 1
        shift = max(3, (hi - lo - 1).bit_length())  # 2 ** shift >= hi - lo: two blocks
        self.added += 1
        self.indexed[id(cap)] = (cap, marks, lo, hi, shift, self.added)
        level = self.levels.setdefault(shift, {})
        for block in {lo >> shift, (hi - 1) >> shift}:
            level.setdefault(block, {})[id(cap)] = cap


def _overlaps(a: np.ndarray, b: np.ndarray) -> bool:
    if not np.may_share_memory(a, b):
        return False
    try:
        return bool(np.shares_memory(a, b, max_work=1000))
    except np.exceptions.TooHardError:
        return True


def _source_line(file: str, line: int) -> str:
    import linecache

    return linecache.getline(file, line)


def flat_target(flat: np.flatiter) -> np.ndarray:
    """The array a write through ``y.flat`` changes, as the guards see it: ``y`` viewed flat
    in C order, or all of ``y`` when no flat view of it exists (y not C-contiguous)."""
    base = flat.base
    return base.reshape(-1) if base.flags.c_contiguous else base


def write_region(target: Any, index: Any) -> Any:
    """The view an indexed write ``target[index] = v`` overwrites: a view for a basic index; a
    tuple of views, one per run of consecutive rows, for an integer or boolean index array
    on the first axis (``x[idx] = v``, ``np.add.at(x, idx, v)``: the rows it names, all of
    each); the whole target otherwise."""
    if isinstance(target, np.flatiter):
        whole = flat_target(target)
        return write_region(whole, index) if whole.ndim == 1 else whole
    if isinstance(target, np.ndarray):
        try:
            # (index, ...) keeps an integer index a 0-d view instead of a scalar copy
            region = target[(*index, Ellipsis) if isinstance(index, tuple) else (index,
                                                                                 Ellipsis)]
        except (IndexError, TypeError, ValueError):
            return target
        if isinstance(region, np.ndarray) and np.may_share_memory(region, target):
            return region
        rows = _rows_written(target, index)
        if rows is not None:
            return rows
    return target


def _rows_written(target: np.ndarray, index: Any) -> tuple[np.ndarray, ...] | None:
    """The runs of rows of ``target`` a fancy index's first-axis part names, as views (None:
    not an index array on the first axis, or too many runs to check one by one)."""
    first = index[0] if isinstance(index, tuple) and index else index
    if target.ndim == 0 or not isinstance(first, (np.ndarray, list)):
        return None
    try:
        rows = np.asarray(first)
    except ValueError:
        return None
    if rows.ndim == 0:
        return None
    if rows.dtype == np.bool_:
        rows = np.nonzero(rows)[0]
    elif rows.dtype.kind not in "iu":
        return None
    n = target.shape[0]
    rows = np.unique(np.where(rows < 0, rows + n, rows).ravel())
    if rows.size and (rows[0] < 0 or rows[-1] >= n):
        return None  # the write itself raises IndexError
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    if len(breaks) >= 64:
        return None  # checked one run at a time up to 64 runs, else the whole array
    starts = np.concatenate(([0], breaks)) if rows.size else breaks
    stops = np.concatenate((breaks, [rows.size])) if rows.size else breaks
    return tuple(target[int(rows[a]):int(rows[b - 1]) + 1] for a, b in zip(starts, stops))


# --------------------------------------------------------------------------------------------
# In-place operators: `x += v` writes an ndarray in place and rebinds anything else.


def is_buffer(x: Any) -> bool:
    """True when an augmented assignment on ``x`` writes it in place (an ndarray)."""
    return isinstance(x, np.ndarray)


# --------------------------------------------------------------------------------------------
# Calls of user functions that are not known at compile time (closures, methods, arguments).


def call_forward(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """Calls ``fn`` through its adgen forward (or its rule); returns (out, saved)."""
    from adgen.dispatch import forward_of

    return forward_of(fn, args, kwargs)


# --------------------------------------------------------------------------------------------
# with blocks (transforms.lower_control): a context manager that changes nothing a derivative
# depends on (np.errstate, ...) is made and entered, and left when the block ends or raises.


def call_starred(fn: Any, method: Any, args: Any, kwargs: Any, line: int = 0) -> Any:
    """``fn(*args, **kwargs)``, or ``fn.method(*args, **kwargs)`` where ``method`` is a
    name: the user's call with starred arguments at ``line`` (transforms.desugar); its rule
    (dispatch.call_starred_rrule) differentiates the function when the call runs."""
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
    from adgen.dispatch import tangent_of_call

    return tangent_of_call(fn, args, tangents, kwargs, owner, owner_dot)


def call_pullback(saved: Any, out_bar: Any, sh: ShadowMap | None = None) -> tuple[Any, ...]:
    """The pullback of a :func:`call_forward`; one cotangent per positional argument."""
    from adgen.dispatch import pullback_of

    return pullback_of(saved, out_bar, sh)


def with_receiver(cts: tuple[Any, ...], n: int) -> tuple[Any, ...]:
    """The cotangents of ``obj.f(*args)`` (``n`` = 1 + len(args)): a method's come with its
    receiver's; a function held in an attribute was not passed ``obj``, which gets None."""
    return tuple(cts) if len(cts) == n else (None, *cts)


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


def item(adjoint: Any, index: Any) -> Any:
    """``adjoint[index]`` where a None adjoint (zero) has zero items."""
    if adjoint is None:
        return None
    if isinstance(adjoint, dict):
        return adjoint.get(index)
    return adjoint[index]


def attr(adjoint: Any, name: str) -> Any:
    """The adjoint of attribute ``name`` in an object's adjoint (None: zero)."""
    if adjoint is None:
        return None
    return adjoint.get(name)


def attr_adjoint(obj: Any, name: str, g: Any) -> Any:
    """The adjoint of ``obj`` for ``out = obj.name`` with out's adjoint g."""
    if name not in getattr(obj, "__dict__", ()):
        stored_attribute(obj, name)
    return ObjectAdjoint({name: g})


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

    if name in getattr(obj, "__dict__", ()) or isinstance(obj, (types.ModuleType, type)):
        return
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
            hint=f"call a method instead (def {name}(self): ... read as obj.{name}()), or "
                 "store the value as an attribute"))


def remap_saved(saved: Any, captures: list[Any], sh: ShadowMap | None = None) -> Any:
    """A callee's saved values, with views of an argument that was overwritten after the
    call redirected to the copy its guard took (``captures`` are the caller's captures).
    ``sh`` learns that the copy stands for the argument, so adjoints still land on it."""
    from adgen.errors import AdgenError

    moved: dict[int, list[Capture]] = {}
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
        caps = moved.get(id(root_of(x)))
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
        if isinstance(x, tuple):
            return tuple(redirect(v) for v in x)
        if isinstance(x, list):
            return [redirect(v) for v in x]
        return x

    return redirect(saved)


def _extent(x: np.ndarray) -> tuple[int, int]:
    lo = x.__array_interface__["data"][0]
    span = [(n - 1) * st for n, st in zip(x.shape, x.strides)]
    return lo + sum(v for v in span if v < 0), lo + sum(v for v in span if v > 0) + x.itemsize


def _redirect_view(x: np.ndarray, base: np.ndarray, snapshot: np.ndarray,
                   sh: ShadowMap | None = None) -> np.ndarray:
    """The view of ``snapshot`` that ``x`` is of ``base`` (x inside base's memory). Where
    ``base`` is strided (``y[::-1]``), the snapshot is laid out as ``base`` lies in memory
    (:func:`_laid_out`), and ``sh`` learns that the new buffer stands for that memory."""
    if x is base:
        return snapshot
    xl, xh = _extent(x)
    bl, bh = _extent(base)
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
    xl, xh = _extent(x)
    bl, bh = _extent(base)
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


def dict_keys(d: Any) -> list[Any]:
    """The keys a ``for ... in d.items()`` loop visits, in order (they carry no derivative)."""
    return list(d.keys())


def loop_sequence(x: Any) -> Any:
    """What a for loop indexes: arrays, lists and tuples as they are, anything else as a list."""
    if isinstance(x, (np.ndarray, list, tuple)):
        return x
    return list(x)


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


def take_attr(adjoint: Any, attr_name: str) -> Any:
    """Removes and returns the adjoint of attribute ``attr_name`` (a store wrote it).

    Raises:
        UnsupportedError: for an attribute of an array (``y.real = v``, ``y.shape = s``,
            ``y.flat = v``), whose store changes the array's elements or layout.
    """
    if isinstance(adjoint, np.ndarray):
        _refuse_array_form(f"storing the attribute .{attr_name} of an array "
                           f"(y.{attr_name} = ...)",
                           "write the elements instead: y[...] = v (y.real[...] = v for the "
                           "real part), or rebind the name: y = y.reshape(shape)")
    return adjoint.pop(attr_name, None) if adjoint is not None else None


def list_adjoint(g: Any) -> Any:
    """A list's adjoint as a list (a rule may give it as an array of rows)."""
    if isinstance(g, np.ndarray):
        return [row.copy() if isinstance(row, np.ndarray) else float(row) for row in g]
    if isinstance(g, tuple):
        return list(g)
    return g


def pop_adjoint(adjoint: list[Any]) -> Any:
    """The adjoint of the item an append added: the last one, removed."""
    return adjoint.pop() if adjoint else None


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
        return 0.0 if zero is None and isinstance(like, (type(None), str, bytes, bool,
                                                         np.bool_)) else zero
    if isinstance(g, (list, tuple)) and isinstance(like, (list, tuple)):
        return [or_zeros(a, b) for a, b in zip(g, like)]
    if isinstance(g, dict) and isinstance(like, dict) and not isinstance(g, ObjectAdjoint):
        return {k: or_zeros(g.get(k), v) for k, v in like.items()}
    return g


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
        Location(file, line, 0, _source_line(file, line)),
        hint="move the statements before the one that may raise out of the try block")


def list_iadd_error(file: str, line: int) -> Exception:
    """The error raised before ``x += items`` where ``x`` turns out to be a list adgen cannot
    tell the function made (an argument): extended in place, the gradient would not follow."""
    from adgen.errors import Location, UnsupportedError

    return UnsupportedError(
        "'+=' extends a list in place that adgen cannot tell was made in this function (an "
        "argument, an item of a container): the gradient would not follow it",
        Location(file, line, 0, _source_line(file, line)),
        hint="build a new list (xs = xs + [v]), or extend a list the function makes itself "
             "(acc = []; acc += [v])")


# --------------------------------------------------------------------------------------------
# Typed tapes: a counted loop's recorded numbers, one array (column) each (Plan.counted)


_COLUMN_DTYPES = {"float64": _F64, "int64": np.dtype(np.int64)}


def tape_columns(steps: range, *dtypes: str) -> list[np.ndarray]:
    """Uninitialised columns of the given dtypes, an element per step of ``steps``. An int
    column of a range reaching 2 ** 56 holds Python ints (dtype object): the ints a loop
    records are its counters plus a few terms, which int64 would not hold exactly."""
    n = len(steps)
    if len(dtypes) == 1 and dtypes[0] == "float64":  # the common case, without a loop
        return [np.empty(n, _F64)]
    huge = "int64" in dtypes and n and max(abs(steps[0]), abs(steps[-1])) >= 2 ** 56
    return [np.empty(n, object if huge and d == "int64" else _COLUMN_DTYPES[d])
            for d in dtypes]


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
    "enter_context", "entered_value", "exit_context",
    "copy_before_loop", "copy_when_read",
    "getitem_adjoint", "guard_scope", "is_buffer", "item", "measure_saves", "root_of",
    "shadow_of", "items_to_shadows", "write_region", "zeros_like", "loop_sequence", "add_item", "take_item", "pop_number",
    "take_attr", "pop_adjoint", "dict_keys", "flat_view", "diagonal_index", "collect", "entry_items", "keyword_cotangent", "zeros_of_tree", "or_zeros_of_tree", "add_out", "remap_saved", "or_zeros", "list_adjoint", "copy_adjoint", "zero_if_none", "scatter_if_copy",
    "tape_columns", "reversed_rows", "partial_try", "copy_hint", "with_receiver",
    "stored_attribute", "with_shadows", "Unbound", "list_iadd_error", "call_starred", *_helper_names,
]


def _register_runtime_rules() -> None:
    # reverse mode of tangent code (hessian, hvp, grad of grad) through a dynamic call: the
    # compiled jvp it calls, differentiated in turn
    from adgen.dispatch import call_jvp_rrule, call_starred_rrule
    from adgen.rules.registry import defrrule, defvjp

    defrrule(call_jvp, call_jvp_rrule)
    defrrule(call_starred, call_starred_rrule)

    @defvjp(loop_sequence, "x", linear=True, view=True, name="adgen.runtime.loop_sequence")
    def _loop_sequence(g, out, x):  # noqa: ANN001, ANN202 - a rule template
        return g

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
