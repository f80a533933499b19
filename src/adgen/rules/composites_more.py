"""Reference implementations (see :mod:`adgen.rules.composites`): polynomials, building and
cutting arrays, elementwise functions with more than one output, spaced ranges, and the
``np.linalg`` names of the array API that other functions already compute.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from adgen.rules.composites import dtype_of, normalized_axis, refuse_if
from adgen.rules.registry import defnondiff, defreference

# --------------------------------------------------------------------------------------------
# Polynomials (coefficients highest power first, as np.polyval)


@defreference(np.polyadd)
def polyadd(a1: Any, a2: Any) -> Any:
    n = max(np.size(a1), np.size(a2))
    return np.concatenate([np.zeros(n - np.size(a1), dtype_of(a1)), np.ravel(a1)]) + \
        np.concatenate([np.zeros(n - np.size(a2), dtype_of(a2)), np.ravel(a2)])


@defreference(np.polysub)
def polysub(a1: Any, a2: Any) -> Any:
    n = max(np.size(a1), np.size(a2))
    return np.concatenate([np.zeros(n - np.size(a1), dtype_of(a1)), np.ravel(a1)]) - \
        np.concatenate([np.zeros(n - np.size(a2), dtype_of(a2)), np.ravel(a2)])


@defreference(np.polymul)
def polymul(a1: Any, a2: Any) -> Any:
    return np.convolve(np.ravel(a1), np.ravel(a2))


@defreference(np.polyder)
def polyder(p: Any, m: int = 1) -> Any:
    refuse_if(m < 0, "np.polyder: the order of the derivative must be positive")
    res = np.ravel(p) * 1.0
    for _ in range(m):
        n = np.shape(res)[0] - 1
        res = res[:-1] * np.arange(n, 0, -1)
    return res


@defreference(np.polyint)
def polyint(p: Any, m: int = 1, k: Any = None) -> Any:
    refuse_if(m < 0, "np.polyint: the order of the antiderivative must be positive")
    res = np.ravel(p) * 1.0
    for i in range(m):
        n = np.shape(res)[0]
        c = 0.0 if k is None else (k if np.ndim(k) == 0 else k[i])
        res = np.concatenate([res / np.arange(n, 0, -1), np.reshape(c, (1,))])
    return res


@defreference(np.poly)
def poly(seq_of_zeros: Any) -> Any:
    refuse_if(np.ndim(seq_of_zeros) != 1, "np.poly: only the polynomial of a sequence of roots "
              "is differentiated (a matrix's characteristic polynomial needs eigenvalues)")
    res = np.ones(1, dtype_of(seq_of_zeros))
    for i in range(np.shape(seq_of_zeros)[0]):
        res = np.convolve(res, np.stack([np.ones((), dtype_of(seq_of_zeros)), -seq_of_zeros[i]]))
    return res


@defreference(np.vander)
def vander(x: Any, N: Any = None, increasing: bool = False) -> Any:
    n = np.shape(x)[0] if N is None else N
    cols = np.concatenate([np.ones((np.shape(x)[0], 1)),
                           np.broadcast_to(np.reshape(x, (-1, 1)), (np.shape(x)[0], max(n - 1, 0)))],
                          axis=1)
    res = np.cumprod(cols, axis=1)[:, :n]  # cumprod: exact where x has zeros
    if increasing:
        return res
    return np.flip(res, 1)


@defreference(np.polyfit)
def polyfit(x: Any, y: Any, deg: int, rcond: Any = None, full: bool = False, w: Any = None,
            cov: Any = False) -> Any:
    refuse_if(full or cov is not False, "np.polyfit: full= and cov= are not differentiated")
    v = vander(x, deg + 1)
    if w is not None:
        # numpy's weighted fit: the rows of the Vandermonde matrix and of y scaled by w (both
        # differentiated; since session 29)
        w = np.asarray(w)
        v = v * w[:, None]
        y = np.asarray(y) * (w if np.ndim(y) == 1 else w[:, None])
    # numpy scales the columns to unit norm before solving: the same least-squares solution
    return np.linalg.pinv(v) @ y


@defreference(np.polydiv)
def polydiv(u: Any, v: Any) -> Any:
    u = np.ravel(u) * 1.0
    v = np.ravel(v) * 1.0
    m = np.shape(u)[0] - 1
    n = np.shape(v)[0] - 1
    q = [0.0 * u[0]]
    r = u
    if m >= n:
        q = []
        for k in range(m - n + 1):
            d = r[0] / v[0]
            q.append(d)
            r = r[1:] - d * np.concatenate([v[1:], np.zeros(np.shape(r)[0] - n - 1, dtype_of(v))])
    start = _first_not_close(r)
    # one return (a tuple returned from two places is a list/tuple mix in adgen's runtime)
    return np.stack(q), r[start:]


@defnondiff
def _first_not_close(r: Any) -> int:
    """numpy's polydiv drops the remainder's leading coefficients that are close to 0."""
    r = np.asarray(r)
    k = 0
    while k < len(r) - 1 and np.allclose(r[k], 0, rtol=1e-14):
        k += 1
    return k


# --------------------------------------------------------------------------------------------
# Building and cutting arrays


@defreference(np.append)
def append(arr: Any, values: Any, axis: Any = None) -> Any:
    if axis is None:
        return np.concatenate([np.ravel(arr), np.ravel(values)])
    return np.concatenate([arr, values], axis=axis)


@defreference(np.delete)
def delete(arr: Any, obj: Any, axis: Any = None) -> Any:
    if axis is None:
        arr = np.ravel(arr)
        axis = 0
    return np.take(arr, _kept(np.shape(arr)[normalized_axis(axis, np.ndim(arr))], obj), axis=axis)


@defnondiff
def _kept(n: int, obj: Any) -> np.ndarray:
    keep = np.ones(n, dtype=bool)
    keep[obj] = False
    return np.flatnonzero(keep)


@defreference(np.insert)
def insert(arr: Any, obj: Any, values: Any, axis: Any = None) -> Any:
    refuse_if(isinstance(obj, slice), "np.insert: a slice as the positions is not "
              "differentiated (give integer positions)")
    if axis is None:
        arr = np.ravel(arr)
        axis = 0
    ax = normalized_axis(axis, np.ndim(arr))
    moved = np.moveaxis(arr, ax, 0)
    rest = np.shape(moved)[1:]
    count = _insert_count(obj)
    vals = np.broadcast_to(np.moveaxis(np.reshape(values, _insert_values_shape(
        np.shape(values), np.ndim(arr), ax, np.ndim(obj))), ax, 0), (count,) + rest)
    vals = vals.astype(dtype_of(arr))  # numpy casts the values to arr's dtype
    both = np.concatenate([moved, vals], axis=0)
    return np.moveaxis(np.take(both, _insert_order(np.shape(moved)[0], obj), axis=0), 0, ax)


@defnondiff
def _insert_count(obj: Any) -> int:
    return 1 if np.ndim(obj) == 0 else len(obj)


@defnondiff
def _insert_values_shape(vshape: Any, nd: int, ax: int, obj_nd: int) -> tuple[int, ...]:
    """values as numpy inserts them: with a scalar obj, values fill one slab (their last axes
    align with the slab's, after moving the new axis in); with a sequence, one per index."""
    vshape = tuple(vshape)
    if obj_nd == 0:
        # numpy: values = moveaxis(values[None], 0, axis) -- one slab along axis
        slab = (1,) * (nd - len(vshape)) + vshape if len(vshape) < nd else vshape
        return slab
    return (1,) * (nd - len(vshape)) + vshape


@defnondiff
def _insert_order(n: int, obj: Any) -> np.ndarray:
    """Positions into concatenate([arr, values]) in the order numpy's insert gives."""
    idx = np.atleast_1d(np.asarray(obj))
    refuse_if(idx.dtype.kind not in "iu", "np.insert: only integer positions are "
              "differentiated")
    idx = np.where(idx < 0, idx + n, idx)
    order = np.argsort(idx, kind="stable")
    # numpy inserts values[j] before arr[idx[j]] (stable in j for equal positions)
    out = []
    k = 0
    for i in range(n + 1):
        while k < len(order) and idx[order[k]] == i:
            out.append(n + int(order[k]))
            k += 1
        if i < n:
            out.append(i)
    return np.asarray(out, dtype=np.intp)


@defreference(np.compress)
def compress(condition: Any, a: Any, axis: Any = None, out: Any = None) -> Any:
    refuse_if(out is not None, "np.compress: out= is not differentiated")
    if axis is None:
        return np.take(np.ravel(a), np.flatnonzero(condition))
    return np.take(a, np.flatnonzero(condition), axis=axis)


@defreference(np.extract)
def extract(condition: Any, arr: Any) -> Any:
    return np.take(np.ravel(arr), np.flatnonzero(np.ravel(condition)))


@defreference(np.resize)
def resize(a: Any, new_shape: Any) -> Any:
    flat = np.ravel(a)
    return np.reshape(np.take(flat, _resize_index(np.size(a), new_shape)), new_shape)


@defnondiff
def _resize_index(size: int, new_shape: Any) -> np.ndarray:
    total = int(np.prod(new_shape))
    refuse_if(size == 0 and total > 0, "np.resize: cannot resize an empty array")
    return np.arange(total) % max(size, 1)


@defreference(np.dstack)
def dstack(tup: Any) -> Any:
    return np.concatenate([np.atleast_3d(a) for a in tup], axis=2)


@defreference(np.block)
def block(arrays: Any) -> Any:
    depth = _block_depth(arrays)
    if depth == 1:
        return np.concatenate([np.reshape(a, _lead_ones(np.shape(a), 1)) for a in arrays],
                              axis=-1)
    refuse_if(depth != 2, "np.block: only one or two levels of nesting are differentiated")
    nd = _block_ndim(arrays)
    rows = []
    for row in arrays:
        rows.append(np.concatenate([np.reshape(a, _lead_ones(np.shape(a), nd)) for a in row],
                                   axis=-1))
    return np.concatenate(rows, axis=-2)


@defnondiff
def _lead_ones(shape: Any, nd: int) -> tuple[int, ...]:
    return (1,) * (nd - len(shape)) + tuple(shape)


@defnondiff
def _block_depth(arrays: Any) -> int:
    d = 0
    x = arrays
    while isinstance(x, list):
        d += 1
        refuse_if(len(x) == 0, "np.block: empty lists are not differentiated")
        x = x[0]
    return d


@defnondiff
def _block_ndim(arrays: Any) -> int:
    return max(2, max(np.ndim(a) for row in arrays for a in row))


@defreference(np.choose)
def choose(a: Any, choices: Any, out: Any = None, mode: str = "raise") -> Any:
    refuse_if(out is not None or mode != "raise", "np.choose: out= and mode= are not "
              "differentiated")
    shape = _choose_shape(np.shape(a), [np.shape(c) for c in choices])
    stacked = np.stack([np.broadcast_to(c, shape) for c in choices])
    idx = np.broadcast_to(a, shape)[None]
    return np.take_along_axis(stacked, idx, axis=0)[0]


@defnondiff
def _choose_shape(ashape: Any, cshapes: Any) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(tuple(ashape), *[tuple(s) for s in cshapes]))


