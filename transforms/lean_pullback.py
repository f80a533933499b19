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

The body of a loop (``for``/``while``, at any depth under the top level's loops) is a block of
its own, handled the same way, because a reversed loop body binds new adjoints at every
iteration and a name still bound to the last iteration's array keeps it alive next to the
new one (two arrays where a hand adjoint has one):

- ``del n`` after the body's last read of ``n``, for a name the kinds analysis knows to hold
  an array (an adjoint or a value computed again) that is *iteration-local*: the body's first
  mention of it is a top-level assignment binding it (so it is bound on every path there and
  no iteration reads the previous one's), it is not read after the loop, and no nested
  function reads it. A name handed over (``c = a`` after ``a OP= b``) is dropped there too.
- the in-place form, where the owned value ``a`` was made in the same iteration (nothing is
  owned at the body's start) and ``a`` is not read at a later iteration or after the loop.
  Besides the shapes the top level proves, an operand ``b`` that is a number (a literal, or
  a name holding an int or a float64 number) keeps the shape of an array ``a`` of rank 1 or
  more. Also owned there: ``x.copy()`` of an array, and ``unbroadcast`` of one; an adjoint
  read out of a shadow (``sh.of(x)``, a view of it) has the shadow's dtype, float64 or
  complex128.

Both only change which buffer holds a value, never a value: the same bits are computed.
"""

from __future__ import annotations

from collections.abc import Callable

import gast
from adgen.transforms.reverse_ast import is_comment
from adgen.transforms.walk import children, names_read, walk

# dtype sources besides the names themselves: a floating dtype is certain; a float64 value is
# among the sources (the dtype is float64 or one float64 promotes to); not arithmetic
FLOATING, FLOAT64, UNKNOWN = "<floating>", "<float64>", "<unknown>"
_FRESH_CALLS = frozenset({"sum_vjp", "mean_vjp", "sum_keepdims"})
_IN_PLACE_OPS = (gast.Add, gast.Sub, gast.Mult, gast.Div)
_COMMUTATIVE = (gast.Add, gast.Mult)
# helpers returning their first argument itself where they can (runtime adjoints)
_PASSING = frozenset({"unbroadcast", "or_zeros", "or_zeros_of_tree"})


def _never(a: str, b: str) -> bool:
    return False


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
        ranks: pullback name -> the rank of the array it holds or is the adjoint of, for
            every name the kinds analysis knows to hold an array (inside loops too).
        consumable: saved float64 arrays this pullback owns from its start: it runs once,
            and nothing else holds them (``single_use.consumable_saved``; empty but for
            grad's single-use compilation).
    """

    # a plain class, not a dataclass: see reverse_ast.Site
    __slots__ = ("arrays", "same_shape", "f64", "weak", "in_place", "ranks", "consumable")

    def __init__(self, arrays: dict[str, str] | None = None,
                 same_shape: Callable[[str, str], bool] = _never,
                 f64: set[str] | None = None, weak: set[str] | None = None,
                 in_place: bool = True, ranks: dict[str, int] | None = None,
                 consumable: set[str] | None = None) -> None:
        self.arrays = {} if arrays is None else arrays
        self.same_shape = same_shape
        self.f64 = set() if f64 is None else f64
        self.weak = set() if weak is None else weak
        self.in_place = in_place
        self.ranks = {} if ranks is None else ranks
        self.consumable = set() if consumable is None else consumable


def lean_pullback(fn: gast.FunctionDef, facts: LeanFacts) -> None:
    """Rewrites ``fn``'s top-level statements and its loops' bodies in place (see the module
    docstring)."""
    closures: set[str] = set()
    for node in walk(fn):
        if node is not fn and isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef,
                                                gast.Lambda)):
            closures |= names_read(node) | _stores(node)
    # a float64 array of the signature is a leaf that makes its users floating
    src: dict[str, frozenset[str]] = {n: frozenset({n, FLOATING, FLOAT64}) for n in facts.f64}
    fn.body[:] = _lean_block(fn.body, set(), src, facts, closures, None)


def _lean_block(body: list[gast.stmt], live_end: set[str], src: dict[str, frozenset[str]],
                facts: LeanFacts, closures: set[str], local: set[str] | None,
                loads_of: list[set[str]] | None = None) -> list[gast.stmt]:
    """The statements of ``body`` rewritten: the function's top level (``local`` None) or a
    loop's body, whose iteration-local names are ``local``. ``live_end``: the names read
    after the block (for a loop's body, at a later iteration too); ``src`` is updated.
    ``loads_of``: each statement's ``_loads``, when the caller read them already."""
    top = local is None
    # names read at or after each statement of the block (a nested statement's reads count
    # at it)
    reads_at = loads_of if loads_of is not None else [names_read(st) for st in body]
    live_after: list[set[str]] = [set() for _ in body]
    acc: set[str] = set(live_end)
    for k in range(len(body) - 1, -1, -1):
        live_after[k] = set(acc)
        acc |= reads_at[k]
    # a single-use pullback owns the saved arrays nothing else holds (the top level only)
    owned: set[str] = set(facts.consumable) if top else set()
    bound: set[str] = set()  # bound by a top-level assignment of the pullback itself
    new: list[gast.stmt] = []
    for k, st in enumerate(body):
        after = live_after[k]
        # read by the branches below for a simple statement only (a loop or a branch is
        # opaque): not computed for one, whose whole subtree it walked at every nesting level
        escaping = _escaping_loads(st) if isinstance(
            st, (gast.Assign, gast.AugAssign, gast.Expr, gast.Return)) else set()
        out = [st]
        handed: str | None = None
        if isinstance(st, (gast.For, gast.While)) and not st.orelse:
            _lean_loop(st, after, src, facts, closures)
        if isinstance(st, gast.Assign) and len(st.targets) == 1 and \
                isinstance(st.targets[0], gast.Name):
            c = st.targets[0].id
            v = st.value
            in_place = _in_place(c, v, owned, after, escaping, src, facts) \
                if facts.in_place else None
            c_src = _sources(v, src, facts.ranks)
            if in_place is not None:
                a, other, op = in_place
                aug = gast.AugAssign(target=_name(a, gast.Store()), op=op, value=other)
                copy = gast.Assign(targets=[_name(c, gast.Store())], value=_name(a, gast.Load()),
                                   type_comment=None)
                out = [gast.copy_location(aug, st)]
                split = _product_in_place(aug, owned, after, escaping, src, facts)
                if split is not None:  # c = a - p * e as p *= e; a -= p
                    out = [gast.copy_location(x, st) for x in split]
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
                elif _fresh(v, src, facts.ranks):
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
            split = _product_in_place(st, owned, after, escaping, src, facts) \
                if facts.in_place else None
            if split is not None:  # x -= a * e as a *= e; x -= a
                out = [gast.copy_location(x, st) for x in split]
            owned -= escaping  # the target itself is updated where it is
            t = st.target.id
            src[t] = src.get(t, frozenset({UNKNOWN})) | _sources(st.value, src, facts.ranks)
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
        if not top:
            continue  # a loop's body: _loop_dels, on the rewritten statements
        if all(isinstance(later, gast.Return) or is_comment(later) for later in body[k + 1:]):
            continue  # the return frees them anyway
        dead = [n for n in reads_at[k] if n not in after and n in bound and
                n in facts.arrays and n != handed]
        if dead:  # (st's own dels read once, and only here: a loop's walk is long)
            gone = _deleted(st)
            dead = sorted(n for n in dead if n not in gone)
        if dead:
            for n in dead:
                bound.discard(n)
                owned.discard(n)
            new.append(gast.copy_location(
                gast.Delete(targets=[_name(n, gast.Del()) for n in dead]), st))
    return new


def _lean_loop(loop: gast.For | gast.While, live_after: set[str],
               src: dict[str, frozenset[str]], facts: LeanFacts, closures: set[str]) -> None:
    """Rewrites the body of ``loop`` as a block (module docstring); ``live_after``: the
    names read after the loop."""
    mentioned = _stores(loop.target) if isinstance(loop, gast.For) else set()
    mentioned |= names_read(loop.test) if isinstance(loop, gast.While) else set()
    local: set[str] = set()
    # each statement's loads and stores read once: the loop's own are their union with its
    # header's (it has no else), and the block below takes the loads (each nesting level
    # walked its statements three times more), in one walk of each
    names_of = [_names(st) for st in loop.body]
    loads_of = [loads for loads, _, _ in names_of]
    stores_of = [stores for _, stores, _ in names_of]
    for st, loads, stores in zip(loop.body, loads_of, stores_of):
        for n in _bound_names(st):  # (st is n = v or a, b = v: v's reads are st's loads)
            if n not in mentioned and n not in loads:
                local.add(n)
        mentioned |= loads | stores
    head = [loop.target, loop.iter] if isinstance(loop, gast.For) else [loop.test]
    # a name the loop reads that is not bound first in each iteration may be read at the
    # next one (or its value from before the loop)
    loop_loads = set().union(*(names_read(h) for h in head), *loads_of)
    live_end = live_after | (loop_loads - local)
    inner = dict(src)
    for n in set().union(*(_stores(h) for h in head), *stores_of):
        inner[n] = frozenset({UNKNOWN})  # an earlier iteration's value, or the one before
    body = _lean_block(loop.body, live_end, inner, facts, closures, local, loads_of)
    loop.body[:] = _loop_dels(body, live_end, local - closures, facts)


def _loop_dels(body: list[gast.stmt], live_end: set[str], local: set[str],
               facts: LeanFacts) -> list[gast.stmt]:
    """``body`` with ``del`` statements for the iteration-local arrays it binds (module
    docstring). A name bound to another's value or to a view of it (``c = a``, ``c =
    a[i]``, ``c = a.T``) shares its memory: every name of such a group goes in one ``del``
    after the last statement mentioning any of them. A group that starts from a view of an
    array from outside the body holds no memory but its view objects: those go with the
    first such ``del`` after their last mention, or in one at the end of the body."""
    mention: dict[str, int] = {}  # the last statement that reads or binds each name
    bind_count: dict[str, int] = {}
    first: dict[str, gast.expr] = {}  # the value of each local name's first binding
    unpacked: set[str] = set()
    nested: set[str] = set()  # (a nested loop's body may have dropped a name already: it
    # may be unbound after it)
    for k, st in enumerate(body):
        # one walk of st for what it reads, binds (counted in bind_count) and deletes
        loads, stores, dels = _names(st, bind_count)
        for n in loads | stores:
            mention[n] = k
        nested |= dels
        for n in _bound_names(st):
            first.setdefault(n, st.value)  # type: ignore[attr-defined]
            if not (len(st.targets) == 1 and  # type: ignore[attr-defined]
                    isinstance(st.targets[0], gast.Name)) and  \
                    isinstance(st.value, gast.Call):  # type: ignore[attr-defined]
                unpacked.add(n)  # a callee's cotangents: ct1, ct2 = f_pullback(...)
    candidates = {n for n in local if (n in facts.ranks or n in unpacked) and
                  n not in live_end and n in first and n not in nested}
    group = {n: n for n in candidates}

    def root(n: str) -> str:
        while group[n] != n:
            n = group[n]
        return n

    for n in sorted(candidates):
        a = _shares_with(first[n])
        if a in candidates and bind_count[n] == 1 and bind_count[a] == 1:
            group[root(n)] = root(a)
    members: dict[str, list[str]] = {}
    for n in candidates:
        members.setdefault(root(n), []).append(n)
    at: dict[int, list[str]] = {}
    views: list[str] = []  # of arrays from outside the body
    for r, names in members.items():
        if _shares_with(first[r]) is None:
            at.setdefault(max(mention[n] for n in names), []).extend(names)
    for r, names in members.items():
        if _shares_with(first[r]) is not None:
            # with the first del after their last mention (one line), or at the end
            dead = max(mention[n] for n in names)
            later = [k for k in at if k >= dead]
            if later:
                at[min(later)].extend(names)
            elif not isinstance(body[-1], (gast.Continue, gast.Break, gast.Return)):
                views.extend(names)
    new: list[gast.stmt] = []
    for k, st in enumerate(body):
        new.append(st)
        if k in at:
            new.append(gast.copy_location(gast.Delete(
                targets=[_name(n, gast.Del()) for n in sorted(at[k])]), st))
    if views:
        new.append(gast.copy_location(gast.Delete(
            targets=[_name(n, gast.Del()) for n in sorted(views)]), body[-1]))
    return new


def _deleted(st: gast.stmt) -> set[str]:
    """The names a ``del`` in ``st`` drops (a loop's body in ``st``: lean_pullback's own)."""
    return {n.id for n in walk(st) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Del)}


