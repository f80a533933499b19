"""The nopython linear algebra of the numba backend's runtime: the pullbacks of ``@``,
transposes, ``np.linalg.det`` / ``solve`` / ``cholesky`` and ``np.diag``, and a product's
adjoint added in place without allocating it (``add_matmul_vjp_a``, ``add_matmul_vjp_b``,
``add_outer``: the outer products of an RNN's every step).

Re-exported by :mod:`adgen.numba_runtime`, which the generated modules import (see its
docstring for what every helper here promises). Importing this module imports numba; the
``@overload`` typing functions carry no annotations (numba requires the two signatures to
match exactly).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba import types
from numba.extending import overload

from adgen.numba_typing import is_number

__all__ = ["add_matmul_vjp_a", "add_matmul_vjp_b", "add_outer", "cholesky_vjp", "det_vjp",
           "diag_vjp", "inverse_axes", "matmul_vjp_a", "matmul_vjp_b", "matrix_transpose",
           "solve_vjp_a", "solve_vjp_b"]


def inverse_axes(axes: Any) -> Any:
    """The permutation that undoes ``np.transpose(x, axes)``: None for None (``x.T``; an
    explicit permutation is refused at compile time)."""
    raise NotImplementedError("only called from nopython code")


@overload(inverse_axes, jit_options={"cache": True})
def _inverse_axes(axes):
    if isinstance(axes, (types.NoneType, types.Omitted)):
        return lambda axes: None
    return None


def matmul_vjp_a(g: Any, b: Any, a_shape: Any) -> Any:
    """The adjoint of ``a`` in ``a @ b`` for vectors and matrices (no stacks, no
    broadcasting: those are refused at compile time)."""
    raise NotImplementedError("only called from nopython code")


def _matmul_ranks(g: Any, other: Any, shape: Any) -> tuple[int, int, int] | None:
    """(rank of g, of the other operand, of the operand whose adjoint is wanted), or None
    where the case is not one of the four vector/matrix products."""
    if not isinstance(other, types.Array) or not isinstance(shape, types.UniTuple):
        return None
    gr = g.ndim if isinstance(g, types.Array) else 0 if is_number(g) else -1
    ranks = (gr, other.ndim, len(shape))
    return ranks if other.ndim <= 2 and len(shape) <= 2 and len(shape) > 0 and gr >= 0 \
        else None


def _mixed(g: Any, other: Any) -> bool:
    """Whether the cotangent and the other operand are arrays of two dtypes (a float64
    adjoint and a float32 operand): numba's ``np.dot`` (BLAS) takes one dtype, so both are
    taken as float64 (the adjoints' dtype)."""
    return isinstance(g, types.Array) and isinstance(other, types.Array) and \
        g.dtype != other.dtype


@overload(matmul_vjp_a, jit_options={"cache": True})
def _matmul_vjp_a(g, b, a_shape):
    ranks = _matmul_ranks(g, b, a_shape)
    if ranks in ((1, 2, 1), (2, 2, 2)) and _mixed(g, b):
        if ranks == (1, 2, 1):
            return lambda g, b, a_shape: np.dot(b.astype(np.float64), g.astype(np.float64))
        return lambda g, b, a_shape: np.dot(g.astype(np.float64), b.T.astype(np.float64))
    if ranks == (1, 1, 2):  # matrix @ vector: the outer product
        return lambda g, b, a_shape: np.outer(g, b)
    if ranks == (0, 1, 1):  # vector @ vector
        return lambda g, b, a_shape: g * b
    if ranks == (1, 2, 1):  # vector @ matrix
        return lambda g, b, a_shape: np.dot(np.ascontiguousarray(b), g)
    if ranks == (2, 2, 2):  # matrix @ matrix
        return lambda g, b, a_shape: np.dot(g, np.ascontiguousarray(b.T))
    return None


def matmul_vjp_b(g: Any, a: Any, b_shape: Any) -> Any:
    """The adjoint of ``b`` in ``a @ b`` for vectors and matrices."""
    raise NotImplementedError("only called from nopython code")


@overload(matmul_vjp_b, jit_options={"cache": True})
def _matmul_vjp_b(g, a, b_shape):
    ranks = _matmul_ranks(g, a, b_shape)
    if ranks in ((1, 2, 1), (2, 2, 2)) and _mixed(g, a):
        if ranks == (1, 2, 1):
            return lambda g, a, b_shape: np.dot(g.astype(np.float64), a.astype(np.float64))
        return lambda g, a, b_shape: np.dot(a.T.astype(np.float64), g.astype(np.float64))
    if ranks == (1, 2, 1):  # matrix @ vector: the transposed product
        return lambda g, a, b_shape: np.dot(g, np.ascontiguousarray(a))
    if ranks == (0, 1, 1):  # vector @ vector
        return lambda g, a, b_shape: g * a
    if ranks == (1, 1, 2):  # vector @ matrix
        return lambda g, a, b_shape: np.outer(a, g)
    if ranks == (2, 2, 2):  # matrix @ matrix
        return lambda g, a, b_shape: np.dot(np.ascontiguousarray(a.T), g)
    return None


def matrix_transpose(x: Any) -> Any:
    """The transpose of a matrix (stacks of matrices are refused at compile time)."""
    raise NotImplementedError("only called from nopython code")


@overload(matrix_transpose, jit_options={"cache": True})
def _matrix_transpose(x):
    if isinstance(x, types.Array) and x.ndim == 2:
        return lambda x: x.T
    return None


def det_vjp(g: Any, out: Any, a: Any) -> Any:
    """The adjoint of ``np.linalg.det(a)`` of a matrix: ``g det(a) inv(a)^T`` (numba's inv
    raises for a singular ``a``, as NumPy's)."""
    raise NotImplementedError("only called from nopython code")


@overload(det_vjp, jit_options={"cache": True})
def _det_vjp(g, out, a):
    if is_number(g) and is_number(out) and isinstance(a, types.Array) and a.ndim == 2:
        return lambda g, out, a: (g * out) * np.linalg.inv(a).T
    return None


def solve_vjp_b(g: Any, a: Any, b_shape: Any) -> Any:
    """The adjoint of ``b`` in ``x = np.linalg.solve(a, b)`` for a matrix ``a`` and a vector
    or matrix ``b``: ``solve(a^T, g)``."""
    raise NotImplementedError("only called from nopython code")


@overload(solve_vjp_b, jit_options={"cache": True})
def _solve_vjp_b(g, a, b_shape):
    if isinstance(a, types.Array) and a.ndim == 2 and isinstance(g, types.Array) and \
            g.ndim in (1, 2) and isinstance(b_shape, types.UniTuple) and \
            len(b_shape) == g.ndim:
        return lambda g, a, b_shape: np.linalg.solve(np.ascontiguousarray(a.T), g)
    return None


def solve_vjp_a(g: Any, out: Any, a: Any, b_ndim: Any) -> Any:
    """The adjoint of ``a`` in ``x = np.linalg.solve(a, b)``: ``-solve(a^T, g) x^T`` (the
    rank of ``b`` is the rank of ``g``, known when numba compiles)."""
    raise NotImplementedError("only called from nopython code")


@overload(solve_vjp_a, jit_options={"cache": True})
def _solve_vjp_a(g, out, a, b_ndim):
    if not (isinstance(a, types.Array) and a.ndim == 2 and isinstance(g, types.Array) and
            isinstance(out, types.Array) and g.ndim == out.ndim):
        return None
    if g.ndim == 1:
        def vector(g, out, a, b_ndim):
            return -np.outer(np.linalg.solve(np.ascontiguousarray(a.T), g), out)
        return vector
    if g.ndim == 2:
        def matrix(g, out, a, b_ndim):
            gb = np.linalg.solve(np.ascontiguousarray(a.T), g)
            return -np.dot(gb, np.ascontiguousarray(out.T))
        return matrix
    return None


def diag_vjp(g: Any, shape: Any, k: Any) -> Any:
    """The adjoint of ``np.diag(v, k)``: the k-th diagonal of ``g`` for a vector ``v``, or
    ``g`` written onto the k-th diagonal of a matrix ``v``."""
    raise NotImplementedError("only called from nopython code")


@overload(diag_vjp, jit_options={"cache": True})
def _diag_vjp(g, shape, k):
    if not (isinstance(g, types.Array) and isinstance(shape, types.UniTuple) and
            isinstance(k, types.Integer)):
        return None
    if len(shape) == 1 and g.ndim == 2:
        def of_vector(g, shape, k):
            rows = max(0, min(g.shape[0] + min(k, 0), g.shape[1] - max(k, 0)))
            out = np.empty(rows)
            for i in range(rows):
                out[i] = g[i - min(k, 0), i + max(k, 0)]
            return out
        return of_vector
    if len(shape) == 2 and g.ndim == 1:
        def of_matrix(g, shape, k):
            out = np.zeros(shape)
            for i in range(g.shape[0]):
                out[i - min(k, 0), i + max(k, 0)] = g[i]
            return out
        return of_matrix
    return None


def cholesky_vjp(g: Any, out: Any) -> Any:
    """The adjoint of ``L = np.linalg.cholesky(a)`` of a real matrix, for the lower triangle
    NumPy reads: ``tril(S + S^T) - diag(S)`` with ``S`` Murray's symmetric adjoint (the
    default helper's formula)."""
    raise NotImplementedError("only called from nopython code")


@overload(cholesky_vjp, jit_options={"cache": True})
def _cholesky_vjp(g, out):
    if not (isinstance(g, types.Array) and isinstance(out, types.Array) and g.ndim == 2 and
            out.ndim == 2 and isinstance(out.dtype, types.Float)):
        return None

    def impl(g, out):
        n = out.shape[-1]
        ell = np.ascontiguousarray(out)
        phi = np.tril(np.dot(np.ascontiguousarray(ell.T), np.ascontiguousarray(g)))
        phi = phi - 0.5 * np.eye(n) * phi
        ell_inv = np.linalg.inv(ell)
        s = np.dot(np.dot(np.ascontiguousarray(ell_inv.T), phi), ell_inv)
        sym = 0.5 * (s + s.T)
        return np.tril(2.0 * sym) - np.eye(n) * sym
    return impl


@numba.njit(cache=True)
def _span(x: Any) -> tuple[int, int]:
    """The addresses ``x`` may touch: [lowest, highest + 1) over its strides."""
    lo = hi = x.ctypes.data
    for d in range(x.ndim):
        step = (x.shape[d] - 1) * x.strides[d]
        if step < 0:
            lo += step
        else:
            hi += step
    return lo, hi + x.itemsize


@numba.njit(cache=True)
def _apart(x: Any, y: Any) -> bool:
    """Whether ``x`` and ``y`` certainly share no memory (their address spans are apart)."""
    if x.size == 0 or y.size == 0:
        return True
    a, b = _span(x)
    c, d = _span(y)
    return b <= c or d <= a


def add_matmul_vjp_a(acc: Any, g: Any, b: Any, a_shape: Any) -> None:
    """``acc += matmul_vjp_a(g, b, a_shape)`` in place: for the outer product of two vectors
    (a matrix-vector product's matrix adjoint, every step of an RNN), without allocating it
    (numba_call_forms.matmul_accumulations rewrites the pullback's
    ``W_bar += matmul_vjp_a(...)`` into this)."""
    raise NotImplementedError("only called from nopython code")


def add_matmul_vjp_b(acc: Any, g: Any, a: Any, b_shape: Any) -> None:
    """``acc += matmul_vjp_b(g, a, b_shape)`` in place (an outer product added without
    allocating it, for a vector-matrix product's matrix adjoint)."""
    raise NotImplementedError("only called from nopython code")


def _outer_into(left_first: bool) -> Any:
    """The typing function of add_matmul_vjp_a (``acc += outer(g, other)``) or
    add_matmul_vjp_b (``acc += outer(other, g)``)."""

    def typer(acc, g, other, shape):
        if not isinstance(acc, types.Array):
            return None  # an adjoint of an operand of @ is an array; else numba refuses
        vjp = matmul_vjp_a if left_first else matmul_vjp_b
        if not (acc.ndim == 2 and isinstance(g, types.Array) and g.ndim == 1 and
                isinstance(other, types.Array) and other.ndim == 1):
            def general(acc, g, other, shape):
                acc += vjp(g, other, shape)
            return general

        def outer(acc, g, other, shape):
            u, v = (g, other) if left_first else (other, g)
            if acc.shape[0] != u.shape[0] or acc.shape[1] != v.shape[0] or \
                    not (_apart(acc, u) and _apart(acc, v)):
                acc += vjp(g, other, shape)  # a view of the buffer itself: as written
                return
            for i in range(u.shape[0]):
                ui = u[i]
                for j in range(v.shape[0]):
                    acc[i, j] += ui * v[j]
        return outer

    return typer


overload(add_matmul_vjp_a, jit_options={"cache": True})(_outer_into(True))


overload(add_matmul_vjp_b, jit_options={"cache": True})(_outer_into(False))


def add_outer(acc: Any, u: Any, v: Any) -> None:
    """``acc += u[:, None] * v`` in place: the matrix adjoint of a matrix-vector product as
    adgen.transforms.specialize writes it out (``W_bar += g[:, None] * x``), added without
    allocating the outer product (numba_call_forms.matmul_accumulations rewrites the statement into
    this). Any other types, shapes, or an ``acc`` sharing memory with ``u`` or ``v``: the
    statement as written."""
    raise NotImplementedError("only called from nopython code")


@overload(add_outer, jit_options={"cache": True})
def _add_outer(acc, u, v):
    if not isinstance(acc, types.Array):
        return None  # an adjoint += : numba refuses it as it would the statement
    if not (acc.ndim == 2 and isinstance(u, types.Array) and u.ndim == 1 and
            isinstance(v, types.Array) and v.ndim == 1):
        def general(acc, u, v):
            acc += u[:, None] * v
        return general

    def outer(acc, u, v):
        if acc.shape[0] != u.shape[0] or acc.shape[1] != v.shape[0] or \
                not (_apart(acc, u) and _apart(acc, v)):
            acc += u[:, None] * v  # broadcast into acc, or a view of acc itself: as written
            return
        for i in range(u.shape[0]):
            ui = u[i]
            for j in range(v.shape[0]):
                acc[i, j] += ui * v[j]
    return outer