@defreference(np.select)
def select(condlist: Any, choicelist: Any, default: Any = 0) -> Any:
    res = default + 0.0 * choicelist[0]
    for k in range(len(condlist) - 1, -1, -1):
        res = np.where(condlist[k], choicelist[k], res)
    return res


@defreference(np.partition)
def partition(a: Any, kth: Any, axis: int = -1, kind: str = "introselect",
              order: Any = None) -> Any:
    refuse_if(order is not None, "np.partition: order= is not differentiated")
    if axis is None:
        return np.take_along_axis(np.ravel(a), np.argpartition(np.ravel(a), kth), axis=0)
    return np.take_along_axis(a, np.argpartition(a, kth, axis=axis), axis=axis)


@defreference(np.diagflat)
def diagflat(v: Any, k: int = 0) -> Any:
    return np.diag(np.ravel(v), k)


@defreference(np.astype)
def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    # copy=False returns x itself where the dtype is x's, as NumPy does: a write into the
    # result then writes x (the copy made always gave x no derivative of the write)
    return x.astype(dtype, copy=copy)


@defreference(np.broadcast_arrays)
def broadcast_arrays(a: Any, b: Any = None, c: Any = None, d: Any = None, *,
                     subok: bool = False) -> Any:
    items = [x for x in (a, b, c, d) if x is not None]
    shape = _choose_shape((), [np.shape(x) for x in items])
    if _same_shapes(shape, [np.shape(x) for x in items]):
        # NumPy returns the arrays themselves where no shape changes: a write through one
        # writes its argument (a read-only broadcast_to raised NumPy's ValueError there)
        return tuple([np.asarray(x) for x in items])
    # else views, writeable as NumPy's are (with its FutureWarning) where they broadcast
    # nothing; one that repeats elements stays read-only (adgen does not follow a write
    # into memory several elements share)
    return tuple([np.asarray(x)[...] if np.shape(x) == shape else np.broadcast_to(x, shape)
                  for x in items])