def _bound_names(st: gast.stmt) -> list[str]:
    """The names ``st`` binds when it is ``n = v`` or ``a, b = v`` (names only), else []."""
    if not (isinstance(st, gast.Assign) and len(st.targets) == 1):
        return []
    t = st.targets[0]
    if isinstance(t, gast.Name):
        return [t.id]
    if isinstance(t, (gast.Tuple, gast.List)) and all(isinstance(e, gast.Name) for e in t.elts):
        return [e.id for e in t.elts]  # type: ignore[attr-defined]
    return []


def _shares_with(v: gast.expr) -> str | None:
    """``a`` where ``v`` may be ``a``'s value or a view of it: ``a``, ``a[i]``, ``a.T``,
    and the helpers that return their argument where they can (``unbroadcast(a, shape)``,
    ``or_zeros(a, x)``)."""
    while True:
        if isinstance(v, (gast.Subscript, gast.Attribute)):
            v = v.value
        elif isinstance(v, gast.Call) and isinstance(v.func, gast.Name) and \
                v.func.id in _PASSING and v.args:
            v = v.args[0]
        else:
            return v.id if isinstance(v, gast.Name) else None


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
        if not (c in facts.arrays and a in facts.arrays and
                facts.same_shape(facts.arrays[c], facts.arrays[a])) and \
                not (facts.ranks.get(a, 0) >= 1 and _number(b, facts)):
            continue  # (a number keeps an array's shape: a loop's t_bar * 0.2)
        sa, sb = src.get(a, frozenset({UNKNOWN})), _sources(b, src, facts.ranks)
        if UNKNOWN in sa | sb:
            continue
        # b's dtype is promoted into a's: b's sources are a's (a floating), or a holds a
        # float64 value and b's other sources are float64 values or numbers of 64 bits
        narrow = facts.f64 | facts.weak | {FLOATING, FLOAT64}
        if FLOATING in sa and sb <= sa or \
                FLOAT64 in sa and all(x in sa or x in narrow for x in sb):
            return a, b, v.op
    return None


