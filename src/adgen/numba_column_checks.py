"""numba_column_checks: the kinds the rewrite gave typed columns, against numba's inference.

The nopython rewrite records numbers of a loop in typed columns (float64, int64, bool), their
kinds from adgen's type analysis (``NumbaCode.columns``). numba would cast a value of another
type into the column silently; these checks compare each recorded variable's type in numba's
typing of the compiled function (``function``'s forward, or the gradient function it was inlined
into) with its column's kind, and refuse a mismatch.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

from adgen.errors import UnsupportedError

__all__ = ["check_columns", "check_inlined_columns", "check_types"]


def check_inlined_columns(cres: Any, fwd: Any, arg_types: tuple[Any, ...], code: Any,
                          function: str) -> None:
    """:func:`check_columns` of the forward inlined into the gradient function
    ``cres``: its variables there are named ``<forward>_v<k>_<name>`` (numba's inliner,
    ``.`` of an SSA version made ``_``). Where none is found (another numba naming
    them otherwise), the forward is compiled apart for the check, as before inlining."""
    import numba

    typemap = getattr(cres.type_annotation, "typemap", None)
    if typemap is None:
        return
    local = set(fwd.py_func.__code__.co_varnames)
    prefix = re.compile(rf"{re.escape(code.forward)}_v\d+_(.+?)(?:\.\d+)?$")
    found: dict[str, list[Any]] = {}
    for var, ty in typemap.items():
        m = prefix.match(var)
        if m is None:
            continue
        name = m.group(1)
        if name not in local:  # an SSA version (t4.1 made t4_1), else numba's own
            version = re.match(r"(.+)_\d+$", name)
            if version is None or version.group(1) not in local:
                continue
            name = version.group(1)
        found.setdefault(name, []).append(ty)
    if not found:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", numba.NumbaPerformanceWarning)
            fwd.compile(arg_types)
        check_columns(fwd.overloads[arg_types], code.columns, function)
        return
    check_types({f"{k}.{j}": t for k, ts in found.items()
                 for j, t in enumerate(ts)}, code.columns, function)


def check_columns(cres: Any, columns: dict[str, str], function: str) -> None:
    """Every value recorded in a typed column has the type numba inferred for it (the
    column's dtype came from analyses.numba_types.scalar_types): a mismatch is refused, since numba
    would cast the value into the column silently."""
    typemap = getattr(cres.type_annotation, "typemap", None)
    if typemap is None:
        # loaded from numba's cache: the code (named by its hash) was checked when it was
        # compiled, and numba's inference of the same code is the same
        return
    check_types(typemap, columns, function)


def check_types(typemap: dict[str, Any], columns: dict[str, str], function: str) -> None:
    """Refuses a variable of ``typemap`` (numba's typing of ``function``) whose column
    kind in ``columns`` is not the type numba inferred."""
    from numba.core import types as nt

    kinds = {"f8": nt.Float, "f4": nt.Float, "i8": nt.Integer, "b1": nt.Boolean}
    for var, ty in typemap.items():
        name = var.split(".")[0]
        kind = columns.get(name)
        if kind is None or isinstance(ty, (nt.Omitted, nt.NoneType)):
            continue
        if isinstance(ty, nt.Optional):
            ty = ty.type
        if not isinstance(ty, kinds[kind]) or (kind == "i8" and isinstance(ty, nt.Boolean)) \
                or (kind == "f4" and ty != nt.float32):  # a float64 is not cast to float32
            raise UnsupportedError(
                f"the numba backend recorded {name} of {function} in a {kind} column, "
                f"but numba computes it as {ty}", hint="use backend='default', and report "
                "this case (adgen's type analysis of the numba backend missed it)")
