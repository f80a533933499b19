"""A sum's adjoint in the pullback without the array it would broadcast to.

The rule of ``np.sum`` gives ``sum_vjp(g, shape, axis, keepdims)``: the cotangent ``g``
broadcast back to the summed array's shape. Where what the adjoint is added to has that
shape already, the addition broadcasts ``g`` itself, and neither the filled array nor (often)
the shape kept for it is needed. Functions taking the :class:`reverse_pullback.Pullback`
(its plan, its adjoints' names, the shapes the forward saved):

- :func:`scalar_sums`: a full sum's adjoint that only scales an array of the summed one's
  shape is the number itself (specialize.scalar_sum_adjoints, given the facts below);
- :func:`sums_into_parts`: ``t_bar += sum_vjp(g, t.shape, None, False)`` where ``t_bar`` is
  the part of an adjoint that ``t`` is of its array: ``t_bar += g``;
- :func:`broadcast_by_the_addition`: a sum kept with keepdims added into the adjoint of the
  array summed: ``g``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import gast
from adgen.transforms.specialize import scalar_sum_adjoints

if TYPE_CHECKING:
    from adgen.transforms.reverse_plan import Plan
    from adgen.transforms.reverse_pullback import Pullback


def scalar_sums(pb: Pullback, body: list[gast.stmt]) -> None:
    """A full sum's adjoint that only scales an array of the summed one's shape, in the
    pullback's top-level ``body``: the number itself (``out_bar * 2 * out``), not an array
    filled with it (nor the shape kept for it)."""
    scalar_sum_adjoints(body, lambda shape: summed_array(pb, shape),
                        lambda a, b: top_level_same_shape(pb.plan, a, b),
                        lambda f, x: top_level_maybe_same(pb.plan, f, x))


def summed_array(pb: Pullback, shape: gast.expr) -> str | None:
    """The forward name whose shape ``shape`` is in the pullback (``x.shape``, or the
    name the forward saved it as), or None."""
    if isinstance(shape, gast.Attribute) and shape.attr == "shape" and \
            isinstance(shape.value, gast.Name):
        return shape.value.id
    if isinstance(shape, gast.Call) and isinstance(shape.func, gast.Attribute) and \
            shape.func.attr == "shape" and isinstance(shape.func.value, gast.Name) and \
            shape.func.value.id == "np" and len(shape.args) == 1 and \
            isinstance(shape.args[0], gast.Name) and \
            isinstance(pb.plan.kinds.get(shape.args[0].id), int):
        return shape.args[0].id  # np.shape(x) of an array
    if isinstance(shape, gast.Name) and shape.id in pb.rec.shape_of:
        return pb.rec.shape_of[shape.id][0]
    return None


def top_level_same_shape(plan: Plan, a: str, b: str) -> bool:
    """``Plan.same_shape`` of names bound outside every loop (one value each, which the
    top level of the pullback reads)."""
    return all(plan.loops_of.get(id(plan.def_stmt.get(n)), ()) == ()
               for n in (a, b)) and plan.same_shape(a, b)


def top_level_maybe_same(plan: Plan, f: str, x: str) -> bool:
    """Whether ``f``, a float64 array, has ``x``'s rank, both bound outside every loop:
    their shapes may agree, decided at run time (specialize.scalar_sum_adjoints)."""
    rank = plan.kinds.get(f)
    return f in plan.f64_arrays and type(rank) is int and rank > 0 and \
        plan.kinds.get(x) == rank and \
        all(plan.loops_of.get(id(plan.def_stmt.get(n)), ()) == () for n in (f, x))


def sums_into_parts(pb: Pullback, body: list[gast.stmt]) -> None:
    """``t_bar += sum_vjp(g, t.shape, None, False)`` -> ``t_bar += g`` where ``t_bar`` was
    just bound to the same part of an adjoint that ``t`` is of its array (``t = Y[idx]``,
    ``t_bar = Y_bar[idx]``; an adjoint has its value's shape, so the part has ``t``'s):
    adding the full sum's cotangent, a number, to each element is adding the filled
    array, without the array or the helper call, and ``t`` is not kept for its shape
    (seidel-2d's ``np.sum(A[i - 1:i + 2, j - 1:j + 2])``)."""
    for k in range(1, len(body)):
        st, prev = body[k], body[k - 1]
        if not (isinstance(st, gast.AugAssign) and isinstance(st.op, gast.Add) and
                isinstance(st.target, gast.Name) and isinstance(st.value, gast.Call) and
                isinstance(st.value.func, gast.Name) and st.value.func.id == "sum_vjp" and
                len(st.value.args) == 4 and not st.value.keywords):
            continue
        g, shape, axis, keep = st.value.args
        t = summed_array(pb, shape)  # t.shape, np.shape(t)
        if t is None or isinstance(shape, gast.Name) or not (
                isinstance(axis, gast.Constant) and axis.value is None and
                isinstance(keep, gast.Constant) and keep.value is False):
            continue
        at = pb.plan.def_stmt.get(t)
        if not (pb.plan.def_count.get(t) == 1 and type(pb.plan.kinds.get(t)) is int and
                isinstance(at, gast.Assign) and isinstance(at.value, gast.Subscript) and
                isinstance(at.value.value, gast.Name) and
                at.value.value.id in pb.adj):
            continue
        if isinstance(prev, gast.Assign) and len(prev.targets) == 1 and \
                isinstance(prev.targets[0], gast.Name) and \
                prev.targets[0].id == st.target.id and \
                isinstance(prev.value, gast.Subscript) and \
                isinstance(prev.value.value, gast.Name) and \
                prev.value.value.id == pb.adj[at.value.value.id] and \
                gast.dump(prev.value.slice) == gast.dump(at.value.slice):
            st.value = g


def broadcast_by_the_addition(n: str, value: gast.expr) -> gast.expr:
    """``sum_vjp(g, np.shape(n), axis, True)`` added into the adjoint of the array ``n``,
    which has ``n``'s shape: ``g`` itself, whose size-1 axes the addition broadcasts (the
    adjoint of a row sum kept with keepdims, ``z_bar -= t_bar`` instead of a full copy of
    ``t_bar`` made first); any other value as it is."""
    if not (isinstance(value, gast.Call) and isinstance(value.func, gast.Name) and
            value.func.id == "sum_vjp" and len(value.args) == 4 and not value.keywords):
        return value
    g, shape, _axis, keep = value.args
    names_n = (isinstance(shape, gast.Attribute) and shape.attr == "shape" and
               isinstance(shape.value, gast.Name) and shape.value.id == n) or (
        isinstance(shape, gast.Call) and isinstance(shape.func, gast.Attribute) and
        shape.func.attr == "shape" and isinstance(shape.func.value, gast.Name) and
        shape.func.value.id == "np" and len(shape.args) == 1 and
        isinstance(shape.args[0], gast.Name) and shape.args[0].id == n)
    if names_n and isinstance(keep, gast.Constant) and keep.value is True:
        return g
    return value
