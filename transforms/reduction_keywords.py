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
                    ``np.minimum(., v)`` after an extremum.

Everything else (``axis``, ``keepdims``) is passed on; ``out=`` is left to the reduction's
rule (refused there). The rewritten statements are ordinary NumPy, so both modes, every policy
and the numba backend differentiate them as they differentiate the user's own code.
"""

from __future__ import annotations

import inspect
from typing import Any

import gast
import numpy as np
from adgen.transforms.desugar import assign, name
from adgen.transforms.names import Namer
from adgen.transforms.walk import clone

_KINDS = {np.sum: "sum", np.prod: "prod", np.mean: "mean", np.max: "max", np.amax: "max",
          np.min: "min", np.amin: "min"}
_LOWERED = ("dtype", "initial", "where")


# ndarray methods taking the keywords: x.sum(axis, dtype, out, keepdims, initial, where) has
# the parameters of np.sum(a, axis, dtype, out, keepdims, initial, where) after ``a``, and so
# for the others
_METHODS = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "max": np.max, "min": np.min}


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
    if kind in ("max", "min"):
        if where is not None:
            if initial is None:  # NumPy: "reduction operation 'maximum' does not have an
                return None      # identity, so to use a where mask one has to specify 'initial'"
            base = bind(_np("where", [where, base, clone(initial)], {}))
        result = _np(kind, [base], reduce_kw)
        if initial is not None:
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
