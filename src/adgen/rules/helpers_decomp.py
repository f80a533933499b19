"""Rule helpers: matrix decompositions (svd, eigh, qr, pinv), cumprod and repeat.

Part of :mod:`adgen.rules.helpers` (see its docstring for the conventions every helper keeps).
The decomposition adjoints are the standard ones, with JAX's conventions (Townsend 2016 for
the SVD, Giles 2008 for eigh, Walter & Lehmann 2018 / Liao et al. 2019 for QR, Golub &
Pereyra 1973 for the pseudo-inverse). Where the decomposition is not unique (repeated
eigenvalues or singular values with an eigenvector cotangent, the completion columns of a
full SVD or a complete QR of a non-square matrix), they refuse with ``RuleError`` instead of
returning NaN or an arbitrary choice.
"""

from typing import Any

import numpy as np

from adgen.rules.helpers_core import unbroadcast, unsupported, zeros_for
from adgen.rules.helpers_linalg import matrix_transpose

__all__ = [
    "accumulate_extreme_vjp",
    "eigvals_jvp",
    "eigvals_vjp",
    "eigvectors_matched",
    "cotangent_array",
    "quantile_positions",
    "copy_lower_to_upper",
    "cotangent_part",
    "cumprod_vjp",
    "diff_vjp",
    "eigh_vjp",
    "hermitian_svd_vjp",
    "inverse_gaps",
    "lower_triangle_adjoint",
    "percentile_vjp",
    "pinv_vjp",
    "qr_tall_vjp",
    "qr_vjp",
    "quantile_jvp_jvp",
    "quantile_jvp_vjp",
    "quantile_vjp",
    "repeat_vjp",
    "rollaxis_vjp",
    "running_extreme_plateaus",
    "svd_vjp",
    "trim_zeros_vjp",
    "unstack_vjp",
]



def cotangent_part(g: object, k: int) -> object:
    """Entry k of a tuple cotangent (a namedtuple's), None when it is absent or zero."""
    if g is None:
        return None
    item = g[k]
    if item is None:
        return None
    item = np.asarray(item, dtype=np.float64)
    return item if np.any(item) else None


def inverse_gaps(w: np.ndarray, what: str) -> np.ndarray:
    """F[i, j] = 1 / (w[j] - w[i]) off the diagonal, 0 on it; refuses repeated values."""
    gaps = w[..., None, :] - w[..., :, None]
    n = w.shape[-1]
    off = ~np.eye(n, dtype=bool)
    scale = max(float(np.max(np.abs(w), initial=0.0)), 1.0)
    if np.any(np.abs(gaps[..., off]) <= 1e-9 * scale):
        unsupported(f"{what}: the gradient through the vectors is not defined where values "
                    "repeat (degenerate eigenvalues or singular values); only the first "
                    "derivative through the values is (second derivatives of the values, "
                    "hessian or hvp, go through the vectors and are refused there too)")
    return np.where(off, 1.0 / np.where(off, gaps, 1.0), 0.0)


def eigh_vjp(g: object, a: object, uplo: str, vectors: bool) -> np.ndarray:
    """Adjoint of ``np.linalg.eigh(a, UPLO)`` (``vectors``) or ``eigvalsh(a, UPLO)``.

    With A = V diag(w) V^T the symmetric adjoint is S = V (diag(w_bar) + F * (V^T V_bar)) V^T,
    F[i, j] = 1 / (w[j] - w[i]). Values closer than 1e-9 (relative) count as repeated.
    numpy reads only the ``UPLO`` triangle of ``a``, so, as for
    Cholesky, the exact gradient of what numpy computes lives on that triangle:
    ``tril(S + S^T) - diag(S)`` for 'L'. Against a symmetric perturbation it agrees with the
    symmetric adjoint JAX returns.
    """
    w, v = np.linalg.eigh(np.asarray(a, dtype=np.float64), UPLO=uplo)
    if vectors:
        gw, gv = cotangent_part(g, 0), cotangent_part(g, 1)
    else:
        gw, gv = np.asarray(g, dtype=np.float64), None
    inner = np.zeros(w.shape + w.shape[-1:])
    if gw is not None:
        inner = inner + np.eye(w.shape[-1]) * gw[..., None, :]
    if gv is not None:
        inner = inner + inverse_gaps(w, "np.linalg.eigh") * (matrix_transpose(v) @ gv)
    s = v @ inner @ matrix_transpose(v)
    sym = 0.5 * (s + matrix_transpose(s))
    tri = np.tril if uplo.upper() == "L" else np.triu
    return tri(2.0 * sym) - np.eye(w.shape[-1]) * sym


