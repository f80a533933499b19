"""Rule helpers: products (matmul, dot, tensordot, einsum) and linear algebra.

Part of :mod:`adgen.rules.helpers` (see its docstring for the conventions every helper keeps).
The adjoints are the standard ones (Giles 2008, "Collected matrix derivative results";
Murray 2016 for Cholesky).
"""

import numpy as np

from adgen.rules.helpers_core import (
    expand_reduced,
    reduced_axes,
    unbroadcast,
    unsupported,
    zeros_for,
)

__all__ = [
    "cholesky_vjp",
    "det_vjp",
    "diag_vjp",
    "diagonal_vjp",
    "dot_vjp_a",
    "dot_vjp_b",
    "einsum_spec",
    "einsum_vjp",
    "inner_vjp_a",
    "inner_vjp_b",
    "is_sparse",
    "lower_inverse",
    "matmul_vjp_a",
    "matmul_vjp_b",
    "matrix_norm_vjp",
    "matrix_transpose",
    "nonzero_norm",
    "nonzero_norm_vjp",
    "norm_vjp",
    "shared_inverse",
    "slogdet_vjp",
    "solve_vjp_a",
    "solve_vjp_b",
    "tensordot_axes",
    "tensordot_vjp_a",
    "tensordot_vjp_b",
    "trace_vjp",
]


# --------------------------------------------------------------------------------------------
# Products


def matrix_transpose(x: object) -> np.ndarray:
    """Swaps the last two axes (the transpose of each matrix in a stack)."""
    if type(x) is np.ndarray and x.ndim == 2:
        return x.T  # a matrix (the common case): without np.swapaxes' dispatch
    return np.swapaxes(x, -1, -2)


def is_sparse(x: object) -> bool:
    """Whether ``x`` is a scipy.sparse matrix or array (told by its methods: scipy is not
    imported), which computes ``@`` itself and which ``np.asarray`` does not convert."""
    return not isinstance(x, np.ndarray) and hasattr(x, "tocsr") and hasattr(x, "nnz")


def matmul_vjp_a(g: object, b: object, a_shape: tuple) -> object:
    """Adjoint of ``a`` in ``a @ b`` (1-D operands and stacks of matrices included)."""
    if type(b) is np.ndarray and type(g) is np.ndarray and len(a_shape) == 2:
        if b.ndim == 1 and g.ndim == 1:
            # matrix @ vector: the outer product (not through BLAS, np.dot(g[:, None],
            # b[None, :]): it skips zeros, 0 * inf is 0 there, and signs of zeros differ)
            return g[:, None] * b
        if b.ndim == 2 and g.ndim == 2:
            return g @ b.T  # matrix @ matrix: nothing broadcast
    if type(b) is np.ndarray and type(g) is np.ndarray and len(a_shape) == 1 and \
            b.ndim == 2 and g.ndim == 1:
        return b @ g  # vector @ matrix (a row times the rows below it, as trmm does)
    if is_sparse(b):  # a sparse constant (a Laplacian): its product with g is an ndarray
        return unbroadcast(np.asarray(g @ b.T), a_shape)
    b = np.asarray(b)
    g = np.asarray(g)
    if len(a_shape) == 1 and b.ndim == 1:
        return g * b
    if b.ndim == 1:
        res = np.expand_dims(g, -1) * b
    elif len(a_shape) == 1:
        res = (b @ np.expand_dims(g, -1))[..., 0]
    else:
        res = g @ matrix_transpose(b)
    return unbroadcast(res, a_shape)


