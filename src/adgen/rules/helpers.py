"""Helpers that rule templates call when an adjoint needs more than one expression.

Generated code imports these by name (``adgen.runtime`` star-imports this module), and
standalone output (``adgen FILE -o OUT``) copies their source into the module it writes. So
every helper is a top-level function that uses only ``np``, builtins and the other helpers:
no other imports at module level, and annotations that evaluate with numpy and builtins alone.

Conventions:
- ``g`` is the cotangent of the primal's output; a helper returns the cotangent of one input
  (or a tuple of them, in argument order, where the primal takes a sequence of operands).
- A cotangent has its input's shape; a float input gets a numpy float or a 0-d array.
- Where an adjoint is not implemented, the helper raises ``adgen.errors.RuleError`` (through
  :func:`unsupported`) rather than return something wrong.
- Ties in max/min are split evenly between the tied entries, as JAX does: the gradient of
  ``max(x, x)`` gives each argument half, and ``np.max`` of an array with k tied maxima gives
  each of them ``g / k``. Any convex combination is a valid subgradient; the even split is the
  one that is symmetric in its arguments.
"""

import numpy as np

__all__ = [
    "arange_step_vjp",
    "balanced_eq",
    "cholesky_vjp",
    "clip_above",
    "clip_below",
    "clip_inside",
    "concatenate_vjp",
    "cumsum_vjp",
    "det_vjp",
    "diag_vjp",
    "diagonal_vjp",
    "dot_vjp_a",
    "dot_vjp_b",
    "einsum_vjp",
    "expand_reduced",
    "getitem_vjp",
    "hstack_vjp",
    "inner_vjp_a",
    "inner_vjp_b",
    "inverse_axes",
    "item_vjp",
    "linspace_weights",
    "matmul_vjp_a",
    "matmul_vjp_b",
    "matrix_transpose",
    "max_vjp",
    "mean_vjp",
    "ndarray_astype",
    "ndarray_flatten",
    "ndarray_item",
    "norm_vjp",
    "prod_vjp",
    "solve_vjp_a",
    "solve_vjp_b",
    "sort_vjp",
    "sum_vjp",
    "tensordot_vjp_a",
    "tensordot_vjp_b",
    "trace_vjp",
    "unbroadcast",
    "unsupported",
    "var_vjp",
    "vstack_vjp",
    "xlogy",
    "zeros_tree",
]


# --------------------------------------------------------------------------------------------
# Errors and structure


def unsupported(message: str) -> None:
    """Raises ``adgen.errors.RuleError`` (NotImplementedError in a module without adgen).

    Raises:
        RuleError: always.
    """
    try:
        from adgen.errors import RuleError
    except ImportError:  # a standalone module run where adgen is not installed
        raise NotImplementedError(message) from None
    raise RuleError(message)


def zeros_tree(x: object) -> object:
    """The zero cotangent of ``x``'s structure: zeros for arrays and numbers, recursively.

    Lists, tuples and dicts give containers of the same structure; values with no float
    content (strings, None) give None. Reads shapes, lengths and keys, never the numbers.
    """
    if isinstance(x, np.ndarray):
        return np.zeros(x.shape)
    if isinstance(x, (bool, np.bool_)) or x is None or isinstance(x, (str, bytes)):
        return None
    if isinstance(x, (int, float, np.number)):
        return np.float64(0.0)
    if isinstance(x, list):
        return [zeros_tree(v) for v in x]
    if isinstance(x, tuple):
        return tuple(zeros_tree(v) for v in x)
    if isinstance(x, dict):
        return {k: zeros_tree(v) for k, v in x.items()}
    return None


# --------------------------------------------------------------------------------------------
# Broadcasting and reductions


def unbroadcast(g: object, shape: tuple) -> object:
    """Sums the cotangent ``g`` down to ``shape``, undoing numpy broadcasting.

    Leading axes that broadcasting added are summed away, and axes where ``shape`` has 1 are
    summed with keepdims. A ``g`` smaller than ``shape`` (a scalar standing for a constant
    cotangent) is broadcast up. For ``shape == ()`` the result is a numpy float.

    Raises:
        RuleError: when ``g`` is a list or tuple (``+`` and ``*`` on Python sequences
            concatenate and repeat; that is not broadcasting arithmetic).
    """
    shape = tuple(shape)
    if isinstance(g, (list, tuple)):
        unsupported("arithmetic operators on Python lists/tuples (concatenation, repetition) "
                    "are not differentiable here; build arrays, or use np.concatenate/np.tile")
    if np.shape(g) == shape:
        return g
    g = np.asarray(g)
    lead = g.ndim - len(shape)
    if lead > 0:
        g = np.sum(g, axis=tuple(range(lead)))
    if g.ndim == len(shape):
        ones = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
        if ones:
            g = np.sum(g, axis=ones, keepdims=True)
    if g.shape != shape:
        # A cotangent given with fewer axes stands for its broadcast.
        g = np.broadcast_to(g, shape).copy()
    return g[()] if shape == () else g


