"""Reference implementations: NumPy functions written once in plain NumPy.

Each function here computes what its NumPy namesake computes (same values, same views), in
Python + NumPy over functions that have derivative rules. ``@defreference(np.kron)`` tells
the compiler to compile a call of ``np.kron`` as a call of :func:`kron`: adgen differentiates
it by its own source transform, as ``jax.numpy`` is written over ``lax``, so the adjoint and
the mutation facts (what the pullback reads) come from this source. A rule for the same
function, where one exists, wins.

Conventions:
- A parameter value NumPy accepts and the reference does not handle makes the reference
  raise ``RuleError`` through :func:`refuse_if` (the plain NumPy call has no such limit).
- Index and shape arithmetic (where no gradient flows) is done by the helpers at the end of
  the module, registered with ``@defnondiff``: the compiler calls them in the forward pass
  and gives their arguments no cotangent. Everything a gradient flows through is written in
  the reference functions themselves.
- Results that NumPy returns as views (``split``) are views here too. Functions that return
  one array viewing their argument (``rot90``, ``fliplr``) are rules with ``view=True``
  instead (:mod:`adgen.rules.views`): the compiler must know the view to follow a write
  through it.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from adgen.rules.registry import defnondiff, defreference, defreference_helper

# --------------------------------------------------------------------------------------------
# Differences, sums, products


@defreference(np.ediff1d)
def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    flat = np.ravel(ary)
    out = flat[1:] - flat[:-1]
    parts = []
    if to_begin is not None:
        parts.append(np.ravel(to_begin).astype(dtype_of(ary)))  # numpy casts to ary's dtype
    parts.append(out)
    if to_end is not None:
        parts.append(np.ravel(to_end).astype(dtype_of(ary)))
    return np.concatenate(parts) if len(parts) > 1 else out


@defreference(np.trapezoid)
def trapezoid(y: Any, x: Any = None, dx: float = 1.0, axis: int = -1) -> Any:
    lo, hi = _diff_slices(np.ndim(y), axis)
    if x is None:
        d = dx
    elif np.ndim(x) == 1:
        d = x[1:] - x[:-1]
        d = np.reshape(d, _axis_shape(np.ndim(y), axis, np.shape(d)[0]))
    else:
        d = x[hi] - x[lo]
    return np.sum(d * (y[hi] + y[lo]) / 2.0, axis=axis)


@defreference(np.cumulative_sum)
def cumulative_sum(x: Any, /, *, axis: Any = None, dtype: Any = None, out: Any = None,
                   include_initial: bool = False) -> Any:
    refuse_if(dtype is not None or out is not None,
              "np.cumulative_sum: dtype= and out= are not differentiated")
    if axis is None:
        axis = 0
    res = np.cumsum(x, axis=axis)
    if include_initial:
        res = np.concatenate([np.zeros(_slab_shape(np.shape(x), axis), dtype_of(res)), res],
                             axis=axis)
    return res


@defreference(np.cumulative_prod)
def cumulative_prod(x: Any, /, *, axis: Any = None, dtype: Any = None, out: Any = None,
                    include_initial: bool = False) -> Any:
    refuse_if(dtype is not None or out is not None,
              "np.cumulative_prod: dtype= and out= are not differentiated")
    if axis is None:
        axis = 0
    res = np.cumprod(x, axis=axis)
    if include_initial:
        res = np.concatenate([np.ones(_slab_shape(np.shape(x), axis), dtype_of(res)), res],
                             axis=axis)
    return res


@defreference(np.ptp)
def ptp(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    refuse_if(out is not None, "np.ptp: out= is not differentiated")
    return np.max(a, axis=axis, keepdims=keepdims) - np.min(a, axis=axis, keepdims=keepdims)


@defreference(np.average)
def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False, *,
            keepdims: bool = False) -> Any:
    if weights is None:
        avg = np.mean(a, axis=axis, keepdims=keepdims)
        scl = np.size(a) / np.size(avg) + 0.0 * avg
    else:
        w = weights
        if np.ndim(w) == 1 and np.ndim(a) > 1:
            w = np.reshape(w, _axis_shape(np.ndim(a), axis, np.shape(w)[0]))
        scl = np.sum(w + 0.0 * a, axis=axis, keepdims=keepdims)
        avg = np.sum(a * w, axis=axis, keepdims=keepdims) / scl
    if not returned:
        return avg
    return avg, scl


@defreference(np.polyval)
def polyval(p: Any, x: Any) -> Any:
    y = 0.0 * np.asarray(x)  # numpy: an array (a float64 one for a Python float)
    for i in range(len(p)):
        y = y * x + p[i]
    return y


@defreference(np.kron)
def kron(a: Any, b: Any) -> Any:
    nd = max(np.ndim(a), np.ndim(b))
    sa, sb = _kron_shapes(np.shape(a), np.shape(b), nd)
    prod = np.reshape(a, sa) * np.reshape(b, sb)
    return np.reshape(prod, _kron_out(np.shape(a), np.shape(b), nd))


@defreference(np.cross)
def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: Any = None) -> Any:
    if axis is not None:
        axisa = axis
        axisb = axis
        axisc = axis
    a = np.moveaxis(a, axisa, -1)
    b = np.moveaxis(b, axisb, -1)
    refuse_if(np.shape(a)[-1] not in (2, 3) or np.shape(b)[-1] not in (2, 3),
              "np.cross: the vectors must have 2 or 3 components")
    a0 = a[..., 0]
    a1 = a[..., 1]
    b0 = b[..., 0]
    b1 = b[..., 1]
    if np.shape(a)[-1] == 2 and np.shape(b)[-1] == 2:
        return np.asarray(a0 * b1 - a1 * b0)  # numpy: a 0-d array for two 2-vectors
    a2 = a[..., 2] if np.shape(a)[-1] == 3 else 0.0 * a0
    b2 = b[..., 2] if np.shape(b)[-1] == 3 else 0.0 * b0
    c = np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return np.moveaxis(c, -1, axisc)


@defreference(np.sinc)
def sinc(x: Any) -> Any:
    # sin(pi x) / (pi x), 1 at 0; near 0 a Taylor polynomial keeps the gradient exact (0 at 0)
    y = np.pi * np.where(np.abs(x) < 1e-3, 1.0, x)
    small = np.pi * np.pi * x * x
    series = 1.0 - small / 6.0 + small * small / 120.0
    return np.where(np.abs(x) < 1e-3, series, np.sin(y) / y)[()]  # a scalar for a scalar


@defreference(np.nan_to_num)
def nan_to_num(x: Any, copy: bool = True, nan: float = 0.0, posinf: Any = None,
               neginf: Any = None) -> Any:
    refuse_if(not copy, "np.nan_to_num(copy=False) writes its argument in place; "
              "differentiate x = np.nan_to_num(x) instead")
    big = np.finfo(np.asarray(x).dtype).max  # the largest float of x's dtype
    hi = big if posinf is None else posinf
    lo = -big if neginf is None else neginf
    finite = np.isfinite(x)
    safe = np.where(finite, x, 0.0)
    fill = np.where(np.isnan(x), nan, np.where(x > 0, hi, lo)).astype(np.asarray(x).dtype)
    return np.where(finite, safe, fill)[()]


@defreference(np.gradient)
def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    # varargs as numpy takes them: none (spacing 1), one spacing for every axis, or one per
    # axis; a spacing is a number or a 1-D array of coordinates (a non-uniform grid)
    nd = np.ndim(f)
    axes = _gradient_axes(axis, nd)
    refuse_if(len(varargs) > 1 and len(varargs) != len(axes),
              "np.gradient: give one spacing, or one per axis differentiated")
    refuse_if(edge_order not in (1, 2), "np.gradient: edge_order must be 1 or 2")
    outs = []
    for k in range(len(axes)):
        ax = axes[k]
        n = np.shape(f)[ax]
        refuse_if(n < edge_order + 1,
                  "np.gradient: an axis needs at least edge_order + 1 points")
        h = 1.0 if len(varargs) == 0 else varargs[0] if len(varargs) == 1 else varargs[k]
        f0 = f[_range_index(nd, ax, 0, 1)]
        f1 = f[_range_index(nd, ax, 1, 2)]
        fm2 = f[_range_index(nd, ax, -2, -1)]
        fm1 = f[_range_index(nd, ax, -1, None)]
        if np.ndim(h) == 0:
            inner = (f[_range_index(nd, ax, 2, None)] - f[_range_index(nd, ax, 0, -2)]) / (2.0 * h)
            if edge_order == 1:
                first = (f1 - f0) / h
                last = (fm1 - fm2) / h
            else:
                first = (-1.5 * f0 + 2.0 * f1 - 0.5 * f[_range_index(nd, ax, 2, 3)]) / h
                last = (0.5 * f[_range_index(nd, ax, -3, -2)] - 2.0 * fm2 + 1.5 * fm1) / h
        else:
            refuse_if(np.ndim(h) != 1 or np.shape(h)[0] != n,
                      "np.gradient: a coordinate array must be 1-D, one coordinate per point "
                      "along its axis")
            # numpy's second-order differences on a non-uniform grid: steps hs before each
            # interior point, hd after it; at the ends, one-sided differences
            dx = np.diff(h)
            hs = np.reshape(dx[:-1], _axis_shape(nd, ax, n - 2))
            hd = np.reshape(dx[1:], _axis_shape(nd, ax, n - 2))
            inner = (-hd / (hs * (hd + hs)) * f[_range_index(nd, ax, 0, -2)]
                     + (hd - hs) / (hd * hs) * f[_range_index(nd, ax, 1, -1)]
                     + hs / (hd * (hd + hs)) * f[_range_index(nd, ax, 2, None)])
            if edge_order == 1:
                first = (f1 - f0) / dx[0]
                last = (fm1 - fm2) / dx[-1]
            else:
                a = dx[0]
                b = dx[1]
                first = (-(2.0 * a + b) / (a * (a + b)) * f0 + (a + b) / (a * b) * f1
                         - a / (b * (a + b)) * f[_range_index(nd, ax, 2, 3)])
                a = dx[-2]
                b = dx[-1]
                last = (b / (a * (a + b)) * f[_range_index(nd, ax, -3, -2)]
                        - (a + b) / (a * b) * fm2 + (2.0 * b + a) / (b * (a + b)) * fm1)
        outs.append(np.concatenate([first, inner, last], axis=ax))
    if len(outs) == 1:
        return outs[0]
    return tuple(outs)


# --------------------------------------------------------------------------------------------
# Shape: repetition, padding, splitting, flipping


@defreference(np.tile)
def tile(A: Any, reps: Any) -> Any:
    src, wide, out = _tile_shapes(np.shape(A), reps)
    # a new array, as NumPy's (the reshaped broadcast is a read-only view of A where no
    # copy is needed to reshape it: np.tile(x, (3, 1)) written in place raised, and a write
    # into x after it was taken for a write through a broadcast view)
    return np.copy(np.reshape(np.broadcast_to(np.reshape(A, src), wide), out))


@defreference(np.pad)
def pad(array: Any, pad_width: Any, mode: str = "constant", *, constant_values: Any = 0.0,
        end_values: Any = 0.0, reflect_type: str = "even", stat_length: Any = None) -> Any:
    widths = _pad_widths(pad_width, np.ndim(array), mode, reflect_type,
                         _shape_of(constant_values))
    lengths = _pad_stat_lengths(stat_length, np.ndim(array), mode)
    out = np.copy(array)  # numpy's pad returns a new array, even with no padding
    for ax in range(np.ndim(array)):
        before = widths[ax][0]
        after = widths[ax][1]
        if before == 0 and after == 0:
            continue
        if mode in _PAD_STATS:
            # NumPy's: the statistic of the first (last) stat_length values along the axis
            # (all of them by default), of the array padded along the axes before this one
            n = np.shape(out)[ax]
            first = _pad_stat_span(n, lengths[ax][0], True)
            last = _pad_stat_span(n, lengths[ax][1], False)
            lo = _pad_stat(np.take(out, first, axis=ax), ax, mode)
            hi = _pad_stat(np.take(out, last, axis=ax), ax, mode)
            out = np.concatenate([np.broadcast_to(lo, _slab_shape(np.shape(out), ax, before)),
                                  out,
                                  np.broadcast_to(hi, _slab_shape(np.shape(out), ax, after))],
                                 axis=ax)
        elif mode == "linear_ramp":
            # from end_values to the edge, as np.linspace(end, edge, n, endpoint=False)
            # (in the array's dtype, as NumPy's: a float32 array stays float32)
            kind = dtype_of(out)
            ends = np.broadcast_to(np.asarray(end_values, dtype=kind), (np.ndim(array), 2))
            at = _axis_run_shape(np.ndim(out), ax)
            edge_lo = np.take(out, [0], axis=ax)
            edge_hi = np.take(out, [np.shape(out)[ax] - 1], axis=ax)
            rise = np.reshape(np.asarray(np.arange(before) / max(before, 1), dtype=kind), at)
            fall = np.reshape(np.asarray((after - 1 - np.arange(after)) / max(after, 1),
                                         dtype=kind), at)
            lo = ends[ax, 0] + (edge_lo - ends[ax, 0]) * rise
            hi = ends[ax, 1] + (edge_hi - ends[ax, 1]) * fall
            out = np.concatenate([lo, out, hi], axis=ax)
        elif mode == "constant":
            lo = np.full(_slab_shape(np.shape(out), ax, before), constant_values, dtype_of(out))
            hi = np.full(_slab_shape(np.shape(out), ax, after), constant_values, dtype_of(out))
            out = np.concatenate([lo, out, hi], axis=ax)
        else:
            idx = _pad_index(np.shape(out)[ax], before, after, mode)
            out = np.take(out, idx, axis=ax)
    return out


@defreference(np.array_split)
def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> Any:
    res = []
    for idx in _split_indices(np.shape(ary), indices_or_sections, axis, False):
        res.append(ary[idx])
    return res


@defreference(np.split)
def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> Any:
    res = []
    for idx in _split_indices(np.shape(ary), indices_or_sections, axis, True):
        res.append(ary[idx])
    return res


@defreference(np.hsplit)
def hsplit(ary: Any, indices_or_sections: Any) -> Any:
    refuse_if(np.ndim(ary) == 0, "np.hsplit: the input must be at least 1-D")
    return split(ary, indices_or_sections, 1 if np.ndim(ary) > 1 else 0)


@defreference(np.vsplit)
def vsplit(ary: Any, indices_or_sections: Any) -> Any:
    refuse_if(np.ndim(ary) < 2, "np.vsplit: the input must be at least 2-D")
    return split(ary, indices_or_sections, 0)


@defreference(np.dsplit)
def dsplit(ary: Any, indices_or_sections: Any) -> Any:
    refuse_if(np.ndim(ary) < 3, "np.dsplit: the input must be at least 3-D")
    return split(ary, indices_or_sections, 2)


# --------------------------------------------------------------------------------------------
# Order statistics and interpolation


@defreference(np.interp)
def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
           period: Any = None) -> Any:
    x = np.asarray(x)  # lists of points and values, as numpy takes them
    xp = np.asarray(xp)
    fp = np.asarray(fp)
    if period is not None:
        # NumPy's: x and xp taken modulo |period|, xp sorted, one point added at each end
        # from the other end shifted by the period (left and right are ignored)
        refuse_if(period == 0, "np.interp: period must be a non-zero value")
        p = np.abs(period)
        x = np.mod(np.asarray(x, dtype=np.float64), p)
        xp = np.mod(np.asarray(xp, dtype=np.float64), p)
        order = np.argsort(xp)
        xp = xp[order]
        fp = fp[order]
        xp = np.concatenate((xp[-1:] - p, xp, xp[0:1] + p))
        fp = np.concatenate((fp[-1:], fp, fp[0:1]))
        left = None
        right = None
    n = np.shape(xp)[0]
    i = np.clip(np.searchsorted(xp, x, side="right"), 1, n - 1)
    x0 = xp[i - 1]
    x1 = xp[i]
    xc = np.clip(x, xp[0], xp[n - 1])
    w = (xc - x0) / (x1 - x0)
    y = fp[i - 1] + w * (fp[i] - fp[i - 1])
    below = fp[0] if left is None else left
    above = fp[n - 1] if right is None else right
    y = np.where(x < xp[0], below, np.where(x > xp[n - 1], above, y))
    # numpy's interp computes in float64, or complex128 for complex values fp (cast to
    # float64, they lost their imaginary parts: a silently wrong value and gradient)
    y = np.asarray(y, dtype=np.complex128 if np.iscomplexobj(fp) else np.float64)
    if np.ndim(x) == 0:
        return y[()]
    return y


# --------------------------------------------------------------------------------------------
# Convolution


@defreference(np.convolve)
def convolve(a: Any, v: Any, mode: str = "full") -> Any:
    a = np.atleast_1d(a)  # numpy takes numbers (and lists) as 1-D arrays
    v = np.atleast_1d(v)
    na = np.shape(a)[0]
    nv = np.shape(v)[0]
    refuse_if(na == 0 or nv == 0, "np.convolve: the inputs must not be empty")
    ap = np.concatenate([np.zeros(nv - 1, dtype_of(a, v)), a, np.zeros(nv - 1, dtype_of(a, v))])
    windows = np.take(ap, _conv_index(na, nv))
    full = windows @ np.flip(v, 0)
    start, stop = _conv_range(na, nv, mode)
    return full[start:stop]


@defreference(np.correlate)
def correlate(a: Any, v: Any, mode: str = "valid") -> Any:
    na = np.shape(a)[0]
    nv = np.shape(v)[0]
    refuse_if(na == 0 or nv == 0, "np.correlate: the inputs must not be empty")
    ap = np.concatenate([np.zeros(nv - 1, dtype_of(a, v)), a, np.zeros(nv - 1, dtype_of(a, v))])
    full = np.take(ap, _conv_index(na, nv)) @ v
    start, stop = _corr_range(na, nv, mode)
    return full[start:stop]


# --------------------------------------------------------------------------------------------
# np.linalg


@defreference(np.linalg.matrix_power)
def matrix_power(a: Any, n: int) -> Any:
    refuse_if(int(n) != n, "np.linalg.matrix_power: the exponent must be an integer")
    if n < 0:
        a = np.linalg.inv(a)
        n = -n
    if n == 1:
        return a  # NumPy's own short-cut: the array itself (a write into it writes a)
    res = np.broadcast_to(np.eye(np.shape(a)[-1], dtype=dtype_of(a)), np.shape(a)) + 0.0 * a
    for _ in range(n):
        res = res @ a
    return res


@defreference(np.linalg.cond)
def cond(x: Any, p: Any = None) -> Any:
    if p is None or p == 2 or p == -2:
        s = np.linalg.svd(x, compute_uv=False)
        if p == -2:
            return s[..., -1] / s[..., 0]
        return s[..., 0] / s[..., -1]
    return np.linalg.norm(x, p, axis=(-2, -1)) * np.linalg.norm(np.linalg.inv(x), p,
                                                                  axis=(-2, -1))


@defreference(np.linalg.lstsq)
def lstsq(a: Any, b: Any, rcond: Any = None) -> Any:
    m = np.shape(a)[0]
    n = np.shape(a)[1]
    cut = rcond if rcond is not None else np.finfo(dtype_of(a, b)).eps * max(m, n)
    x = np.linalg.pinv(a, rcond=cut) @ b
    s = np.linalg.svd(a, compute_uv=False)
    rank = np.linalg.matrix_rank(a).astype(np.int32)  # numpy's lstsq: an int32 rank
    if rank == n and m > n:
        r = b - a @ x
        res = np.sum(r * r, axis=0)
        if np.ndim(b) == 1:
            res = np.reshape(res, (1,))
    else:
        res = np.zeros((0,), dtype_of(a, b))
    return x, res, rank, s


@defreference(np.linalg.matrix_norm)
def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    return np.linalg.norm(x, ord, (-2, -1), keepdims)


@defreference(np.linalg.vector_norm)
def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    if axis is None:
        res = np.linalg.norm(np.ravel(x), ord)
        if keepdims:
            res = np.reshape(res, _ones_shape(np.ndim(x)))
        return res
    if not isinstance(axis, tuple) or len(axis) == 1:
        return np.linalg.norm(x, ord, axis, keepdims)
    # several axes: one vector per position of the others (not a matrix norm)
    nd = np.ndim(x)
    moved = np.moveaxis(x, quantile_axes(axis, nd), quantile_dest(axis, nd))
    res = np.linalg.norm(np.reshape(moved, quantile_flat(np.shape(moved), axis, nd)), ord, -1)
    if keepdims:
        res = np.reshape(res, quantile_keep((), np.shape(x), axis))
    return res


@defreference(np.linalg.svdvals)
def svdvals(x: Any, /) -> Any:
    return np.linalg.svd(x, compute_uv=False)


@defreference(np.linalg.multi_dot)
def multi_dot(arrays: Any, *, out: Any = None) -> Any:
    refuse_if(out is not None, "np.linalg.multi_dot: out= is not differentiated")
    res = arrays[0]
    for k in range(1, len(arrays)):
        res = np.dot(res, arrays[k])
    return res


# --------------------------------------------------------------------------------------------
# Index and shape arithmetic (no gradient flows through these)


@defnondiff
def refuse_if(cond: Any, message: str) -> None:
    """Raises RuleError with ``message`` when ``cond`` holds."""
    if cond:
        from adgen.errors import RuleError

        raise RuleError(message, hint="see docs/coverage.md, or register a rule with "
                        "@adgen.rrule")


@defnondiff
def dtype_of(*values: Any) -> Any:
    """The float dtype numpy computes values in (an int array's is float64); a list or tuple
    counts as the array it stands for."""
    return np.result_type(*[np.asarray(v) if isinstance(v, (list, tuple)) else v
                            for v in values if v is not None], 1.0)


@defnondiff
def _shape_of(x: Any) -> Any:
    """The shape alone, for the helpers that check a float argument without reading it."""
    return np.shape(x)


@defnondiff
def normalized_axis(axis: int, nd: int) -> int:
    if not -nd <= axis < nd:
        from adgen.errors import RuleError

        raise RuleError(f"axis {axis} is out of bounds for an array of dimension {nd}")
    return axis % nd


@defnondiff
def _diff_slices(nd: int, axis: int) -> tuple[tuple[slice, ...], tuple[slice, ...]]:
    ax = normalized_axis(axis, nd)
    lo = tuple(slice(None, -1) if d == ax else slice(None) for d in range(nd))
    hi = tuple(slice(1, None) if d == ax else slice(None) for d in range(nd))
    return lo, hi


@defnondiff
def _range_index(nd: int, axis: int, start: Any, stop: Any) -> tuple[slice, ...]:
    ax = normalized_axis(axis, nd)
    return tuple(slice(start, stop) if d == ax else slice(None) for d in range(nd))


@defnondiff
def _slab_shape(shape: Any, axis: int, width: int = 1) -> tuple[int, ...]:
    ax = normalized_axis(axis, len(shape))
    return tuple(width if d == ax else n for d, n in enumerate(shape))


@defnondiff
def _axis_shape(nd: int, axis: Any, n: int) -> tuple[int, ...]:
    """The shape that broadcasts a 1-D array of length n along ``axis`` of an nd array."""
    ax = normalized_axis(-1 if axis is None else axis, nd)
    return tuple(n if d == ax else 1 for d in range(nd))


@defnondiff
def _ones_shape(nd: int) -> tuple[int, ...]:
    return (1,) * nd


@defnondiff
def _kron_shapes(sa: Any, sb: Any, nd: int) -> tuple[Any, Any]:
    sa = (1,) * (nd - len(sa)) + tuple(sa)
    sb = (1,) * (nd - len(sb)) + tuple(sb)
    ia = tuple(x for n in sa for x in (n, 1))
    ib = tuple(x for n in sb for x in (1, n))
    return ia, ib


@defnondiff
def _kron_out(sa: Any, sb: Any, nd: int) -> tuple[int, ...]:
    sa = (1,) * (nd - len(sa)) + tuple(sa)
    sb = (1,) * (nd - len(sb)) + tuple(sb)
    return tuple(x * y for x, y in zip(sa, sb))


@defnondiff
def _tile_shapes(shape: Any, reps: Any) -> tuple[Any, Any, Any]:
    reps = (int(reps),) if np.ndim(reps) == 0 else tuple(int(r) for r in reps)
    nd = max(len(shape), len(reps))
    shape = (1,) * (nd - len(shape)) + tuple(shape)
    reps = (1,) * (nd - len(reps)) + reps
    src = tuple(x for n in shape for x in (1, n))
    wide = tuple(x for n, r in zip(shape, reps) for x in (r, n))
    out = tuple(n * r for n, r in zip(shape, reps))
    return src, wide, out


_PAD_STATS = ("mean", "maximum", "minimum", "median")
_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap", "linear_ramp") + _PAD_STATS


@defnondiff
def _pad_stat_lengths(stat_length: Any, nd: int, mode: Any) -> list[list[Any]]:
    """np.pad's stat_length as (before, after) per axis (None: the whole axis)."""
    if stat_length is None:
        return [[None, None] for _ in range(nd)]
    refuse_if(mode not in _PAD_STATS, f"np.pad: stat_length is not taken by mode={mode!r}")
    try:
        w = np.broadcast_to(np.asarray(stat_length, dtype=np.intp), (nd, 2))
    except (TypeError, ValueError):
        w = None
    refuse_if(w is None or bool(np.any(w < 0)), "np.pad: stat_length must be non-negative "
              "ints, one per axis side as pad_width (None inside it is not differentiated)")
    return [[int(w[d, 0]), int(w[d, 1])] for d in range(nd)]


@defnondiff
def _pad_stat_span(n: int, length: Any, first: bool) -> np.ndarray:
    """The positions along the axis whose statistic np.pad writes at its start (``first``)
    or end: the first (last) ``length`` of the ``n``, all of them for None."""
    m = n if length is None else min(int(length), n)
    refuse_if(m == 0, "np.pad: a statistic of no values (an empty axis or stat_length=0) "
              "has no value to pad with")
    return np.arange(m) if first else np.arange(n - m, n)


@defreference_helper
def _pad_stat(chunk: Any, ax: int, mode: str) -> Any:
    """np.pad's statistic of ``chunk`` along ``ax`` (kept), rounded for an integer array."""
    if mode == "mean":
        stat = np.mean(chunk, axis=ax, keepdims=True)
    elif mode == "median":
        stat = np.median(chunk, axis=ax, keepdims=True)
    elif mode == "maximum":
        stat = np.max(chunk, axis=ax, keepdims=True)
    else:
        stat = np.min(chunk, axis=ax, keepdims=True)
    if _integral_dtype(chunk):
        return np.asarray(np.round(stat), dtype=np.asarray(chunk).dtype)
    return stat


@defnondiff
def _integral_dtype(x: Any) -> bool:
    return bool(np.issubdtype(np.asarray(x).dtype, np.integer))


@defnondiff
def _axis_run_shape(nd: int, ax: int) -> tuple[int, ...]:
    """(1, ..., -1, ..., 1): a 1-D array reshaped to run along axis ``ax`` of ``nd``."""
    return tuple(-1 if d == ax else 1 for d in range(nd))


@defnondiff
def _pad_widths(pad_width: Any, nd: int, mode: Any, reflect_type: str,
                constant_shape: Any) -> list[list[int]]:
    refuse_if(mode not in _PAD_MODES, f"np.pad: mode={mode!r} is not differentiated "
              f"(supported: {', '.join(_PAD_MODES)})")
    refuse_if(len(constant_shape) != 0,
              "np.pad: constant_values other than one number are not differentiated")
    refuse_if(reflect_type != "even", "np.pad: reflect_type='odd' is not differentiated")
    w = np.broadcast_to(np.asarray(pad_width, dtype=np.intp), (nd, 2))
    return [[int(w[d, 0]), int(w[d, 1])] for d in range(nd)]


@defnondiff
def _pad_index(n: int, before: int, after: int, mode: str) -> np.ndarray:
    # the source position of each output position: NumPy's own pad of a range
    refuse_if(n == 0, f"np.pad: mode={mode!r} cannot pad an empty axis")
    return np.pad(np.arange(n), (before, after), mode=mode)


@defnondiff
def _split_indices(shape: Any, sections: Any, axis: int, exact: bool) -> list[Any]:
    nd = len(shape)
    ax = normalized_axis(axis, nd)
    n = shape[ax]
    if np.ndim(sections) == 0:
        k = int(sections)
        refuse_if(k <= 0, "np.split: the number of sections must be larger than 0")
        if exact and n % k:
            from adgen.errors import RuleError

            raise RuleError("np.split: the array does not split into equal sections",
                            hint="use np.array_split")
        size, extra = divmod(n, k)
        bounds = [0]
        for i in range(k):
            bounds.append(bounds[-1] + size + (1 if i < extra else 0))
    else:
        bounds = [0] + [min(max(int(i) if i >= 0 else int(i) + n, 0), n)
                        for i in sections] + [n]
    out = []
    for lo, hi in itertools.pairwise(bounds):
        out.append(tuple(slice(lo, max(lo, hi)) if d == ax else slice(None)
                         for d in range(nd)))
    return out


@defnondiff
def _gradient_axes(axis: Any, nd: int) -> list[int]:
    if axis is None:
        return list(range(nd))
    if isinstance(axis, (tuple, list)):
        return [normalized_axis(a, nd) for a in axis]
    return [normalized_axis(axis, nd)]


@defnondiff
def quantile_axes(axis: Any, nd: int) -> list[int]:
    if axis is None:
        return list(range(nd))
    if isinstance(axis, (tuple, list)):
        return [normalized_axis(a, nd) for a in axis]
    return [normalized_axis(axis, nd)]


@defnondiff
def quantile_dest(axis: Any, nd: int) -> list[int]:
    k = len(quantile_axes(axis, nd))
    return list(range(nd - k, nd))


@defnondiff
def quantile_flat(shape: Any, axis: Any, nd: int) -> tuple[int, ...]:
    k = len(quantile_axes(axis, nd))
    keep = tuple(shape[:nd - k])
    return keep + (-1,) if int(np.prod(shape[nd - k:])) > 0 else keep + (0,)


@defnondiff
def quantile_keep(qshape: Any, ashape: Any, axis: Any) -> tuple[int, ...]:
    nd = len(ashape)
    axes = quantile_axes(axis, nd)
    return tuple(qshape) + tuple(1 if d in axes else n for d, n in enumerate(ashape))


@defnondiff
def _conv_index(na: int, nv: int) -> np.ndarray:
    """Row k of the result reads the padded input at k .. k + nv - 1."""
    return np.arange(na + nv - 1)[:, None] + np.arange(nv)[None, :]


@defnondiff
def _conv_range(na: int, nv: int, mode: str) -> tuple[int, int]:
    full = na + nv - 1
    if mode == "full":
        return 0, full
    if mode == "same":
        start = (min(na, nv) - 1) // 2
        return start, start + max(na, nv)
    refuse_if(mode != "valid", f"np.convolve: unknown mode {mode!r}")
    return min(na, nv) - 1, max(na, nv)


@defnondiff
def _corr_range(na: int, nv: int, mode: str) -> tuple[int, int]:
    full = na + nv - 1
    if mode == "full":
        return 0, full
    if mode == "same":
        start = (min(na, nv) - 1) // 2 if na >= nv else min(na, nv) // 2
        return start, start + max(na, nv)
    refuse_if(mode != "valid", f"np.correlate: unknown mode {mode!r}")
    return min(na, nv) - 1, max(na, nv)
