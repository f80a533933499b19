"""Rule helpers of forward mode for decompositions, cumprod and order statistics.

Part of :mod:`adgen.rules.helpers` (see its docstring for the conventions every helper keeps).
Each returns the tangent of a primal's output from the tangent ``d`` of one input, with the
output's structure (a tuple for svd / eigh / qr, whose results are named tuples). They are
the transposes of the adjoints in :mod:`adgen.rules.helpers_decomp` (checked against them by
the dot-product test in tests/rules/test_jvp_rules.py) and refuse what those refuse: repeated
eigenvalues or singular values where the vectors move, completion vectors of a full SVD or a
complete QR of a non-square matrix, rank-deficient matrices where the tangent divides by a
singular value or a diagonal of R, and quantile methods other than 'linear'.

The decompositions' helpers (svd_jvp, eigh_jvp, qr_jvp, qr_square_jvp, pinv_jvp) and
cumprod_jvp are NumPy over functions with rules, and adgen compiles their own source when it differentiates tangent
code that calls them (``hvp``, ``hessian``, ``jacfwd(grad(f))``: rules/jvps.py registers
them), so they stay within that subset: no string methods, no calls of helpers that are not
registered the same way. quantile_jvp has rules of its own (rules/jvps.py, from
helpers_decomp.quantile_jvp_vjp / quantile_jvp_jvp).
"""

import numpy as np

from adgen.rules.helpers_core import unsupported
from adgen.rules.helpers_decomp import quantile_positions, running_extreme_plateaus

__all__ = [
    "accumulate_extreme_jvp",
    "arange_jvp",
    "cumprod_jvp",
    "eigh_jvp",
    "pinv_jvp",
    "qr_jvp",
    "qr_square_jvp",
    "quantile_jvp",
    "svd_jvp",
    "trim_zeros_jvp",
]


def eigh_jvp(d: object, a: object, uplo: str, vectors: bool) -> object:
    """Tangent of ``np.linalg.eigh(a, UPLO)`` (``vectors``: the pair (w, v)) or ``eigvalsh``.

    NumPy reads one triangle of ``a``; the perturbation is the symmetric matrix S of ``d``'s
    ``uplo`` triangle. With M = V^T S V: w_dot = diag(M), V_dot = V (F * M), F[i, j] =
    1 / (w[j] - w[i]) off the diagonal (refused where eigenvalues repeat).
    """
    d = np.asarray(d, dtype=np.float64)
    if uplo in ("L", "l"):  # not uplo.upper(): reverse mode reads this source (hessian)
        s = np.tril(d) + np.swapaxes(np.tril(d, -1), -1, -2)
    else:
        s = np.triu(d) + np.swapaxes(np.triu(d, 1), -1, -2)
    w, v = np.linalg.eigh(np.asarray(a, dtype=np.float64), UPLO=uplo)
    m = np.swapaxes(v, -1, -2) @ s @ v
    w_dot = np.diagonal(m, axis1=-2, axis2=-1).copy()
    if not vectors:
        return w_dot
    # F as inverse_gaps (helpers_decomp) computes it, written out: the mutation analysis of
    # reverse mode reads this helper's source and stops at a call of another helper
    gaps = w[..., None, :] - w[..., :, None]
    off = ~np.eye(w.shape[-1], dtype=bool)
    if np.any(np.abs(gaps[..., off]) <= 1e-9 * max(float(np.max(np.abs(w), initial=0.0)), 1.0)):
        unsupported("np.linalg.eigh: the tangent of the vectors is not defined where "
                    "eigenvalues repeat; only the tangent of the values (eigvalsh) is")
    return w_dot, v @ (np.where(off, 1.0 / np.where(off, gaps, 1.0), 0.0) * m)