@defnondiff
def _same_shapes(shape: tuple[int, ...], shapes: list[tuple[int, ...]]) -> bool:
    return all(tuple(s) == tuple(shape) for s in shapes)


@defreference(np.meshgrid)
def meshgrid(x1: Any, x2: Any = None, x3: Any = None, *, copy: bool = True,
             sparse: bool = False, indexing: str = "xy") -> Any:
    refuse_if(sparse, "np.meshgrid: sparse=True is not differentiated")
    items = [np.ravel(x) for x in (x1, x2, x3) if x is not None]
    shapes = _mesh_shapes([np.shape(x)[0] for x in items], indexing)
    out = []
    for k in range(len(items)):
        out.append(np.copy(np.broadcast_to(np.reshape(items[k], shapes[k]), shapes[-1])))
    return tuple(out)


@defnondiff
def _mesh_shapes(lengths: Any, indexing: str) -> list[tuple[int, ...]]:
    nd = len(lengths)
    full = list(lengths)
    if indexing == "xy" and nd > 1:
        full[0], full[1] = full[1], full[0]
    out = []
    for k in range(nd):
        pos = k
        if indexing == "xy" and nd > 1 and k < 2:
            pos = 1 - k
        out.append(tuple(lengths[k] if d == pos else 1 for d in range(nd)))
    return out + [tuple(full)]