def matmul_vjp_b(g: object, a: object, b_shape: tuple) -> object:
    """Adjoint of ``b`` in ``a @ b`` (1-D operands and stacks of matrices included)."""
    if type(a) is np.ndarray and type(g) is np.ndarray and a.ndim == 2:
        if g.ndim == 1 and len(b_shape) == 1:
            return g @ a  # matrix @ vector: the transposed product
        if g.ndim == 2 and len(b_shape) == 2:
            return a.T @ g  # matrix @ matrix: nothing broadcast
    if type(a) is np.ndarray and type(g) is np.ndarray and a.ndim == 1 and g.ndim == 1 and \
            len(b_shape) == 2:
        return a[:, None] * g  # vector @ matrix: the outer product
    if is_sparse(a):
        return unbroadcast(np.asarray(a.T @ g), b_shape)
    a = np.asarray(a)
    g = np.asarray(g)
    if a.ndim == 1 and len(b_shape) == 1:
        return g * a
    if a.ndim == 1:
        res = np.expand_dims(a, -1) * np.expand_dims(g, -2)
    elif len(b_shape) == 1:
        res = (matrix_transpose(a) @ np.expand_dims(g, -1))[..., 0]
    else:
        res = matrix_transpose(a) @ g
    return unbroadcast(res, b_shape)


def dot_vjp_a(g: object, b: object, a_shape: tuple) -> object:
    """Adjoint of ``a`` in ``np.dot(a, b)``, for every combination of dimensions."""
    if is_sparse(b):  # S.dot(v) of a sparse constant: a matrix product
        return matmul_vjp_a(g, b, a_shape)
    b = np.asarray(b)
    g = np.asarray(g)
    a_nd = len(a_shape)
    if a_nd == 0 or b.ndim == 0:
        return unbroadcast(g * b, a_shape)
    if b.ndim == 1:
        return np.multiply.outer(g, b)
    free_b = [i for i in range(b.ndim) if i != b.ndim - 2]
    return np.tensordot(g, b, axes=(list(range(a_nd - 1, g.ndim)), free_b))


def dot_vjp_b(g: object, a: object, b_shape: tuple) -> object:
    """Adjoint of ``b`` in ``np.dot(a, b)``, for every combination of dimensions."""
    if is_sparse(a):
        return matmul_vjp_b(g, a, b_shape)
    a = np.asarray(a)
    g = np.asarray(g)
    b_nd = len(b_shape)
    if a.ndim == 0 or b_nd == 0:
        return unbroadcast(g * a, b_shape)
    lead = list(range(a.ndim - 1))
    res = np.tensordot(a, g, axes=(lead, lead))
    if b_nd == 1:
        return res
    return np.moveaxis(res, 0, b_nd - 2)


def inner_vjp_a(g: object, b: object, a_shape: tuple) -> object:
    """Adjoint of ``a`` in ``np.inner(a, b)`` (sum over the last axes of both)."""
    b = np.asarray(b)
    g = np.asarray(g)
    if len(a_shape) == 0 or b.ndim == 0:
        return unbroadcast(g * b, a_shape)
    nb = b.ndim - 1
    return np.tensordot(g, b, axes=(list(range(g.ndim - nb, g.ndim)), list(range(nb))))


def inner_vjp_b(g: object, a: object, b_shape: tuple) -> object:
    """Adjoint of ``b`` in ``np.inner(a, b)`` (sum over the last axes of both)."""
    a = np.asarray(a)
    g = np.asarray(g)
    if a.ndim == 0 or len(b_shape) == 0:
        return unbroadcast(g * a, b_shape)
    na = a.ndim - 1
    return np.tensordot(g, a, axes=(list(range(na)), list(range(na))))


def tensordot_axes(axes: object, a_ndim: int) -> tuple:
    """``np.tensordot``'s ``axes`` as two lists of non-negative contracted axes."""
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        return list(range(a_ndim - n, a_ndim)), list(range(n))
    ax_a, ax_b = axes
    ax_a = [ax_a] if isinstance(ax_a, (int, np.integer)) else list(ax_a)
    ax_b = [ax_b] if isinstance(ax_b, (int, np.integer)) else list(ax_b)
    return ax_a, ax_b


