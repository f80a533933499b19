"""Where an array's elements sit in memory: the address of the first one, the strides of a
float64 (complex128) shadow laid out element by element like an array, the buffer a view
lives in and its offset there, and whether some elements of a view are the same memory.

What :class:`shadow_memory.ShadowMap` maps a view of a buffer onto the same view of its
shadow with (and guards ask of a captured view). Plain functions using only numpy, so ``-o``
modules copy their source (transforms/standalone.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adgen.adjoints import locate, shadow_dtype

# data_address's reader, made at its first call
_ADDRESS_READER: list[Any] = []


def elements_overlap(x: np.ndarray) -> bool:
    """Whether some elements of view ``x`` are the same memory: more elements than the
    memory its strides span holds (a broadcast's zero stride, overlapping windows). Asked
    of the views NumPy makes so (read-only ones, and those it builds on a holder object:
    as_strided), not of every view (about 1 us a call)."""
    item = x.itemsize
    span = item
    for n, s in zip(x.shape, x.strides):
        span += (n - 1) * (s if s > 0 else -s)
    return x.size * item > span


def element_strides(root: np.ndarray) -> tuple[int, ...]:
    """The strides of a float64 (complex128) shadow laid out element by element like
    ``root``."""
    size = root.itemsize
    item = shadow_dtype(root).itemsize
    if size == item:
        return root.strides
    if any(s % size for s in root.strides):
        refuse_reinterpreted(root, root)
    return tuple(s // size * item for s in root.strides)


def strided_zeros_like(root: np.ndarray) -> np.ndarray:
    # A root with holes in its layout (rare: as_strided, memmap slices): allocate the span.
    strides = element_strides(root)
    dtype = shadow_dtype(root)
    span = (np.array(root.shape) - 1) @ np.abs(np.array(strides)) + dtype.itemsize
    flat = np.zeros(int(span) // dtype.itemsize + 1, dtype=dtype)
    low = sum(s * (n - 1) for s, n in zip(strides, root.shape) if s < 0)
    return np.ndarray(root.shape, dtype, buffer=flat, offset=-low, strides=strides)


def refuse_reinterpreted(x: np.ndarray, root: np.ndarray) -> None:
    from adgen.errors import UnsupportedError

    raise locate(UnsupportedError(
        f"an array of dtype {x.dtype} views the memory of an array of dtype {root.dtype} "
        "with other element boundaries (x.view(dtype), a field of a structured array): adgen "
        "maps adjoints element by element and cannot map these",
        hint="pass a copy (x.astype(np.float64)) instead of the view"))


def base_buffer(shadow: np.ndarray) -> Any:
    return shadow.base if isinstance(shadow.base, np.ndarray) else shadow


def memory_vector(buffer: np.ndarray) -> np.ndarray | None:
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


def buffer_offset(shadow: np.ndarray) -> int:
    base = base_buffer(shadow)
    if base is shadow:
        return 0
    return shadow.__array_interface__["data"][0] - base.__array_interface__["data"][0]