_IMMUTABLE = (float, int, complex, str, bytes, np.generic, type(None))
_DEEPCOPY_REFUSED = ("copy.deepcopy of an object other than arrays, numbers and the lists, "
                     "tuples and dicts of them (two levels deep) is not supported: copy the "
                     "arrays you write (x.copy())")


@defreference(copy.deepcopy)
def deepcopy(x: Any, memo: Any = None) -> Any:
    """copy.deepcopy of arrays, numbers and the lists, tuples and dicts that hold them, two
    levels deep (a dict of lists of arrays): new arrays, item by item, so a write into the
    copy leaves ``x`` alone (the copy module's own source keeps a memo adgen cannot follow).
    Without recursion, which adgen compiles only for functions that return new values:
    deeper structures and other objects are refused."""
    if type(x) is dict:
        return {k: deepcopied_item(x[k]) for k in x}
    if type(x) is list:
        return [deepcopied_item(v) for v in x]
    if type(x) is tuple:
        return tuple([deepcopied_item(v) for v in x])
    return deepcopied_leaf(x)


def deepcopied_item(x: Any) -> Any:
    """An item of deepcopy's container: a container of leaves, or a leaf."""
    if type(x) is dict:
        return {k: deepcopied_leaf(x[k]) for k in x}
    if type(x) is list:
        return [deepcopied_leaf(v) for v in x]
    if type(x) is tuple:
        return tuple([deepcopied_leaf(v) for v in x])
    return deepcopied_leaf(x)