def tensordot_vjp_a(g: object, b: object, a_ndim: int, axes: object) -> np.ndarray:
    """Adjoint of ``a`` in ``np.tensordot(a, b, axes)``."""
    b = np.asarray(b)
    ax_a, ax_b = tensordot_axes(axes, a_ndim)
    ax_a = [i % a_ndim for i in ax_a]
    ax_b = [i % b.ndim for i in ax_b]
    free_a = [i for i in range(a_ndim) if i not in ax_a]
    free_b = [i for i in range(b.ndim) if i not in ax_b]
    res = np.tensordot(g, b, axes=(list(range(len(free_a), np.ndim(g))), free_b))
    # res holds a's free axes, then a's contracted axes in the order b holds their partners.
    order = free_a + [ax_a[k] for k in np.argsort(ax_b)]
    return np.transpose(res, np.argsort(order))


def tensordot_vjp_b(g: object, a: object, b_ndim: int, axes: object) -> np.ndarray:
    """Adjoint of ``b`` in ``np.tensordot(a, b, axes)``."""
    a = np.asarray(a)
    ax_a, ax_b = tensordot_axes(axes, a.ndim)
    ax_a = [i % a.ndim for i in ax_a]
    ax_b = [i % b_ndim for i in ax_b]
    free_a = [i for i in range(a.ndim) if i not in ax_a]
    free_b = [i for i in range(b_ndim) if i not in ax_b]
    res = np.tensordot(a, g, axes=(free_a, list(range(len(free_a)))))
    order = [ax_b[k] for k in np.argsort(ax_a)] + free_b
    return np.transpose(res, np.argsort(order))


def einsum_spec(subscripts: str, ndims: list) -> tuple:
    """Parses einsum subscripts into one explicit label string per operand and the output.

    Ellipses become fresh letters (right-aligned, as broadcasting aligns them); an implicit
    output is numpy's: the ellipsis axes, then the labels used once, sorted.
    """
    subs = subscripts.replace(" ", "")
    explicit = "->" in subs
    ins, outs = subs.split("->") if explicit else (subs, None)
    inputs = ins.split(",")
    if len(inputs) != len(ndims):
        unsupported(f"einsum: {subscripts!r} names {len(inputs)} operands, got {len(ndims)}")
    used = set(subs) - set(".,->")
    fresh = [c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in used]
    n_ell = [nd - (len(s) - 3) if "..." in s else 0 for s, nd in zip(inputs, ndims)]
    width = max(n_ell, default=0)
    ell = "".join(fresh[:width])
    labels = [s.replace("...", ell[width - k:]) for s, k in zip(inputs, n_ell)]
    if explicit:
        output = outs.replace("...", ell)
    else:
        counts = {}
        for s in inputs:
            for c in s.replace("...", ""):
                counts[c] = counts.get(c, 0) + 1
        output = ell + "".join(sorted(c for c, k in counts.items() if k == 1))
    return labels, output


def einsum_vjp(g: object, subscripts: object, operands: tuple) -> tuple:
    """Adjoints of every operand of ``np.einsum(subscripts, *operands)``.

    The adjoint of one operand is the einsum of ``g`` with the other operands, into that
    operand's labels. Labels only that operand has (summed away) are contracted against ones;
    a label repeated within the operand (a diagonal) is written back onto the diagonal; axes the
    operand broadcast from size 1 are summed.

    Raises:
        RuleError: for the operand-list form ``np.einsum(a, [0, 1], ...)``.
    """
    if not isinstance(subscripts, str):
        unsupported("einsum: only the subscripts-string form is differentiable, not "
                    "np.einsum(a, [0, 1], b, [1, 2])")
    ops = [np.asarray(op) for op in operands]
    labels, output = einsum_spec(subscripts, [op.ndim for op in ops])
    g = np.asarray(g)
    grads = []
    for i, op in enumerate(ops):
        mine = labels[i]
        others = labels[:i] + labels[i + 1:]
        known = set(output).union(*others) if others else set(output)
        unique = "".join(dict.fromkeys(mine))
        naked = "".join(c for c in unique if c not in known)
        terms = [output] + others
        args = [g] + ops[:i] + ops[i + 1:]
        if naked:
            terms.append(naked)
            args.append(np.ones(tuple(op.shape[mine.index(c)] for c in naked)))
        res = np.einsum(",".join(terms) + "->" + unique, *args)
        # Axes where this operand has size 1 and the others broadcast it: sum them back.
        sizes = tuple(op.shape[mine.index(c)] for c in unique)
        res = unbroadcast(res, sizes) if res.shape != sizes else res
        if len(unique) != len(mine):
            full = zeros_for(op.shape, res)
            np.einsum(mine + "->" + unique, full)[...] = res
            res = full
        grads.append(res)
    return tuple(grads)



