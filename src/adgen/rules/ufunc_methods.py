"""Rules for the outer products of the arithmetic ufuncs and ``np.multiply.accumulate``.

``np.subtract.outer(x, y)`` (every pairwise difference: a distance matrix, a kernel's
argument) and its siblings ``np.add.outer``, ``np.multiply.outer`` and ``np.divide.outer``
give ``out[i..., j...] = op(a[i...], b[j...])``: ``a``'s axes first, then ``b``'s. Their
adjoints contract ``g`` with the other operand over that operand's axes (``np.tensordot``
with an integer ``axes``: the last ``ndim(b)`` axes of ``g``, or the first ``ndim(a)``).
``np.multiply.accumulate`` is ``np.cumprod`` along axis 0 unless told.

Like the other ufunc methods (rules/decompositions.py), each is registered for a stand-in
function (``registry.defufunc_method``): ``np.subtract.outer`` is a new bound method at every
attribute access.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adgen.rules.helpers import cumprod_jvp, cumprod_vjp
from adgen.rules.registry import defjvp, defjvp_kind, defufunc_method, defvjp

# --------------------------------------------------------------------------------------------
# ufunc.outer of +, -, *, /


@defufunc_method(np.add, "outer")
def add_outer(a: Any, b: Any) -> Any:
    """Stands for ``np.add.outer`` in the registry."""
    return np.add.outer(a, b)


@defufunc_method(np.subtract, "outer")
def subtract_outer(a: Any, b: Any) -> Any:
    """Stands for ``np.subtract.outer`` in the registry."""
    return np.subtract.outer(a, b)


@defufunc_method(np.multiply, "outer")
def multiply_outer(a: Any, b: Any) -> Any:
    """Stands for ``np.multiply.outer`` in the registry."""
    return np.multiply.outer(a, b)


@defufunc_method(np.divide, "outer")
def divide_outer(a: Any, b: Any) -> Any:
    """Stands for ``np.divide.outer`` (``np.true_divide.outer``) in the registry."""
    return np.divide.outer(a, b)


# g has a's axes then b's: a's cotangent sums g over b's axes (a contraction with ones), b's
# over a's
@defvjp(add_outer, "a, b", linear=True, name="numpy.add.outer")
def _add_outer(g: Any, out: Any, a: Any, b: Any) -> Any:
    return (np.tensordot(g, np.ones(np.shape(b)), len(np.shape(b))),
            np.tensordot(np.ones(np.shape(a)), g, len(np.shape(a))))


@defvjp(subtract_outer, "a, b", linear=True, name="numpy.subtract.outer")
def _subtract_outer(g: Any, out: Any, a: Any, b: Any) -> Any:
    return (np.tensordot(g, np.ones(np.shape(b)), len(np.shape(b))),
            -np.tensordot(np.ones(np.shape(a)), g, len(np.shape(a))))


@defvjp(multiply_outer, "a, b", reads="a, b", name="numpy.multiply.outer")
def _multiply_outer(g: Any, out: Any, a: Any, b: Any) -> Any:
    # holomorphic: no conjugates (JAX's convention), as for a * b
    return np.tensordot(g, b, len(np.shape(b))), np.tensordot(a, g, len(np.shape(a)))


@defvjp(divide_outer, "a, b", reads="a, b", name="numpy.divide.outer")
def _divide_outer(g: Any, out: Any, a: Any, b: Any) -> Any:
    return (np.tensordot(g, 1.0 / np.asarray(b), len(np.shape(b))),
            -np.tensordot(a, g, len(np.shape(a))) / (np.asarray(b) * b))


defjvp_kind("linear", add_outer, subtract_outer)
defjvp_kind("multilinear", multiply_outer)


@defjvp(divide_outer)
def _divide_outer_jvp(d: Any, out: Any, a: Any, b: Any) -> Any:
    # d(a / b) = da / b - (a / b) db / b, db broadcast over a's axes (b's are the last ones)
    return np.divide.outer(d, b), -out * (d / np.asarray(b))


# --------------------------------------------------------------------------------------------
# np.multiply.accumulate: np.cumprod along axis 0 unless told


@defufunc_method(np.multiply, "accumulate")
def multiply_accumulate(array: Any, axis: Any = 0) -> Any:
    """Stands for ``np.multiply.accumulate`` in the registry."""
    return np.multiply.accumulate(array, axis=axis)


@defvjp(multiply_accumulate, "array, axis=0", diff="array", reads="array, out, axis",
        name="numpy.multiply.accumulate")
def _multiply_accumulate(g: Any, out: Any, array: Any, axis: Any) -> Any:
    return cumprod_vjp(g, out, array, axis)


@defjvp(multiply_accumulate)
def _multiply_accumulate_jvp(d: Any, out: Any, array: Any, axis: Any) -> Any:
    return cumprod_jvp(d, out, array, axis)