def _product_in_place(st: gast.AugAssign, owned: set[str], after: set[str],
                      escaping: set[str], src: dict[str, frozenset[str]], facts: LeanFacts
                      ) -> list[gast.stmt] | None:
    """``[a *= e, x op= a]`` for ``x op= a * e`` (``op`` ``+`` or ``-``) where ``a`` is
    owned, read there for the last time and only once, ``x`` is the adjoint of an array of
    ``a``'s shape (then ``a * e`` has ``a``'s shape wherever ``x op= a * e`` runs) and ``a *
    e`` has ``a``'s dtype (as ``_in_place``): the product is computed in ``a``'s buffer, the
    same bits, without a temporary array."""
    x, v = st.target.id, st.value  # type: ignore[attr-defined]
    if not (isinstance(st.op, (gast.Add, gast.Sub)) and isinstance(v, gast.BinOp) and
            isinstance(v.op, gast.Mult)):
        return None
    for a_node, e in ((v.left, v.right), (v.right, v.left)):
        if not isinstance(a_node, gast.Name):
            continue
        a = a_node.id
        if a == x or a not in owned or a in after or a not in facts.ranks or \
                not _only_load(v, a) or x not in facts.arrays or \
                not facts.same_shape(facts.arrays[x], facts.arrays.get(a, a)):
            continue
        if a in escaping:
            continue
        sa, se = src.get(a, frozenset({UNKNOWN})), _sources(e, src, facts.ranks)
        narrow = facts.f64 | facts.weak | {FLOATING, FLOAT64}
        if UNKNOWN in sa | se or FLOAT64 not in sa or \
                not all(y in sa or y in narrow for y in se):
            continue
        return [gast.AugAssign(target=_name(a, gast.Store()), op=gast.Mult(), value=e),
                gast.AugAssign(target=_name(x, gast.Store()), op=st.op,
                               value=_name(a, gast.Load()))]
    return None


