"""Reference implementations (see :mod:`adgen.rules.composites`): NaN-ignoring reductions,
covariance, histograms.

A NaN-ignoring reduction replaces the NaNs by the reduction's identity (0 for sums, 1 for
products, -inf / inf for max / min) and reduces as usual, so the NaN entries get a zero
gradient. A slice that is all NaN gives what that replacement gives (NumPy warns and gives
NaN for nanmax, nanmean, nanvar there).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adgen.rules.composites import (
    dtype_of,
    quantile_axes,
    quantile_dest,
    quantile_flat,
    quantile_keep,
    refuse_if,
)
from adgen.rules.registry import defnondiff, defreference


@defreference(np.nansum)
def nansum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
           keepdims: bool = False) -> Any:
    refuse_if(out is not None or dtype is not None, "np.nansum: dtype= and out= are not "
              "differentiated")
    return np.sum(np.where(np.isnan(a), 0.0, a), axis=axis, keepdims=keepdims)


@defreference(np.nanprod)
def nanprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
            keepdims: bool = False) -> Any:
    refuse_if(out is not None or dtype is not None, "np.nanprod: dtype= and out= are not "
              "differentiated")
    return np.prod(np.where(np.isnan(a), 1.0, a), axis=axis, keepdims=keepdims)


@defreference(np.nanmax)
def nanmax(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    refuse_if(out is not None, "np.nanmax: out= is not differentiated")
    return np.max(np.where(np.isnan(a), -np.inf, a), axis=axis, keepdims=keepdims)


@defreference(np.nanmin)
def nanmin(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    refuse_if(out is not None, "np.nanmin: out= is not differentiated")
    return np.min(np.where(np.isnan(a), np.inf, a), axis=axis, keepdims=keepdims)


@defreference(np.nanmean)
def nanmean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
            keepdims: bool = False) -> Any:
    refuse_if(out is not None or dtype is not None, "np.nanmean: dtype= and out= are not "
              "differentiated")
    valid = ~np.isnan(a)
    total = np.sum(np.where(valid, a, 0.0), axis=axis, keepdims=keepdims)
    return total / np.sum(valid, axis=axis, keepdims=keepdims).astype(dtype_of(a))


@defreference(np.nanvar)
def nanvar(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: float = 0,
           keepdims: bool = False) -> Any:
    refuse_if(out is not None or dtype is not None, "np.nanvar: dtype= and out= are not "
              "differentiated")
    valid = ~np.isnan(a)
    n = np.sum(valid, axis=axis, keepdims=True).astype(dtype_of(a))
    mean = np.sum(np.where(valid, a, 0.0), axis=axis, keepdims=True) / n
    dev = np.where(valid, a - mean, 0.0)
    return np.sum(dev * dev, axis=axis, keepdims=keepdims) / (
        np.sum(valid, axis=axis, keepdims=keepdims) - ddof).astype(dtype_of(a))


@defreference(np.nanstd)
def nanstd(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: float = 0,
           keepdims: bool = False) -> Any:
    return np.sqrt(nanvar(a, axis, dtype, out, ddof, keepdims))


@defreference(np.nancumsum)
def nancumsum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    refuse_if(out is not None or dtype is not None, "np.nancumsum: dtype= and out= are not "
              "differentiated")
    return np.cumsum(np.where(np.isnan(a), 0.0, a), axis=axis)


@defreference(np.nancumprod)
def nancumprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    refuse_if(out is not None or dtype is not None, "np.nancumprod: dtype= and out= are not "
              "differentiated")
    return np.cumprod(np.where(np.isnan(a), 1.0, a), axis=axis)


@defreference(np.nanquantile)
def nanquantile(a: Any, q: Any, axis: Any = None, out: Any = None,
                overwrite_input: bool = False, method: str = "linear", keepdims: bool = False,
                *, weights: Any = None) -> Any:
    refuse_if(method != "linear" or weights is not None or out is not None,
              "np.nanquantile: only method='linear' without weights= and out= is "
              "differentiated")
    nd = np.ndim(a)
    moved = np.moveaxis(a, quantile_axes(axis, nd), quantile_dest(axis, nd))
    flat = np.reshape(moved, quantile_flat(np.shape(moved), axis, nd))
    s = np.sort(flat, axis=-1)  # NaNs sort last
    count = np.sum(~np.isnan(flat), axis=-1, keepdims=True)
    qf = np.reshape(q, (-1,))
    pos = qf * (count - 1.0)
    lo = np.maximum(np.floor(pos).astype(np.intp), 0)
    hi = np.minimum(lo + 1, np.maximum(count - 1, 0))
    frac = (pos - lo).astype(dtype_of(s, q))
    vlo = np.take_along_axis(s, lo, axis=-1)
    vhi = np.take_along_axis(s, hi, axis=-1)
    res = vlo + (vhi - vlo) * frac
    res = np.reshape(np.moveaxis(res, -1, 0), _nan_q_shape(np.shape(q), np.shape(res)))
    if keepdims:
        res = np.reshape(res, quantile_keep(np.shape(q), np.shape(a), axis))
    return res[()]  # a number for one quantile of the whole array


@defreference(np.nanpercentile)
def nanpercentile(a: Any, q: Any, axis: Any = None, out: Any = None,
                  overwrite_input: bool = False, method: str = "linear",
                  keepdims: bool = False, *, weights: Any = None) -> Any:
    return nanquantile(a, q / 100.0, axis, out, overwrite_input, method, keepdims,
                       weights=weights)


@defreference(np.nanmedian)
def nanmedian(a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
              keepdims: bool = False) -> Any:
    return nanquantile(a, 0.5, axis, out, overwrite_input, "linear", keepdims)


@defreference(np.cov)
def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: Any = None,
        fweights: Any = None, aweights: Any = None, *, dtype: Any = None) -> Any:
    refuse_if(dtype is not None, "np.cov: dtype= is not differentiated")
    x = np.atleast_2d(np.asarray(m, dtype=np.float64))  # numpy's cov computes in float64
    if not rowvar and np.shape(x)[0] != 1:
        x = np.transpose(x)
    if y is not None:
        yy = np.atleast_2d(np.asarray(y, dtype=np.float64))
        if not rowvar and np.shape(yy)[0] != 1:
            yy = np.transpose(yy)
        x = np.concatenate([x, yy], axis=0)
    n = np.shape(x)[1]
    if ddof is None:
        ddof = 0 if bias else 1
    if fweights is None and aweights is None:
        xc = x - np.mean(x, axis=1, keepdims=True)
        c = xc @ np.transpose(xc) / (n - ddof)
        return np.squeeze(c)
    # NumPy's weighted form: w = fweights * aweights, the mean weighted by w, and the
    # normalisation sum(w) - ddof * sum(w * aweights) / sum(w) (sum(w) - ddof for fweights)
    if fweights is not None:
        _check_cov_weights(fweights, n, "fweights")
        fw = np.asarray(fweights, dtype=np.float64)
        w = fw
    if aweights is not None:
        _check_cov_weights(aweights, n, "aweights")
        aw = np.asarray(aweights, dtype=np.float64)
        w = aw if fweights is None else fw * aw
    w_sum = np.sum(w)
    if ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = w_sum - ddof
    else:
        fact = w_sum - ddof * np.sum(w * aw) / w_sum
    if not _cov_dof_positive(fact):
        fact = 0.0
    xc = x - np.sum(x * w, axis=1, keepdims=True) / w_sum
    c = xc @ np.transpose(xc * w) / fact
    return np.squeeze(c)


@defnondiff
def _check_cov_weights(weights: Any, n: int, name: str) -> None:
    """NumPy's checks of np.cov's weights, with its errors word for word."""
    weights = np.asarray(weights, dtype=float)
    if name == "fweights" and not np.all(weights == np.around(weights)):
        raise TypeError("fweights must be integer")
    if weights.ndim > 1:
        raise RuntimeError(f"cannot handle multidimensional {name}")
    if weights.shape[0] != n:
        raise RuntimeError(f"incompatible numbers of samples and {name}")
    if np.any(weights < 0):
        raise ValueError(f"{name} cannot be negative")


@defnondiff
def _cov_dof_positive(fact: Any) -> bool:
    """False (after NumPy's warning) where the weighted degrees of freedom are not positive."""
    if fact <= 0:
        import warnings

        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        return False
    return True


@defreference(np.corrcoef)
def corrcoef(x: Any, y: Any = None, rowvar: bool = True, *, dtype: Any = None) -> Any:
    c = cov(x, y, rowvar, dtype=dtype)
    if np.ndim(c) == 0:
        return c / c
    d = np.sqrt(np.diagonal(c))
    return np.clip(c / d[:, None] / d[None, :], -1.0, 1.0)


@defreference(np.histogram_bin_edges)
def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None, weights: Any = None) -> Any:
    if np.ndim(bins) == 1:
        return bins
    refuse_if(isinstance(bins, str), "np.histogram: bins given as a rule name (a string) "
              "are not differentiated; give a number of bins or the edges")
    if range is None:
        lo = np.min(a)
        hi = np.max(a)
    else:
        lo = range[0]
        hi = range[1]
    refuse_if(lo == hi, "np.histogram: the data range has zero width (all values equal)")
    return np.linspace(lo, hi, bins + 1).astype(dtype_of(a, lo, hi))