def svd_jvp(d: object, a: object, full_matrices: bool, compute_uv: bool,
            hermitian: bool = False) -> object:
    """Tangent of ``np.linalg.svd(a, full_matrices, compute_uv, hermitian)``.

    A = U S V^T (thin, k = min(m, n)); with P = U^T dA V: s_dot = diag(P),
    U_dot = U (F * (P S + S P^T)) + (I - U U^T) dA V S^-1,
    V_dot = V (F * (S P + P^T S)) + (I - V V^T) dA^T U S^-1, F[i, j] = 1 / (s[j]^2 - s[i]^2).
    With ``hermitian``, numpy reads only the lower triangle (eigh's): the values' tangent is
    that of the symmetric matrix it makes; the vectors (eigh's signs) are refused.
    """
    d = np.asarray(d, dtype=np.float64)
    a = np.asarray(a, dtype=np.float64)
    if hermitian:
        if compute_uv:
            unsupported("np.linalg.svd: the tangent of the vectors of svd(a, hermitian=True) "
                        "is not differentiated; use np.linalg.eigh(a) for the vectors of a "
                        "symmetric matrix, or compute_uv=False for the singular values")
        low = np.tril(a, -1)
        a = low + np.swapaxes(low, -1, -2) + np.eye(a.shape[-1]) * a
        low = np.tril(d, -1)
        d = low + np.swapaxes(low, -1, -2) + np.eye(d.shape[-1]) * d
    m, n = a.shape[-2], a.shape[-1]
    k = min(m, n)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    v = np.swapaxes(vh, -1, -2)
    p = np.swapaxes(u, -1, -2) @ d @ v
    s_dot = np.diagonal(p, axis1=-2, axis2=-1).copy()
    if not compute_uv:
        return s_dot
    if full_matrices and m != n:
        unsupported("np.linalg.svd: the tangent of the completion vectors of a non-square "
                    "matrix with full_matrices=True is not defined; use full_matrices=False "
                    "(or compute_uv=False for the singular values alone)")
    scale = max(float(np.max(s, initial=0.0)), 1.0)
    if m != n and np.any(s <= 1e-9 * scale):
        unsupported("np.linalg.svd: the tangent of the vectors of a rank-deficient "
                    "non-square matrix is not defined")
    gaps = (s * s)[..., None, :] - (s * s)[..., :, None]  # as in eigh_jvp
    off = ~np.eye(k, dtype=bool)
    if np.any(np.abs(gaps[..., off]) <= 1e-9 * max(float(np.max(s * s, initial=0.0)), 1.0)):
        unsupported("np.linalg.svd: the tangent of the vectors is not defined where singular "
                    "values repeat; only the tangent of the values (compute_uv=False) is")
    f = np.where(off, 1.0 / np.where(off, gaps, 1.0), 0.0)
    sd = s[..., None, :]  # P S scales columns, S P rows
    u_dot = u @ (f * (p * sd + np.swapaxes(p, -1, -2) * np.swapaxes(sd, -1, -2)))
    v_dot = v @ (f * (np.swapaxes(sd, -1, -2) * p + np.swapaxes(p, -1, -2) * sd))
    s_inv = 1.0 / np.where(s == 0.0, 1.0, s)
    if m > k:
        dv = d @ v
        u_dot = u_dot + (dv - u @ (np.swapaxes(u, -1, -2) @ dv)) * s_inv[..., None, :]
    if n > k:
        du = np.swapaxes(d, -1, -2) @ u
        v_dot = v_dot + (du - v @ (np.swapaxes(v, -1, -2) @ du)) * s_inv[..., None, :]
    return u_dot, s_dot, np.swapaxes(v_dot, -1, -2)


def qr_square_jvp(d: np.ndarray, q: np.ndarray, r: np.ndarray) -> tuple:
    """Tangents (Q_dot, R_dot) of a reduced QR with m >= n: with X = Q^T dA R^-1 and
    O = tril(X, -1) - tril(X, -1)^T, Q_dot = dA R^-1 - Q (X - O), R_dot = (X - O) R."""
    diag = np.abs(np.diagonal(r, axis1=-2, axis2=-1))
    if np.any(diag <= 1e-9 * max(float(np.max(diag, initial=0.0)), 1.0)):
        unsupported("np.linalg.qr: the tangent is not defined for a rank-deficient matrix")
    # dA R^-1 = (R^-T dA^T)^T
    d_rinv = np.swapaxes(np.linalg.solve(np.swapaxes(r, -1, -2), np.swapaxes(d, -1, -2)), -1, -2)
    x = np.swapaxes(q, -1, -2) @ d_rinv
    low = np.tril(x, -1)
    upper = x - (low - np.swapaxes(low, -1, -2))
    return d_rinv - q @ upper, upper @ r


