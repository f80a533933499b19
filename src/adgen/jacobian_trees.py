"""Jacobians and Hessians with respect to a dict, list or tuple of arrays and numbers (a
pytree, as JAX's): ``adgen.hessian(loss)(params)`` of ``params = {"W": W, "b": b}``.

A derivative with respect to such an argument has its structure: ``jacfwd(f)(params)["W"]``
is the Jacobian with respect to ``params["W"]`` (the output's shape followed by W's), and
``hessian(f)(params)["W"]["b"]`` the block of the second derivatives in W and b (W's shape
followed by b's), as ``jax.jacfwd`` and ``jax.hessian`` give. A leaf with no float content
(an int, a string, None) has None there, as its gradient is None.

- :func:`is_tree` -- a dict, list or tuple (a namedtuple too);
- :func:`leaves` and :func:`rebuild` -- the values a tree holds, in order, and a tree of
  the same structure holding others;
- :func:`tree_basis` -- the unit tangents of a tree, one per element of a float leaf (the
  others zero, a non-float leaf None);
- :func:`leaves_like` -- the leaves of a derivative shaped like a tree (a gradient, a
  Hessian-vector product), read in the tree's order;
- :func:`tree_jacobian`, :func:`tree_rows`, :func:`tree_hessian` -- a derivative with
  respect to a tree from its columns (jacfwd's jvps), from its rows (jacrev's cotangents),
  and the Hessian from its Hessian-vector products;
- :func:`forward_jacobian`, :func:`reverse_jacobians` -- jacfwd's and jacrev's, of an
  output that may be a dict too (one Jacobian per item: ``jacfwd(grad(loss))(params)``,
  JAX's Hessian, ``H["W"]["b"]``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from adgen.arguments import has_float
from adgen.jacobian_parts import Runs, columns, like_argument

__all__ = ["forward_jacobian", "is_tree", "leaves", "leaves_like", "rebuild",
           "reverse_jacobians", "structured_output", "tree_basis", "tree_hessian",
           "tree_jacobian", "tree_rows"]


def is_tree(x: Any) -> bool:
    """A dict, list or tuple: a derivative with respect to it has its structure."""
    return isinstance(x, (dict, list, tuple))


def leaves(x: Any) -> list[Any]:
    """The values ``x`` holds, all the way down, in order (``x`` itself if not a tree)."""
    if isinstance(x, dict):
        return [leaf for v in x.values() for leaf in leaves(v)]
    if isinstance(x, (list, tuple)):
        return [leaf for v in x for leaf in leaves(v)]
    return [x]


def rebuild(x: Any, new: list[Any]) -> Any:
    """A tree of ``x``'s structure holding ``new`` (one value per leaf of ``x``, in order)."""
    it = iter(new)

    def build(v: Any) -> Any:
        if isinstance(v, dict):
            return type(v)((k, build(item)) for k, item in v.items()) \
                if type(v) is not dict else {k: build(item) for k, item in v.items()}
        if isinstance(v, tuple) and hasattr(v, "_fields"):  # a namedtuple
            return type(v)(*(build(item) for item in v))
        if isinstance(v, (list, tuple)):
            return type(v)(build(item) for item in v)
        return next(it)

    return build(x)


def leaves_like(x: Any, d: Any) -> list[Any]:
    """The leaves of ``d``, a derivative of ``x``'s structure (a gradient, a Hessian-vector
    product), read where ``x`` has its leaves: by key for a dict, by position for a list or
    tuple; a missing or None part (no derivative) gives None."""
    if isinstance(x, dict):
        return [leaf for k, v in x.items()
                for leaf in leaves_like(v, d.get(k) if isinstance(d, dict) else None)]
    if isinstance(x, (list, tuple)):
        parts = list(d) if isinstance(d, (list, tuple)) and len(d) == len(x) else [None] * len(x)
        return [leaf for v, part in zip(x, parts) for leaf in leaves_like(v, part)]
    return [d]


def _zero(leaf: Any) -> Any:
    if not has_float(leaf):
        return None
    return np.zeros(np.shape(leaf)) if isinstance(leaf, np.ndarray) else 0.0


def tree_basis(x: Any) -> list[tuple[int, Any]]:
    """The unit tangents of the tree ``x``: (the leaf's index, the tangent) per element of a
    float leaf, C order; the other float leaves zero, a non-float leaf None."""
    flat = leaves(x)
    zeros = [_zero(leaf) for leaf in flat]
    out = []
    for k, leaf in enumerate(flat):
        if zeros[k] is None:
            continue
        for j in range(int(np.size(leaf))):
            e = np.zeros(np.shape(leaf))
            e.flat[j] = 1.0
            out.append((k, rebuild(x, [e if i == k and isinstance(leaf, np.ndarray) else
                                       1.0 if i == k else z for i, z in enumerate(zeros)])))
    return out


def tree_jacobian(x: Any, cols: list[tuple[int, Any]], column: Any) -> Any:
    """A derivative with respect to the tree ``x`` from its columns: ``cols`` pairs each
    element's leaf index with what was computed along it (a jvp's tangent, an hvp's tree),
    and ``column(leaf, dots)`` makes one leaf's part from its columns (None for a leaf with
    no float content)."""
    flat = leaves(x)
    parts = []
    for k, leaf in enumerate(flat):
        dots = [d for i, d in cols if i == k]
        parts.append(column(leaf, dots) if dots else None)
    return rebuild(x, parts)


def structured_output(out: Any) -> bool:
    """A function's output whose Jacobian has its structure: a dict, or a list or tuple
    whose items are not numbers or arrays of one shape (those are stacked, as before)."""
    if isinstance(out, dict):
        return True
    if not isinstance(out, (list, tuple)):
        return False
    try:
        np.asarray(out, dtype=float)
    except (TypeError, ValueError):
        return True
    return False


