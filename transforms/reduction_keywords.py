"""Reduction keywords: NumPy's ``dtype=``, ``initial=`` and ``where=`` of a reduction, written
as the reductions adgen's rules take.

Input: a statement of a function in A-normal form, ``r = np.sum(a, ..., where=m)`` or the
method form ``r = a.sum(..., where=m)``, and the object its callee resolves to. Output, where the callee is ``np.sum``, ``np.prod``,
``np.mean``, ``np.max``/``np.min`` (``amax``/``amin``) and one of those keywords is given, the
statements computing the same value from the plain reduction:

- ``dtype=d``    -> ``t = np.asarray(a, dtype=d)``, reduced (the elements cast first, as NumPy
                    accumulates in ``d``; an integer ``d`` truncates: no gradient);
- ``where=m``    -> ``np.where(m, a, 0)`` summed (``1`` for a product; for the mean, the sum over
                    the count of ``m``'s broadcast, in ``a``'s dtype as NumPy's mean);
                    for an extremum, ``np.where(m, a, initial)`` (NumPy requires ``initial``);
- ``initial=v``  -> ``+ v`` after a sum, ``* v`` after a product, ``np.maximum(., v)`` /
                    ``np.minimum(., v)`` after an extremum; an extremum of an array that may be
                    empty gives ``v`` as NumPy's: over every axis, a branch on ``np.size(a)``;
                    over axes written as ints, a row of ``v`` concatenated along each (an axis
                    given by a name keeps ``np.maximum``: an empty array raises).

- ``np.var`` / ``np.std`` with ``where=``, ``mean=``, ``correction=`` or ``dtype=``: written out by
  ``_deviation`` (the selection's mean, or the one given, then the sum of ``|a - mean|^2``
  over the selection's count minus ``ddof``); ``np.cumsum`` / ``np.cumprod`` with ``dtype=``:
  of ``np.asarray(a, dtype=d)``.

Everything else (``axis``, ``keepdims``) is passed on; ``out=`` is left to the reduction's
rule (refused there). The rewritten statements are ordinary NumPy, so both modes, every policy
and the numba backend differentiate them as they differentiate the user's own code.
"""

from __future__ import annotations

import inspect
from typing import Any

import gast
import numpy as np
from adgen.transforms.desugar import assign, located_at, name
from adgen.transforms.names import Namer
from adgen.transforms.walk import clone

_KINDS = {np.sum: "sum", np.prod: "prod", np.mean: "mean", np.max: "max", np.amax: "max",
          np.min: "min", np.amin: "min", np.var: "var", np.std: "std", np.cumsum: "cumsum",
          np.cumprod: "cumprod"}
_LOWERED = ("dtype", "initial", "where", "correction", "mean")


# ndarray methods taking the keywords: x.sum(axis, dtype, out, keepdims, initial, where) has
# the parameters of np.sum(a, axis, dtype, out, keepdims, initial, where) after ``a``, and so
# for the others
_METHODS = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "max": np.max, "min": np.min,
            "var": np.var, "std": np.std, "cumsum": np.cumsum, "cumprod": np.cumprod}