def _axes(axis: object, ndim: int) -> tuple:
    """``axis`` (None, int or tuple) as a sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(sorted(int(a) % ndim for a in axis)) if ndim else ()
    return (int(axis) % ndim,) if ndim else ()


def expand_reduced(g: object, shape: tuple, axis: object, keepdims: bool) -> np.ndarray:
    """The reduction output ``g`` with the reduced axes of ``shape`` put back as size 1."""
    g = np.asarray(g)
    if keepdims:
        return g
    return np.reshape(g, tuple(1 if i in _axes(axis, len(shape)) else n
                               for i, n in enumerate(shape)))


def sum_vjp(g: object, shape: tuple, axis: object, keepdims: bool) -> object:
    """Adjoint of ``np.sum(a, axis, keepdims)``: ``g`` broadcast back over the summed axes."""
    shape = tuple(shape)
    out = np.broadcast_to(expand_reduced(g, shape, axis, keepdims), shape).copy()
    return out[()] if shape == () else out


def mean_vjp(g: object, shape: tuple, axis: object, keepdims: bool) -> object:
    """Adjoint of ``np.mean(a, axis, keepdims)``: the sum adjoint over the count averaged."""
    shape = tuple(shape)
    count = 1
    for i in _axes(axis, len(shape)):
        count *= shape[i]
    return sum_vjp(g, shape, axis, keepdims) / count


def max_vjp(g: object, out: object, a: object, axis: object, keepdims: bool) -> object:
    """Adjoint of ``np.max``/``np.min``: ``g`` split evenly between the tied extrema."""
    a = np.asarray(a)
    extremum = expand_reduced(out, a.shape, axis, keepdims)
    hits = (a == extremum)
    count = np.sum(hits, axis=_axes(axis, a.ndim), keepdims=True)
    res = expand_reduced(g, a.shape, axis, keepdims) * hits / count
    return res[()] if a.ndim == 0 else res


def prod_vjp(g: object, a: object, axis: object, keepdims: bool) -> object:
    """Adjoint of ``np.prod``: ``g`` times the product of the other entries (zeros are fine).

    The product of the others is a left times a right exclusive cumulative product, so no
    division by an entry is needed.
    """
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 0:
        return np.float64(g)
    axes = _axes(axis, a.ndim)
    kept = [i for i in range(a.ndim) if i not in axes]
    perm = kept + list(axes)
    kept_shape = tuple(a.shape[i] for i in kept)
    flat = np.reshape(np.transpose(a, perm), kept_shape + (-1,))
    ones = np.ones(kept_shape + (1,))
    left = np.cumprod(np.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
    right = np.flip(np.cumprod(np.concatenate([ones, np.flip(flat, -1)[..., :-1]], axis=-1),
                               axis=-1), -1)
    gk = np.reshape(np.asarray(g), kept_shape + (1,))
    res = np.reshape(gk * left * right, kept_shape + tuple(a.shape[i] for i in axes))
    return np.transpose(res, np.argsort(perm))


def var_vjp(g: object, a: object, axis: object, ddof: object, keepdims: bool) -> object:
    """Adjoint of ``np.var(a, axis, ddof, keepdims)``: ``2 g (a - mean) / (N - ddof)``."""
    a = np.asarray(a, dtype=np.float64)
    axes = _axes(axis, a.ndim)
    count = 1
    for i in axes:
        count *= a.shape[i]
    centered = a - np.mean(a, axis=axes, keepdims=True)
    res = expand_reduced(g, a.shape, axis, keepdims) * 2.0 * centered / (count - ddof)
    return res[()] if a.ndim == 0 else res


def cumsum_vjp(g: object, shape: tuple, axis: object) -> np.ndarray:
    """Adjoint of ``np.cumsum(a, axis)``: the reversed cumulative sum of ``g``."""
    if axis is None:
        flat = np.flip(np.cumsum(np.flip(np.ravel(g))))
        return np.reshape(flat, shape)
    return np.flip(np.cumsum(np.flip(g, axis), axis), axis)


def sort_vjp(g: object, a: object, axis: object) -> np.ndarray:
    """Adjoint of ``np.sort(a, axis)``: ``g`` scattered back to where each value came from."""
    a = np.asarray(a)
    if axis is None:
        order = np.argsort(np.ravel(a), kind="stable")
        res = np.zeros(a.size)
        res[order] = np.ravel(g)
        return np.reshape(res, a.shape)
    order = np.argsort(a, axis=axis, kind="stable")
    res = np.zeros(a.shape)
    np.put_along_axis(res, order, np.asarray(g), axis=axis)
    return res


def balanced_eq(x: object, z: object, y: object) -> object:
    """1 where ``x == z != y``, 0.5 where ``x == z == y``, else 0 (JAX's tie rule).

    For ``z = max(x, y)`` this is the share of the cotangent that goes to ``x``.
    """
    return np.where(np.equal(x, z), np.where(np.equal(y, z), 0.5, 1.0), 0.0)


def xlogy(x: object, y: object) -> object:
    """``x * log(y)``, defined as 0 where ``x == 0`` (the exponent adjoint of ``y ** b``)."""
    x = np.asarray(x, dtype=np.float64)
    safe = np.where(x == 0, 1.0, y)
    res = np.where(x == 0, 0.0, x * np.log(safe))
    return res[()] if res.ndim == 0 else res


def clip_inside(a: object, a_min: object, a_max: object) -> object:
    """Where ``np.clip(a, a_min, a_max)`` passes ``a`` through (bounds included)."""
    lo = True if a_min is None else np.greater_equal(a, a_min)
    hi = True if a_max is None else np.less_equal(a, a_max)
    return np.logical_and(lo, hi)


def clip_below(a: object, a_min: object, a_max: object) -> object:
    """Where ``np.clip`` returns ``a_min`` (below it, and ``a_min`` is not above ``a_max``)."""
    if a_min is None:
        return np.zeros(np.shape(a), dtype=bool)
    ok = True if a_max is None else np.less_equal(a_min, a_max)
    return np.logical_and(np.less(a, a_min), ok)


def clip_above(a: object, a_min: object, a_max: object) -> object:
    """Where ``np.clip`` returns ``a_max``: ``max(a, a_min) > a_max``."""
    if a_max is None:
        return np.zeros(np.shape(a), dtype=bool)
    floor = a if a_min is None else np.maximum(a, a_min)
    return np.greater(floor, a_max)


# --------------------------------------------------------------------------------------------
# Products


def matrix_transpose(x: object) -> np.ndarray:
    """Swaps the last two axes (the transpose of each matrix in a stack)."""
    return np.swapaxes(x, -1, -2)


def matmul_vjp_a(g: object, b: object, a_shape: tuple) -> object:
    """Adjoint of ``a`` in ``a @ b`` (1-D operands and stacks of matrices included)."""
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


def _tensordot_axes(axes: object, a_ndim: int) -> tuple:
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
    ax_a, ax_b = _tensordot_axes(axes, a_ndim)
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
    ax_a, ax_b = _tensordot_axes(axes, a.ndim)
    ax_a = [i % a.ndim for i in ax_a]
    ax_b = [i % b_ndim for i in ax_b]
    free_a = [i for i in range(a.ndim) if i not in ax_a]
    free_b = [i for i in range(b_ndim) if i not in ax_b]
    res = np.tensordot(a, g, axes=(free_a, list(range(len(free_a)))))
    order = [ax_b[k] for k in np.argsort(ax_a)] + free_b
    return np.transpose(res, np.argsort(order))


def _einsum_spec(subscripts: str, ndims: list) -> tuple:
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
    labels, output = _einsum_spec(subscripts, [op.ndim for op in ops])
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
            full = np.zeros(op.shape)
            np.einsum(mine + "->" + unique, full)[...] = res
            res = full
        grads.append(res)
    return tuple(grads)


# --------------------------------------------------------------------------------------------
# Linear algebra


def solve_vjp_b(g: object, a: object, b_shape: tuple) -> object:
    """Adjoint of ``b`` in ``x = np.linalg.solve(a, b)``: ``solve(a^T, g)``."""
    a_t = matrix_transpose(a)
    g = np.asarray(g)
    if len(b_shape) == 1:
        res = np.linalg.solve(a_t, g[..., None])[..., 0]
    else:
        res = np.linalg.solve(a_t, g)
    return unbroadcast(res, b_shape)


def solve_vjp_a(g: object, out: object, a: object, b_ndim: int) -> object:
    """Adjoint of ``a`` in ``x = np.linalg.solve(a, b)``: ``-solve(a^T, g) x^T``."""
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


def det_vjp(g: object, out: object, a: object) -> np.ndarray:
    """Adjoint of ``np.linalg.det``: ``g det(a) inv(a)^T`` (raises for singular ``a``)."""
    return np.expand_dims(np.asarray(g) * out, (-1, -2)) * matrix_transpose(np.linalg.inv(a))


def cholesky_vjp(g: object, out: object) -> np.ndarray:
    """Adjoint of ``L = np.linalg.cholesky(a)``, for the lower triangle numpy reads.

    ``np.linalg.cholesky`` reads only the lower triangle of ``a``, so the exact gradient of
    the function numpy computes is lower triangular: with ``S`` the symmetric adjoint
    (Murray 2016, as in autograd and JAX), it is ``tril(S + S^T) - diag(S)``. Against a
    symmetric perturbation it agrees with ``S`` (what JAX and PyTorch return).
    """
    ell = np.asarray(out)
    g = np.asarray(g)
    n = ell.shape[-1]
    phi = np.tril(matrix_transpose(ell) @ g)
    phi = phi - 0.5 * np.eye(n) * phi
    # S = L^{-T} phi L^{-1}, the symmetric part of which is the adjoint of a symmetric a.
    ell_t = matrix_transpose(ell)
    s = np.linalg.solve(ell_t, matrix_transpose(np.linalg.solve(ell_t, matrix_transpose(phi))))
    sym = 0.5 * (s + matrix_transpose(s))
    return np.tril(2.0 * sym) - np.eye(n) * sym


def norm_vjp(g: object, out: object, x: object, ord: object, axis: object,
             keepdims: bool) -> object:
    """Adjoint of ``np.linalg.norm(x, ord, axis, keepdims)`` for the norms it supports.

    Supported: vector norms (``ord`` None, any p >= 1 or finite p, inf, -inf, 0) over the
    whole vector or one axis, and the Frobenius norm of a matrix or of the whole array.
    Where a norm is zero the 2-norm adjoint is 0 (a subgradient), not nan.

    Raises:
        RuleError: for the matrix norms ``'nuc'``, 2, -2, 1, -1, inf and -inf.
    """
    x = np.asarray(x, dtype=np.float64)
    axes = _axes(axis, x.ndim)
    if axis is None:
        # numpy: ord=None is the 2-norm of the flattened array; otherwise 1-D is a vector.
        matrix = ord is not None and x.ndim == 2
    else:
        matrix = isinstance(axis, (tuple, list)) and len(axis) == 2
    if matrix and ord not in (None, "fro"):
        unsupported(f"np.linalg.norm: the gradient of the matrix norm ord={ord!r} is not "
                    "implemented (only the Frobenius norm and vector norms are)")
    ge = expand_reduced(g, x.shape, axis, keepdims)
    n = expand_reduced(out, x.shape, axis, keepdims)
    if matrix or ord is None or ord == 2:
        res = ge * np.where(n == 0, 0.0, x / np.where(n == 0, 1.0, n))
    elif ord == 1:
        res = ge * np.sign(x)
    elif ord == 0:
        res = np.zeros(x.shape)
    elif ord in (np.inf, -np.inf):
        hits = np.abs(x) == n
        res = ge * np.sign(x) * hits / np.sum(hits, axis=axes, keepdims=True)
    elif isinstance(ord, (int, float, np.integer, np.floating)):
        p = float(ord)
        res = ge * np.sign(x) * np.abs(x) ** (p - 1.0) * n ** (1.0 - p)
    else:
        unsupported(f"np.linalg.norm: the gradient for ord={ord!r} is not implemented")
    return res[()] if x.ndim == 0 else res


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
    full = np.zeros(tuple(rest) + (shape[i1], shape[i2]))
    k = np.arange(np.shape(g)[-1])
    full[..., k + max(-offset, 0), k + max(offset, 0)] = g
    return np.moveaxis(full, (-2, -1), (i1, i2))


def diag_vjp(g: object, shape: tuple, k: int) -> np.ndarray:
    """Adjoint of ``np.diag(v, k)``: the k-th diagonal of ``g`` for a vector ``v``, or ``g``
    written onto the k-th diagonal of a matrix ``v``."""
    if len(shape) == 1:
        return np.diagonal(g, k).copy()
    return diagonal_vjp(g, shape, k, 0, 1)


# --------------------------------------------------------------------------------------------
# Shapes, joining, indexing


def inverse_axes(axes: object) -> object:
    """The permutation that undoes ``np.transpose(x, axes)`` (None undoes None)."""
    if axes is None:
        return None
    axes = [int(a) % len(axes) for a in axes]
    return tuple(int(i) for i in np.argsort(axes))


def _split_like(g: object, shapes: list, axis: int, pieces: list) -> list:
    """Splits ``g`` along ``axis`` into the sizes of ``pieces``, reshaped to ``shapes``."""
    bounds = np.cumsum([p[axis] for p in pieces])[:-1]
    return [np.reshape(part, s) for part, s in zip(np.split(g, bounds, axis=axis), shapes)]


def concatenate_vjp(g: object, shapes: list, axis: object) -> list:
    """Adjoint of ``np.concatenate(arrays, axis)``: ``g`` split back into the arrays' shapes."""
    shapes = [tuple(s) for s in shapes]
    if axis is None:
        return _split_like(np.ravel(g), shapes, 0, [(int(np.prod(s)),) for s in shapes])
    return _split_like(g, shapes, axis % np.ndim(g), shapes)


def hstack_vjp(g: object, shapes: list) -> list:
    """Adjoint of ``np.hstack``: split along axis 1, or axis 0 for 1-D (and 0-d) inputs."""
    shapes = [tuple(s) for s in shapes]
    pieces = [s if len(s) else (1,) for s in shapes]
    axis = 0 if len(pieces[0]) == 1 else 1
    return _split_like(g, shapes, axis, pieces)


def vstack_vjp(g: object, shapes: list) -> list:
    """Adjoint of ``np.vstack``: split along axis 0 of the inputs made at least 2-D."""
    shapes = [tuple(s) for s in shapes]
    pieces = [(1, 1) if len(s) == 0 else (1,) + s if len(s) == 1 else s for s in shapes]
    return _split_like(g, shapes, 0, pieces)


def _is_basic_index(index: object) -> bool:
    """True when ``index`` selects each element at most once (no integer arrays or lists)."""
    parts = index if isinstance(index, tuple) else (index,)
    for p in parts:
        if isinstance(p, (list, np.ndarray)) and np.asarray(p).dtype != np.bool_:
            return False
    return True


def getitem_vjp(g: object, zeros: object, index: object) -> object:
    """Adjoint of ``x[index]``: ``g`` added into ``zeros``, the zero cotangent of ``x``.

    Arrays take any numpy index; an integer-array index that repeats a position adds all its
    cotangents there (``np.add.at``). Lists and tuples take an int or a slice, dicts a key;
    the other entries keep their zeros.
    """
    if isinstance(zeros, np.ndarray):
        if _is_basic_index(index):
            zeros[index] = g
        else:
            np.add.at(zeros, index, g)
        return zeros
    if isinstance(zeros, dict):
        res = dict(zeros)
        res[index] = g
        return res
    if isinstance(zeros, (list, tuple)):
        res = list(zeros)
        if isinstance(index, slice):
            for pos, gi in zip(range(*index.indices(len(res))), g):
                res[pos] = gi
        else:
            res[index] = g
        return tuple(res) if isinstance(zeros, tuple) else res
    unsupported(f"getitem: cannot differentiate indexing into {type(zeros).__name__}")


def ndarray_item(a: object, *args: object) -> object:
    """``a.item(*args)``: the primal the ``.item()`` method maps to."""
    return a.item(*args)


def item_vjp(g: object, shape: tuple, args: tuple) -> np.ndarray:
    """Adjoint of ``a.item(*args)``: ``g`` at the chosen element (flat or multi-index)."""
    shape = tuple(shape)
    res = np.zeros(shape)
    if len(args) == 0:
        res[...] = g
    elif len(args) == 1:
        res[np.unravel_index(args[0], shape)] = g
    else:
        res[tuple(args)] = g
    return res


def ndarray_flatten(a: object, order: str = "C") -> np.ndarray:
    """``a.flatten(order)``: always a copy (unlike ``np.ravel``)."""
    return a.flatten(order)


def ndarray_astype(a: object, dtype: object) -> object:
    """``a.astype(dtype)``: the primal the ``.astype()`` method maps to."""
    return a.astype(dtype)


def linspace_weights(num: int, endpoint: bool) -> np.ndarray:
    """``t`` with ``np.linspace(start, stop, num, endpoint) == start + (stop - start) * t``."""
    div = num - 1 if endpoint else num
    if div <= 0:
        return np.zeros(num)
    return np.arange(num) / div


def arange_step_vjp(g: object, step: object) -> object:
    """Adjoint of ``step`` in ``np.arange(start, stop, step)``: ``sum(i * g[i])``."""
    if step is None:
        return np.float64(0.0)
    return np.sum(np.asarray(g) * np.arange(np.size(g)))
