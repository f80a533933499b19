"""Forward mode: the Jacobian-vector products of the registered rules, as a table.

Each entry adds a jvp to a rule that :mod:`adgen.rules.registry` already holds (one registry:
the jvp lives beside the vjp). ``defjvp`` gives one term per differentiable parameter, linear
in ``d`` (that parameter's tangent); ``defjvp_kind`` marks a primal ``"linear"`` (the same call
on the tangents), ``"multilinear"`` (one call per tangent), ``"elementwise"`` (the jvp read
off the vjp: an elementwise op's Jacobian is its own transpose) or ``"zero"`` (piecewise
constant). Unary and binary ufuncs and the ``math`` functions of numbers get their jvp read
off the vjp without an entry (``registry.jvp_of``); a rule with no jvp makes forward mode
raise MissingRuleError naming the line.

The second half gives the helpers that tangent code calls (:mod:`adgen.rules.helpers_tangent`)
derivative rules, so reverse mode differentiates tangent code (reverse over forward).
"""

from __future__ import annotations

import builtins
import copy
import math
import operator
from typing import Any

import numpy as np

from adgen.rules.helpers import (
    abs_jvp,
    abs_jvp_tangent_x,
    abs_jvp_vjp_d,
    abs_jvp_vjp_x,
    angle_jvp,
    angle_jvp_dz,
    angle_jvp_zbar,
    angle_vjp,
    angle_vjp_dz,
    arange_jvp,
    array_vjp,
    balanced_eq,
    cast_vjp,
    cumprod_jvp,
    dtype_kind,
    eigh_jvp,
    expand_reduced,
    exponent_log,
    exponent_log_dx,
    exponent_log_dy,
    extreme_tangent,
    extreme_tangent_vjp,
    fit_tangent,
    float_part,
    given_tangent,
    ieee_number,
    matrix_norm_vjp,
    named_like,
    named_like_vjp,
    ndarray_astype,
    ndarray_compress,
    ndarray_conj,
    ndarray_flatten,
    ndarray_item,
    ndarray_tolist,
    ndarray_view,
    nonzero_norm,
    nonzero_norm_vjp,
    norm_vjp,
    partial_binds_no_tangent,
    pinv_jvp,
    prod_vjp,
    qr_jvp,
    qr_square_jvp,
    quantile_jvp,
    quantile_jvp_jvp,
    quantile_jvp_vjp,
    quantile_positions,
    refuse_nonzero_tangent,
    sequence_operand,
    shape_tree,
    sorted_jvp,
    sorted_vjp,
    svd_jvp,
    trim_zeros_jvp,
    unbroadcast,
    unsupported,
    view_tangent,
    xlogy,
    xlogy_dx,
    xlogy_dy,
    zero_tangent,
)
from adgen.rules.registry import defjvp, defjvp_kind, defreference, defvjp, lookup

# --------------------------------------------------------------------------------------------
# Linear in their differentiable arguments jointly: the tangent is the same call on tangents.

defjvp_kind("linear", operator.add, operator.sub, operator.neg, operator.pos, builtins.float,
            builtins.sum, builtins.tuple, builtins.list, builtins.dict, copy.copy,
            operator.getitem,
            ndarray_item, ndarray_tolist, ndarray_view,
            ndarray_compress, np.take, np.take_along_axis, np.trace, np.diagonal, np.diag, np.tril, np.triu, math.degrees,
            math.radians, math.fsum, np.sum, np.mean, np.cumsum, np.reshape, np.ravel,
            ndarray_flatten, np.transpose, np.swapaxes, np.moveaxis, np.expand_dims,
            np.squeeze, np.atleast_1d, np.atleast_2d, np.atleast_3d, np.broadcast_to, np.flip,
            np.fliplr, np.flipud, np.rot90, np.roll, np.copy, np.array, np.asarray,
            np.ascontiguousarray, np.asfortranarray, np.asanyarray, np.require, np.stack,
            np.concatenate, np.hstack, np.column_stack, np.vstack, np.where, np.full,
            np.full_like, np.linspace, np.matrix_transpose, np.linalg.matrix_transpose,
            np.rollaxis, np.repeat, np.conjugate, ndarray_conj, np.real, np.imag, np.fft.fft,
            np.fft.ifft,
            np.fft.rfft, np.fft.irfft, np.fft.fftn, np.fft.ifftn, np.fft.fft2, np.fft.ifft2,
            np.fft.rfftn, np.fft.irfftn, np.fft.rfft2, np.fft.irfft2, np.fft.fftshift,
            np.fft.ifftshift)