# --------------------------------------------------------------------------------------------
# Linear algebra


def solve_vjp_b(g: object, a: object, b_shape: tuple, inverse: object = None) -> object:
    """Adjoint of ``b`` in ``x = np.linalg.solve(a, b)``: ``solve(a^T, g)``.

    ``inverse``: ``np.linalg.inv(a)`` of a matrix ``a``, where the pullback computes it anyway
    (:func:`shared_inverse`): then ``inv(a)^T g``, a product instead of a factorisation."""
    if inverse is not None and np.ndim(a) == 2:
        return unbroadcast(matrix_transpose(inverse) @ np.asarray(g), b_shape)
    if type(a) is np.ndarray and type(g) is np.ndarray and a.ndim == 2 and \
            g.ndim == len(b_shape) and g.shape[0] == a.shape[0] and g.ndim in (1, 2):
        # one system (the common case): its vector or matrix right-hand side as it is
        return np.linalg.solve(a.T, g)
    a_t = matrix_transpose(a)
    g = np.asarray(g)
    if len(b_shape) == 1:
        res = np.linalg.solve(a_t, g[..., None])[..., 0]
    else:
        res = np.linalg.solve(a_t, g)
    return unbroadcast(res, b_shape)


def solve_vjp_a(g: object, out: object, a: object, b_ndim: int,
                inverse: object = None) -> object:
    """Adjoint of ``a`` in ``x = np.linalg.solve(a, b)``: ``-solve(a^T, g) x^T``.

    ``inverse``: ``np.linalg.inv(a)`` of a matrix ``a`` (:func:`shared_inverse`): then
    ``solve(a^T, g)`` is the product ``inv(a)^T g``."""
    if inverse is not None and np.ndim(a) == 2:
        g = np.asarray(g)
        out = np.asarray(out)
        gb = matrix_transpose(inverse) @ g
        if b_ndim == 1:
            res = -gb[..., :, None] * out[..., None, :]
        else:
            res = -gb @ matrix_transpose(out)
        return unbroadcast(res, np.shape(a))
    if type(a) is np.ndarray and type(g) is np.ndarray and type(out) is np.ndarray and \
            a.ndim == 2 and g.ndim == out.ndim == b_ndim and g.shape == out.shape and \
            g.shape[0] == a.shape[0] and b_ndim in (1, 2):
        # one system (the common case): no stacking axes to add and take away
        gb = np.linalg.solve(a.T, g)
        return -np.outer(gb, out) if b_ndim == 1 else -(gb @ out.T)
    a = np.asarray(a)
    g = np.asarray(g)
    out = np.asarray(out)
    a_t = matrix_transpose(a)
    if b_ndim == 1:
        gb = np.linalg.solve(a_t, g[..., None])
        res = -gb * out[..., None, :]
    else:
        gb = np.linalg.solve(a_t, g)
        res = -gb @ matrix_transpose(out)
    return unbroadcast(res, a.shape)