def _sources(e: gast.expr, src: dict[str, frozenset[str]],
             ranks: dict[str, int] | None = None) -> frozenset[str]:
    """The leaves ``e``'s dtype is the NumPy promotion of: saved names, the cotangent, and
    FLOATING where a true division or a float64 array makes it a floating dtype (UNKNOWN
    where ``e`` is not arithmetic of such values; weak int and float constants add
    nothing). ``ranks``: the names known to hold arrays (whose parts and copies have their
    dtype)."""
    ranks = ranks or {}
    if isinstance(e, gast.Constant):
        return frozenset() if type(e.value) in (int, float, bool) else frozenset({UNKNOWN})
    if isinstance(e, gast.Name):
        return src.get(e.id, frozenset({e.id}))
    if isinstance(e, gast.BinOp):
        both = _sources(e.left, src, ranks) | _sources(e.right, src, ranks)
        return both | {FLOATING} if isinstance(e.op, gast.Div) else both
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
        return _sources(e.operand, src, ranks)
    if isinstance(e, gast.IfExp):  # either arm's value (the test is a comparison of shapes)
        return _sources(e.body, src, ranks) | _sources(e.orelse, src, ranks)
    if isinstance(e, gast.Attribute) and e.attr == "T":
        return _sources(e.value, src, ranks)
    if isinstance(e, gast.Subscript) and isinstance(e.value, gast.Name) and \
            e.value.id in ranks:
        return _sources(e.value, src, ranks)  # a part or an element of an array
    if _copy_of(e) is not None:
        return _sources(_copy_of(e), src, ranks)  # type: ignore[arg-type]
    if isinstance(e, gast.Call) and isinstance(e.func, gast.Attribute) and \
            e.func.attr == "of" and isinstance(e.func.value, gast.Name) and \
            e.func.value.id == "sh" and len(e.args) == 1 and not e.keywords and \
            isinstance(e.args[0], gast.Name) and e.args[0].id in ranks:
        # an array's shadow: float64, or complex128 for complex values (shadow_dtype)
        return frozenset({FLOATING, FLOAT64})
    if isinstance(e, gast.Call) and isinstance(e.func, gast.Name) and e.args and \
            (e.func.id in _FRESH_CALLS or e.func.id == "unbroadcast" and not e.keywords):
        return _sources(e.args[0], src, ranks)
    return frozenset({UNKNOWN})


