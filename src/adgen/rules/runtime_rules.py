"""Rules for the runtime helpers that generated pullbacks call, so that reverse mode can
differentiate adgen's own pullbacks (reverse over reverse, :mod:`adgen.second_order`).

Generated pullbacks are linear in their cotangent, and so are these helpers: ``sum_vjp``
broadcasts, ``unbroadcast`` sums, ``add`` adds, ``or_zeros`` passes its cotangent on, and their
adjoints are the transposes (in :mod:`adgen.rules.helpers_second`); ``copy_adjoint`` copies
an adjoint and ``kept_copy`` a value a validity guard keeps (second_order turns captures into
it); ``stored_value(g, x)`` is ``stored_into(x, g)`` (zero where x holds integers), which
second_order calls instead. ``zeros_like``, ``zeros_for``, ``zeros_of_tree`` and ``shadow_of`` make adjoint buffers and
``reduced_axes`` computes axes: their values depend on no input (``shadow_of`` returns memory
earlier statements wrote, which the effects analysis takes to alias every other shadow:
transforms/analyses/effects.py). The map itself, ``ShadowMap()``, has no rule: its
objects are taken as objects, never as buffers. ``add_item`` adds into an adjoint in place:
a rule in rrule style that declares the write.

Registered by :func:`register`, which ``adgen.runtime`` calls once it has defined the helpers
(it imports the rule modules, so this module cannot be imported by them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adgen.rules.helpers import (
    accumulate_extreme_jvp,
    accumulate_extreme_vjp,
    array_vjp_transpose,
    broadcast_back,
    clip_above,
    clip_below,
    clip_inside,
    kept_copy,
    listed_transpose,
    mean_vjp,
    mean_vjp_transpose,
    passed_if_present,
    restacked,
    shape_tree,
    stored_into,
    stored_value,
    sum_vjp,
    sum_vjp_transpose,
)

_REGISTERED: list[bool] = []


def _nones(index: Any) -> Any:
    """None for each item of a (nested) tuple or list index; None for any other index."""
    if isinstance(index, (tuple, list)):
        return tuple(_nones(i) for i in index)
    return None


def _no_cotangents(g: Any, out: Any, a: Any, a_min: Any, a_max: Any) -> tuple[()]:
    return ()


def register() -> None:
    """Registers the rules (once)."""
    if _REGISTERED:
        return
    from adgen import runtime
    from adgen.errors import RuleError
    from adgen.rules.registry import defjvp_kind, defrrule, defvjp

    @defvjp(runtime.shadow_of, "sh, x", diff=(), linear=True, name="adgen.runtime.shadow_of")
    def _shadow_of(g, out, sh, x):  # noqa: ANN001, ANN202 - a rule template
        return ()

    @defvjp(runtime.zeros_like, "x", diff=(), linear=True, name="adgen.runtime.zeros_like")
    def _zeros_like(g, out, x):  # noqa: ANN001, ANN202 - a rule template
        return ()

    @defvjp(runtime.sum_vjp, "cot, shape, axis, keepdims", diff="cot", linear=True,
            reads="axis, keepdims", name="adgen.runtime.sum_vjp")
    def _sum_vjp(g, out, cot, shape, axis, keepdims):  # noqa: ANN001, ANN202 - a template
        return sum_vjp_transpose(g, np.shape(cot), axis, keepdims)

    @defvjp(mean_vjp, "cot, shape, axis, keepdims", diff="cot", linear=True,
            reads="shape, axis, keepdims", name="adgen.rules.helpers.mean_vjp")
    def _mean_vjp(g, out, cot, shape, axis, keepdims):  # noqa: ANN001, ANN202 - a template
        return mean_vjp_transpose(g, np.shape(cot), shape, axis, keepdims)

    @defvjp(runtime.sum_keepdims, "a, axis", diff="a", linear=True, reads="axis",
            name="adgen.runtime.sum_keepdims")
    def _sum_keepdims(g, out, a, axis):  # noqa: ANN001, ANN202 - a rule template
        return sum_vjp(g, np.shape(a), axis, True)

    # unbroadcast, add and or_zeros may return their first argument itself (view=True):
    # then its adjoint is the result's, not added to it again
    @defvjp(runtime.unbroadcast, "cot, shape, seq=None", diff="cot", linear=True,
            reads="shape", view=True, name="adgen.runtime.unbroadcast")
    def _unbroadcast(g, out, cot, shape, seq):  # noqa: ANN001, ANN202 - a rule template
        return broadcast_back(g, np.shape(cot), shape)

    @defvjp(runtime.add, "a, b", linear=True, view=True, name="adgen.runtime.add")
    def _add(g, out, a, b):  # noqa: ANN001, ANN202 - a rule template
        return broadcast_back(g, shape_tree(a), np.shape(g)), \
            broadcast_back(g, shape_tree(b), np.shape(g))

    @defvjp(runtime.or_zeros, "cot, like", diff="cot", linear=True, view=True,
            name="adgen.runtime.or_zeros")
    def _or_zeros(g, out, cot, like):  # noqa: ANN001, ANN202 - a rule template
        return passed_if_present(g, shape_tree(cot))

    @defvjp(runtime.zeros_for, "shape, like", diff=(), linear=True,
            name="adgen.runtime.zeros_for")
    def _zeros_for(g, out, shape, like):  # noqa: ANN001, ANN202 - a rule template
        return ()

    @defvjp(runtime.zeros_of_tree, "tree", diff=(), linear=True,
            name="adgen.runtime.zeros_of_tree")
    def _zeros_of_tree(g, out, tree):  # noqa: ANN001, ANN202 - a rule template
        return ()

    @defvjp(runtime.shape_tree, "x", diff=(), linear=True, name="adgen.runtime.shape_tree")
    def _shape_tree(g, out, x):  # noqa: ANN001, ANN202 - a rule template
        return ()

    # np.clip's masks (where it passes a through, takes a_min, takes a_max): booleans, which
    # the jvp code of np.clip(m, lo, hi, out=m) computes before m is overwritten; reverse
    # mode over it asked for a rule (hessian: 'clip_inside() has no derivative rule')
    for mask in (clip_inside, clip_below, clip_above):
        defvjp(mask, "a, a_min, a_max", diff=(), linear=True,
               name=f"adgen.rules.helpers.{mask.__name__}")(_no_cotangents)

    @defvjp(runtime.reduced_axes, "axis, ndim", diff=(), linear=True,
            name="adgen.runtime.reduced_axes")
    def _reduced_axes(g, out, axis, ndim):  # noqa: ANN001, ANN202 - a rule template
        return ()

    @defvjp(runtime.copy_adjoint, "adjoint", linear=True, name="adgen.runtime.copy_adjoint")
    def _copy_adjoint(g, out, adjoint):  # noqa: ANN001, ANN202 - a rule template
        return g

    @defvjp(kept_copy, "x", linear=True, name="adgen.runtime.kept_copy")
    def _kept_copy(g, out, x):  # noqa: ANN001, ANN202 - a rule template
        return g

    @defvjp(stored_value, "cot, x", diff="cot", linear=True, reads="x", view=True,
            name="adgen.runtime.stored_value")
    def _stored_value(g, out, cot, x):  # noqa: ANN001, ANN202 - a rule template
        return stored_into(x, g)

    # (pop_adjoint, which takes a list's items back one by one, has none: an rrule writing a
    # list in place is taken by the compiler for a write into an array, refused at run time)
    @defvjp(runtime.stack_vjp, "cot, tree, axis", diff="cot", linear=True,
            reads="tree, axis", name="adgen.runtime.stack_vjp")
    def _stack_vjp(g, out, cot, tree, axis):  # noqa: ANN001, ANN202 - a rule template
        return restacked(g, np.shape(cot), tree, axis)

    # (the adjoint of a list or tuple a ufunc read as an array, sequence_operand's: f66b27f)
    @defvjp(runtime.array_vjp, "cot, tree", diff="cot", linear=True, reads="tree", view=True,
            name="adgen.runtime.array_vjp")
    def _array_vjp(g, out, cot, tree):  # noqa: ANN001, ANN202 - a rule template
        return array_vjp_transpose(g, np.shape(cot), tree)

    @defvjp(runtime.list_adjoint, "cot", linear=True, name="adgen.runtime.list_adjoint")
    def _list_adjoint(g, out, cot):  # noqa: ANN001, ANN202 - a rule template
        return listed_transpose(g, shape_tree(cot))


    # the adjoint and the tangent of a running extreme (np.maximum.accumulate) are linear in
    # the cotangent / tangent they route, and transposes of each other (the entries that set
    # the extreme are fixed where it is differentiable)
    @defvjp(accumulate_extreme_vjp, "cot, extreme, a, axis, dtype", diff="cot", linear=True,
            reads="extreme, a, axis, dtype", name="adgen.runtime.accumulate_extreme_vjp")
    def _accumulate_extreme_vjp(g, out, cot, extreme, a, axis, dtype):  # noqa: ANN001, ANN202
        return accumulate_extreme_jvp(g, extreme, a, axis, dtype)

    @defvjp(accumulate_extreme_jvp, "d, extreme, a, axis, dtype", diff="d", linear=True,
            reads="extreme, a, axis, dtype", name="adgen.runtime.accumulate_extreme_jvp")
    def _accumulate_extreme_jvp(g, out, d, extreme, a, axis, dtype):  # noqa: ANN001, ANN202
        return accumulate_extreme_vjp(g, extreme, a, axis, dtype)

    def add_item_rule(adjoint: Any, index: Any, g: Any) -> tuple[Any, Any]:
        """``adjoint[index] += g`` in place: the old contents' adjoint is the new contents',
        and ``g``'s is what the new contents' adjoint holds at ``index``."""
        if type(adjoint) is not np.ndarray:
            raise RuleError("second derivatives through the adjoint of an item of a list, "
                            "dict or object (reverse over reverse) are not supported",
                            hint="use adgen.hessian, which takes forward over reverse")
        runtime.add_item(adjoint, index, g)

        # the index's cotangent: None for each of its items, since a pullback of a call
        # with a tuple display (add_item(t_bar, (i, j), g)) reads one per item
        no_index = _nones(index)

        def pullback(out_bar: Any, adjoint_bar: Any) -> tuple[Any, ...]:
            if g is None:
                return adjoint_bar.copy(), no_index, None
            return adjoint_bar.copy(), no_index, runtime.unbroadcast(adjoint_bar[index],
                                                                     np.shape(g))

        return None, pullback

    defrrule(runtime.add_item, add_item_rule, mutates=("adjoint",))
    # forward mode: the helpers are linear in what they differentiate, or make zeros
    defjvp_kind("zero", runtime.shadow_of, runtime.zeros_like, runtime.zeros_for,
                runtime.zeros_of_tree, runtime.reduced_axes, runtime.shape_tree,
                clip_inside, clip_below, clip_above)
    defjvp_kind("linear", runtime.sum_vjp, mean_vjp, runtime.sum_keepdims, runtime.unbroadcast,
                runtime.add, runtime.or_zeros, runtime.copy_adjoint, kept_copy, stored_value,
                runtime.stack_vjp, runtime.array_vjp,
                runtime.list_adjoint, accumulate_extreme_vjp, accumulate_extreme_jvp)
    _REGISTERED.append(True)
