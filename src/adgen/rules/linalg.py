"""Rules for products and ``np.linalg``.

Products take any combination of dimensions numpy accepts (1-D operands, stacks of
matrices); the dimension bookkeeping lives in helpers. The linear-algebra adjoints are the
standard ones (Giles 2008, "Collected matrix derivative results"; Murray 2016 for Cholesky).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adgen.rules.helpers import (
    cholesky_vjp,
    det_vjp,
    diag_vjp,
    diagonal_vjp,
    dot_vjp_a,
    dot_vjp_b,
    einsum_vjp,
    inner_vjp_a,
    inner_vjp_b,
    matrix_transpose,
    norm_vjp,
    slogdet_vjp,
    solve_vjp_a,
    solve_vjp_b,
    tensordot_vjp_a,
    tensordot_vjp_b,
    trace_vjp,
)
from adgen.rules.registry import defvjp

# --------------------------------------------------------------------------------------------
# Products


@defvjp(np.dot, "a, b", reads="a, b")
def dot(g: Any, out: Any, a: Any, b: Any) -> Any:
    return dot_vjp_a(g, b, np.shape(a)), dot_vjp_b(g, a, np.shape(b))


@defvjp(np.vdot, "a, b", reads="a, b")
def vdot(g: Any, out: Any, a: Any, b: Any) -> Any:
    # vdot flattens both operands and conjugates the first: sum(conj(a) * b), so a's
    # cotangent is conj(g * b) (the pullback of conj) and b's is g * conj(a).
    return (np.reshape(np.conjugate(g * np.ravel(b)), np.shape(a)),
            np.reshape(g * np.conjugate(np.ravel(a)), np.shape(b)))


@defvjp(np.inner, "a, b", reads="a, b")
def inner(g: Any, out: Any, a: Any, b: Any) -> Any:
    return inner_vjp_a(g, b, np.shape(a)), inner_vjp_b(g, a, np.shape(b))


@defvjp(np.outer, "a, b", reads="a, b")
def outer(g: Any, out: Any, a: Any, b: Any) -> Any:
    # outer flattens both operands: out[i, j] = a.flat[i] * b.flat[j].
    return np.reshape(g @ np.ravel(b), np.shape(a)), np.reshape(np.ravel(a) @ g, np.shape(b))


@defvjp(np.tensordot, "a, b, axes=2", diff="a, b", reads="a, b, axes")
def tensordot(g: Any, out: Any, a: Any, b: Any, axes: Any) -> Any:
    return tensordot_vjp_a(g, b, np.ndim(a), axes), tensordot_vjp_b(g, a, np.ndim(b), axes)


@defvjp(np.einsum, "subscripts, *operands, optimize=False", diff="operands",
        reads="subscripts, operands")
def einsum(g: Any, out: Any, subscripts: Any, operands: Any, optimize: Any) -> Any:
    return einsum_vjp(g, subscripts, operands)


@defvjp(np.trace, "a, offset=0, axis1=0, axis2=1", diff="a",
        reads="offset, axis1, axis2", linear=True)
def trace(g: Any, out: Any, a: Any, offset: Any, axis1: Any, axis2: Any) -> Any:
    return trace_vjp(g, np.shape(a), offset, axis1, axis2)


@defvjp(np.diagonal, "a, offset=0, axis1=0, axis2=1", diff="a",
        reads="offset, axis1, axis2", linear=True, view=True)
def diagonal(g: Any, out: Any, a: Any, offset: Any, axis1: Any, axis2: Any) -> Any:
    return diagonal_vjp(g, np.shape(a), offset, axis1, axis2)


# np.diag of a matrix returns a (read-only) view of its diagonal: a later write to the matrix
# changes it
@defvjp(np.diag, "v, k=0", diff="v", reads="k", linear=True, view=True)
def diag(g: Any, out: Any, v: Any, k: Any) -> Any:
    return diag_vjp(g, np.shape(v), k)


@defvjp(np.tril, "m, k=0", diff="m", reads="k", linear=True)
def tril(g: Any, out: Any, m: Any, k: Any) -> Any:
    return np.tril(g, k)


@defvjp(np.triu, "m, k=0", diff="m", reads="k", linear=True)
def triu(g: Any, out: Any, m: Any, k: Any) -> Any:
    return np.triu(g, k)


# --------------------------------------------------------------------------------------------
# np.linalg


@defvjp(np.linalg.solve, "a, b", reads="a, out")
def solve(g: Any, out: Any, a: Any, b: Any) -> Any:
    # x = solve(a, b): b_bar = solve(a^T, g), a_bar = -b_bar x^T.
    return solve_vjp_a(g, out, a, np.ndim(b)), solve_vjp_b(g, a, np.shape(b))


@defvjp(np.linalg.inv, "a", reads="out")
def inv(g: Any, out: Any, a: Any) -> Any:
    return -matrix_transpose(out) @ g @ matrix_transpose(out)


@defvjp(np.linalg.det, "a", reads="a, out")
def det(g: Any, out: Any, a: Any) -> Any:
    return det_vjp(g, out, a)


@defvjp(np.linalg.slogdet, "a", reads="a")
def slogdet(g: Any, out: Any, a: Any) -> Any:
    return slogdet_vjp(g, a)  # out is (sign, logabsdet)


@defvjp(np.linalg.norm, "x, ord=None, axis=None, keepdims=False", diff="x",
        reads="x, out, ord, axis, keepdims")
def norm(g: Any, out: Any, x: Any, ord: Any, axis: Any, keepdims: Any) -> Any:
    return norm_vjp(g, out, x, ord, axis, keepdims)


@defvjp(np.linalg.cholesky, "a", reads="out")
def cholesky(g: Any, out: Any, a: Any) -> Any:
    return cholesky_vjp(g, out)