def eigvectors_matched(a: object, w: object) -> np.ndarray:
    """The right eigenvectors of a general square matrix ``a``, column i for the eigenvalue
    ``w[i]`` that ``np.linalg.eigvals(a)`` returned (np.linalg.eig may order them otherwise:
    matched by distance). Refuses stacks and repeated eigenvalues, where the derivative of an
    eigenvalue is not defined."""
    a = np.asarray(a)
    w = np.asarray(w)
    if a.ndim != 2:
        unsupported("np.linalg.eigvals: the gradient is taken of one square matrix, not a "
                    "stack (call it on each matrix)")
    w2, v = np.linalg.eig(a)
    scale = max(float(np.max(np.abs(w), initial=0.0)), 1.0)
    gaps = np.abs(w[:, None] - w[None, :]) + np.eye(len(w)) * scale
    if np.any(gaps <= 1e-9 * scale):
        unsupported("np.linalg.eigvals: the derivative of an eigenvalue is not defined where "
                    "eigenvalues repeat")
    order = np.argmin(np.abs(w[:, None] - w2[None, :]), axis=1)
    return v[:, order]


def eigvals_vjp(g: object, a: object, w: object) -> np.ndarray:
    """Adjoint of ``np.linalg.eigvals(a)`` at distinct eigenvalues: with A = V diag(w) V^-1,
    dw_i = (V^-1 dA V)_ii, so A_bar = V^-T diag(g) V^T (holomorphic: no conjugates, JAX's
    convention); the real part for a real ``a`` (its gradient)."""
    v = eigvectors_matched(a, w)
    out = np.linalg.solve(v.T, np.asarray(g)[:, None] * v.T)
    return out if np.iscomplexobj(a) else np.real(out)


def eigvals_jvp(d: object, a: object, w: object) -> np.ndarray:
    """Tangent of ``np.linalg.eigvals(a)``: diag(V^-1 dA V), V matched to ``w``."""
    v = eigvectors_matched(a, w)
    return np.diagonal(np.linalg.solve(v, np.asarray(d) @ v)).copy()


def lower_triangle_adjoint(s: object) -> np.ndarray:
    """The adjoint of ``a`` through ``copy_lower_to_upper(a)`` (what numpy's hermitian=True
    and eigh read: the lower triangle), given the adjoint ``s`` of the symmetric matrix:
    ``tril(S + S^T) - diag(S)``."""
    s = np.asarray(s)
    return np.tril(s + np.swapaxes(s, -1, -2)) - np.eye(s.shape[-1]) * s


def hermitian_svd_vjp(g: object, a: object, compute_uv: bool) -> np.ndarray:
    """Adjoint of ``np.linalg.svd(a, hermitian=True)``: numpy takes the singular values of
    the symmetric matrix of ``a``'s lower triangle (eigh's), so their adjoint lives on that
    triangle. The vectors come from eigh with other signs than the general SVD's: refused."""
    if compute_uv:
        if cotangent_part(g, 0) is not None or cotangent_part(g, 2) is not None:
            unsupported("np.linalg.svd: the gradient through the vectors of svd(a, "
                        "hermitian=True) is not differentiated; use np.linalg.eigh(a) for "
                        "the vectors of a symmetric matrix (or hermitian=False)")
        g = cotangent_part(g, 1)
        if g is None:
            return np.zeros(np.shape(a))
    return lower_triangle_adjoint(svd_vjp(g, copy_lower_to_upper(np.asarray(
        a, dtype=np.float64)), False, False))


