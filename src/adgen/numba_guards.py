"""What the numba backend's generated code does at guarded sites: the nopython forms of the
default backend's guards (``adgen.runtime``) and of its re-pointing of a callee's saved values.

- Under ``mutation="strict"`` the forward keeps a scope of the element addresses its captures
  view (``strict_scope``, ``strict_capture``) and checks each guarded write against it
  (``strict_before_write``), raising :class:`StrictOverwrite`, which ``adgen.backends`` turns
  into the default backend's ``MutationError`` naming both lines.
- Under ``mutation="save"`` a captured value is copied when captured (``saved_copy``).
- Where a caller overwrites an argument a callee's saved values view, ``remap_tree`` points
  them at the copy taken before the write (or raises :class:`SavedViewRefused`).

Re-exported by :mod:`adgen.numba_runtime`, which the generated modules import. Importing this
module imports numba; the ``@overload`` typing functions carry no annotations (numba requires
the two signatures to match exactly).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba import types
from numba.extending import overload
from numba.np.unsafe.ndarray import to_fixed_tuple

from adgen.numba_typing import is_number

__all__ = ["SavedViewRefused", "StrictOverwrite", "remap_tree", "saved_copy",
           "strict_before_write", "strict_capture", "strict_scope"]


# --------------------------------------------------------------------------------------------
# Guards under mutation="strict". The default backend's guard (adgen.runtime.before_write)
# raises MutationError when an in-place write overlaps a value a pullback reads. Here the
# forward keeps a scope of its own: every element address a capture views, with the capture
# sites (one bit each) that view it. A guarded write looks up the addresses of the elements
# it overwrites (an exact test, as the default's: writing x[0] does not hit a capture of
# x[3:]) and raises StrictOverwrite(write site, capture sites); adgen.backends turns that into
# the default backend's MutationError, naming both lines.


class StrictOverwrite(Exception):
    """Raised by nopython code: args (the write's site, a bit mask of the capture sites whose
    values it overwrites), numbered as the module's NumbaCode lists them."""


def strict_scope() -> Any:
    """The captures of one forward pass under mutation="strict": a dict from element address
    to a bit mask of the capture sites viewing it."""
    raise NotImplementedError("only called from nopython code")


@overload(strict_scope, jit_options={"cache": True})
def _strict_scope():
    def make():
        return numba.typed.Dict.empty(types.int64, types.int64)
    return make


def strict_capture(scope: Any, x: Any, site: int) -> Any:
    """Keeps ``x`` for a pullback (``capture``): an array's element addresses are recorded
    under capture site ``site``; a number is kept as it is. Returns ``x``."""
    raise NotImplementedError("only called from nopython code")


@numba.njit(cache=True)
def _record(scope: Any, base: int, shape: Any, strides: Any, bit: int) -> None:
    for idx in np.ndindex(shape):
        addr = base
        for k in range(len(shape)):
            addr += idx[k] * strides[k]
        scope[addr] = (scope[addr] | bit) if addr in scope else bit


@numba.njit(cache=True)
def _hits(scope: Any, base: int, shape: Any, strides: Any) -> int:
    mask = 0
    for idx in np.ndindex(shape):
        addr = base
        for k in range(len(shape)):
            addr += idx[k] * strides[k]
        if addr in scope:
            mask |= scope[addr]
    return mask


@overload(strict_capture, jit_options={"cache": True})
def _strict_capture(scope, x, site):
    if isinstance(x, types.Array):
        def array(scope, x, site):
            if x.size:
                _record(scope, np.int64(x.ctypes.data), x.shape, x.strides,
                        np.int64(1) << site)
            return x
        return array
    if is_number(x):
        return lambda scope, x, site: x
    raise numba.core.errors.TypingError(_NOT_CAPTURED.format(x))


# what a capture of anything but an array or a number raises when numba types it (the
# rewrite leaves captures whose type its own analysis cannot tell to numba's typing)
_NOT_CAPTURED = ("the numba backend keeps the values a guarded site may overwrite where they "
                 "are arrays or numbers, and this value is {}")


def saved_copy(x: Any) -> Any:
    """The copy a guarded site under mutation="save" keeps of a value the pullback reads
    (``capture``): an array's copy, a number as it is. Also ``numba_runtime.copy_adjoint``
    (an adjoint the pullback may then change in place)."""
    raise NotImplementedError("only called from nopython code")


@overload(saved_copy, jit_options={"cache": True})
def _saved_copy(x):
    if isinstance(x, types.Array):
        return lambda x: x.copy()
    if is_number(x):
        return lambda x: x
    raise numba.core.errors.TypingError(_NOT_CAPTURED.format(x))


def strict_before_write(scope: Any, target: Any, index: Any, value: Any, site: int) -> None:
    """Runs before the in-place write ``target[index] = value`` (``index`` None: the whole
    of ``target``): raises StrictOverwrite(site, mask) where it overwrites an element a
    capture of the scope views. A write of a view with itself (``x[:] = x``) changes nothing
    and passes, as in the default backend."""
    raise NotImplementedError("only called from nopython code")


