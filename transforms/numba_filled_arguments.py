"""numba_filled_arguments: a callee that fills an argument in place, in nopython code.

The way a right-hand side is written for numba: ``def rhs(y, p, out): out[0] = ...; out[1]
= ...``, called as ``rhs(y, p, k1)`` in an RK4 loop. The default pullback of such a callee
finds the adjoint of ``out`` in the shadow memory it shares with its caller (``sh.of(out)``:
the caller's adjoint of ``k1``), reads and zeroes the written elements' adjoints there, and
returns None for ``out`` (``sh.value(out) if top else None``); the parameters it only reads
it hands back (``sh.pop(y)``). The numba backend has no shadow memory, only static buffers
(:mod:`adgen.transforms.numba_shadows`), so here:

- :func:`filled_parameters`: the callee's parameters its pullback finds in its caller's
  shadow memory, read from the default pullback's return; numba_shadows makes each a
  parameter of the callee's pullback after ``out_bar`` (``out_shadow``), the caller's
  buffer, instead of a buffer of its own, and ``sh.pop(y)`` the buffer it hands back;
- :func:`passed_buffers`: at each call, the arrays the caller passes there, after checking
  that none of them may share memory with another array argument of the call (the default
  backend's shadow memory would give the two one adjoint, the static buffers two); the
  pullback call then passes the caller's buffers (``sh.of(k1)``, which numba_shadows makes
  ``k1_shadow``), or the same row of a buffer's for a row of it (``rhs(p, y, k[0])``,
  ``rhs(p, y, k[i])``: ``k_shadow[i]``, its index names read where numba_shadows has them,
  as for any view of a buffer); an array of unknown origin passed there is refused, naming it;
- under ``mutation="strict"`` the caller guards its call (``before_write`` of the array it
  passes, against its own captures), as on the default backend; a guarded write of the
  callee's own stays refused at its line (numba_guarded_sites.strict_guards).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from adgen.transforms.analyses.numba_types import (
    buffer_roots,
    call_name,
    fresh_array,
    name_of,
    views,
)
from adgen.transforms.reverse_ast import user_name_of

if TYPE_CHECKING:
    from adgen.transforms.numba_emit import Rewriter

__all__ = ["filled_parameters", "passed_buffers"]


def filled_parameters(pb: ast.FunctionDef, params: list[str]) -> list[str]:
    """The parameters a callee's default pullback leaves in shadow memory for its caller
    (``sh.value(out) if top else None`` in its return: it writes them in place), in the
    order of the parameters."""
    ret = pb.body[-1] if pb.body else None
    if not (isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple)):
        return []
    found = set()
    for e in ret.value.elts:
        if isinstance(e, ast.IfExp) and name_of(e.test) == "top" and \
                call_name(e.body) == "sh.value" and isinstance(e.orelse, ast.Constant) and \
                e.orelse.value is None and len(e.body.args) == 1:  # type: ignore[attr-defined]
            found.add(name_of(e.body.args[0]))  # type: ignore[attr-defined]
    return [p for p in params if p in found]


def passed_buffers(rw: Rewriter, st: ast.stmt, sym: str, call: ast.Call,
                   positions: list[int], types_: dict[str, Any]) -> list[ast.expr]:
    """The arguments of ``call`` (a callee's forward call at ``st``) at the ``positions`` of
    the parameters it fills, whose adjoint buffers the pullback call passes. Refused where
    one is not a buffer the code can name (a whole array, or a row of one, whose buffer
    stands for it here), or may share memory with
    another array argument of the call; two different parameters of the differentiated
    function are distinct (``rw.distinct``: checked at each call)."""
    roots = buffer_roots(rw.fwd, types_)
    seen = views(rw.fwd, types_, roots)
    out = []
    for k in positions:
        a = call.args[k] if k < len(call.args) else None
        r = roots.get(name_of(a) or "")
        v = seen.get(name_of(a) or "")
        while r is None and v is not None:
            # a row of a buffer of stages (rhs(p, y, k[0]), rhs(p, y, k[i])): numba_shadows
            # passes the same row of the buffer's adjoint (k_shadow[i]), the names its index
            # reads bound in the pullback as for every view of a buffer it looks up
            r, v = roots.get(v.base), seen.get(v.base)
        if r is None:
            values = [st.value for st in ast.walk(rw.fwd) if isinstance(st, ast.Assign) and
                      len(st.targets) == 1 and name_of(st.targets[0]) == name_of(a)]
            # (the user's expression where the forward bound it to a temporary: K[0])
            text = user_name_of(ast.unparse(values[0] if len(values) == 1 else a)) \
                if a is not None else "it"
            raise rw.refuse(
                st, f"the numba backend passes {sym} the gradient buffer of the array it "
                f"fills, and cannot tell which buffer {text} is here (a slice, a row or a "
                "view of an array, or an array of unknown origin)",
                f"pass {sym} a whole array made for it (k1 = np.empty(n) before the loop), "
                "or use backend='default' / 'auto'")
        for j, b in enumerate(call.args):
            t = types_.get(name_of(b) or "")
            if j == k or not (isinstance(t, tuple) and t[0] == "array"):
                continue
            other = roots.get(name_of(b) or "")
            held = _held_buffers(rw.fwd, roots, name_of(b) or "", set()) \
                if other is None else {other}
            if held is not None and r not in held and len(held) == 1:
                other = held.pop()
            elif held is not None and r not in held:
                continue  # each of them is another buffer than the one filled
            if other == r or other is None:
                filled, given = user_name_of(a.id), user_name_of(ast.unparse(b))  # type: ignore[union-attr]
                raise rw.refuse(
                    st, f"the numba backend keeps the gradient of each array {sym} fills in "
                    f"a buffer of its own, and {filled}, which it fills, "
                    f"{'is' if other == r else 'may share memory with'} {given}, which it "
                    "is also given", f"pass {sym} a separate array to fill ({filled} = "
                    f"np.empty_like({given}) before the loop), or use backend='default' / "
                    "'auto'")
            if r in rw.params and other in rw.params:
                if not rw.callee:
                    rw.distinct = True  # the differentiated function's arguments: checked
                elif r not in rw.passed:
                    # (two parameters of a callee are distinct where its callers check
                    # them: those it fills, against the others; one it fills through this
                    # call is one of them)
                    raise rw.refuse(st, f"the numba backend cannot tell that the arrays "
                                    f"this call of {sym} fills and reads are distinct",
                                    "use backend='default' / 'auto'")
        out.append(ast.Name(id=a.id, ctx=ast.Load()))  # type: ignore[union-attr]
    return out


def _held_buffers(fwd: ast.FunctionDef, roots: dict[str, str | None], name: str,
                  seen: set[str]) -> set[str] | None:
    """The buffers a name the forward binds several times may hold (``x = x + 0.1 * k`` in
    a loop: the parameter ``x``, or the new array each iteration makes), or None where one of
    its bindings may be a view or an array of unknown origin."""
    r = roots.get(name)
    if r is not None:
        return {r}
    if name in seen:
        return set()
    seen.add(name)
    values = [st.value for st in ast.walk(fwd) if isinstance(st, ast.Assign) and
              len(st.targets) == 1 and name_of(st.targets[0]) == name]
    stores = sum(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id == name
                 for n in ast.walk(fwd))
    if not values or stores != len(values):
        return None  # bound by a loop or an unpacking too
    out: set[str] = set()
    for v in values:
        if isinstance(v, ast.Name):
            got = _held_buffers(fwd, roots, v.id, seen)
            if got is None:
                return None
            out |= got
        elif fresh_array(v):
            out.add(name)  # a new array, made where it is bound
        else:
            return None
    return out