def deepcopied_leaf(x: Any) -> Any:
    """A new array for an array; a number, string or None as it is; anything else refused."""
    if isinstance(x, np.ndarray):
        return x.copy()
    refuse_if(not isinstance(x, _IMMUTABLE), _DEEPCOPY_REFUSED)
    return x


for _part in (deepcopied_item, deepcopied_leaf):  # compiled as deepcopy's callees
    defreference(_part)(_part)


# --------------------------------------------------------------------------------------------
# Elementwise functions with two outputs or a sign


@defreference(np.copysign)
def copysign(x1: Any, x2: Any) -> Any:
    return np.where(np.signbit(x2), -np.abs(x1), np.abs(x1))


@defreference(np.float_power)
def float_power(x1: Any, x2: Any) -> Any:
    return np.power(np.asarray(x1, dtype=np.float64), x2)


@defreference(np.divmod)
def divmod_(x1: Any, x2: Any) -> Any:
    return np.floor_divide(x1, x2), np.remainder(x1, x2)


@defreference(np.modf)
def modf(x: Any) -> Any:
    whole = np.trunc(x)
    return x - whole, whole


@defreference(np.frexp)
def frexp(x: Any) -> Any:
    e = _exponent(x)
    return x * np.exp2(-e).astype(dtype_of(x)), e


@defnondiff
def _exponent(x: Any) -> Any:
    return np.frexp(x)[1]


@defreference(np.ldexp)
def ldexp(x1: Any, x2: Any) -> Any:
    return x1 * np.exp2(x2).astype(dtype_of(x1))


@defreference(np.unwrap)
def unwrap(p: Any, discont: Any = None, axis: int = -1, *, period: float = 2 * np.pi) -> Any:
    dd = np.diff(p, axis=axis)
    if discont is None:
        discont = period / 2
    half = period / 2
    ddmod = np.mod(dd + half, period) - half
    ddmod = np.where((ddmod == -half) & (dd > 0), half, ddmod)
    correct = np.where(np.abs(dd) < discont, 0.0, ddmod - dd)
    first = p[_first_index(np.ndim(p), axis)]
    return np.concatenate([first, p[_rest_index(np.ndim(p), axis)] + np.cumsum(correct,
                                                                                axis=axis)],
                          axis=axis)


@defnondiff
def _first_index(nd: int, axis: int) -> tuple[slice, ...]:
    ax = normalized_axis(axis, nd)
    return tuple(slice(0, 1) if d == ax else slice(None) for d in range(nd))


@defnondiff
def _rest_index(nd: int, axis: int) -> tuple[slice, ...]:
    ax = normalized_axis(axis, nd)
    return tuple(slice(1, None) if d == ax else slice(None) for d in range(nd))


# --------------------------------------------------------------------------------------------
# Spaced ranges


@defreference(np.logspace)
def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, base: Any = 10.0,
             dtype: Any = None, axis: int = 0) -> Any:
    refuse_if(dtype is not None or axis != 0, "np.logspace: dtype= and axis= are not "
              "differentiated")
    return np.power(base, np.linspace(start, stop, num, endpoint))