def det_vjp(g: object, out: object, a: object, inverse: object = None) -> np.ndarray:
    """Adjoint of ``np.linalg.det``: ``g det(a) inv(a)^T`` (raises for singular ``a``).

    ``inverse``: ``np.linalg.inv(a)``, computed once for the pullback (:func:`shared_inverse`).
    """
    if inverse is not None:
        return np.expand_dims(np.asarray(g) * out, (-1, -2)) * matrix_transpose(inverse)
    if type(a) is np.ndarray and a.ndim == 2 and np.ndim(g) == 0:
        return (g * out) * np.linalg.inv(a).T  # one matrix: no axes to add
    return np.expand_dims(np.asarray(g) * out, (-1, -2)) * matrix_transpose(np.linalg.inv(a))


def slogdet_vjp(g: object, a: object, inverse: object = None) -> np.ndarray:
    """Adjoint of ``sign, logabsdet = np.linalg.slogdet(a)`` for a real ``a``: the sign is
    piecewise constant, so only ``g[1]`` matters: ``g[1] inv(a)^T``.

    Raises:
        RuleError: for a complex ``a``, whose sign det / |det| moves with it.
    """
    if np.iscomplexobj(a):
        unsupported("np.linalg.slogdet of a complex matrix is not differentiated (the "
                    "gradient of its sign is not implemented); use np.log(np.linalg.det(a))")
    if inverse is None:
        inverse = np.linalg.inv(a)
    return np.expand_dims(g[1], (-1, -2)) * matrix_transpose(inverse)


def shared_inverse(a: object, lower: bool = False) -> np.ndarray:
    """``np.linalg.inv(a)``, computed once in a pullback whose adjoints of the same matrix need
    it (``cholesky_vjp``, ``det_vjp``, ``slogdet_vjp``) and take it for the solves with it
    (``solve_vjp_a``/``_b``): see transforms/shared_inverse.py.

    ``lower``: ``a`` is lower triangular (a Cholesky factor), inverted by blocks
    (:func:`lower_inverse`)."""
    if lower and type(a) is np.ndarray and a.ndim == 2 and a.shape[0] > 48:
        return lower_inverse(a)
    return np.linalg.inv(a)


def lower_inverse(a: np.ndarray) -> np.ndarray:
    """The inverse of a lower triangular matrix, by blocks of 32 rows (LAPACK's ``trtri``
    order): each diagonal block inverted, the rows left of it ``-D^-1 (A[rows, :s] X[:s, :s])``.

    NumPy has no triangular inverse; a general one (LU) does twice to five times the work
    (100 x 100: about 220 us against 100 us here). Only the lower triangle of ``a`` is read
    outside the diagonal blocks, and the result is zero above the diagonal blocks.
    """
    n = a.shape[0]
    out = np.zeros(a.shape, a.dtype)
    for s in range(0, n, 32):
        e = min(s + 32, n)
        d = np.linalg.inv(a[s:e, s:e])
        out[s:e, s:e] = d
        if s:
            out[s:e, :s] = -(d @ (a[s:e, :s] @ out[:s, :s]))
    return out


def cholesky_vjp(g: object, out: object, inverse: object = None) -> np.ndarray:
    """Adjoint of ``L = np.linalg.cholesky(a)``, for the lower triangle numpy reads.

    ``np.linalg.cholesky`` reads only the lower triangle of ``a``, so the exact gradient of
    the function numpy computes is lower triangular: with ``S`` the symmetric adjoint
    (Murray 2016, as in autograd and JAX), it is ``tril(S + S^T) - diag(S)``. Against a
    symmetric perturbation it agrees with ``S`` (what JAX and PyTorch return).

    ``inverse``: ``np.linalg.inv(out)``, where the pullback shares it with the adjoints of
    solves with ``L`` (:func:`shared_inverse`).
    """
    ell = np.asarray(out)
    if ell.dtype.kind == "c":  # a Hermitian matrix's factor needs conjugate transposes
        unsupported("np.linalg.cholesky of a complex (Hermitian) matrix is not "
                    "differentiated; only real symmetric positive definite matrices are")
    g = np.asarray(g)
    n = ell.shape[-1]
    phi = np.tril(matrix_transpose(ell) @ g)
    d = np.arange(n)
    phi[..., d, d] *= 0.5  # a fresh array: its diagonal halved in place (no eye, no copies)
    # S = L^{-T} phi L^{-1}, the symmetric part of which is the adjoint of a symmetric a
    # (one inverse and two products: NumPy has no triangular solve, and two general solves
    # of L^T cost twice the inverse)
    ell_inv = np.linalg.inv(ell) if inverse is None else inverse
    s = matrix_transpose(ell_inv) @ phi @ ell_inv
    # tril(2 sym) - diag(sym) with sym = (s + s^T) / 2: the lower triangle of s + s^T, its
    # diagonal halved (the same values, in two passes over the matrix instead of seven)
    out = np.tril(s + matrix_transpose(s))
    out[..., d, d] *= 0.5
    return out