def lower_reduction(s: gast.Assign, callee: Any, namer: Namer) -> list[gast.stmt] | None:
    """The statements replacing ``s`` (None: ``s`` is not a reduction with those keywords).

    ``x.sum(where=m)`` (the method of a local value, or of a global array) is read as
    ``np.sum(x, where=m)``."""
    call = s.value
    if isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) and \
            call.func.attr in _METHODS and any(k.arg in _LOWERED for k in call.keywords) and \
            (callee is None or isinstance(getattr(callee, "__self__", None), np.ndarray)):
        callee = _METHODS[call.func.attr]
        call = gast.Call(func=call.func, args=[call.func.value, *call.args],
                         keywords=call.keywords)
    kind = _KINDS.get(callee) if _hashable(callee) else None
    if kind is None or not isinstance(call, gast.Call) or \
            any(isinstance(a, gast.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords):
        return None
    try:
        bound = inspect.signature(callee).bind(
            *call.args, **{k.arg: k.value for k in call.keywords})
    except TypeError:
        return None  # NumPy's own error, raised by the rule's binding at the line
    given = dict(bound.arguments)
    if "out" in given or not any(k in given for k in _LOWERED):
        return None
    out: list[gast.stmt] = []

    def bind(value: gast.expr) -> gast.expr:
        t = namer.fresh("t")
        out.append(assign(name(t, gast.Store), value, s))
        return name(t)

    base = given["a"]
    if "dtype" in given:
        base = bind(_np("asarray", [base], {"dtype": given["dtype"]}))
    initial, where = given.get("initial"), given.get("where")
    reduce_kw = {k: given[k] for k in ("axis", "keepdims") if k in given}
    if kind in ("cumsum", "cumprod"):  # dtype= alone
        out.append(assign(s.targets[0], _np(kind, [base], {k: given[k] for k in ("axis",)
                                                           if k in given}), s))
        return out
    if kind in ("var", "std"):
        out.append(assign(s.targets[0], _deviation(kind, base, given, reduce_kw, bind), s))
        return out
    if kind in ("max", "min"):
        if where is not None:
            if initial is None:  # NumPy: "reduction operation 'maximum' does not have an
                return None      # identity, so to use a where mask one has to specify 'initial'"
            base = bind(_np("where", [where, base, clone(initial)], {}))
        axes = _literal_axes(given.get("axis"))
        if initial is not None and axes == [None] and "keepdims" not in reduce_kw:
            # an empty array reduces to ``initial``, as NumPy's: a branch on its size (the
            # numba backend takes it; a full extremum needs no padding)
            size = bind(_np("size", [base], {}))
            empty = bind(gast.Compare(left=size, ops=[gast.Eq()],
                                      comparators=[gast.Constant(0, None)]))
            extremum = name(namer.fresh("t"))
            nonempty = [assign(name(extremum.id, gast.Store), _np(kind, [base], {}), s),
                        assign(clone(s.targets[0]), _np("maximum" if kind == "max" else
                                                        "minimum", [extremum, initial], {}), s)]
            out.append(located_at(gast.If(test=empty, body=[
                assign(clone(s.targets[0]), clone(initial), s)], orelse=nonempty), s))
            return out
        if initial is not None and axes is not None:
            # one row of ``initial`` along each reduced axis: an empty array (or all of it
            # masked out) reduces to ``initial``, as NumPy's does
            padded = _padded(base, axes, initial, bind)
            initial = None
            if axes == [None] and "keepdims" in reduce_kw:  # the shape of base's, flattened
                keep = _np("sum", [base], {"keepdims": clone(reduce_kw["keepdims"])})
                shape = bind(_np("shape", [bind(keep)], {}))
                result = _np("reshape", [bind(_np(kind, [padded], {})), shape], {})
            else:
                result = _np(kind, [padded], reduce_kw)
        else:
            result = _np(kind, [base], reduce_kw)
        if initial is not None:  # an axis given by a name: empty arrays raise, as np.max's
            result = _np("maximum" if kind == "max" else "minimum", [bind(result), initial], {})
    else:
        if where is not None:
            fill = gast.Constant(1 if kind == "prod" else 0, None)
            masked = bind(_np("where", [where, base, fill], {}))
        else:
            masked = base
        result = _np("prod" if kind == "prod" else "sum", [masked], reduce_kw)
        if kind == "mean":
            if where is not None:
                # the count of the mask's broadcast, in base's dtype (float32 stays float32)
                ones = bind(_np("ones_like", [base], {}))
                count = bind(_np("where", [clone(where), ones, gast.Constant(0, None)], {}))
                result = gast.BinOp(left=bind(result), op=gast.Div(),
                                    right=bind(_np("sum", [count], reduce_kw)))
            else:
                result = _np("mean", [masked], reduce_kw)
        if initial is not None:
            op = gast.Mult() if kind == "prod" else gast.Add()
            result = gast.BinOp(left=bind(result), op=op, right=initial)
    out.append(assign(s.targets[0], result, s))
    return out


def _deviation(kind: str, base: gast.expr, given: dict[str, Any],
               reduce_kw: dict[str, gast.expr], bind: Any) -> gast.expr:
    """``np.var`` / ``np.std`` of ``base`` with NumPy's ``where=``, ``mean=`` and
    ``correction=`` (``ddof``'s other name) written out: the mean of the selected entries
    (or the one given), then the sum of ``|a - mean|^2`` over them divided by their count
    minus ``ddof``, and its square root for std (complex values through ``x * conj(x)``)."""
    ddof = given.get("ddof", given.get("correction"))
    where = given.get("where")
    if where is None:
        kw = dict(reduce_kw)
        if ddof is not None:
            kw["ddof"] = ddof
        if "mean" not in given:
            return _np(kind, [base], kw)
    axis_kw = {"axis": clone(given["axis"])} if "axis" in given else {}
    keep = gast.Constant(True, None)
    ones = bind(_np("real", [bind(_np("ones_like", [base], {}))], {}))  # (float for complex)
    selected = bind(_np("where", [clone(where), ones, gast.Constant(0, None)], {})) \
        if where is not None else ones
    if "mean" in given:
        center = given["mean"]
    else:
        total = bind(_np("sum", [bind(_np("where", [clone(where), base,
                                                   gast.Constant(0, None)], {}))],
                         {**axis_kw, "keepdims": keep}))
        center = bind(gast.BinOp(left=total, op=gast.Div(), right=bind(
            _np("sum", [selected], {**axis_kw, "keepdims": clone(keep)}))))
    dev = bind(gast.BinOp(left=base, op=gast.Sub(), right=center))
    square = bind(_np("real", [bind(gast.BinOp(left=dev, op=gast.Mult(), right=bind(
        _np("conjugate", [dev], {}))))], {}))
    if where is not None:
        square = bind(_np("where", [clone(where), square, gast.Constant(0, None)], {}))
    kept = {k: clone(v) for k, v in reduce_kw.items()}
    count = bind(_np("sum", [selected], kept))
    if ddof is not None:
        count = bind(gast.BinOp(left=count, op=gast.Sub(), right=ddof))
    var = gast.BinOp(left=bind(_np("sum", [square], {k: clone(v) for k, v in
                                                     reduce_kw.items()})),
                     op=gast.Div(), right=count)
    return _np("sqrt", [bind(var)], {}) if kind == "std" else var


def _literal_axes(axis: gast.expr | None) -> list[int | None] | None:
    """The reduced axes written in the call (``[None]``: every axis), or None where the
    axis is not a literal (an int, a tuple of ints, None)."""
    if axis is None or isinstance(axis, gast.Constant) and axis.value is None:
        return [None]
    if isinstance(axis, gast.UnaryOp) and isinstance(axis.op, gast.USub) and \
            isinstance(axis.operand, gast.Constant) and type(axis.operand.value) is int:
        return [-axis.operand.value]
    if isinstance(axis, gast.Constant) and type(axis.value) is int:
        return [axis.value]
    if isinstance(axis, gast.Tuple):
        parts = [_literal_axes(e) for e in axis.elts]
        if parts and all(p is not None and p != [None] for p in parts):
            return [p[0] for p in parts if p is not None]
    return None


def _padded(base: gast.expr, axes: list[int | None], value: gast.expr,
            bind: Any) -> gast.expr:
    """``base`` with one more row of ``value`` after its end along each of ``axes``, each row
    shaped as ``base``'s sum along that axis with ``keepdims`` (an empty array's too);
    ``[None]``: ``base`` flattened, with ``value`` after it."""
    if axes == [None]:
        flat = bind(_np("ravel", [base], {}))
        row = bind(_np("full", [gast.Constant(1, None), clone(value)], {}))
        return bind(_np("concatenate", [gast.List(elts=[flat, row], ctx=gast.Load())], {}))
    for ax in axes:
        at = gast.Constant(ax, None)
        summed = bind(_np("sum", [base], {"axis": at, "keepdims": gast.Constant(True, None)}))
        shape = bind(_np("shape", [summed], {}))
        row = bind(_np("full", [shape, clone(value)], {}))
        rows = gast.List(elts=[base, row], ctx=gast.Load())
        base = bind(_np("concatenate", [rows], {"axis": gast.Constant(ax, None)}))
    return base


def _hashable(obj: Any) -> bool:
    try:
        hash(obj)
    except TypeError:
        return False
    return True


def _np(fname: str, args: list[gast.expr], kwargs: dict[str, gast.expr]) -> gast.Call:
    return gast.Call(func=gast.Attribute(value=name("np"), attr=fname, ctx=gast.Load()),
                     args=list(args), keywords=[gast.keyword(arg=k, value=v)
                                                for k, v in kwargs.items()])
