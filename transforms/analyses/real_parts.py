"""Real-part views: the names that may hold a float view of a complex array's real parts.

Input: the function in normal form, frozen (``node_index``), read only. Output: the set of
names whose value may be ``z.real`` or ``np.real(z)`` of a complex ``z``, or a view taken
from one (``r = z.real; r[1:]``, ``r.reshape(...)``, ``r.T``, the name itself under another
name, a for loop's rows of it).

What it is for: the shadow of such a view is a float64 view of the complex buffer's shadow
(``ShadowMap.of``: the real parts of ``dL/dRe - i dL/dIm``), which stays float64 even when
the pullback runs with complex adjoints. A complex cotangent reaching it (``y = z.real + 1j *
b``) cannot be added in place (NumPy's casting error); its real part is the adjoint of a
real value, so the pullback adds ``cotangent_as(value, shadow.dtype)`` there. The answer
may be too large: that conversion is right for every adjoint (the real part for a real
shadow, the value itself for a complex one), and only costs a call where it was not needed.
"""

from __future__ import annotations

from typing import Any

import gast
from adgen.transforms.analyses.kinds import definitions
from adgen.transforms.node_index import memo


def real_part_views(fn: gast.FunctionDef) -> frozenset[str]:
    """The names of ``fn`` that may hold a float view of a complex array's real parts."""
    return memo(fn, "real_parts.real_part_views", lambda: _real_part_views(fn))


def _real_part_views(fn: gast.FunctionDef) -> frozenset[str]:
    defs, _unknown = definitions(fn)
    found: set[str] = set()
    changed = True
    while changed:  # to a fixed point: a view of a view of z.real
        changed = False
        for n, values in defs.items():
            if n not in found and any(_views_real_part(v, found) for v in values):
                found.add(n)
                changed = True
    return frozenset(found)


def _views_real_part(v: Any, found: set[str]) -> bool:
    """Whether the value ``v`` (a definition's) may be a real-part view: ``.real`` itself, or
    an expression that may view a name already found."""
    if isinstance(v, tuple):  # ("for", iterable): the rows of the iterable
        v = v[1]
    if isinstance(v, gast.Attribute) and v.attr == "real":
        return True
    if isinstance(v, gast.Call) and isinstance(v.func, gast.Attribute) and \
            v.func.attr == "real":
        return True  # np.real(z) views z's real parts
    return any(n in found for n in _viewed(v))


def _viewed(v: gast.expr) -> list[str]:
    """The names ``v`` may be a view of (any name whose array it may share, too many rather
    than too few)."""
    if isinstance(v, gast.Name):
        return [v.id]
    if isinstance(v, (gast.Attribute, gast.Subscript)):
        return _viewed(v.value)
    if isinstance(v, gast.Call):
        names = _viewed(v.func.value) if isinstance(v.func, gast.Attribute) else []
        for a in v.args:  # np.reshape(r, ...), np.asarray(r)
            names += _viewed(a)
        return names
    return []