def norm_vjp(g: object, out: object, x: object, ord: object, axis: object,
             keepdims: bool) -> object:
    """Adjoint of ``np.linalg.norm(x, ord, axis, keepdims)`` for the norms it supports.

    Supported: vector norms (``ord`` None, any p >= 1 or finite p, inf, -inf, 0) over the
    whole vector or one axis, the Frobenius norm of a matrix or of the whole array, and the
    matrix norms of :func:`matrix_norm_vjp`. Where a norm is zero the 2-norm adjoint is 0 (a
    subgradient), not nan.

    Raises:
        RuleError: for an ``ord`` numpy does not define.
    """
    x = np.asarray(x, dtype=np.float64)
    axes = reduced_axes(axis, x.ndim)
    if axis is None:
        # numpy: ord=None is the 2-norm of the flattened array; otherwise 1-D is a vector.
        matrix = ord is not None and x.ndim == 2
    else:
        matrix = isinstance(axis, (tuple, list)) and len(axis) == 2
    if matrix and ord not in (None, "fro"):
        return matrix_norm_vjp(g, x, ord, (0, 1) if axis is None else axis, keepdims)
    ge = expand_reduced(g, x.shape, axis, keepdims)
    n = expand_reduced(out, x.shape, axis, keepdims)
    if matrix or ord is None or ord == 2:
        res = ge * (x / nonzero_norm(n))
    elif ord == 1:
        res = ge * np.sign(x)
    elif ord == 0:
        res = np.zeros(x.shape)
    elif ord in (np.inf, -np.inf):
        hits = np.abs(x) == n
        res = ge * np.sign(x) * hits / np.sum(hits, axis=axes, keepdims=True)
    elif isinstance(ord, (int, float, np.integer, np.floating)):
        p = float(ord)
        res = ge * np.sign(x) * np.abs(x) ** (p - 1.0) * nonzero_norm(n) ** (1.0 - p)
    else:
        unsupported(f"np.linalg.norm: the gradient for ord={ord!r} is not implemented")
    return res[()] if x.ndim == 0 else res


def nonzero_norm(n: object) -> object:
    """The norm ``n``, infinite where it is zero: ``x / nonzero_norm(n)`` is ``x / n``, and 0
    where ``n`` is 0 (there ``x`` is 0 too), the subgradient 0 that the adjoint of a norm takes
    at a zero vector. Its derivative (:func:`nonzero_norm_vjp`, second derivatives of
    ``np.linalg.norm``) refuses a zero norm."""
    n = np.asarray(n, dtype=np.float64)
    return np.where(n == 0, np.inf, n)


def nonzero_norm_vjp(g: object, n: object) -> object:
    """Adjoint of :func:`nonzero_norm`: ``g`` where the norm is not zero.

    Raises:
        RuleError: where a norm is zero: the norm is not differentiable at a zero vector, and
            its adjoint there is a choice (0), whose derivative would be a wrong second
            derivative (0 for the Hessian of ``norm(x) ** 2``, which is 2 I).
    """
    if np.any(np.asarray(n) == 0):
        unsupported("np.linalg.norm: second derivatives at a zero vector (a zero norm) are not "
                    "defined: the norm is not differentiable there, and its gradient there is "
                    "a subgradient (0); for the square of the 2-norm write np.sum(x ** 2), or "
                    "move the point off zero")
    return g