def svd_vjp(g: object, a: object, full_matrices: bool, compute_uv: bool) -> np.ndarray:
    """Adjoint of ``np.linalg.svd(a, full_matrices, compute_uv)`` (Townsend 2016).

    A = U diag(s) V^T; with F[i, j] = 1 / (s[j]^2 - s[i]^2), J = F * (U^T U_bar - U_bar^T U)
    and K = F * (V^T V_bar - V_bar^T V), the adjoint is
    U (J S + diag(s_bar) + S K) V^T + (I - U U^T) U_bar S^-1 V^T + U S^-1 V_bar^T (I - V V^T).
    """
    a = np.asarray(a, dtype=np.float64)
    m, n = a.shape[-2], a.shape[-1]
    k = min(m, n)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    if compute_uv:
        gu, gs, gvh = cotangent_part(g, 0), cotangent_part(g, 1), cotangent_part(g, 2)
    else:
        gu, gs, gvh = None, np.asarray(g, dtype=np.float64), None
    if full_matrices and m != n:
        # the columns past k of U (rows of Vh) are any orthonormal completion
        if (gu is not None and np.any(gu[..., :, k:])) or \
                (gvh is not None and np.any(gvh[..., k:, :])):
            unsupported("np.linalg.svd: the gradient through the completion vectors of a "
                        "non-square matrix with full_matrices=True is not defined; use "
                        "full_matrices=False")
        gu = gu[..., :, :k] if gu is not None else None
        gvh = gvh[..., :k, :] if gvh is not None else None
    res = np.zeros(a.shape)
    if gs is not None:
        res = res + (u * gs[..., None, :]) @ vh
    if gu is None and gvh is None:
        return res
    f = inverse_gaps(s * s, "np.linalg.svd")
    scale = max(float(np.max(s, initial=0.0)), 1.0)
    if np.any(s <= 1e-9 * scale) and m != n:
        unsupported("np.linalg.svd: the gradient through the vectors of a rank-deficient "
                    "non-square matrix is not defined")
    inner = np.zeros(s.shape + s.shape[-1:])
    s_inv = 1.0 / np.where(s == 0.0, 1.0, s)
    if gu is not None:
        ut_gu = matrix_transpose(u) @ gu
        inner = inner + (f * (ut_gu - matrix_transpose(ut_gu))) * s[..., None, :]
        if m > k:
            res = res + ((gu - u @ ut_gu) * s_inv[..., None, :]) @ vh
    if gvh is not None:
        gv = matrix_transpose(gvh)
        vt_gv = vh @ gv
        inner = inner + s[..., :, None] * (f * (vt_gv - matrix_transpose(vt_gv)))
        if n > k:
            res = res + u @ (s_inv[..., :, None] * (gvh - matrix_transpose(vt_gv) @ vh))
    return res + u @ inner @ vh


def copy_lower_to_upper(m: np.ndarray) -> np.ndarray:
    """The symmetric matrix with m's lower triangle (and diagonal)."""
    low = np.tril(m, -1)
    return low + matrix_transpose(low) + np.eye(m.shape[-1]) * m


def qr_tall_vjp(gq: np.ndarray, gr: np.ndarray, q: np.ndarray, r: np.ndarray
                    ) -> np.ndarray:
    """Adjoint of a reduced QR with m >= n: (Q_bar + Q copyltu(M)) R^-T, M = R R_bar^T -
    Q_bar^T Q."""
    d = np.abs(np.diagonal(r, axis1=-2, axis2=-1))
    if np.any(d <= 1e-9 * max(float(np.max(d, initial=0.0)), 1.0)):
        unsupported("np.linalg.qr: the gradient is not defined for a rank-deficient matrix")
    mm = r @ matrix_transpose(gr) - matrix_transpose(gq) @ q
    b = gq + q @ copy_lower_to_upper(mm)
    # b R^-T = (R^-1 b^T)^T
    return matrix_transpose(np.linalg.solve(r, matrix_transpose(b)))


def qr_vjp(g: object, a: object, mode: str) -> np.ndarray:
    """Adjoint of ``np.linalg.qr(a, mode)`` for modes 'reduced', 'complete' and 'r'.

    Wide matrices (m < n) split as A = [X | Y] with X square: Q R_X = X, R = [R_X | Q^T Y]
    (Liao et al. 2019).
    """
    a = np.asarray(a, dtype=np.float64)
    m, n = a.shape[-2], a.shape[-1]
    if mode not in ("reduced", "complete", "r"):
        unsupported(f"np.linalg.qr: mode={mode!r} is not differentiated")
    q, r = np.linalg.qr(a, mode="reduced")
    k = min(m, n)
    if mode == "r":
        gq, gr = None, np.asarray(g, dtype=np.float64)
    else:
        gq, gr = cotangent_part(g, 0), cotangent_part(g, 1)
    if mode == "complete" and m > n:
        if gq is not None and np.any(gq[..., :, k:]):
            unsupported("np.linalg.qr: the gradient through the completion columns of Q "
                        "(mode='complete', m > n) is not defined; use mode='reduced'")
        gq = gq[..., :, :k] if gq is not None else None
        gr = gr[..., :k, :] if gr is not None else None
    gq = np.zeros(q.shape) if gq is None else gq
    gr = np.zeros(r.shape) if gr is None else gr
    if m >= n:
        return qr_tall_vjp(gq, gr, q, r)
    y = a[..., :, m:]
    gry = gr[..., :, m:]
    gy = q @ gry
    gx = qr_tall_vjp(gq + y @ matrix_transpose(gry), gr[..., :, :m], q, r[..., :, :m])
    return np.concatenate([gx, gy], axis=-1)