def qr_jvp(d: object, a: object, mode: str) -> object:
    """Tangent of ``np.linalg.qr(a, mode)`` for modes 'reduced', 'complete' and 'r'.

    A wide matrix (m < n) splits as A = [X | Y]: Q R_X = X, R = [R_X | Q^T Y], so
    R_dot = [R_X_dot | Q_dot^T Y + Q^T dY].
    """
    if mode not in ("reduced", "complete", "r"):
        unsupported(f"np.linalg.qr: mode={mode!r} is not differentiated")
    d = np.asarray(d, dtype=np.float64)
    a = np.asarray(a, dtype=np.float64)
    m, n = a.shape[-2], a.shape[-1]
    if mode == "complete" and m > n:
        unsupported("np.linalg.qr: the tangent of the completion columns of Q "
                    "(mode='complete', m > n) is not defined; use mode='reduced'")
    q, r = np.linalg.qr(a, mode="reduced")
    if m >= n:
        q_dot, r_dot = qr_square_jvp(d, q, r)
    else:
        q_dot, rx_dot = qr_square_jvp(d[..., :, :m], q, r[..., :, :m])
        ry_dot = np.swapaxes(q_dot, -1, -2) @ a[..., :, m:] + np.swapaxes(q, -1, -2) @ d[..., :, m:]
        r_dot = np.concatenate([rx_dot, ry_dot], axis=-1)
    return r_dot if mode == "r" else (q_dot, r_dot)