def matrix_norm_vjp(g: object, x: np.ndarray, ord: object, axis: tuple,
                    keepdims: bool) -> np.ndarray:
    """Adjoint of the matrix norms ``ord`` in 1, -1, inf, -inf (column / row sums), 2, -2
    (extreme singular values) and 'nuc' (their sum), over the two axes ``axis``.

    At a tie (two columns with the same sum, a repeated extreme singular value) the cotangent
    is split evenly between the tied terms, as for ``np.max``: a subgradient.
    """
    r, c = axis[0] % x.ndim, axis[1] % x.ndim
    xm = np.moveaxis(x, (r, c), (-2, -1))
    gm = np.asarray(g, dtype=np.float64)
    if keepdims:
        gm = np.squeeze(np.moveaxis(gm, (r, c), (-2, -1)), axis=(-2, -1))
    gm = gm[..., None, None]
    if ord in (1, -1, np.inf, -np.inf):
        along = -2 if ord in (1, -1) else -1  # column sums for 1, row sums for inf
        sums = np.sum(np.abs(xm), axis=along, keepdims=True)
        pick = np.max if ord in (1, np.inf) else np.min
        hits = sums == pick(sums, axis=-1 if along == -2 else -2, keepdims=True)
        share = hits / np.sum(hits, axis=-1 if along == -2 else -2, keepdims=True)
        res = gm * np.sign(xm) * share
    elif ord in (2, -2, "nuc"):
        u, s, vh = np.linalg.svd(xm, full_matrices=False)
        if ord == "nuc":
            weights = (s > 0).astype(np.float64)
        else:
            hits = s == (np.max(s, axis=-1, keepdims=True) if ord == 2 else
                         np.min(s, axis=-1, keepdims=True))
            weights = hits / np.sum(hits, axis=-1, keepdims=True)
        res = gm * ((u * weights[..., None, :]) @ vh)
    else:
        unsupported(f"np.linalg.norm: ord={ord!r} is not a matrix norm")
    return np.moveaxis(res, (-2, -1), (r, c))


def trace_vjp(g: object, shape: tuple, offset: int, axis1: int, axis2: int) -> np.ndarray:
    """Adjoint of ``np.trace(a, offset, axis1, axis2)``: ``g`` on the chosen diagonal."""
    shape = tuple(shape)
    i1, i2 = axis1 % len(shape), axis2 % len(shape)
    n = len(range(max(0, -offset), min(shape[i1], shape[i2] - offset)))
    n = max(n, 0)
    gd = np.broadcast_to(np.expand_dims(np.asarray(g), -1), np.shape(g) + (n,))
    return diagonal_vjp(gd, shape, offset, axis1, axis2)


def diagonal_vjp(g: object, shape: tuple, offset: int, axis1: int, axis2: int) -> np.ndarray:
    """Adjoint of ``np.diagonal(a, offset, axis1, axis2)``: ``g`` written onto the diagonal."""
    shape = tuple(shape)
    i1, i2 = axis1 % len(shape), axis2 % len(shape)
    rest = [n for i, n in enumerate(shape) if i not in (i1, i2)]
    full = zeros_for(tuple(rest) + (shape[i1], shape[i2]), g)
    k = np.arange(np.shape(g)[-1])
    full[..., k + max(-offset, 0), k + max(offset, 0)] = g
    return np.moveaxis(full, (-2, -1), (i1, i2))


def diag_vjp(g: object, shape: tuple, k: int) -> np.ndarray:
    """Adjoint of ``np.diag(v, k)``: the k-th diagonal of ``g`` for a vector ``v``, or ``g``
    written onto the k-th diagonal of a matrix ``v``."""
    if len(shape) == 1:
        return np.diagonal(g, k).copy()
    return diagonal_vjp(g, shape, k, 0, 1)
