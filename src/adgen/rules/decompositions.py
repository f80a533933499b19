"""Rules for matrix decompositions (svd, eigh, qr, pinv) and the primitives a reference
implementation would make slow or unstable (cumprod with zeros, repeat; diff and the
quantiles, whose references in rules/composites.py cost 40-180 us a call against 7-50 us).

The adjoints live in :mod:`adgen.rules.helpers_decomp`; see there for the formulas and for
what is refused (repeated eigenvalues with an eigenvector cotangent, completion vectors).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adgen.rules.helpers import (
    accumulate_extreme_jvp,
    accumulate_extreme_vjp,
    cumprod_vjp,
    cumsum_vjp,
    diff_vjp,
    eigh_vjp,
    eigvals_jvp,
    eigvals_vjp,
    hermitian_svd_vjp,
    max_vjp,
    ndarray_conj,
    percentile_vjp,
    pinv_vjp,
    prod_vjp,
    qr_vjp,
    quantile_vjp,
    reduceat_vjp,
    repeat_vjp,
    sum_vjp,
    svd_vjp,
)
from adgen.rules.registry import defjvp, defufunc_method, defvjp

# --------------------------------------------------------------------------------------------
# np.linalg decompositions


@defvjp(np.linalg.svd, "a, full_matrices=True, compute_uv=True, hermitian=False", diff="a",
        reads="a, full_matrices, compute_uv, hermitian")
def svd(g: Any, out: Any, a: Any, full_matrices: Any, compute_uv: Any, hermitian: Any) -> Any:
    return hermitian_svd_vjp(g, a, compute_uv) if hermitian else \
        svd_vjp(g, a, full_matrices, compute_uv)


@defvjp(np.linalg.eigh, "a, UPLO='L'", diff="a", reads="a, UPLO")
def eigh(g: Any, out: Any, a: Any, UPLO: Any) -> Any:
    return eigh_vjp(g, a, UPLO, True)


@defvjp(np.linalg.eigvalsh, "a, UPLO='L'", diff="a", reads="a, UPLO")
def eigvalsh(g: Any, out: Any, a: Any, UPLO: Any) -> Any:
    return eigh_vjp(g, a, UPLO, False)


@defvjp(np.linalg.qr, "a, mode='reduced'", diff="a", reads="a, mode")
def qr(g: Any, out: Any, a: Any, mode: Any) -> Any:
    return qr_vjp(g, a, mode)


@defvjp(np.linalg.pinv, "a, rcond=None, hermitian=False", diff="a", reads="a, out, hermitian")
def pinv(g: Any, out: Any, a: Any, rcond: Any, hermitian: Any) -> Any:
    return pinv_vjp(g, out, a, hermitian)


@defvjp(np.linalg.matrix_rank, "A, tol=None, hermitian=False", diff="A", linear=True)
def matrix_rank(g: Any, out: Any, A: Any, tol: Any, hermitian: Any) -> Any:
    return np.zeros(np.shape(A))  # an integer: no gradient


# --------------------------------------------------------------------------------------------
# Products and repetition along an axis


# the eigenvalues of a general matrix (complex): matched to eig's vectors in the helpers
@defvjp(np.linalg.eigvals, "a", reads="a, out")
def eigvals(g: Any, out: Any, a: Any) -> Any:
    return eigvals_vjp(g, a, out)


@defjvp(np.linalg.eigvals)
def _eigvals_jvp(d: Any, out: Any, a: Any) -> Any:
    return eigvals_jvp(d, a, out)


@defvjp(np.cumprod, "a, axis=None", diff="a", reads="a, out, axis")
def cumprod(g: Any, out: Any, a: Any, axis: Any) -> Any:
    return cumprod_vjp(g, out, a, axis)


# np.maximum.accumulate / np.minimum.accumulate (running extremes): a rule for a ufunc's
# method is registered for a stand-in function (registry.defufunc_method). out= is lowered
# to a store before rules are looked up; dtype= is refused by the helpers.


@defufunc_method(np.maximum, "accumulate")
def maximum_accumulate(array: Any, axis: Any = 0, dtype: Any = None) -> Any:
    """Stands for ``np.maximum.accumulate`` in the registry."""
    return np.maximum.accumulate(array, axis=axis, dtype=dtype)


@defufunc_method(np.minimum, "accumulate")
def minimum_accumulate(array: Any, axis: Any = 0, dtype: Any = None) -> Any:
    """Stands for ``np.minimum.accumulate`` in the registry."""
    return np.minimum.accumulate(array, axis=axis, dtype=dtype)


@defvjp(maximum_accumulate, "array, axis=0, dtype=None", diff="array",
        reads="array, out, axis, dtype", name="numpy.maximum.accumulate")
def _maximum_accumulate(g: Any, out: Any, array: Any, axis: Any, dtype: Any) -> Any:
    return accumulate_extreme_vjp(g, out, array, axis, dtype)


@defvjp(minimum_accumulate, "array, axis=0, dtype=None", diff="array",
        reads="array, out, axis, dtype", name="numpy.minimum.accumulate")
def _minimum_accumulate(g: Any, out: Any, array: Any, axis: Any, dtype: Any) -> Any:
    return accumulate_extreme_vjp(g, out, array, axis, dtype)


@defjvp(maximum_accumulate)
def _maximum_accumulate_jvp(d: Any, out: Any, array: Any, axis: Any, dtype: Any) -> Any:
    return accumulate_extreme_jvp(d, out, array, axis, dtype)


@defjvp(minimum_accumulate)
def _minimum_accumulate_jvp(d: Any, out: Any, array: Any, axis: Any, dtype: Any) -> Any:
    return accumulate_extreme_jvp(d, out, array, axis, dtype)


# np.add.reduce / np.multiply.reduce / np.logaddexp.reduce / np.add.accumulate: as np.sum,
# np.prod, a log-sum-exp and np.cumsum, but along axis 0 unless told (ufunc methods' default)


@defufunc_method(np.add, "reduce")
def add_reduce(array: Any, axis: Any = 0, *, keepdims: Any = False) -> Any:
    """Stands for ``np.add.reduce`` in the registry."""
    return np.add.reduce(array, axis=axis, keepdims=keepdims)


@defufunc_method(np.multiply, "reduce")
def multiply_reduce(array: Any, axis: Any = 0, *, keepdims: Any = False) -> Any:
    """Stands for ``np.multiply.reduce`` in the registry."""
    return np.multiply.reduce(array, axis=axis, keepdims=keepdims)


@defufunc_method(np.logaddexp, "reduce")
def logaddexp_reduce(array: Any, axis: Any = 0, *, keepdims: Any = False) -> Any:
    """Stands for ``np.logaddexp.reduce`` in the registry."""
    return np.logaddexp.reduce(array, axis=axis, keepdims=keepdims)


@defufunc_method(np.maximum, "reduce")
def maximum_reduce(array: Any, axis: Any = 0, *, keepdims: Any = False) -> Any:
    """Stands for ``np.maximum.reduce`` in the registry (``np.max``, along axis 0)."""
    return np.maximum.reduce(array, axis=axis, keepdims=keepdims)


@defufunc_method(np.minimum, "reduce")
def minimum_reduce(array: Any, axis: Any = 0, *, keepdims: Any = False) -> Any:
    """Stands for ``np.minimum.reduce`` in the registry (``np.min``, along axis 0)."""
    return np.minimum.reduce(array, axis=axis, keepdims=keepdims)


@defufunc_method(np.add, "accumulate")
def add_accumulate(array: Any, axis: Any = 0) -> Any:
    """Stands for ``np.add.accumulate`` in the registry."""
    return np.add.accumulate(array, axis=axis)


@defvjp(add_reduce, "array, axis=0, *, keepdims=False", diff="array",
        reads="axis, keepdims", linear=True, name="numpy.add.reduce")
def _add_reduce(g: Any, out: Any, array: Any, axis: Any, keepdims: Any) -> Any:
    return sum_vjp(g, np.shape(array), axis, keepdims)


@defjvp(add_reduce)
def _add_reduce_jvp(d: Any, out: Any, array: Any, axis: Any, keepdims: Any) -> Any:
    return np.add.reduce(d, axis=axis, keepdims=keepdims)


@defvjp(multiply_reduce, "array, axis=0, *, keepdims=False", diff="array",
        reads="array, axis, keepdims", name="numpy.multiply.reduce")
def _multiply_reduce(g: Any, out: Any, array: Any, axis: Any, keepdims: Any) -> Any:
    return prod_vjp(g, array, axis, keepdims)


@defjvp(multiply_reduce)
def _multiply_reduce_jvp(d: Any, out: Any, array: Any, axis: Any, keepdims: Any) -> Any:
    return np.sum(d * prod_vjp(np.ones(np.shape(out)), array, axis, keepdims), axis=axis,
                  keepdims=keepdims)


@defvjp(logaddexp_reduce, "array, axis=0, *, keepdims=False", diff="array",
        reads="array, out, axis, keepdims", name="numpy.logaddexp.reduce")
def _logaddexp_reduce(g: Any, out: Any, array: Any, axis: Any, keepdims: Any) -> Any:
    # the softmax of the array along axis, times g spread back over the reduced axes
    return sum_vjp(g, np.shape(array), axis, keepdims) * \
        np.exp(array - sum_vjp(out, np.shape(array), axis, keepdims))


@defjvp(logaddexp_reduce)
def _logaddexp_reduce_jvp(d: Any, out: Any, array: Any, axis: Any, keepdims: Any) -> Any:
    return np.sum(np.exp(array - sum_vjp(out, np.shape(array), axis, keepdims)) * d,
                  axis=axis, keepdims=keepdims)


# np.maximum.reduce / np.minimum.reduce: as np.max / np.min (g split evenly between ties)
@defvjp(maximum_reduce, "array, axis=0, *, keepdims=False", diff="array",
        reads="array, out, axis, keepdims", name="numpy.maximum.reduce")
def _maximum_reduce(g: Any, out: Any, array: Any, axis: Any, keepdims: Any) -> Any:
    return max_vjp(g, out, array, axis, keepdims)


@defvjp(minimum_reduce, "array, axis=0, *, keepdims=False", diff="array",
        reads="array, out, axis, keepdims", name="numpy.minimum.reduce")
def _minimum_reduce(g: Any, out: Any, array: Any, axis: Any, keepdims: Any) -> Any:
    return max_vjp(g, out, array, axis, keepdims)


@defjvp(maximum_reduce)
def _maximum_reduce_jvp(d: Any, out: Any, array: Any, axis: Any, keepdims: Any) -> Any:
    return (np.sum(np.where(array == np.max(array, axis=axis, keepdims=True), d, 0.0),
                   axis=axis, keepdims=keepdims) /
            np.sum(array == np.max(array, axis=axis, keepdims=True), axis=axis,
                   keepdims=keepdims))


@defjvp(minimum_reduce)
def _minimum_reduce_jvp(d: Any, out: Any, array: Any, axis: Any, keepdims: Any) -> Any:
    return (np.sum(np.where(array == np.min(array, axis=axis, keepdims=True), d, 0.0),
                   axis=axis, keepdims=keepdims) /
            np.sum(array == np.min(array, axis=axis, keepdims=True), axis=axis,
                   keepdims=keepdims))


@defvjp(add_accumulate, "array, axis=0", diff="array", reads="axis", linear=True,
        name="numpy.add.accumulate")
def _add_accumulate(g: Any, out: Any, array: Any, axis: Any) -> Any:
    return cumsum_vjp(g, np.shape(array), axis)


@defjvp(add_accumulate)
def _add_accumulate_jvp(d: Any, out: Any, array: Any, axis: Any) -> Any:
    return np.add.accumulate(d, axis=axis)


@defufunc_method(np.add, "reduceat")
def add_reduceat(array: Any, indices: Any, axis: Any = 0) -> Any:
    """Stands for ``np.add.reduceat`` in the registry (segment sums: a histogram's bins, a
    ragged batch's rows)."""
    return np.add.reduceat(array, indices, axis=axis)


# (dtype= and out= are not taken: a call with them is refused, naming this rule)
@defvjp(add_reduceat, "array, indices, axis=0", diff="array", reads="indices, axis",
        linear=True, name="numpy.add.reduceat")
def _add_reduceat(g: Any, out: Any, array: Any, indices: Any, axis: Any) -> Any:
    return reduceat_vjp(g, np.shape(array), indices, axis)


@defjvp(add_reduceat)
def _add_reduceat_jvp(d: Any, out: Any, array: Any, indices: Any, axis: Any) -> Any:
    return np.add.reduceat(d, indices, axis=axis)


@defvjp(np.repeat, "a, repeats, axis=None", diff="a", reads="repeats, axis", linear=True)
def repeat(g: Any, out: Any, a: Any, repeats: Any, axis: Any) -> Any:
    return repeat_vjp(g, np.shape(a), repeats, axis)


@defvjp(np.conjugate, "x", linear=True)
def conjugate(g: Any, out: Any, x: Any) -> Any:
    # conj is not holomorphic: in JAX's convention its cotangent is conj(g) (for a real x,
    # whose cotangent is real, the identity)
    return np.conjugate(g)


@defvjp(ndarray_conj, "a", linear=True, view=True, name="numpy.ndarray.conjugate")
def ndarray_conjugate(g: Any, out: Any, a: Any) -> Any:
    return np.conjugate(g)


@defvjp(np.diff, "a, n=1, axis=-1, prepend=None, append=None", diff="a, prepend, append",
        reads="n, axis, prepend, append", view=True)  # n=0: a itself
# (linear in g, but prepend and append are read for their shapes through the helper)
def diff(g: Any, out: Any, a: Any, n: Any, axis: Any, prepend: Any, append: Any) -> Any:
    # one template per parameter: the compiler evaluates only those of active arguments
    return (diff_vjp(g, np.shape(a), n, axis, prepend, append, 0),
            diff_vjp(g, np.shape(a), n, axis, prepend, append, 1),
            diff_vjp(g, np.shape(a), n, axis, prepend, append, 2))


# --------------------------------------------------------------------------------------------
# Order statistics (method='linear', NumPy's default, and 'lower', 'higher', 'nearest',
# 'midpoint': helpers_decomp.quantile_positions)


@defvjp(np.quantile, "a, q, axis=None, *, overwrite_input=False, method='linear', "
        "keepdims=False", diff="a, q", reads="a, q, axis, method, keepdims")
def quantile(g: Any, out: Any, a: Any, q: Any, axis: Any, overwrite_input: Any, method: Any,
             keepdims: Any) -> Any:
    return (quantile_vjp(g, a, q, axis, method, keepdims, 0),
            quantile_vjp(g, a, q, axis, method, keepdims, 1))


@defvjp(np.percentile, "a, q, axis=None, *, overwrite_input=False, method='linear', "
        "keepdims=False", diff="a, q", reads="a, q, axis, method, keepdims")
def percentile(g: Any, out: Any, a: Any, q: Any, axis: Any, overwrite_input: Any, method: Any,
               keepdims: Any) -> Any:
    return (percentile_vjp(g, a, q, axis, method, keepdims, 0),
            percentile_vjp(g, a, q, axis, method, keepdims, 1))


@defvjp(np.median, "a, axis=None, *, overwrite_input=False, keepdims=False", diff="a",
        reads="a, axis, keepdims")
def median(g: Any, out: Any, a: Any, axis: Any, overwrite_input: Any, keepdims: Any) -> Any:
    return quantile_vjp(g, a, 0.5, axis, "linear", keepdims, 0)
