"""Ufunc ``where=``: a NumPy ufunc computing only where a mask holds, written as the selection
adgen's rules take.

``np.divide(a, b, out=np.zeros_like(a), where=b != 0)`` (the safe division every scientific
code base has), ``np.log(p, out=np.full_like(p, -30.0), where=p > 0)``: NumPy computes the
function where the mask is true and leaves ``out``'s own values elsewhere. The rules take no
``where=``, so the call was refused. Input: a statement of a function in A-normal form, ``r =
f(x1, ..., out=o, where=m)`` (or the call as a statement) with ``f`` a ufunc of one output and
no keywords but ``out`` and ``where``. Output, the statements computing the same contents:

    t1 = np.where(m, x1, 1)        each input, with a stand-in where the mask is off (1 is in the
    ...                            domain of log, sqrt, a divisor, ...: no NaN there, whose
    t2 = f(t1, ...)                derivative times the zero cotangent would be NaN)
    t3 = np.where(m, t2, o)        the mask's entries from f, the others o's own
    np.copyto(o, t3)               (lowered further as the write of o it is)
    r = o                          (a ufunc returns its out)

Without ``out=`` NumPy leaves the entries the mask skips uninitialised; they are 0 here. A
stand-in of 1 and a fill of 0 keep an integer input's dtype. The statements are ordinary NumPy,
so both modes and every policy differentiate them as the user's own code: the gradient of the
entries the mask skips goes to ``o``, the others' to the inputs.
"""

from __future__ import annotations

from typing import Any

import gast
import numpy as np
from adgen.transforms.desugar import assign, name
from adgen.transforms.names import Namer
from adgen.transforms.walk import clone

__all__ = ["lower_ufunc_where"]


def lower_ufunc_where(s: gast.stmt, call: gast.Call, resolved: Any, result: str | None,
                      namer: Namer) -> list[gast.stmt] | None:
    """The statements replacing ``s`` (an ``Expr`` or ``result = call``), or None where
    ``call`` is not a ufunc call with ``where=`` this lowers.

    Args:
        s: the statement, for its location.
        call: its call, ``out=`` already given by keyword (``out_positions.out_by_keyword``).
        resolved: the object the call's function resolves to.
        result: the name the statement binds, or None.
        namer: fresh names.
    """
    if not isinstance(resolved, np.ufunc) or resolved.nout != 1 or \
            len(call.args) != resolved.nin or \
            any(isinstance(a, gast.Starred) for a in call.args):
        return None
    keywords = {k.arg: k.value for k in call.keywords}
    if "where" not in keywords or set(keywords) - {"out", "where"}:
        return None
    out_arg = keywords.get("out")
    if isinstance(out_arg, gast.Tuple) and len(out_arg.elts) == 1:
        out_arg = out_arg.elts[0]
    if out_arg is not None and not isinstance(out_arg, gast.Name):
        return None  # (out= of several arrays: refused where out= is lowered)
    mask = keywords["where"]
    stmts: list[gast.stmt] = []

    def bind(value: gast.expr) -> gast.Name:
        t = namer.fresh("t")
        stmts.append(assign(name(t, gast.Store), value, s))
        return name(t)

    if not isinstance(mask, (gast.Name, gast.Constant)):
        mask = bind(mask)
    inputs = [a if isinstance(a, gast.Constant) else
              bind(_np("where", [clone(mask), a, gast.Constant(1, None)])) for a in call.args]
    value = bind(gast.Call(func=call.func, args=inputs, keywords=[]))
    kept = name(out_arg.id) if out_arg is not None else gast.Constant(0, None)
    selected = bind(_np("where", [clone(mask), value, kept]))
    if out_arg is None:
        if result is not None:
            stmts.append(assign(name(result, gast.Store), selected, s))
        return stmts
    stmts.append(gast.copy_location(gast.Expr(value=_np("copyto", [name(out_arg.id),
                                                                    selected])), s))
    if result is not None:
        stmts.append(assign(name(result, gast.Store), name(out_arg.id), s))
    return stmts


def _np(fname: str, args: list[gast.expr]) -> gast.Call:
    return gast.Call(func=gast.Attribute(value=name("np"), attr=fname, ctx=gast.Load()),
                     args=list(args), keywords=[])