def _element_index(target: Any, index: Any) -> bool:
    if isinstance(index, types.Integer):
        return target.ndim == 1
    return isinstance(index, types.UniTuple) and isinstance(index.dtype, types.Integer) and \
        len(index) == target.ndim


@overload(strict_before_write, jit_options={"cache": True})
def _strict_before_write(scope, target, index, value, site):
    if not isinstance(target, types.Array):
        return None
    if _element_index(target, index):
        if isinstance(index, types.Integer):
            def item(scope, target, index, value, site):
                i = index if index >= 0 else index + target.shape[0]
                addr = np.int64(target.ctypes.data) + i * target.strides[0]
                if addr in scope:
                    raise StrictOverwrite(site, scope[addr])
            return item

        def element(scope, target, index, value, site):
            addr = np.int64(target.ctypes.data)
            for k in range(target.ndim):
                i = index[k] if index[k] >= 0 else index[k] + target.shape[k]
                addr += i * target.strides[k]
            if addr in scope:
                raise StrictOverwrite(site, scope[addr])
        return element
    if isinstance(index, types.NoneType):
        return lambda scope, target, index, value, site: _check_region(scope, target, value,
                                                                       site)
    return lambda scope, target, index, value, site: _check_region(scope, target[index],
                                                                   value, site)


@numba.njit(cache=True)
def _check_region(scope: Any, region: Any, value: Any, site: int) -> None:
    if region.size and not _same_view(value, region):
        mask = _hits(scope, np.int64(region.ctypes.data), region.shape, region.strides)
        if mask:
            raise StrictOverwrite(site, mask)


def _same_view(value: Any, region: Any) -> bool:
    """``value`` is the array ``region`` itself (same memory, shape and strides)."""
    raise NotImplementedError("only called from nopython code")


@overload(_same_view, jit_options={"cache": True})
def _same_view_impl(value, region):
    if isinstance(value, types.Array):
        return lambda value, region: value.ctypes.data == region.ctypes.data and \
            value.shape == region.shape and value.strides == region.strides
    return lambda value, region: False


class SavedViewRefused(Exception):
    """Raised by nopython code (``remap_tree``): args (``"file:line"`` of the user's call),
    where a callee saved a view of an argument that its caller then overwrote, and the view
    cannot be redirected to the copy taken before the overwrite (the argument is not
    C-contiguous)."""


def remap_tree(saved: Any, array: Any, snapshot: Any, site: Any) -> Any:
    """A callee's saved values (a tuple tree of numbers, arrays and typed lists of them) with
    every array that is ``array``, or a view into it, redirected to the same elements of
    ``snapshot``: the copy of ``array`` its caller took before overwriting it (the default
    backend's ``remap_saved``). Where ``snapshot`` is ``array`` itself (nothing was copied:
    ``mutation="strict"``'s capture) the values are unchanged. Raises
    :class:`SavedViewRefused` for a view of an array that is not C-contiguous (its copy has
    other strides): never a value read from the overwritten array."""
    raise NotImplementedError("only called from nopython code")


@overload(remap_tree, jit_options={"cache": True})
def _remap_tree(saved, array, snapshot, site):
    if not (isinstance(array, types.Array) and isinstance(snapshot, types.Array)):
        return None
    if isinstance(saved, types.NoneType) or is_number(saved) or \
            isinstance(saved, (types.UnicodeType, types.StringLiteral)):
        return lambda saved, array, snapshot, site: saved
    if isinstance(saved, types.Array):
        if saved.dtype != array.dtype:
            return lambda saved, array, snapshot, site: saved  # another dtype: not a view of it
        ndim = saved.ndim
        same_rank = saved.ndim == array.ndim

        def one(saved, array, snapshot, site):
            start = np.int64(array.ctypes.data)
            end = start + array.size * array.itemsize
            at = np.int64(saved.ctypes.data)
            if saved.size == 0 or at < start or at >= end or \
                    np.int64(snapshot.ctypes.data) == start:  # not of it, or nothing copied
                return saved
            if same_rank and at == start and saved.shape == array.shape and \
                    saved.strides == array.strides:
                return snapshot  # the array itself (whatever its strides)
            if not array.flags.c_contiguous or snapshot.strides != array.strides:
                raise SavedViewRefused(site)
            offset = (at - start) // array.itemsize
            flat = snapshot.reshape(snapshot.size)[offset:]
            # the same elements of the copy: same shape and strides, from the same offset
            return np.lib.stride_tricks.as_strided(
                flat, shape=to_fixed_tuple(np.array(saved.shape), ndim),
                strides=to_fixed_tuple(np.array(saved.strides), ndim))
        return one
    if isinstance(saved, types.ListType):
        def each(saved, array, snapshot, site):
            out = numba.typed.List()
            for item in saved:
                out.append(remap_tree(item, array, snapshot, site))
            return out
        return each
    if isinstance(saved, types.BaseTuple):
        if len(saved.types) == 0:
            return lambda saved, array, snapshot, site: saved

        def tup(saved, array, snapshot, site):  # its first item, then the rest (static)
            return (remap_tree(saved[0], array, snapshot, site),) + \
                remap_tree(saved[1:], array, snapshot, site)
        return tup
    return None
