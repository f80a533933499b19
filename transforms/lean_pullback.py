"""Lean pullbacks: adjoint arithmetic in place on arrays the pullback owns, and names dropped
after their last read.

Runs on the pullback after cleanup, on the statements of its top level (a loop or a branch
there is one opaque statement: every name it reads is read there, and what it binds is not
owned). Two rewrites:

- ``c = a OP b`` (or ``c = b OP a`` for ``+`` and ``*``) becomes ``a OP= b`` then ``c = a``
  where ``a`` is *owned* (its value is a new array or number that no other name, container,
  view, shadow map or caller can see), is not read after the statement, and ``a OP b`` has
  ``a``'s shape and dtype:
  - owned: bound by arithmetic (``BinOp``/``UnaryOp``), ``sum_vjp``/``mean_vjp``/
    ``sum_keepdims`` (new arrays), or handed over by ``c = a`` / ``c = unbroadcast(a, shape)``
    from an owned name read there for the last time (``unbroadcast`` returns its argument
    or a new array); ownership ends at any read that may keep the value or a view of it
    (a call adgen does not know, a container, ``a.T`` bound to a name, a return);
  - shape: ``c`` and ``a`` are the adjoints of arrays bound outside loops whose shapes the
    shapes analysis proves equal (an adjoint that is an array has its value's shape; one that
    is a number rebinds under ``OP=``, as Python numbers do);
  - dtype: by the sources each value's dtype is the NumPy promotion of (the cotangent
    ``out_bar``, saved values, Python-weak ints and float64 numbers): ``a OP b`` has ``a``'s
    dtype where the owned operand has a float64 value among its sources (a float64 array
    the function computed or received, analyses.floats; the dtype is float64 or wider) and
    every source of the other operand is one of the owned one's, a float64 value or a
    number of at most 64 bits; or where ``a`` is floating (a true division) and ``b`` has no
    source ``a`` lacks. A float32 or integer cotangent with float64 saved values, a complex
    adjoint or a value of unknown dtype leaves the statement as it is.
  Not under ``mutation="strict"`` (second derivatives run through this code, and there an
  in-place update whose old value its own pullback reads is refused).
- ``del n`` after the statement that reads ``n`` for the last time, for an adjoint of an
  array that the pullback computed (not a saved value, not the cotangent, not handed over to
  another name there): the peak of a pullback is what is alive at once.

Both only change which buffer holds a value, never a value: the same bits are computed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import gast
from adgen.transforms.reverse_ast import is_comment
from adgen.transforms.walk import children, walk

# dtype sources besides the names themselves: a floating dtype is certain; a float64 value is
# among the sources (the dtype is float64 or one float64 promotes to); not arithmetic
FLOATING, FLOAT64, UNKNOWN = "<floating>", "<float64>", "<unknown>"
_FRESH_CALLS = frozenset({"sum_vjp", "mean_vjp", "sum_keepdims"})
_IN_PLACE_OPS = (gast.Add, gast.Sub, gast.Mult, gast.Div)
_COMMUTATIVE = (gast.Add, gast.Mult)


@dataclass
class LeanFacts:
    """What the plan knows about the pullback's names.

    Attributes:
        arrays: adjoint name -> the array (bound outside every loop) it is the adjoint of.
        same_shape: whether two such arrays have one shape at every call.
        f64: saved names holding float64 arrays at every call with the signature
            (computed ones included: analyses.floats).
        weak: saved names holding ints or float64 numbers.
        in_place: whether to write adjoints in place (not under mutation="strict": the
            reverse-over-reverse program differentiates this pullback, and under "strict"
            an in-place update whose old value its own pullback reads is refused).
    """

    arrays: dict[str, str] = field(default_factory=dict)
    same_shape: Callable[[str, str], bool] = lambda a, b: False
    f64: set[str] = field(default_factory=set)
    weak: set[str] = field(default_factory=set)
    in_place: bool = True


def lean_pullback(fn: gast.FunctionDef, facts: LeanFacts) -> None:
    """Rewrites ``fn``'s top-level statements in place (see the module docstring)."""
    body = fn.body
    # names read at or after each top-level statement (a loop's reads count at the loop)
    reads_at = [_loads(st) for st in body]
    live_after: list[set[str]] = [set() for _ in body]
    acc: set[str] = set()
    for k in range(len(body) - 1, -1, -1):
        live_after[k] = set(acc)
        acc |= reads_at[k]
    # a float64 array of the signature is a leaf that makes its users floating
    src: dict[str, frozenset[str]] = {n: frozenset({n, FLOATING, FLOAT64}) for n in facts.f64}
    owned: set[str] = set()
    bound: set[str] = set()  # bound by a top-level assignment of the pullback itself
    new: list[gast.stmt] = []
    for k, st in enumerate(body):
        after = live_after[k]
        escaping = _escaping_loads(st)
        out = [st]
        handed: str | None = None
        if isinstance(st, gast.Assign) and len(st.targets) == 1 and \
                isinstance(st.targets[0], gast.Name):
            c = st.targets[0].id
            v = st.value
            in_place = _in_place(c, v, owned, after, escaping, src, facts) \
                if facts.in_place else None
            c_src = _sources(v, src)
            if in_place is not None:
                a, other, op = in_place
                aug = gast.AugAssign(target=_name(a, gast.Store()), op=op, value=other)
                copy = gast.Assign(targets=[_name(c, gast.Store())], value=_name(a, gast.Load()),
                                   type_comment=None)
                out = [gast.copy_location(aug, st)]
                if a != c:
                    out.append(gast.copy_location(copy, st))
                    handed = a
                owned.add(c)
            else:
                owned.discard(c)
                moved = _handed_over(v)
                if moved is not None and moved in owned and moved not in after and \
                        _only_load(v, moved):
                    owned.add(c)
                    handed = moved
                elif _fresh(v, src):
                    owned.add(c)
            owned -= escaping - {c}
            if handed is not None:
                owned.discard(handed)
            src[c] = c_src
            bound.add(c)
        elif isinstance(st, gast.Assign) and isinstance(st.value, gast.Name) and \
                st.value.id == "saved":
            pass  # the saved values' unpacking: their sources are the facts'
        elif isinstance(st, gast.AugAssign) and isinstance(st.target, gast.Name):
            owned -= escaping  # the target itself is updated where it is
            t = st.target.id
            src[t] = src.get(t, frozenset({UNKNOWN})) | _sources(st.value, src)
        elif isinstance(st, (gast.Assign, gast.Expr, gast.Return)):
            owned -= escaping
            for t in _stores(st):
                owned.discard(t)
                bound.discard(t)
                src[t] = frozenset({UNKNOWN})
        else:  # a loop, a branch, anything else: opaque
            owned -= reads_at[k]
            for t in _stores(st):
                owned.discard(t)
                bound.discard(t)
                src[t] = frozenset({UNKNOWN})
        new.extend(out)
        if all(isinstance(later, gast.Return) or is_comment(later) for later in body[k + 1:]):
            continue  # the return frees them anyway
        dead = sorted(n for n in reads_at[k] if n not in after and n in bound and
                      n in facts.arrays and n != handed)
        if dead:
            for n in dead:
                bound.discard(n)
                owned.discard(n)
            new.append(gast.copy_location(
                gast.Delete(targets=[_name(n, gast.Del()) for n in dead]), st))
    fn.body[:] = new