def _copy_of(e: gast.expr) -> gast.expr | None:
    """``x`` for ``x.copy()``."""
    if isinstance(e, gast.Call) and isinstance(e.func, gast.Attribute) and \
            e.func.attr == "copy" and not e.args and not e.keywords:
        return e.func.value
    return None


def _number(e: gast.expr, facts: LeanFacts) -> bool:
    """Whether ``e`` is a number: an int or float literal, or a name holding an int or a
    float64 number (analyses.floats), or the negation of one."""
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
        e = e.operand
    if isinstance(e, gast.Constant):
        return type(e.value) in (int, float)
    return isinstance(e, gast.Name) and e.id in facts.weak


def _fresh(v: gast.expr, src: dict[str, frozenset[str]],
           ranks: dict[str, int] | None = None) -> bool:
    """Whether ``v``'s value is a new array or a number (no other reference to it)."""
    if UNKNOWN in _sources(v, src, ranks):
        return False  # not known to be arithmetic on arrays and numbers
    if _made_here(v):
        return True  # (the copy of an array whose dtype is known: of an array)
    if isinstance(v, gast.Call) and isinstance(v.func, gast.Name):
        if v.func.id in _FRESH_CALLS:
            return True
        if v.func.id == "unbroadcast" and not v.keywords:
            # its argument itself or a new array: new when the argument is
            return _made_here(v.args[0])
    return False