# Linear in each differentiable argument separately.
defjvp_kind("multilinear", operator.mul, operator.matmul, np.matmul, np.dot, np.vdot, np.inner,
            np.outer, np.tensordot, np.einsum)

# Piecewise constant: the tangent is zero where the derivative exists.
defjvp_kind("zero", operator.floordiv, builtins.int, builtins.round, np.round, np.around,
            np.argsort, np.linalg.matrix_rank)

# Elementwise functions that are not ufuncs: the jvp read off the vjp.
defjvp_kind("elementwise", np.clip, builtins.pow)


# max(a, b) and max(xs) of one iterable: the tangent of the argument (or items) the result is
@defjvp(builtins.max)
def builtin_max(d: Any, out: Any, a: Any, b: Any) -> Any:
    return extreme_tangent(d, out, a, b), extreme_tangent(d, out, b, a)


@defjvp(builtins.min)
def builtin_min(d: Any, out: Any, a: Any, b: Any) -> Any:
    return extreme_tangent(d, out, a, b), extreme_tangent(d, out, b, a)


# Not holomorphic: |z| and angle(z) have the tangents Re(conj(z) dz) / |z| and
# Im(conj(z) dz) / |z|^2 (sign(x) dx and 0 for a real x), not the vjp read as a jvp.
@defjvp(np.absolute)
def absolute(d: Any, out: Any, x: Any) -> Any:
    return abs_jvp(d, x)


@defjvp(builtins.abs)
def abs_(d: Any, out: Any, x: Any) -> Any:
    return abs_jvp(d, x)


@defjvp(np.angle)
def angle(d: Any, out: Any, z: Any, deg: Any) -> Any:
    return angle_jvp(d, z, deg)


# heaviside(x1, x2): x2's tangent where x1 == 0, nothing from x1 (a step)
@defjvp(np.heaviside)
def heaviside(d: Any, out: Any, x1: Any, x2: Any) -> Any:
    return np.zeros(np.shape(out)), np.where(np.equal(x1, 0), d, 0.0) + np.zeros(np.shape(out))


# --------------------------------------------------------------------------------------------
# Arithmetic whose terms read the operands


@defjvp(operator.truediv, elementwise=True)
def truediv(d: Any, out: Any, a: Any, b: Any) -> Any:
    return d / b, -d * out / b