def _in_place(c: str, v: gast.expr, owned: set[str], after: set[str], escaping: set[str],
              src: dict[str, frozenset[str]], facts: LeanFacts
              ) -> tuple[str, gast.expr, gast.operator] | None:
    """``(a, b, op)`` where ``c = v`` may be computed as ``a op= b`` (module docstring)."""
    if not (isinstance(v, gast.BinOp) and isinstance(v.op, _IN_PLACE_OPS)):
        return None
    pairs = [(v.left, v.right)]
    if isinstance(v.op, _COMMUTATIVE):
        pairs.append((v.right, v.left))
    for a_node, b in pairs:
        if not isinstance(a_node, gast.Name):
            continue
        a = a_node.id
        if a not in owned or a in escaping or (a in after and a != c):
            continue  # (c = c + e: the old value dies here)
        if c not in facts.arrays or a not in facts.arrays or \
                not facts.same_shape(facts.arrays[c], facts.arrays[a]):
            continue
        sa, sb = src.get(a, frozenset({UNKNOWN})), _sources(b, src)
        if UNKNOWN in sa | sb:
            continue
        # b's dtype is promoted into a's: b's sources are a's (a floating), or a holds a
        # float64 value and b's other sources are float64 values or numbers of 64 bits
        narrow = facts.f64 | facts.weak | {FLOATING, FLOAT64}
        if FLOATING in sa and sb <= sa or \
                FLOAT64 in sa and all(x in sa or x in narrow for x in sb):
            return a, b, v.op
    return None