@defreference(np.geomspace)
def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = None,
              axis: int = 0) -> Any:
    refuse_if(dtype is not None or axis != 0, "np.geomspace: dtype= and axis= are not "
              "differentiated")
    refuse_if(np.any(np.sign(start) != np.sign(stop)) or np.any(np.asarray(start) == 0),
              "np.geomspace: start and stop must be nonzero and of the same sign")
    start = np.asarray(start, dtype=np.float64)  # numpy's geomspace computes in float64
    stop = np.asarray(stop, dtype=np.float64)
    sign = np.sign(start)
    res = sign * np.power(10.0, np.linspace(np.log10(sign * start), np.log10(sign * stop),
                                            num, endpoint))
    # numpy sets the first (and the last, with endpoint) value to start / stop exactly
    if num == 0:
        return res
    head = start + 0.0 * res[:1]
    if endpoint and num > 1:
        return np.concatenate([head, res[1:-1], stop + 0.0 * res[-1:]])
    return np.concatenate([head, res[1:]])


# --------------------------------------------------------------------------------------------
# Products of the array API


@defreference(np.matvec)
def matvec(x1: Any, x2: Any, /) -> Any:
    return np.matmul(x1, x2[..., None])[..., 0]


@defreference(np.vecmat)
def vecmat(x1: Any, x2: Any, /) -> Any:
    return np.matmul(x1[..., None, :], x2)[..., 0, :]


@defreference(np.vecdot)
def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    return np.sum(x1 * x2, axis=axis)


@defreference(np.linalg.vecdot)
def linalg_vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    return np.sum(x1 * x2, axis=axis)


@defreference(np.linalg.cross)
def linalg_cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    refuse_if(np.shape(x1)[axis] != 3 or np.shape(x2)[axis] != 3,
              "np.linalg.cross: the vectors must have 3 components")
    return np.cross(x1, x2, axis=axis)


@defreference(np.linalg.diagonal)
def linalg_diagonal(x: Any, /, *, offset: int = 0) -> Any:
    return np.diagonal(x, offset, -2, -1)


@defreference(np.linalg.matmul)
def linalg_matmul(x1: Any, x2: Any, /) -> Any:
    return np.matmul(x1, x2)


@defreference(np.linalg.outer)
def linalg_outer(x1: Any, x2: Any, /) -> Any:
    return np.outer(x1, x2)


@defreference(np.linalg.tensordot)
def linalg_tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Any:
    return np.tensordot(x1, x2, axes)


@defreference(np.linalg.trace)
def linalg_trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    refuse_if(dtype is not None, "np.linalg.trace: dtype= is not differentiated")
    return np.trace(x, offset, -2, -1)


@defreference(np.linalg.tensorinv)
def tensorinv(a: Any, ind: int = 2) -> Any:
    rows, cols, out_shape = _tensorinv_shapes(np.shape(a), ind)
    return np.reshape(np.linalg.inv(np.reshape(a, (rows, cols))), out_shape)


@defnondiff
def _tensorinv_shapes(shape: Any, ind: int) -> tuple[int, int, tuple[int, ...]]:
    refuse_if(ind <= 0, "np.linalg.tensorinv: ind must be positive")
    rows = int(np.prod(shape[:ind]))
    cols = int(np.prod(shape[ind:]))
    return rows, cols, tuple(shape[ind:]) + tuple(shape[:ind])


@defreference(np.linalg.tensorsolve)
def tensorsolve(a: Any, b: Any, axes: Any = None) -> Any:
    refuse_if(axes is not None, "np.linalg.tensorsolve: axes= is not differentiated")
    n, out_shape = _tensorsolve_shapes(np.shape(a), np.ndim(b))
    x = np.linalg.solve(np.reshape(a, (n, n)), np.ravel(b))
    return np.reshape(x, out_shape)


@defnondiff
def _tensorsolve_shapes(shape: Any, bnd: int) -> tuple[int, tuple[int, ...]]:
    out_shape = tuple(shape[bnd:])
    return int(np.prod(out_shape)), out_shape
