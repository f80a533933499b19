"""One inverse per matrix in a pullback that inverts it anyway: the adjoints of solves with
the same matrix (or its transpose) take that inverse instead of factorising it again.

Input: the statements of a pullback body specialised to an argument signature (the kinds
of the forward's names are known), and the forward's single definitions (``t = L.T``).
Output: the same statements, where a matrix ``A`` (rank 2) whose adjoint code at the top
level of the body calls an inverting helper (``cholesky_vjp(g, A)``, ``det_vjp(g, out, A)``,
``slogdet_vjp(g, A)``) and at least one other helper of the same matrix or of its transpose
(``solve_vjp_a(g, x, A, n)``, ``solve_vjp_b(g, A, shape)``): ``A_inv = shared_inverse(A)``
before the first of those statements, and each of the calls given ``inverse=A_inv`` (or
``A_inv.T`` for the transpose). A Gaussian process's ``L = cholesky(K)``; ``alpha =
solve(L.T, solve(L, y))`` then has one inverse and three products in its pullback where it
had one inverse and three general solves (NumPy has no triangular solve). Where one of the
calls is ``cholesky_vjp(g, L)``, the inverse is of ``L`` itself, lower triangular
(``shared_inverse(L, lower=True)``: by blocks, half the work of a general inverse).

Where the forward inverted the matrix itself (a Kalman filter's gain ``P @ H.T @
np.linalg.inv(S)``) and the pullback reads that inverse at that point already, the calls take
it: the same ``np.linalg.inv``, not computed again. A loop's reversed body is a block of its
own (a Kalman step's ``S``: one inverse per iteration, or none with the forward's).

The helpers compute the same values either way (``solve(A^T, g)`` as ``inv(A)^T g``), and only
where the pullback already depends on ``inv(A)``'s accuracy through the inverting helper.
Calls inside branches, of matrices read through a capture, or of stacks of matrices are left
as they are. The numba backend drops the keyword and the inverse
(numba_emit), as its versions of the helpers factorise on their own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast
from adgen.transforms.walk import walk

# helper -> the position of its matrix argument; the first three invert it anyway
_INVERTING = {"cholesky_vjp": 1, "det_vjp": 2, "slogdet_vjp": 1}
_SOLVING = {"solve_vjp_a": 2, "solve_vjp_b": 1}
HELPERS = {**_INVERTING, **_SOLVING}


def _matrix_of(call: gast.Call, kinds: dict[str, Any], defs: dict[str, gast.expr],
               def_count: dict[str, int]) -> tuple[str, str, bool] | None:
    """(the name passed, the matrix it is or transposes, whether it is the transpose), for a
    call of one of the helpers with a plain name of a known matrix (no keywords yet)."""
    f = call.func
    if not (isinstance(f, gast.Name) and f.id in HELPERS) or call.keywords:
        return None
    pos = HELPERS[f.id]
    if len(call.args) <= pos or not isinstance(call.args[pos], gast.Name):
        return None
    n = call.args[pos].id
    if kinds.get(n) != 2:
        return None
    v = defs.get(n)
    if def_count.get(n) == 1 and isinstance(v, gast.Attribute) and v.attr == "T" and \
            isinstance(v.value, gast.Name) and kinds.get(v.value.id) == 2 and \
            def_count.get(v.value.id, 0) <= 1:
        return n, v.value.id, True  # t = L.T: a view of L, transposed at every moment
    return n, n, False


def _bound_from(body: list[gast.stmt], first: int, name: str) -> bool:
    """Whether a statement of ``body`` from ``first`` on binds ``name`` (then it is not yet
    what it holds where the inverse goes)."""
    return any(isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store) and n.id == name
               for st in body[first:] for n in walk(st))


def _forward_inverse(body: list[gast.stmt], matrix: str, defs: dict[str, gast.expr],
                     def_count: dict[str, int], resolve: Callable[[gast.expr], Any] | None
                     ) -> str | None:
    """A forward name bound once to ``np.linalg.inv(matrix)`` (``matrix`` itself bound once)
    that ``body`` reads as it is (so the pullback has it there), or None."""
    if resolve is None or def_count.get(matrix, 0) > 1:
        return None
    import numpy as np

    # read by a statement of this block itself (a nested loop binds its own names)
    loaded = {n.id for st in body if not isinstance(st, (gast.For, gast.While, gast.If,
                                                          gast.Try, gast.With))
              for n in walk(st) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}
    for n in sorted(loaded):
        v = defs.get(n)
        if def_count.get(n) == 1 and isinstance(v, gast.Call) and len(v.args) == 1 and \
                not v.keywords and isinstance(v.args[0], gast.Name) and \
                v.args[0].id == matrix and resolve(v.func) is np.linalg.inv:
            return n
    return None


def share_inverses(body: list[gast.stmt], kinds: dict[str, Any], defs: dict[str, gast.expr],
                   def_count: dict[str, int], fresh: Callable[[str], str],
                   resolve: Callable[[gast.expr], Any] | None = None) -> list[gast.stmt]:
    """The pullback ``body`` with one inverse per matrix where it pays (see the module), the
    body of each loop in it too. ``resolve``: a name or attribute chain -> the object (None:
    unknown), to find the forward's own ``np.linalg.inv(A)``."""
    found: dict[str, list[tuple[int, gast.Call, str, bool]]] = {}
    for k, st in enumerate(body):
        if isinstance(st, (gast.For, gast.While)) and not st.orelse:
            # an iteration's adjoints (a Kalman filter's S per step): its own inverses
            st.body = share_inverses(st.body, kinds, defs, def_count, fresh, resolve)
            continue
        if isinstance(st, (gast.For, gast.While, gast.If, gast.Try, gast.With,
                           gast.FunctionDef)):
            continue  # a branch's adjoints: left alone
        for node in walk(st):
            if isinstance(node, gast.Call):
                m = _matrix_of(node, kinds, defs, def_count)
                if m is not None:
                    found.setdefault(m[1], []).append((k, node, m[0], m[2]))
    inserts: dict[int, list[gast.stmt]] = {}
    for calls in found.values():
        if len(calls) < 2 or not any(c.func.id in _INVERTING for _, c, _, _ in calls):
            continue
        first, _, anchor, flipped = min(calls, key=lambda c: c[0])
        # a Cholesky factor is lower triangular: its inverse is taken by blocks, at half
        # the cost of a general one (rules.helpers_linalg.lower_inverse)
        factor = [(name, t) for _, c, name, t in calls if c.func.id == "cholesky_vjp" and
                  not _bound_from(body, first, name)]
        if factor:
            anchor, flipped = factor[0]
        kept = None if factor else _forward_inverse(body, anchor, defs, def_count, resolve)
        if kept is not None:
            # the forward inverted the matrix itself (K = P @ H.T @ np.linalg.inv(S)), and
            # the pullback reads that inverse already: the same np.linalg.inv, not again
            for _, call, _, t in calls:
                value = gast.Name(id=kept, ctx=gast.Load(), annotation=None, type_comment=None)
                call.keywords = [gast.keyword(arg="inverse", value=value if t == flipped else
                                              gast.Attribute(value=value, attr="T",
                                                             ctx=gast.Load()))]
            continue
        inv = fresh(f"{anchor}_inv")
        st = gast.Assign(targets=[gast.Name(id=inv, ctx=gast.Store(), annotation=None,
                                            type_comment=None)],
                         value=gast.Call(func=gast.Name(id="shared_inverse", ctx=gast.Load(),
                                                        annotation=None, type_comment=None),
                                         args=[gast.Name(id=anchor, ctx=gast.Load(),
                                                         annotation=None, type_comment=None)],
                                         keywords=[gast.keyword(
                                             arg="lower", value=gast.Constant(
                                                 value=True, kind=None))] if factor else []),
                         type_comment=None)
        gast.copy_location(st, body[first])
        inserts.setdefault(first, []).append(st)
        for _, call, _, t in calls:
            value: gast.expr = gast.Name(id=inv, ctx=gast.Load(), annotation=None,
                                         type_comment=None)
            if t != flipped:  # inv(L.T) is inv(L).T
                value = gast.Attribute(value=value, attr="T", ctx=gast.Load())
            call.keywords = [gast.keyword(arg="inverse", value=value)]
    if not inserts:
        return body
    out: list[gast.stmt] = []
    for k, st in enumerate(body):
        out += inserts.get(k, [])
        out.append(st)
    return out