def _sources(e: gast.expr, src: dict[str, frozenset[str]]) -> frozenset[str]:
    """The leaves ``e``'s dtype is the NumPy promotion of: saved names, the cotangent, and
    FLOATING where a true division or a float64 array makes it a floating dtype (UNKNOWN
    where ``e`` is not arithmetic of such values; weak int and float constants add
    nothing)."""
    if isinstance(e, gast.Constant):
        return frozenset() if type(e.value) in (int, float, bool) else frozenset({UNKNOWN})
    if isinstance(e, gast.Name):
        return src.get(e.id, frozenset({e.id}))
    if isinstance(e, gast.BinOp):
        both = _sources(e.left, src) | _sources(e.right, src)
        return both | {FLOATING} if isinstance(e.op, gast.Div) else both
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
        return _sources(e.operand, src)
    if isinstance(e, gast.Attribute) and e.attr == "T":
        return _sources(e.value, src)
    if isinstance(e, gast.Call) and isinstance(e.func, gast.Name) and e.args and \
            (e.func.id in _FRESH_CALLS or e.func.id == "unbroadcast" and not e.keywords):
        return _sources(e.args[0], src)
    return frozenset({UNKNOWN})


def _fresh(v: gast.expr, src: dict[str, frozenset[str]]) -> bool:
    """Whether ``v``'s value is a new array or a number (no other reference to it)."""
    if UNKNOWN in _sources(v, src):
        return False  # not known to be arithmetic on arrays and numbers
    if isinstance(v, (gast.BinOp, gast.UnaryOp)):
        return True
    if isinstance(v, gast.Call) and isinstance(v.func, gast.Name):
        if v.func.id in _FRESH_CALLS:
            return True
        if v.func.id == "unbroadcast" and not v.keywords:
            # its argument itself or a new array: new when the argument is
            return isinstance(v.args[0], (gast.BinOp, gast.UnaryOp))
    return False


def _handed_over(v: gast.expr) -> str | None:
    """``a`` for ``a`` or ``unbroadcast(a, shape)`` (whose value may be ``a``'s)."""
    if isinstance(v, gast.Name):
        return v.id
    if isinstance(v, gast.Call) and isinstance(v.func, gast.Name) and \
            v.func.id == "unbroadcast" and not v.keywords and v.args and \
            isinstance(v.args[0], gast.Name):
        return v.args[0].id
    return None


def _only_load(v: gast.expr, n: str) -> bool:
    return sum(1 for x in walk(v) if isinstance(x, gast.Name) and x.id == n) == 1


def _escaping_loads(st: gast.stmt) -> set[str]:
    """Names ``st`` reads where the value (or a view of it) may be kept: anywhere but an
    operand of arithmetic or a comparison, or an argument of a helper that makes a new array
    (through views and ``unbroadcast``, which may return its argument)."""
    parents: dict[int, gast.AST] = {}
    loads: list[gast.Name] = []
    for node in walk(st):  # once for both
        for child in children(node):
            parents[id(child)] = node
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load):
            loads.append(node)
    out: set[str] = set()
    for node in loads:
        child: gast.AST = node
        up = parents.get(id(child))
        safe = False
        while up is not None:
            if isinstance(up, (gast.BinOp, gast.UnaryOp, gast.Compare)):
                safe = True
                break
            if isinstance(up, gast.Attribute) and up.attr in ("shape", "ndim", "dtype", "size"):
                safe = True
                break
            if isinstance(up, gast.Subscript) and up.value is child or \
                    isinstance(up, gast.Attribute) and up.attr == "T":
                child, up = up, parents.get(id(up))  # a view: its reader decides
                continue
            if isinstance(up, gast.Call) and isinstance(up.func, gast.Name) and \
                    up.args and up.args[0] is child and not up.keywords:
                if up.func.id in _FRESH_CALLS:
                    safe = True
                    break
                if up.func.id == "unbroadcast":
                    child, up = up, parents.get(id(up))  # may be its argument
                    continue
            break
        if not safe:
            out.add(node.id)
    return out


def _loads(node: gast.AST) -> set[str]:
    """The names ``node`` reads (``b += e`` reads ``b``)."""
    out = set()
    for n in walk(node):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
            out.add(n.id)
        elif isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Name):
            out.add(n.target.id)
    return out


def _stores(node: gast.AST) -> set[str]:
    return {n.id for n in walk(node) if isinstance(n, gast.Name) and
            isinstance(n.ctx, (gast.Store, gast.Del))}


def _name(n: str, ctx: gast.expr_context) -> gast.Name:
    return gast.Name(id=n, ctx=ctx, annotation=None, type_comment=None)