def pinv_jvp(d: object, p: object, a: object, hermitian: bool = False) -> np.ndarray:
    """Tangent of ``P = np.linalg.pinv(a)`` where the rank is locally constant (Golub &
    Pereyra): -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P. With ``hermitian``,
    numpy reads only the lower triangle (eigh's): that of the symmetric matrix it makes."""
    d = np.asarray(d, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    a = np.asarray(a, dtype=np.float64)
    if hermitian:
        low = np.tril(a, -1)
        a = low + np.swapaxes(low, -1, -2) + np.eye(a.shape[-1]) * a
        low = np.tril(d, -1)
        d = low + np.swapaxes(low, -1, -2) + np.eye(d.shape[-1]) * d
    m, n = a.shape[-2], a.shape[-1]
    pt, dt = np.swapaxes(p, -1, -2), np.swapaxes(d, -1, -2)
    res = -p @ d @ p
    res = res + p @ pt @ dt @ (np.eye(m) - a @ p)
    return res + (np.eye(n) - p @ a) @ dt @ pt @ p


def cumprod_jvp(d: object, out: object, a: object, axis: object) -> object:
    """Tangent of ``np.cumprod(a, axis)``: out * cumsum(d / a) without zeros; with zeros,
    the sum over i <= k of d_i times the product of the other factors up to k."""
    a = np.asarray(a, dtype=np.float64)
    d = np.broadcast_to(np.asarray(d, dtype=np.float64), a.shape)
    out = np.asarray(out, dtype=np.float64)
    if axis is None:
        a, d = np.ravel(a), np.ravel(d)
        axis = 0
    if a.ndim == 0:
        return np.array(d, dtype=np.float64)
    if np.all(a != 0.0):
        return out * np.cumsum(d / a, axis=axis)
    am = np.moveaxis(a, axis, -1)
    dm = np.moveaxis(d, axis, -1)
    n = am.shape[-1]
    # partial[..., i, k] = d out_k / d a_i (as in cumprod_vjp)
    factors = np.broadcast_to(am[..., None, :], am.shape[:-1] + (n, n)).copy()
    factors[..., np.arange(n), np.arange(n)] = 1.0
    partial = np.cumprod(factors, axis=-1) * np.triu(np.ones((n, n)))
    res = np.sum(partial * dm[..., :, None], axis=-2)
    return np.moveaxis(res, -1, axis)


def quantile_jvp(t: object, a: object, q: object, axis: object, method: str,
                 keepdims: bool, which: int) -> object:
    """Tangent of ``np.quantile(a, q, axis, method, keepdims)`` from a's tangent ``t``
    (which=0) or q's (1) (``t``, not ``d``: its own jvp rule names its tangent d), for the
    methods of ``quantile_positions`` (q's is zero but for 'linear').

    The result is s[lo] + (s[hi] - s[lo]) * frac of the sorted values s at pos = q (n - 1):
    from a, the same interpolation of d sorted as a is (at a tie, in np.argsort's order, as the
    adjoint routes it); from q, (s[hi] - s[lo]) (n - 1) dq. The shape is q's, then a's with
    the reduced axes gone (kept as 1 with ``keepdims``).
    """
    if method not in ("linear", "lower", "higher", "nearest", "midpoint"):
        unsupported(f"np.quantile: method={method!r} is not differentiated (only "
                    "'linear', 'lower', 'higher', 'nearest' and 'midpoint')")
    a = np.asarray(a, dtype=np.float64)
    nd = a.ndim
    axes, dest, moved, keep, flat, order, s, n, qa, qf, lo, hi, frac = \
        quantile_positions(a, q, axis, method)
    if which == 1:  # (the other methods are piecewise constant in q)
        dq = np.broadcast_to(np.asarray(t, dtype=np.float64), qa.shape).reshape(-1)
        res = (s[..., hi] - s[..., lo]) * (n - 1.0) * dq * (method == "linear")
    else:
        dm = np.moveaxis(np.broadcast_to(np.asarray(t, dtype=np.float64), a.shape), axes, dest)
        ds = np.take_along_axis(dm.reshape(keep + (-1,)), order, axis=-1)
        res = ds[..., lo] * (1.0 - frac) + ds[..., hi] * frac
    res = np.moveaxis(res, -1, 0).reshape(qa.shape + keep)
    if keepdims:
        kept = [1 if i in axes else a.shape[i] for i in range(nd)]
        res = res.reshape(qa.shape + tuple(kept))
    return res[()] if res.ndim == 0 else res


def arange_jvp(d: object, out: object, stop: object, step: object, which: int) -> object:
    """Tangent of ``np.arange(start, stop, step)`` (out[i] = start + i * step) from start's
    tangent (which=0: d everywhere, or zero when start is NumPy's stop, a single argument),
    stop's (1: zero, the count changes only by rounding) or step's (2: i * d)."""
    size = np.size(out)
    if which == 1 or (which == 0 and stop is None) or (which == 2 and step is None):
        return np.zeros(size)
    if which == 0:
        return np.full(size, float(d))
    return np.arange(size) * float(d)


def trim_zeros_jvp(d: object, filt: object, trim: str, axis: object) -> object:
    """Tangent of ``np.trim_zeros(filt, trim)`` (1-D): the slice of ``d`` where the kept part
    of ``filt`` is (a view of ``d``, as the output is a view of ``filt``)."""
    filt = np.asarray(filt)
    if axis is not None or filt.ndim != 1:
        unsupported("np.trim_zeros: only 1-D input without axis= is differentiated")
    nz = np.flatnonzero(filt)
    if not len(nz):
        return d[0:0]
    start = int(nz[0]) if "f" in trim.lower() else 0
    stop = int(nz[-1]) + 1 if "b" in trim.lower() else filt.shape[0]
    return d[start:stop]


def accumulate_extreme_jvp(d: object, extreme: object, a: object, axis: object,
                           dtype: object) -> object:
    """Tangent of ``np.maximum.accumulate(a, axis)`` (or ``np.minimum``): at each position,
    the mean tangent of the entries that set the running extreme there (the transpose of
    ``accumulate_extreme_vjp``)."""
    if dtype is not None:
        unsupported("np.maximum.accumulate / np.minimum.accumulate: dtype= is not "
                    "differentiated (convert the input instead)")
    a = np.asarray(a)
    out = np.asarray(extreme)
    if a.ndim == 0:
        return np.asarray(d, dtype=np.float64)
    am = np.moveaxis(a, axis, -1)
    om = np.moveaxis(out, axis, -1)
    dm = np.moveaxis(np.broadcast_to(np.asarray(d, dtype=np.float64), a.shape), axis, -1)
    hit, count, start, _ = running_extreme_plateaus(am, om)
    picked = np.cumsum(np.where(hit, dm, 0.0), axis=-1)
    before = np.take_along_axis(picked - np.where(hit, dm, 0.0), start, axis=-1)
    res = np.where(count > 0, (picked - before) / np.maximum(count, 1), 0.0)
    return np.moveaxis(res, -1, axis)