@defreference(np.histogram)
def histogram(a: Any, bins: Any = 10, range: Any = None, density: Any = None,
              weights: Any = None) -> Any:
    edges = histogram_bin_edges(a, bins, range)
    flat = np.ravel(a)
    which = _histogram_bins(flat, edges)
    w = np.ones(np.shape(flat)) if weights is None else np.ravel(weights)
    counts = np.zeros(np.shape(edges)[0] - 1, dtype_of(w))
    np.add.at(counts, which[0], w[which[1]])
    hist = counts
    if density:
        hist = counts / np.sum(counts) / (edges[1:] - edges[:-1])
    elif weights is None:
        hist = counts.astype(np.intp)
    # one return (a tuple returned from two places is a list/tuple mix in adgen's runtime)
    return hist, edges


@defnondiff
def _histogram_bins(values: Any, edges: Any) -> tuple[np.ndarray, np.ndarray]:
    """(bin of each value inside the range, its position); the last bin is closed."""
    edges = np.asarray(edges)
    values = np.asarray(values)
    inside = (values >= edges[0]) & (values <= edges[-1])
    pos = np.flatnonzero(inside)
    b = np.searchsorted(edges, values[pos], side="right") - 1
    return np.minimum(b, len(edges) - 2), pos


@defreference(np.bincount)
def bincount(x: Any, weights: Any = None, minlength: int = 0) -> Any:
    if weights is None:
        return _bincount(x, minlength)
    out = np.zeros(_bincount_length(x, minlength))
    np.add.at(out, x, weights)
    return out


@defnondiff
def _bincount(x: Any, minlength: int) -> np.ndarray:
    return np.bincount(x, minlength=minlength)


@defnondiff
def _bincount_length(x: Any, minlength: int) -> int:
    return max(int(np.max(x, initial=-1)) + 1, minlength)


@defnondiff
def _nan_q_shape(qshape: Any, res_shape: Any) -> tuple[int, ...]:
    return tuple(qshape) + tuple(res_shape[:-1])