def forward_jacobian(out: Any, x: Any, cols: list[tuple[int, Any]]) -> Any:
    """jacfwd's Jacobian of ``out`` with respect to ``x`` from its columns (``cols``: the
    leaf index of x and the jvp's tangent, per element): the output's shape followed by x's,
    in x's structure for a tree; for a :func:`structured_output`, that per item of it, in
    its structure (a dict of the gradient: JAX's Hessian, ``H["W"]["b"]``)."""
    def of(o: Any, pairs: list[tuple[int, Any]]) -> Any:
        if is_tree(x):
            return tree_jacobian(x, pairs, lambda leaf, dots: columns(dots, o, leaf))
        return columns([d for _, d in pairs], o, x)

    if not structured_output(out):
        return of(out, cols)
    parts = []
    for i, o in enumerate(leaves(out)):
        if not has_float(o):
            parts.append(None)
            continue
        zero = np.zeros(np.shape(o))
        parts.append(of(o, [(k, _or(leaves_like(out, d)[i], zero)) for k, d in cols]))
    return rebuild(out, parts)


def _or(value: Any, zero: Any) -> Any:
    return zero if value is None else value


def tree_rows(x: Any, rows: list[list[Any]], shape: tuple[int, ...]) -> Any:
    """jacrev's Jacobian with respect to the tree ``x`` from the leaves of its cotangents,
    one list per element of the output: each float leaf's part has the output's shape
    followed by the leaf's (None for a leaf without float content)."""
    parts = []
    for k, leaf in enumerate(leaves(x)):
        if not has_float(leaf):
            parts.append(None)
            continue
        got = [np.zeros(np.shape(leaf)) if r[k] is None else np.asarray(r[k], dtype=float)
               for r in rows]
        parts.append(like_argument(np.stack(got).reshape(shape + np.shape(leaf)) if got else
                                   np.zeros(shape + np.shape(leaf)), leaf))
    return rebuild(x, parts)


def tree_hessian(h: Callable[..., Any], x: Any, runs: Runs, kwargs: dict[str, Any]) -> Any:
    """The Hessian with respect to the tree ``x`` (as jax.hessian's): ``H[i][k]``, leaf i's
    shape followed by leaf k's, in x's structure twice; one Hessian-vector product ``h``
    (x's structure) per element of a float leaf; None for a leaf without float content."""
    cols = []
    for k, e in tree_basis(x):
        args = runs.next()
        cols.append((k, leaves_like(x, h(*args, e, **kwargs))))
    rows = []
    for i, leaf in enumerate(leaves(x)):
        if not has_float(leaf):
            rows.append(None)
            continue
        zero = np.zeros(np.shape(leaf))
        rows.append(tree_jacobian(x, [(k, zero if c[i] is None else c[i]) for k, c in cols],
                                  lambda other, dots, leaf=leaf: columns(dots, leaf, other)))
    return rebuild(x, rows)


def _rows(cotangent: Callable[[Any], Any], shape: tuple[int, ...],
                  pullback: Callable[[Any], Any], args: tuple[Any, ...],
                  nums: tuple[int, ...]) -> list[Any]:
    """jacrev's Jacobians (one per argument in ``nums``) of an output of ``shape``: the
    pullback of ``cotangent(e)`` per unit ``e`` of that shape, stacked as its rows."""
    rows: list[list[Any]] = [[] for _ in nums]
    for k in range(int(np.prod(shape, dtype=int))):
        e = np.zeros(shape)
        e.flat[k] = 1.0
        cts = pullback(cotangent(e if shape else float(e)))
        for r, n in zip(rows, nums):
            if is_tree(args[n]):  # its leaves' cotangents, in its order
                r.append(leaves_like(args[n], cts[n]))
            else:
                r.append(np.asarray(cts[n], dtype=float) if cts[n] is not None
                         else np.zeros(np.shape(args[n])))
    return [tree_rows(args[n], r, shape) if is_tree(args[n]) else
            like_argument(np.stack(r).reshape(shape + np.shape(args[n])) if r else
                          np.zeros(shape + np.shape(args[n])), args[n])
            for r, n in zip(rows, nums)]


def _zero_cotangent(o: Any) -> Any:
    """A zero cotangent of an output's item (None for one without float content)."""
    if not has_float(o):
        return None
    return np.zeros(np.shape(o)) if isinstance(o, np.ndarray) else 0.0


def reverse_jacobians(out: Any, pullback: Callable[[Any], Any], args: tuple[Any, ...],
                      nums: tuple[int, ...]) -> list[Any]:
    """jacrev's Jacobians of ``out``, one per argument in ``nums``, from the pullback of
    the forward that made it: the output's shape followed by the argument's (its
    structure for a tree); for a :func:`structured_output`, that per item of it, in its
    structure (``jacrev(grad(loss))(params)["W"]["b"]``)."""
    if not structured_output(out):
        return _rows(lambda e: e, np.shape(out), pullback, args, nums)
    flat = leaves(out)
    zeros = [_zero_cotangent(o) for o in flat]
    items: list[list[Any] | None] = []
    for i, o in enumerate(flat):
        if zeros[i] is None:
            items.append(None)
            continue

        def cotangent(e: Any, i: int = i) -> Any:  # e at item i, zeros elsewhere
            return rebuild(out, [e if j == i else z for j, z in enumerate(zeros)])

        items.append(_rows(cotangent, np.shape(o), pullback, args, nums))
    return [rebuild(out, [None if r is None else r[c] for r in items])
            for c in range(len(nums))]