def pinv_vjp(g: object, p: object, a: object, hermitian: bool = False) -> np.ndarray:
    """Adjoint of ``P = np.linalg.pinv(a)`` where the rank is locally constant:
    -P^T G P^T + (I - A P) G^T P P^T + P^T P G^T (I - P A). With ``hermitian``, numpy reads
    only ``a``'s lower triangle (eigh's): the adjoint of that symmetric matrix, on it."""
    g = np.asarray(g, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    a = np.asarray(a, dtype=np.float64)
    if hermitian:
        return lower_triangle_adjoint(pinv_vjp(g, p, copy_lower_to_upper(a)))
    pt = matrix_transpose(p)
    gt = matrix_transpose(g)
    m, n = a.shape[-2], a.shape[-1]
    res = -pt @ g @ pt
    res = res + (np.eye(m) - a @ p) @ gt @ p @ pt
    return res + pt @ p @ gt @ (np.eye(n) - p @ a)


def cumprod_vjp(g: object, out: object, a: object, axis: object) -> object:
    """Adjoint of ``np.cumprod(a, axis)``, exact where ``a`` has zeros.

    Without zeros it is a reversed cumulative sum of g * out, divided by a; with zeros, the
    product of the other factors is formed for each position (O(n^2) along the axis).
    """
    a = np.asarray(a)
    a = a if a.dtype.kind == "c" else a.astype(np.float64)  # complex stays complex
    shape = a.shape
    if axis is None:
        a = np.ravel(a)
        axis = 0
    # cumprod is holomorphic: a complex a keeps its complex products (JAX's convention)
    kind = np.complex128 if np.iscomplexobj(a) or np.iscomplexobj(g) else np.float64
    g = np.broadcast_to(np.asarray(g, dtype=kind), a.shape)
    out = np.asarray(out, dtype=kind)
    if a.ndim == 0:
        return g
    if np.all(a != 0.0):
        rev = np.flip(np.cumsum(np.flip(g * out, axis), axis), axis)
        return np.reshape(rev / a, shape)
    am = np.moveaxis(a, axis, -1)
    gm = np.moveaxis(g, axis, -1)
    n = am.shape[-1]
    # factors[..., i, k] = a_k, with a_i replaced by 1: its cumprod over k is d out_k / d a_i
    factors = np.broadcast_to(am[..., None, :], am.shape[:-1] + (n, n)).copy()
    factors[..., np.arange(n), np.arange(n)] = 1.0
    partial = np.cumprod(factors, axis=-1) * np.triu(np.ones((n, n)))
    res = np.sum(partial * gm[..., None, :], axis=-1)
    return np.reshape(np.moveaxis(res, -1, axis), shape)


def running_extreme_plateaus(a: np.ndarray, out: np.ndarray) -> tuple[np.ndarray, ...]:
    """Where the running extreme ``out`` of ``a`` (``np.maximum.accumulate`` or
    ``np.minimum.accumulate`` along the last axis) takes its values from.

    ``out`` is constant on runs of positions (plateaus); the entries of a plateau that equal
    it (``hit``) are the inputs that set it. Returns ``(hit, count, start, stop)``: per
    position k, how many hits of k's plateau are at or before k, where the plateau starts,
    and the first position after it (a NaN is a plateau of its own without a hit)."""
    n = a.shape[-1]
    idx = np.arange(n)
    hit = a == out
    new = np.ones(out.shape, dtype=bool)
    new[..., 1:] = out[..., 1:] != out[..., :-1]
    start = np.maximum.accumulate(np.where(new, idx, 0), axis=-1)
    csum = np.cumsum(hit, axis=-1)
    count = csum - np.take_along_axis(csum - hit, start, axis=-1)
    starts = np.where(new, idx, n)
    suffix = np.flip(np.minimum.accumulate(np.flip(starts, -1), axis=-1), -1)
    stop = np.concatenate([suffix[..., 1:], np.full(out.shape[:-1] + (1,), n)], axis=-1)
    return hit, count, start, stop


def accumulate_extreme_vjp(cot: object, extreme: object, a: object, axis: object,
                           dtype: object) -> object:
    """Adjoint of ``np.maximum.accumulate(a, axis)`` (or ``np.minimum``): ``out[k]`` is the
    value of the entries of ``a`` at or before ``k`` that reached the running extreme and
    kept it up to ``k``; ``g[k]`` is split evenly between them (ties, as for ``np.max``)."""
    if dtype is not None:
        unsupported("np.maximum.accumulate / np.minimum.accumulate: dtype= is not "
                    "differentiated (convert the input instead)")
    a = np.asarray(a)
    if a.dtype.kind == "c":
        unsupported("np.maximum.accumulate / np.minimum.accumulate of complex values")
    out = np.asarray(extreme)
    if a.ndim == 0:
        return np.asarray(cot, dtype=np.float64)
    am = np.moveaxis(a, axis, -1)
    om = np.moveaxis(out, axis, -1)
    gm = np.moveaxis(np.broadcast_to(np.asarray(cot, dtype=np.float64), out.shape), axis, -1)
    hit, count, _, stop = running_extreme_plateaus(am, om)
    share = np.where(count > 0, gm / np.maximum(count, 1), 0.0)
    # sum of the shares of positions k >= j on j's plateau: a reversed cumulative sum, less
    # what lies after the plateau
    after = np.flip(np.cumsum(np.flip(share, -1), axis=-1), -1)
    after = np.concatenate([after, np.zeros(after.shape[:-1] + (1,))], axis=-1)
    res = np.where(hit, after[..., :-1] - np.take_along_axis(after, stop, axis=-1), 0.0)
    return np.moveaxis(res, -1, axis)


def cotangent_array(g: object) -> np.ndarray:
    """g as a float64 array, or a complex128 one for a complex cotangent."""
    g = np.asarray(g)
    return g.astype(np.complex128 if g.dtype.kind == "c" else np.float64, copy=False)


def repeat_vjp(g: object, shape: tuple, repeats: object, axis: object) -> object:
    """Adjoint of ``np.repeat(a, repeats, axis)``: each copy's cotangent added back."""
    shape = tuple(shape)
    g = cotangent_array(g)
    if axis is None:
        n = int(np.prod(shape))
        src = np.repeat(np.arange(n), repeats)
        res = zeros_for(n, g)
        np.add.at(res, src, g)
        return np.reshape(res, shape) if shape else res[0]
    ax = axis % len(shape)
    src = np.repeat(np.arange(shape[ax]), repeats)
    res = zeros_for((shape[ax],) + shape[:ax] + shape[ax + 1:], g)
    np.add.at(res, src, np.moveaxis(g, ax, 0))
    return np.moveaxis(res, 0, ax)


def rollaxis_vjp(g: object, ndim: int, axis: int, start: int) -> np.ndarray:
    """Adjoint of ``np.rollaxis(a, axis, start)``: the inverse permutation of g's axes."""
    # an array whose axis d has length d + 2 shows where rollaxis puts each axis
    perm = np.rollaxis(np.zeros(tuple(range(2, ndim + 2))), axis, start).shape
    order = [p - 2 for p in perm]  # out's axis i is a's axis order[i]
    return np.transpose(g, np.argsort(order))


def trim_zeros_vjp(g: object, filt: object, trim: str, axis: object) -> np.ndarray:
    """Adjoint of ``np.trim_zeros(filt, trim)`` (1-D): g where the kept slice was, 0 outside."""
    filt = np.asarray(filt)
    if axis is not None or filt.ndim != 1:
        unsupported("np.trim_zeros: only 1-D input without axis= is differentiated")
    nz = np.flatnonzero(filt)
    res = np.zeros(filt.shape)
    if len(nz):
        start = int(nz[0]) if "f" in trim.lower() else 0
        res[start:start + np.size(g)] = g
    return res


def unstack_vjp(g: object, shape: tuple, axis: int) -> np.ndarray:
    """Adjoint of ``np.unstack(x, axis=axis)``: the pieces' cotangents stacked back."""
    shape = tuple(shape)
    ax = axis % len(shape)
    piece = shape[:ax] + shape[ax + 1:]
    parts = [np.zeros(piece) if c is None else np.broadcast_to(c, piece) for c in g]
    return np.stack(parts, axis=ax)


def diff_vjp(g: object, a_shape: tuple, n: int, axis: int, prepend: object,
             append: object, which: int) -> object:
    """Adjoint of ``np.diff(a, n, axis, prepend, append)``: a's (which=0), prepend's (1) or
    append's (2).

    One difference d = c[1:] - c[:-1] along the axis has the adjoint c_bar[i] = g[i-1] - g[i]
    (g taken as 0 outside its range); n of them are applied in turn, then c_bar is split
    back into prepend, a and append (a scalar prepend or append gets the sum of its slab).
    """
    a_shape = tuple(a_shape)
    ax = axis % len(a_shape)
    g = np.array(cotangent_array(g))  # a copy: returned as a new array when n is 0
    for _ in range(n):
        shape = list(g.shape)
        shape[ax] += 1
        c = zeros_for(tuple(shape), g)
        lead = (slice(None),) * ax
        c[lead + (slice(1, None),)] += g
        c[lead + (slice(None, -1),)] -= g
        g = c
    p_len = 0 if prepend is None else (1 if np.ndim(prepend) == 0 else np.shape(prepend)[ax])
    lead = (slice(None),) * ax
    a_bar = g[lead + (slice(p_len, p_len + a_shape[ax]),)]

    def slab(part: np.ndarray, value: object) -> object:
        if value is None:
            return None
        if np.ndim(value) == 0:
            return np.sum(part)  # a number broadcast along the slab
        return part

    if which == 0:
        return a_bar
    if which == 1:
        return slab(g[lead + (slice(0, p_len),)], prepend)
    return slab(g[lead + (slice(p_len + a_shape[ax], None),)], append)


def quantile_positions(a: np.ndarray, q: object, axis: object,
                       method: str = "linear") -> tuple[Any, ...]:
    """What np.quantile(a, q, axis, method) interpolates, shared by its vjp and jvp:
    (the reduced axes, where they move to, a with them last, the kept shape, a flattened
    over them, the sort order, the sorted values s, their count n, q as an array and flat,
    and per quantile the two order statistics lo, hi and the weight frac of hi). At
    pos = q (n - 1), as NumPy's methods: 'linear' floor(pos) and the next one, weighted by
    pos's fraction; 'lower' / 'higher' / 'nearest' the one at floor / ceil / around (half to
    even) of pos; 'midpoint' half of floor's and ceil's (one statistic where pos is whole)."""
    nd = a.ndim
    axes = list(range(nd)) if axis is None else [
        ax % nd for ax in (axis if isinstance(axis, (tuple, list)) else (axis,))]
    dest = list(range(nd - len(axes), nd))
    moved = np.moveaxis(a, axes, dest)
    keep = moved.shape[:nd - len(axes)]
    flat = moved.reshape(keep + (-1,))
    order = np.argsort(flat, axis=-1, kind="stable")
    s = np.take_along_axis(flat, order, axis=-1)
    n = s.shape[-1]
    qa = np.asarray(q, dtype=np.float64)
    qf = qa.reshape(-1)
    pos = qf * (n - 1.0)
    lo = np.clip(np.floor(pos).astype(np.intp), 0, n - 1)
    if method == "linear":
        hi = np.clip(lo + 1, 0, n - 1)
        return axes, dest, moved, keep, flat, order, s, n, qa, qf, lo, hi, pos - lo
    if method in ("higher", "nearest"):
        lo = np.clip((np.ceil(pos) if method == "higher" else np.around(pos)).astype(np.intp),
                     0, n - 1)
    hi = np.clip(np.ceil(pos).astype(np.intp), 0, n - 1) if method == "midpoint" else lo
    return axes, dest, moved, keep, flat, order, s, n, qa, qf, lo, hi, np.where(
        hi > lo, 0.5, 0.0)


def quantile_vjp(g: object, a: object, q: object, axis: object, method: str,
                 keepdims: bool, which: int) -> object:
    """Adjoint of ``np.quantile(a, q, axis, method, keepdims)``: a's (which=0) or q's (1),
    for the methods of ``quantile_positions`` (q's is zero but for 'linear').

    The result is s[lo] + (s[hi] - s[lo]) * frac of the sorted values s, at pos = q (n - 1);
    the cotangent goes to the two order statistics it interpolates (at a tie, to the ones
    np.argsort puts there: a subgradient), and to q as (s[hi] - s[lo]) (n - 1).
    """
    if method not in ("linear", "lower", "higher", "nearest", "midpoint"):
        unsupported(f"np.quantile: method={method!r} is not differentiated (only "
                    "'linear', 'lower', 'higher', 'nearest' and 'midpoint')")
    a = np.asarray(a, dtype=np.float64)
    nd = a.ndim
    if (axis is None or nd == 1) and np.ndim(q) == 0 and which == 0 and a.size and \
            method == "linear":
        # the common case, one quantile of all the values: no axis bookkeeping
        flat = a.ravel()
        order = np.argsort(flat, kind="stable")
        pos = float(q) * (flat.size - 1.0)
        lo = min(max(int(np.floor(pos)), 0), flat.size - 1)
        hi = min(lo + 1, flat.size - 1)
        res = np.zeros(flat.size)
        gs = float(np.sum(g))
        res[order[lo]] += gs * (1.0 - (pos - lo))
        res[order[hi]] += gs * (pos - lo)
        return res.reshape(a.shape)
    axes, dest, moved, keep, flat, order, s, n, qa, qf, lo, hi, frac = \
        quantile_positions(a, q, axis, method)
    gr = np.asarray(g, dtype=np.float64).reshape(qa.shape + keep)
    gq = np.moveaxis(gr.reshape((qf.size,) + keep), 0, -1)  # keep + (len(qf),)
    if which == 1:
        # (the other methods are piecewise constant in q)
        slope = (s[..., hi] - s[..., lo]) * (n - 1.0) * (method == "linear")
        q_bar = np.sum(gq * slope, axis=tuple(range(len(keep)))).reshape(qa.shape)
        return q_bar[()] if qa.ndim == 0 else q_bar
    s_bar = np.zeros(s.shape)
    for k in range(qf.size):
        s_bar[..., lo[k]] += gq[..., k] * (1.0 - frac[k])
        s_bar[..., hi[k]] += gq[..., k] * frac[k]
    flat_bar = np.zeros(flat.shape)
    np.put_along_axis(flat_bar, order, s_bar, axis=-1)
    return np.moveaxis(flat_bar.reshape(moved.shape), dest, axes)


def quantile_jvp_vjp(g: object, d: object, a: object, q: object, axis: object, method: str,
                     keepdims: bool, which: int, part: int) -> object:
    """A cotangent (d's for part=0, a's for 1, q's for 2) of forward mode's tangent of
    ``np.quantile``, ``quantile_jvp(d, a, q, axis, method, keepdims, which)``, for second
    derivatives.

    From a's tangent (which=0) the tangent is d interpolated in a's sorted order, linear in d
    (its transpose is the quantile's own adjoint), piecewise constant in a (zero; ties as the
    first derivative routes them) and (ds[hi] - ds[lo]) (n - 1) in q. From q's tangent (1) it
    is (s[hi] - s[lo]) (n - 1) dq: linear in dq, the two order statistics' difference in a,
    piecewise constant in q.
    """
    if method not in ("linear", "lower", "higher", "nearest", "midpoint"):
        unsupported(f"np.quantile: method={method!r} is not differentiated (only "
                    "'linear', 'lower', 'higher', 'nearest' and 'midpoint')")
    a = np.asarray(a, dtype=np.float64)
    axes, dest, moved, keep, flat, order, s, n, qa, qf, lo, hi, frac = \
        quantile_positions(a, q, axis, method)
    linear = 1.0 if method == "linear" else 0.0  # the others are piecewise constant in q
    gr = np.asarray(g, dtype=np.float64).reshape(qa.shape + keep)
    gq = np.moveaxis(gr.reshape((qf.size,) + keep), 0, -1)  # keep + (len(qf),)
    kept = tuple(range(len(keep)))
    if which == 0:
        # quantile_vjp(g, ...)'s general branch, written with a gather (no in-place write
        # into zeros by the sort order): third derivatives read this source again
        s_bar = np.zeros(s.shape)
        for k in range(qf.size):
            s_bar[..., lo[k]] += gq[..., k] * (1.0 - frac[k])
            s_bar[..., hi[k]] += gq[..., k] * frac[k]
        flat_bar = np.take_along_axis(s_bar, np.argsort(order, axis=-1), axis=-1)
        d_bar = unbroadcast(np.moveaxis(flat_bar.reshape(moved.shape), dest, axes),
                            np.shape(d))
        dm = np.moveaxis(np.broadcast_to(np.asarray(d, dtype=np.float64), a.shape), axes, dest)
        ds = np.take_along_axis(dm.reshape(keep + (-1,)), order, axis=-1)
        q_bar = np.sum(gq * (ds[..., hi] - ds[..., lo]) * (n - 1.0) * linear,
                       axis=kept).reshape(qa.shape)
        return (d_bar, np.zeros(a.shape), q_bar[()] if qa.ndim == 0 else q_bar)[part]
    dq = np.broadcast_to(np.asarray(d, dtype=np.float64), qa.shape).reshape(-1) * linear
    slope = (s[..., hi] - s[..., lo]) * (n - 1.0) * linear
    d_bar = np.sum(gq * slope, axis=kept).reshape(qa.shape)
    s_bar = np.zeros(s.shape)
    for k in range(qf.size):
        s_bar[..., hi[k]] += gq[..., k] * dq[k] * (n - 1.0)
        s_bar[..., lo[k]] -= gq[..., k] * dq[k] * (n - 1.0)
    # back to a's order: a gather by the inverse permutation (np.put_along_axis into zeros,
    # the same values, is an in-place write third derivatives could not read again)
    flat_bar = np.take_along_axis(s_bar, np.argsort(order, axis=-1), axis=-1)
    a_bar = np.moveaxis(flat_bar.reshape(moved.shape), dest, axes)
    return (unbroadcast(d_bar, np.shape(d)), a_bar, np.zeros(qa.shape)[()])[part]


def quantile_jvp_jvp(e: object, t: object, a: object, q: object, axis: object, method: str,
                     keepdims: bool, which: int, part: int) -> object:
    """The tangent of forward mode's tangent of ``np.quantile``, ``quantile_jvp(t, a, q, axis,
    method, keepdims, which)``, from a's tangent ``e`` (part=1) or q's (2); t's is
    ``quantile_jvp`` again (it is linear in t). Nonzero only for a's with which=1,
    (e[hi] - e[lo]) (n - 1) t, and q's with which=0, (t[hi] - t[lo]) (n - 1) e, both sorted
    in a's order; the others are piecewise constant."""
    if method not in ("linear", "lower", "higher", "nearest", "midpoint"):
        unsupported(f"np.quantile: method={method!r} is not differentiated (only "
                    "'linear', 'lower', 'higher', 'nearest' and 'midpoint')")
    a = np.asarray(a, dtype=np.float64)
    axes, dest, moved, keep, flat, order, s, n, qa, qf, lo, hi, frac = \
        quantile_positions(a, q, axis, method)
    linear = 1.0 if method == "linear" else 0.0  # the others are piecewise constant in q
    if (part == 1) != (which == 1):
        res = np.zeros(keep + (qf.size,))
    else:
        values, dq = (e, t) if part == 1 else (t, e)
        vm = np.moveaxis(np.broadcast_to(np.asarray(values, dtype=np.float64), a.shape), axes,
                         dest)
        vs = np.take_along_axis(vm.reshape(keep + (-1,)), order, axis=-1)
        dq = np.broadcast_to(np.asarray(dq, dtype=np.float64), qa.shape).reshape(-1)
        res = (vs[..., hi] - vs[..., lo]) * (n - 1.0) * dq * linear
    res = np.moveaxis(res, -1, 0).reshape(qa.shape + keep)
    if keepdims:
        res = res.reshape(qa.shape + tuple(1 if i in axes else a.shape[i]
                                           for i in range(a.ndim)))
    return res[()] if res.ndim == 0 else res


def percentile_vjp(g: object, a: object, q: object, axis: object, method: str,
                   keepdims: bool, which: int) -> object:
    """Adjoint of ``np.percentile``: ``quantile_vjp`` at q / 100."""
    res = quantile_vjp(g, a, np.asarray(q, dtype=np.float64) / 100.0, axis, method, keepdims,
                       which)
    return res / 100.0 if which == 1 else res
