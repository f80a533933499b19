"""``np.multiply.at``, ``np.maximum.at`` and ``np.minimum.at`` as values, and their adjoints.

``ufunc.at(a, indices, b)`` applies the ufunc in place at ``a[indices]``, once per element of
``b`` (broadcast to ``a[indices]``'s shape): a position named twice is updated twice.
transforms/lower_mutation.py writes ``np.maximum.at(x, i, v)`` as
``t = ufunc_at(np.maximum, x, i, v); x[...] = t``, so the in-place write is a plain store
the mutation analysis handles (the pullback reads the old ``x``: saved under "save", refused
under "strict"), and the arithmetic is this function, whose rule is in rules/scatter.py.

Every index form NumPy takes is reduced to flat positions: ``np.arange(x.size)
.reshape(x.shape)[indices]`` names the element of ``x`` each element of ``x[indices]`` is,
and the updates are ``(position, value)`` pairs in C order. Then for a position ``p`` with
updates ``w_k`` (``p_k == p``):

- multiply: ``out_p = a_p * prod_k w_k``; ``d a_p = prod_k w_k``, ``d w_k = a_p * prod_{j != k}
  w_j`` (the product of the others, exact with zeros: no division by ``w_k``);
- maximum / minimum: ``out_p`` is the extreme of ``a_p`` and the ``w_k``; the cotangent goes to
  the values equal to it, shared equally among ties (adgen's ``np.maximum`` rule:
  ``balanced_eq``).

Helpers here use only ``np``, builtins and other helpers (generated standalone modules copy
them).
"""

from __future__ import annotations

import numpy as np

from adgen.rules.helpers_core import unbroadcast

__all__ = [
    "others_product",
    "ufunc_at",
    "ufunc_at_positions",
    "ufunc_at_vjp",
    "ufunc_at_jvp",
]


def ufunc_at(ufunc: object, a: object, indices: object, b: object) -> np.ndarray:
    """A new array: ``a`` after ``ufunc.at(a, indices, b)`` (``a`` itself is not changed)."""
    out = np.array(a, copy=True)
    ufunc.at(out, indices, b)  # type: ignore[attr-defined]
    return out


def ufunc_at_positions(a: object, indices: object, b: object) -> tuple[np.ndarray, np.ndarray]:
    """The flat positions in ``a`` and the values, one pair per update, in the order
    ``ufunc.at`` applies them."""
    a = np.asarray(a)
    pos = np.arange(a.size).reshape(a.shape)[indices]
    values = np.broadcast_to(np.asarray(b), np.shape(pos))
    return np.ravel(pos), np.ravel(values)


def others_product(p: np.ndarray, w: np.ndarray, size: int) -> np.ndarray:
    """For each update k, the product of the other updates ``w_j`` at its position (j != k),
    exactly where some are zero: a group with no zero gives ``prod / w_k``, one zero gives the
    product of the rest to the zero's update and 0 to the others, two zeros 0 to all."""
    zero = w == 0
    zeros = np.bincount(p, weights=zero, minlength=size)
    nonzero_prod = np.ones(size, dtype=np.result_type(w, np.float64))
    np.multiply.at(nonzero_prod, p, np.where(zero, 1.0, w))
    n = zeros[p]
    safe = np.where(zero, 1.0, w)
    return np.where(n == 0, nonzero_prod[p] / safe,
                    np.where((n == 1) & zero, nonzero_prod[p], 0.0))


def ufunc_at_vjp(g: object, out: object, ufunc: object, a: object, indices: object,
                 b: object, which: str) -> object:
    """The cotangent of ``a`` (``which == "a"``) or of ``b`` in ``out = ufunc_at(ufunc, a,
    indices, b)``, for the ufunc's multiply, maximum or minimum."""
    a = np.asarray(a)
    g = np.asarray(g)
    p, w = ufunc_at_positions(a, indices, b)
    flat_a, flat_g, flat_out = np.ravel(a), np.ravel(g), np.ravel(out)
    if ufunc is np.multiply:
        if which == "a":
            scale = np.ones(a.size, dtype=np.result_type(w, np.float64))
            np.multiply.at(scale, p, w)
            return np.reshape(flat_g * scale, a.shape)
        ct = flat_g[p] * flat_a[p] * others_product(p, w, a.size)
    else:  # maximum, minimum: the values equal to the result share its cotangent
        hit_a = flat_a == flat_out
        hit_w = w == flat_out[p]
        count = hit_a + np.bincount(p, weights=hit_w, minlength=a.size)
        count = np.maximum(count, 1)
        if which == "a":
            return np.reshape(flat_g * hit_a / count, a.shape)
        ct = flat_g[p] * hit_w / count[p]
    # back to b's shape: summed over the axes b was broadcast along
    indexed = np.shape(np.arange(a.size).reshape(a.shape)[indices])
    return unbroadcast(np.reshape(ct, indexed), np.shape(b))


def ufunc_at_jvp(da: object, db: object, out: object, ufunc: object, a: object,
                 indices: object, b: object) -> np.ndarray:
    """The tangent of ``out = ufunc_at(ufunc, a, indices, b)`` for tangents ``da`` and ``db``
    (zero where None)."""
    a = np.asarray(a)
    p, w = ufunc_at_positions(a, indices, b)
    flat_a, flat_out = np.ravel(a), np.ravel(out)
    dflat_a = np.zeros(a.size) if da is None else np.ravel(np.broadcast_to(da, a.shape))
    dw = np.zeros(w.shape) if db is None else np.ravel(np.broadcast_to(
        db, np.shape(np.arange(a.size).reshape(a.shape)[indices])))
    if ufunc is np.multiply:
        scale = np.ones(a.size, dtype=np.result_type(w, np.float64))
        np.multiply.at(scale, p, w)
        t = dflat_a * scale
        np.add.at(t, p, flat_a[p] * others_product(p, w, a.size) * dw)
    else:
        hit_a = flat_a == flat_out
        hit_w = w == flat_out[p]
        count = np.maximum(hit_a + np.bincount(p, weights=hit_w, minlength=a.size), 1)
        t = dflat_a * hit_a
        np.add.at(t, p, dw * hit_w)
        t = t / count
    return np.reshape(t, a.shape)