def _made_here(e: gast.expr) -> bool:
    """Whether ``e`` makes a new array (or a number): arithmetic, a copy, or a conditional
    expression whose arms both do (specialize.scalar_sum_adjoints' run-time choice)."""
    if isinstance(e, gast.IfExp):
        return _made_here(e.body) and _made_here(e.orelse)
    return isinstance(e, (gast.BinOp, gast.UnaryOp)) or _copy_of(e) is not None


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
    todo: list[gast.AST] = [st]  # walk's order, each node's fields read once for both
    for node in todo:
        kids = children(node)
        for child in kids:
            parents[id(child)] = node
        todo.extend(kids)
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
            if isinstance(up, gast.Attribute) and up.attr == "copy" and \
                    isinstance(parents.get(id(up)), gast.Call) and \
                    parents[id(up)].func is up:  # type: ignore[attr-defined]
                safe = True  # x.copy(): a new array
                break
            if isinstance(up, gast.Subscript) and up.value is child or \
                    isinstance(up, gast.Attribute) and up.attr == "T" or \
                    isinstance(up, gast.IfExp) and up.test is not child:
                child, up = up, parents.get(id(up))  # a view or an arm: its reader decides
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


def _names(node: gast.AST, binds: dict[str, int] | None = None
           ) -> tuple[set[str], set[str], set[str]]:
    """``(names_read(node), _stores(node), _deleted(node))`` in one walk. ``binds``: when given,
    each name stored by an assignment's, a for loop's or an annotated assignment's target
    in ``node`` is counted there (an array's ``a OP= b`` keeps its object; a number's is
    freed anyway)."""
    loads: set[str] = set()
    stores: set[str] = set()
    dels: set[str] = set()
    for n in walk(node):
        if isinstance(n, gast.Name):
            ctx = n.ctx
            if isinstance(ctx, gast.Load):
                loads.add(n.id)
            elif isinstance(ctx, gast.Store):
                stores.add(n.id)
            elif isinstance(ctx, gast.Del):
                stores.add(n.id)
                dels.add(n.id)
        elif isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Name):
            loads.add(n.target.id)
        if binds is not None and isinstance(n, (gast.Assign, gast.For, gast.AnnAssign)):
            for t in n.targets if isinstance(n, gast.Assign) else [n.target]:
                for m in walk(t):
                    if isinstance(m, gast.Name) and isinstance(m.ctx, gast.Store):
                        binds[m.id] = binds.get(m.id, 0) + 1
    return loads, stores, dels


def _stores(node: gast.AST) -> set[str]:
    return {n.id for n in walk(node) if isinstance(n, gast.Name) and
            isinstance(n.ctx, (gast.Store, gast.Del))}


def _name(n: str, ctx: gast.expr_context) -> gast.Name:
    return gast.Name(id=n, ctx=ctx, annotation=None, type_comment=None)
