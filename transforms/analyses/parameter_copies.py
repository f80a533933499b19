"""Parameter copies: the names a function binds, outside every loop, only to a parameter or
to such a name by plain copies (``q = p``), and those of them it writes into as containers.

Input: a function in SSA form (read only), and for :func:`written_parameter_copies` its
effects (analyses.effects). Output: sets of names. What such a name holds may be the
caller's container itself: a write into it is an output, as a write into the parameter is
(``q = d; q["h"] = v``). Every gradient asks this (``pipeline``, ``pullback_parameters``);
which container writes another name may reach is ``container_aliases``' (imported by the
reverse pass's stores where a function writes into a container).
"""

from __future__ import annotations

import gast
from adgen.transforms.analyses.effects import Effects
from adgen.transforms.walk import children, walk


def parameter_copies(fn: gast.FunctionDef, params: set[str]) -> set[str]:
    """The names bound, outside every loop, only to one of ``params`` or to such a name by
    plain copies (``q = p``; SSA's join of ``if cache is None: cache = {}`` binds
    ``cache_2 = cache`` in one arm): what they hold may be the caller's container itself."""
    sources: dict[str, list[gast.expr | None]] = {}
    for s, in_loop in _statements(fn, False, []):
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
            sources.setdefault(s.targets[0].id, []).append(
                s.value if not in_loop else None)
        elif isinstance(s, (gast.AugAssign, gast.For)) or (
                isinstance(s, gast.Assign) and not isinstance(s.targets[0], (
                    gast.Name, gast.Subscript, gast.Attribute))):
            for t in walk(s.target if not isinstance(s, gast.Assign) else s.targets[0]):
                if isinstance(t, gast.Name):
                    sources.setdefault(t.id, []).append(None)
    out: set[str] = set()
    changed = True
    while changed:
        changed = False
        for n, values in sources.items():
            if n in out or n in params:
                continue
            named = [v for v in values if isinstance(v, gast.Name)]
            # bound to a copy of a parameter in one place at least, and never in a loop
            if None not in values and any(v.id in params | out for v in named):
                out.add(n)
                changed = True
    return out


def _statements(node: gast.AST, in_loop: bool, out: list[tuple[gast.stmt, bool]]
                ) -> list[tuple[gast.stmt, bool]]:
    """The statements inside ``node`` (nested ones included; expressions hold none), each
    with whether a loop inside ``node``, or ``in_loop``, holds it: what walking every node
    for the statements, and every loop's nodes again for the loop's, found (adi's nested
    loops were walked once per level: 3-4 % of its build in the two calls, sampled)."""
    for c in children(node):
        if isinstance(c, gast.stmt):
            out.append((c, in_loop))
            _statements(c, in_loop or isinstance(c, (gast.For, gast.While)), out)
        elif not isinstance(c, gast.expr):  # an except handler, a match case, parameters
            _statements(c, in_loop, out)
    return out


def written_parameter_copies(fn: gast.FunctionDef, eff: Effects,
                             params: set[str] | list[str]) -> set[str]:
    """The :func:`parameter_copies` of ``fn`` that it writes into as containers (``q = d;
    q["h"] = v``): outputs, as the parameters they may be (a caller reads them)."""
    copies = parameter_copies(fn, set(params))
    return {w.target for w in eff.writes if w.container and w.target in copies}