@defjvp(operator.mod, elementwise=True)
def mod(d: Any, out: Any, a: Any, b: Any) -> Any:
    return d, -d * (a // b)


@defjvp(operator.pow, elementwise=True)
def pow_(d: Any, out: Any, a: Any, b: Any) -> Any:
    # (0 for b == 0: the vjp's note; the second term 0 for an int b, whose tangent is zero)
    return d * b * a ** (b - (b != 0)), d * exponent_log(out, a, b)


# --------------------------------------------------------------------------------------------
# Reductions whose outputs each read a disjoint part of the input: the tangent is the reduced
# sum of d times the partial derivatives (the vjp of ones).


@defjvp(np.prod)
def prod(d: Any, out: Any, a: Any, axis: Any, keepdims: Any) -> Any:
    return np.sum(d * prod_vjp(np.ones(np.shape(out)), a, axis, keepdims), axis=axis,
                  keepdims=keepdims)


# max / min: d at the extrema, split evenly between ties (as the vjp splits g)
@defjvp(np.max)
def max_(d: Any, out: Any, a: Any, axis: Any, keepdims: Any) -> Any:
    return (np.sum(np.where(a == np.max(a, axis=axis, keepdims=True), d, 0.0), axis=axis,
                   keepdims=keepdims) /
            np.sum(a == np.max(a, axis=axis, keepdims=True), axis=axis, keepdims=keepdims))


@defjvp(np.amax)
def amax(d: Any, out: Any, a: Any, axis: Any, keepdims: Any) -> Any:
    return (np.sum(np.where(a == np.max(a, axis=axis, keepdims=True), d, 0.0), axis=axis,
                   keepdims=keepdims) /
            np.sum(a == np.max(a, axis=axis, keepdims=True), axis=axis, keepdims=keepdims))


@defjvp(np.min)
def min_(d: Any, out: Any, a: Any, axis: Any, keepdims: Any) -> Any:
    return (np.sum(np.where(a == np.min(a, axis=axis, keepdims=True), d, 0.0), axis=axis,
                   keepdims=keepdims) /
            np.sum(a == np.min(a, axis=axis, keepdims=True), axis=axis, keepdims=keepdims))


@defjvp(np.amin)
def amin(d: Any, out: Any, a: Any, axis: Any, keepdims: Any) -> Any:
    return (np.sum(np.where(a == np.min(a, axis=axis, keepdims=True), d, 0.0), axis=axis,
                   keepdims=keepdims) /
            np.sum(a == np.min(a, axis=axis, keepdims=True), axis=axis, keepdims=keepdims))


# var / std: 2 Re(conj(a - mean) d) summed over the reduced axes, over N - ddof (N: the
# elements each output reduces), in NumPy alone so reverse mode reads it again (hvp, hessian)
@defjvp(np.var)
def var(d: Any, out: Any, a: Any, axis: Any, ddof: Any, keepdims: Any) -> Any:
    return np.real(np.sum(np.conj(a - np.mean(a, axis=axis, keepdims=True)) * d, axis=axis,
                          keepdims=keepdims)) * (2.0 / (np.size(a) / np.size(out) - ddof))


@defjvp(np.std)
def std(d: Any, out: Any, a: Any, axis: Any, ddof: Any, keepdims: Any) -> Any:
    return np.real(np.sum(np.conj(a - np.mean(a, axis=axis, keepdims=True)) * d, axis=axis,
                          keepdims=keepdims)) / ((np.size(a) / np.size(out) - ddof) * out)


@defjvp(np.linalg.norm)
def norm(d: Any, out: Any, x: Any, ord: Any, axis: Any, keepdims: Any) -> Any:
    # the 2-norm (Frobenius for a matrix) in NumPy alone, so reverse mode reads it again
    return (np.sum(x * d, axis=axis, keepdims=keepdims) / nonzero_norm(out) if ord is None else
            np.sum(d * norm_vjp(np.ones(np.shape(out)), out, x, ord, axis, keepdims),
                   axis=axis, keepdims=keepdims))


# --------------------------------------------------------------------------------------------
# Linear algebra


@defjvp(np.linalg.solve)
def solve(d: Any, out: Any, a: Any, b: Any) -> Any:
    # b a vector (a may be a stack): d @ out as a column, so solve reads it as one
    return (-np.linalg.solve(a, d @ out[..., None])[..., 0] if np.ndim(b) == 1 else
            -np.linalg.solve(a, d @ out), np.linalg.solve(a, d))


@defjvp(np.linalg.inv)
def inv(d: Any, out: Any, a: Any) -> Any:
    return -(out @ d @ out)


@defjvp(np.linalg.det)
def det(d: Any, out: Any, a: Any) -> Any:
    return out * np.trace(np.linalg.solve(a, d), axis1=-2, axis2=-1)


@defjvp(np.linalg.slogdet)
def slogdet(d: Any, out: Any, a: Any) -> Any:
    return (0.0 * out[0], np.trace(np.linalg.solve(a, d), axis1=-2, axis2=-1))


@defjvp(math.hypot)
def hypot(d: Any, out: Any, coordinates: Any) -> Any:
    return sum(c * t for c, t in zip(coordinates, d)) / out


@defjvp(builtins.sorted)
def sorted_(d: Any, out: Any, iterable: Any, key: Any, reverse: Any) -> Any:
    return sorted_jvp(d, out, iterable)


@defjvp(np.sort)
def sort(d: Any, out: Any, a: Any, axis: Any) -> Any:
    # d permuted as a is (ties: the stable order, as the vjp routes g)
    return (np.take_along_axis(d, np.argsort(a, axis=axis, kind="stable"), axis=axis)
            if axis is not None else np.ravel(d)[np.argsort(a, axis=None, kind="stable")])


# Rules other modules add later than this table was written: linear, if registered.
defjvp_kind("linear", *[f for f in (np.diff, getattr(np, "unstack", None))
                        if f is not None and lookup(f) is not None])


@defjvp(np.linalg.cholesky)
def cholesky(d: Any, out: Any, a: Any) -> Any:
    # L Φ(L⁻¹ s L⁻ᵀ): s the symmetric matrix of d's lower triangle (NumPy reads only that), Φ
    # the lower triangle with the diagonal halved; in NumPy alone, so reverse mode reads it
    # again (hvp, hessian)
    return out @ np.tril(np.linalg.solve(out, np.swapaxes(np.linalg.solve(
        out, np.tril(d) + np.swapaxes(np.tril(d, -1), -1, -2)), -1, -2)) *
        (1.0 - 0.5 * np.eye(np.shape(out)[-1])))


@defjvp(ndarray_astype)
def astype(d: Any, out: Any, a: Any, dtype: Any, copy: Any) -> Any:
    # a copy of d (y = x.astype(...) may be written in place, and its tangent with it): its
    # real part for a float result, zero for an integer one; in NumPy and helpers with rules,
    # so reverse mode reads it again (hvp, hessian). With copy=False the result may be x
    # itself: then its tangent is d itself (view_tangent), written in place with it
    return float_part(np.array(d, dtype=complex) if dtype_kind(np.asarray(out)) == "c" else
                      np.array(d) if copy is True else view_tangent(d, out, a),
                      dtype_kind(np.asarray(out)))


# Decompositions, cumprod and order statistics (the helpers in rules/helpers_jvp.py; those of
# the decompositions are differentiated again from their own source, below)


@defjvp(np.linalg.svd)
def svd(d: Any, out: Any, a: Any, full_matrices: Any, compute_uv: Any, hermitian: Any) -> Any:
    return svd_jvp(d, a, full_matrices, compute_uv, hermitian)


@defjvp(np.linalg.eigh)
def eigh(d: Any, out: Any, a: Any, UPLO: Any) -> Any:
    return eigh_jvp(d, a, UPLO, True)


@defjvp(np.linalg.eigvalsh)
def eigvalsh(d: Any, out: Any, a: Any, UPLO: Any) -> Any:
    return eigh_jvp(d, a, UPLO, False)


@defjvp(np.linalg.qr)
def qr(d: Any, out: Any, a: Any, mode: Any) -> Any:
    return qr_jvp(d, a, mode)


@defjvp(np.linalg.pinv)
def pinv(d: Any, out: Any, a: Any, rcond: Any, hermitian: Any) -> Any:
    return pinv_jvp(d, out, a, hermitian)


@defjvp(np.cumprod)
def cumprod(d: Any, out: Any, a: Any, axis: Any) -> Any:
    return cumprod_jvp(d, out, a, axis)


@defjvp(np.quantile)
def quantile(d: Any, out: Any, a: Any, q: Any, axis: Any, overwrite_input: Any, method: Any,
             keepdims: Any) -> Any:
    return (quantile_jvp(d, a, q, axis, method, keepdims, 0),
            quantile_jvp(d, a, q, axis, method, keepdims, 1))


@defjvp(np.percentile)
def percentile(d: Any, out: Any, a: Any, q: Any, axis: Any, overwrite_input: Any, method: Any,
               keepdims: Any) -> Any:
    return (quantile_jvp(d, a, np.divide(q, 100.0), axis, method, keepdims, 0),
            quantile_jvp(d / 100.0, a, np.divide(q, 100.0), axis, method, keepdims, 1))


@defjvp(np.median)
def median(d: Any, out: Any, a: Any, axis: Any, overwrite_input: Any, keepdims: Any) -> Any:
    return quantile_jvp(d, a, 0.5, axis, "linear", keepdims, 0)


@defjvp(np.arange)
def arange(d: Any, out: Any, start: Any, stop: Any, step: Any, dtype: Any) -> Any:
    return (cast_vjp(arange_jvp(d, out, stop, step, 0), dtype),
            cast_vjp(arange_jvp(d, out, stop, step, 1), dtype),
            cast_vjp(arange_jvp(d, out, stop, step, 2), dtype))


@defjvp(np.trim_zeros)
def trim_zeros(d: Any, out: Any, filt: Any, trim: Any, axis: Any) -> Any:
    return trim_zeros_jvp(d, filt, trim, axis)


defjvp_kind("zero", np.einsum_path)  # a contraction order: no float output

# Second derivatives through the decompositions (hvp, hessian, jacfwd(grad(f))): the tangents
# are NumPy over functions with rules (eigh, svd, qr, solve, matmul, where), so reverse mode
# compiles a tangent helper's own source, as a reference implementation of itself, and takes
# eigh's 1 / (w[j] - w[i]) from eigh's own vjp; where the helper refuses (repeated values),
# so does its derivative. Forward mode reads the same source (third derivatives).
# np.prod's adjoint (which its jvp calls too) is written the same way, without dividing by an
# entry (exclusive cumulative products), so the second derivative is right at zeros too; so is
# np.cumprod's tangent (out * cumsum(d / a) only where no entry is zero).
for _helper in (svd_jvp, eigh_jvp, qr_jvp, qr_square_jvp, pinv_jvp, prod_vjp, cumprod_jvp):
    defreference(_helper)(_helper)


# Second derivatives through np.quantile, percentile and median: the tangent is linear in d
# (its transpose is the quantile's adjoint) and piecewise linear in a and q
@defvjp(quantile_jvp, "t, a, q, axis, method, keepdims, which", diff=("t", "a", "q"),
        reads="t, a, q, axis, method, keepdims, which")
def quantile_jvp_(g: Any, out: Any, t: Any, a: Any, q: Any, axis: Any, method: Any,
                  keepdims: Any, which: Any) -> Any:
    return (quantile_jvp_vjp(g, t, a, q, axis, method, keepdims, which, 0),
            quantile_jvp_vjp(g, t, a, q, axis, method, keepdims, which, 1),
            quantile_jvp_vjp(g, t, a, q, axis, method, keepdims, which, 2))


@defjvp(quantile_jvp)
def quantile_jvp_tangent(d: Any, out: Any, t: Any, a: Any, q: Any, axis: Any, method: Any,
                         keepdims: Any, which: Any) -> Any:
    return (quantile_jvp(d, a, q, axis, method, keepdims, which),
            quantile_jvp_jvp(d, t, a, q, axis, method, keepdims, which, 1),
            quantile_jvp_jvp(d, t, a, q, axis, method, keepdims, which, 2))


# Third derivatives: those two are NumPy over functions with rules (the sort order, lo, hi
# are integers, constant between ties), so reverse and forward mode read their source again,
# as for svd_jvp above: multilinear in the tangents and cotangents, piecewise polynomial in a
# and q, the same pieces as the first derivative takes (as JAX's sort-based quantile)
for _helper in (quantile_jvp_vjp, quantile_jvp_jvp, quantile_positions):
    defreference(_helper)(_helper)

# Second derivatives through np.linalg.norm with an ord: its tangent calls its adjoint, which
# is NumPy over functions with rules (sign, abs, where, svd for the matrix 2-norm and nuclear
# norm), so reverse mode compiles the adjoint's own source (and the shape helper it calls), as
# the second-order program of jacrev(grad(f)) does (second_order.COMPILED_HELPERS). At a kink
# the first derivative is the adjoint's subgradient (sign(0) = 0 for ord=1, an even split at a
# tie of the inf-norm) and the second derivative is that of the branch it takes, as in JAX.
for _helper in (norm_vjp, matrix_norm_vjp, expand_reduced):
    defreference(_helper)(_helper)


# ... except at a zero norm, where the adjoint's 0 is a choice: nonzero_norm's derivative
# refuses it (JAX gives NaN there)
@defvjp(nonzero_norm, "n", reads="n")
def nonzero_norm_(g: Any, out: Any, n: Any) -> Any:
    return nonzero_norm_vjp(g, n)


@defjvp(nonzero_norm)
def nonzero_norm_tangent(d: Any, out: Any, n: Any) -> Any:
    return nonzero_norm_vjp(d, n)


# (its derivative is g where no norm is zero: linear in g, refusing as it does; third
# derivatives through the norm differentiate it again; it returns t itself: a view)
@defvjp(nonzero_norm_vjp, "t, n", diff="t", reads="n", linear=True, view=True)
def nonzero_norm_vjp_(g: Any, out: Any, t: Any, n: Any) -> Any:
    return nonzero_norm_vjp(g, n)


defjvp_kind("linear", nonzero_norm_vjp)


# --------------------------------------------------------------------------------------------
# The helpers of tangent code, differentiable in turn (reverse over forward)


# np.angle's tangent and adjoint differentiated again: hessian (reverse over forward) and
# jacfwd(grad) (forward over reverse) of a function reading np.angle (they raised: no rule)
# (its tangent parameter d named t here: a jvp's own tangent is d)
@defvjp(angle_jvp, "t, z, deg", diff="t, z", reads="t, z, deg")
def angle_jvp_vjp(g: Any, out: Any, t: Any, z: Any, deg: Any) -> Any:
    return (angle_vjp(g, z, deg) if np.iscomplexobj(t) else np.real(angle_vjp(g, z, deg)),
            angle_jvp_zbar(g, t, z, deg))


@defjvp(angle_jvp)
def angle_jvp_jvp(d: Any, out: Any, t: Any, z: Any, deg: Any) -> Any:
    return angle_jvp(d, z, deg), angle_jvp_dz(t, d, z, deg)


# (reverse over reverse, grad(grad(f)) through np.angle: refused, never a wrong zero)
@defvjp(angle_vjp, "c, z, deg", diff="c, z", reads=())
def angle_vjp_vjp(g: Any, out: Any, c: Any, z: Any, deg: Any) -> Any:
    return (unsupported("reverse over reverse (grad of grad) through np.angle: use "
                        "adgen.hessian or jacfwd(grad(f)), which differentiate it"),
            unsupported("reverse over reverse (grad of grad) through np.angle: use "
                        "adgen.hessian or jacfwd(grad(f)), which differentiate it"))


@defjvp(angle_vjp)
def angle_vjp_jvp(d: Any, out: Any, c: Any, z: Any, deg: Any) -> Any:
    return angle_vjp(d, z, deg), angle_vjp_dz(c, d, z, deg)


# sorted's tangent permutes its tangent as sorted permuted the items: linear in it
@defvjp(sorted_jvp, "d, result, iterable", diff="d", reads="result, iterable", linear=True)
def sorted_jvp_vjp(g: Any, out: Any, d: Any, result: Any, iterable: Any) -> Any:
    return sorted_vjp(g, result, iterable)


defjvp_kind("linear", sorted_jvp)


# a zero tangent (jvp code's ``s_dot = zero_tangent(s)``) does not vary with ``s``: no
# adjoint flows back, which also spares ``s`` where it is unbound (a name a loop binds first)
@defvjp(zero_tangent, "x", diff=(), linear=True)
def zero_tangent_vjp(g: Any, out: Any, x: Any) -> Any:
    return ()


@defvjp(named_like, "d, like", diff="d", linear=True)
def named_like_(g: Any, out: Any, d: Any, like: Any) -> Any:
    return named_like_vjp(g)


@defvjp(fit_tangent, "d, like", diff="d", linear=True)
def fit_tangent_vjp(g: Any, out: Any, d: Any, like: Any) -> Any:
    return unbroadcast(g, shape_tree(d))


@defvjp(view_tangent, "d, like, base", diff="d", linear=True, view=True)
def view_tangent_vjp(g: Any, out: Any, d: Any, like: Any, base: Any) -> Any:
    return g


# a list or tuple operand of a ufunc read as an array (the array itself, or a number, else):
# its cotangent a list or tuple of the items' cotangents, as np.asarray's
@defvjp(sequence_operand, "x", linear=True, view=True)
def sequence_operand_vjp(g: Any, out: Any, x: Any) -> Any:
    return array_vjp(g, shape_tree(x))


# (a Python float as an np.float64: the same number; the first-order jvp code's fallback,
# which a second derivative differentiates where it calls a helper's jvp)
@defvjp(ieee_number, "x", linear=True, view=True)
def ieee_number_vjp(g: Any, out: Any, x: Any) -> Any:
    return g


@defvjp(given_tangent, "t, x", diff="t", linear=True)
def given_tangent_vjp(g: Any, out: Any, t: Any, x: Any) -> Any:
    return g


# float_part returns d itself for a float array: a view (else a store of it back into the
# buffer it views, u_dot[1:-1] = float_part(t_dot, k), zeroed the adjoint it should keep)
@defvjp(float_part, "d, kind", diff="d", reads="kind", linear=True, view=True)
def float_part_vjp(g: Any, out: Any, d: Any, kind: Any) -> Any:
    return float_part(g, kind)


# abs_jvp, the tangent of |x| (a helper of the tangent code), differentiated again: hvp,
# hessian and grad of grad of code with np.abs / abs
@defvjp(abs_jvp, "t, x", reads="t, x, out")
def abs_jvp_vjp(g: Any, out: Any, t: Any, x: Any) -> Any:
    return abs_jvp_vjp_d(g, x), abs_jvp_vjp_x(g, out, t, x)


@defjvp(abs_jvp)
def abs_jvp_jvp(d: Any, out: Any, t: Any, x: Any) -> Any:
    return abs_jvp(d, x), abs_jvp_tangent_x(d, out, t, x)


# the tangents of max / min (np.maximum, np.fmin, builtin max(a, b), ...) differentiated
# again (hvp, hessian, grad of grad): an operand's share of the tangent (balanced_eq: 1, 0.5
# at a tie, else 0) is piecewise constant, so only the tangent d carries a gradient
@defvjp(balanced_eq, "x, z, y", diff=(), linear=True)
def balanced_eq_vjp(g: Any, out: Any, x: Any, z: Any, y: Any) -> Any:
    return ()


@defvjp(extreme_tangent, "d, z, x, y", diff="d", reads="z, x, y", linear=True)
def extreme_tangent_vjp_d(g: Any, out: Any, d: Any, z: Any, x: Any, y: Any) -> Any:
    return extreme_tangent_vjp(g, shape_tree(d), z, x, y)


# xlogy(out, a), the tangent of a ** b along b, differentiated again (hessian of a power)
@defvjp(xlogy, "x, y", reads="x, y")
def xlogy_vjp(g: Any, out: Any, x: Any, y: Any) -> Any:
    return (unbroadcast(g * xlogy_dx(x, y), np.shape(x)),
            unbroadcast(g * xlogy_dy(x, y), np.shape(y)))


@defjvp(xlogy)
def xlogy_jvp(d: Any, out: Any, x: Any, y: Any) -> Any:
    return d * xlogy_dx(x, y), d * xlogy_dy(x, y)


# exponent_log(out, a, b), the tangent of a ** b along b (zero for an int b), differentiated
# again (hessian of a power)
@defvjp(exponent_log, "x, y, b", diff="x, y", reads="x, y, b")
def exponent_log_vjp(g: Any, out: Any, x: Any, y: Any, b: Any) -> Any:
    return (unbroadcast(g * exponent_log_dx(x, y, b), np.shape(x)),
            unbroadcast(g * exponent_log_dy(x, y, b), np.shape(y)))


@defjvp(exponent_log)
def exponent_log_jvp(d: Any, out: Any, x: Any, y: Any, b: Any) -> Any:
    return d * exponent_log_dx(x, y, b), d * exponent_log_dy(x, y, b)


@defvjp(dtype_kind, "x", diff=(), linear=True)
def dtype_kind_vjp(g: Any, out: Any, x: Any) -> Any:
    return ()


# the check of a partial's bound tangents (a statement: no value, no derivative)
@defvjp(partial_binds_no_tangent, "tangents", diff=(), linear=True)
def partial_binds_no_tangent_vjp(g: Any, out: Any, tangents: Any) -> Any:
    return ()


# the check of a tangent reaching an argument a rule does not differentiate in (a statement)
@defvjp(refuse_nonzero_tangent, "t, message, hint", diff=(), linear=True)
def refuse_nonzero_tangent_vjp(g: Any, out: Any, t: Any, message: Any, hint: Any) -> Any:
    return ()


defjvp_kind("zero", zero_tangent, dtype_kind, balanced_eq, partial_binds_no_tangent,
            refuse_nonzero_tangent)
defjvp_kind("linear", extreme_tangent)
defjvp_kind("linear", float_part)
defjvp_kind("linear", fit_tangent, view_tangent, given_tangent, named_like, sequence_operand,
            ieee_number)


def register_runtime_jvps() -> None:
    """The jvps of the runtime functions the passes call (``loop_sequence``, ``flat_view``):
    registered at the first forward-mode compilation, since adgen.runtime imports the rules."""
    from adgen import runtime
    from adgen.rules.registry import jvp_of, lookup

    for f in (runtime.loop_sequence, runtime.flat_view):
        rule = lookup(f)
        if rule is not None and jvp_of(rule) is None:
            defjvp_kind("linear", f)


# Outputs that are integers, booleans, shapes or new constant arrays: no tangent flows.
defjvp_kind("zero", operator.lt, operator.le, operator.gt, operator.ge, operator.eq,
            operator.ne, operator.invert, np.zeros, np.ones, np.empty, np.zeros_like,
            np.ones_like, np.empty_like, np.eye, np.identity,
            *(getattr(np, n) for n in (
                "argmax", "argmin", "all", "any", "count_nonzero", "size", "shape", "ndim",
                "isclose", "allclose", "array_equal", "floor_divide", "greater",
                "greater_equal", "less", "less_equal", "equal", "not_equal", "logical_and",
                "logical_or", "logical_xor", "isneginf", "isposinf", "iscomplex", "isreal",
                "iscomplexobj", "isrealobj", "gcd", "lcm", "bitwise_and", "bitwise_or",
                "bitwise_xor", "left_shift", "right_shift", "array_equiv", "nanargmax",
                "nanargmin", "argpartition", "lexsort", "digitize", "isin", "isscalar",
                "iterable", "tril_indices_from", "triu_indices_from", "diag_indices_from",
                "array_repr", "array_str", "result_type", "can_cast")))
