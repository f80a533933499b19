"""Element reads a loop's pullback may repeat instead of taping: the array holds the same
value there when the pullback runs.

A loop's pullback reads, per iteration, the values its rules need; the forward records them
on a tape (a row per iteration). For ``t = X[i, j]`` (an element of a float64 array, read at
the top level of the loop's body) the pullback can instead read ``X[i, j]`` again, with the
counters it has anyway, when no write that may run after the read can change that element.
A triangular solve's inner loop (``acc -= L[i, j] * x[j]``) then tapes only ``j``, not the
two values (issue 16: trisolv, Cholesky, LU taped a row of values per inner iteration).

:func:`final_load` is the analysis (it reads the plan, rewrites nothing); the pullback
emitter (``reverse_pullback.rev_loop``) uses it. :func:`final_value` extends it to parts of an
array that no write after the read changes at all (``A[:i + 1, k]``) and to such a part
times, plus, minus or over a number (syrk's ``A[:i + 1, k] * ALPHA``), which the pullback
computes again. It proves an element final when every write
of the array's buffers that may run after the read

- is absent (``L`` never written), or
- writes ``X[..., c1, ...]`` with ``c1`` the counter of a top-level ``for c1 in range(...)``
  loop holding the read, and the read's index on that axis is below ``c1`` (the counter of a
  ``for e in range(c1)`` / ``range(a, c1 - k)`` loop): later writes are at ``c1' >= c1``
  (``x[i] = ...`` after ``x[j]``, ``j < i``); or
- writes ``X[.., c1, .., c2, ..]`` (either order) with ``c2`` the counter of a loop directly
  in the ``c1`` loop, both holding the read, and the read's index is at most ``c1`` on
  ``c1``'s axis and below ``c2`` on ``c2``'s: later writes are at ``(c1', c2')`` after ``(c1,
  c2)`` in lexicographic order, so on another row or a column further on (Cholesky's
  ``L[i, k]`` and ``L[j, k]``, ``k < j <= i``, before ``L[i, j] = ...``).

A part ``X[lo:hi]`` of the first axis (``final_value``) is final when every such later write
is ``X[c1] = ...`` and ``hi <= c1`` (trisolv's ``x[:i]`` before ``x[i] = ...``:
:func:`_slice_behind`).

Counters are ascending (``range`` with one or two arguments: ``Plan.loop_of_counter``), bound
only by their loop, and every index of the read is a counter or a non-negative constant, so
the pullback, which has each iteration's counters, reads the same element; a counter in an
index must start at a value that is never negative (``x[j]`` with ``j`` of ``range(-1, i)`` is
the last row at ``j = -1``). The array name
must be a parameter or bound once outside any loop (the pullback's name is the forward's
object). A parameter read this way is one the pullback reads (``Plan.reads_params``: a vjp
whose argument is changed before its pullback runs raises, as for any value it reads).
"""

from __future__ import annotations

import gast
from adgen.transforms.analyses.effects import Write
from adgen.transforms.analyses.kinds import NUMBER, of_value
from adgen.transforms.reverse_ast import basic_index
from adgen.transforms.reverse_plan import Plan, range_step
from adgen.transforms.ssa import is_break_if
from adgen.transforms.walk import clone, walk


def final_load(plan: Plan, r: str, loop: gast.stmt) -> tuple[str, gast.expr] | None:
    """``(X, index)`` when ``r = X[index]`` is bound once, at the top level of ``loop``'s
    body, to an element of a float64 array that holds the same value when the pullback runs
    (see the module's docstring); else None."""
    if not plan.kinds or plan.def_count.get(r) != 1 or plan.tracked(r):
        return None  # (tracked: a number read again is another object, see final_value)
    st = plan.def_stmt.get(r)
    if not (isinstance(st, gast.Assign) and len(st.targets) == 1 and
            isinstance(st.targets[0], gast.Name) and isinstance(st.value, gast.Subscript) and
            isinstance(st.value.value, gast.Name)) or \
            plan.block_of.get(id(st)) != id(getattr(loop, "body", None)):
        return None
    x = st.value.value.id
    rank = plan.kinds.get(x)
    read = _read_elements(plan, st.value.slice, st, loop)
    if type(rank) is not int or read is None or len(read) != rank:
        return None
    if not _one_object(plan, x):
        return None
    bufs = plan.eff.buffers.get(x, set())
    for w in plan.eff.writes:
        if w.container or not (w.buffers & bufs) or not plan.may_run_after(w.stmt, st):
            continue
        if not _behind(plan, w, x, read, st):
            return None
    if isinstance(st.value.slice, gast.Tuple):
        return x, gast.Tuple(elts=[clone(e) for e in read], ctx=gast.Load())
    return x, clone(read[0])


def _read_elements(plan: Plan, idx: gast.expr, at: gast.stmt, loop: gast.stmt
                   ) -> list[gast.expr] | None:
    """The parts of the index of an element read at ``at`` (:func:`_elements`), where a part
    may also be a temporary bound once in the read's block, before it, to ``c - k`` or ``c +
    k`` (``k`` a non-negative int constant, ``c`` the counter of ``loop`` or of a loop around
    it) that is never negative (a dynamic programme's ``R[i - 1, j - 1]``, ``i`` of ``range(1,
    ...)``): spelled out as ``c - k``, which the pullback evaluates with its counters; else
    None."""
    parts = idx.elts if isinstance(idx, gast.Tuple) else [idx]
    around = {id(loop)} | set(plan.loops_of.get(id(loop), ()))
    out: list[gast.expr] = []
    for e in parts:
        if isinstance(e, gast.Name) and e.id in plan.loop_of_counter or \
                isinstance(e, gast.Constant):
            if _elements(plan, e) is None:
                return None
            out.append(e)
            continue
        b = plan.def_stmt.get(e.id) if isinstance(e, gast.Name) else None
        v = b.value if isinstance(b, gast.Assign) else None
        if not (plan.def_count.get(getattr(e, "id", "")) == 1 and
                isinstance(v, gast.BinOp) and isinstance(v.op, (gast.Add, gast.Sub)) and
                isinstance(v.left, gast.Name) and v.left.id in plan.loop_of_counter and
                id(plan.loop_of_counter[v.left.id]) in around and
                isinstance(v.right, gast.Constant) and type(v.right.value) is int and
                v.right.value >= 0 and plan.block_of.get(id(b)) == plan.block_of.get(id(at))
                and plan.order[id(b)] < plan.order[id(at)] and _never_negative(plan, v)):
            return None
        out.append(v)
    return out


def final_store(plan: Plan, r: str, loop: gast.stmt) -> tuple[str, gast.expr] | None:
    """``(X, index)`` when the float64 number ``r``, bound once at the top level of
    ``loop``'s body, is stored there by ``X[index] = r`` into an element of a float64 array
    that still holds it when the pullback runs: the pullback reads ``X[index]`` instead of
    a tape of ``r`` (allocate-then-fill's ``h[i] = np.tanh(x[i] * w)`` kept a column of the
    values ``h`` holds; the hand adjoint reads ``h``). A float64 stored into a float64 array
    is the same bits read back. The element is final when

    - the store's index is counters and non-negative int constants (:func:`_elements`), the
      counters exactly those of the loops around the store, so each run of the store
      writes another element (``h[i]``, ``R[i, j]`` in ``for i: for j:``; not
      ``h[i]`` in ``for k: for i:``), and
    - every other write of the array's buffers that may run after the store writes another
      element (:func:`_behind`, as for a read at the store), and
    - ``X`` is one object for the whole call, made by the function (not a parameter: a
      caller sees a parameter's contents; :func:`_one_object`), and the loop has no
      ``break`` (an iteration cut short between the binding and the store).

    A caller that writes into ``X`` after the call (``X`` returned) is guarded as for any
    value a callee's pullback reads (reverse_captures: the result made by the callee)."""
    if not plan.kinds or plan.def_count.get(r) != 1 or \
            plan.column_dtypes.get(r) != "float64" or plan.kinds.get(r) != NUMBER or \
            plan.tracked(r):  # (a number read again is another object: final_value)
        return None
    body = getattr(loop, "body", None)
    at = plan.def_stmt.get(r)
    if body is None or at is None or plan.block_of.get(id(at)) != id(body) or \
            any(is_break_if(b) for b in body):
        return None
    for st in body:
        if not (isinstance(st, gast.Assign) and len(st.targets) == 1 and
                isinstance(st.targets[0], gast.Subscript) and
                isinstance(st.targets[0].value, gast.Name) and
                isinstance(st.value, gast.Name) and st.value.id == r):
            continue
        x = st.targets[0].value.id
        rank = plan.kinds.get(x)
        index = _elements(plan, st.targets[0].slice)
        if type(rank) is not int or x not in plan.f64_arrays or index is None or \
                len(index) != rank or x not in plan.def_count or not _one_object(plan, x) or \
                "param" in plan.eff.buffers.get(x, {"param"}):
            continue
        # the counters of exactly the loops around the store (which the pullback has)
        around = plan.loops_of.get(id(st), ())
        if not around or {id(plan.loop_of_counter[e.id]) for e in index
                          if isinstance(e, gast.Name)} != set(around):
            continue
        bufs = plan.eff.buffers.get(x, set())
        if all(w.stmt is st or w.container or not (w.buffers & bufs) or
               not plan.may_run_after(w.stmt, st) or _behind(plan, w, x, index, st)
               for w in plan.eff.writes):
            return x, st.targets[0].slice
    return None


def final_value(plan: Plan, r: str, loop: gast.stmt) -> gast.expr | None:
    """An expression the pullback may evaluate again for ``r`` instead of taping it: ``r``
    is bound once, at the top level of ``loop``'s body, to a part of an array that no write
    that may run after the read changes (``A[:i + 1, k]``, the array a parameter or bound
    once outside any loop), or to such a part times, plus, minus or over a number (``A[:i +
    1, k] * ALPHA``, through the normal form's temporary): the same operation on the same
    values gives the same bits. The index may hold numbers only (constants, slices of them,
    names of numbers not bound by a read of an array), which are immutable, so the pullback,
    which has them (taped or bound outside the loop), reads the same part. A linear step of
    syrk and syr2k kept ``A[:i + 1, k] * ALPHA`` per inner iteration; the hand adjoint reads
    ``A`` again. Elements are :func:`final_load`'s (which also proves elements that later
    writes pass by).

    Not for a value whose adjoint lives in shadow memory (``Plan.tracked``), which is keyed
    by the object: a value computed again (``acc.append(x[k] * 2.0)`` in the loop, then
    ``acc[0] *= 3.0``) is another object, whose shadow holds nothing (it was a silently zero
    gradient); only a part read again through a basic index, a view of the same base, finds
    the base's shadow."""
    if not plan.kinds or plan.def_count.get(r) != 1:
        return None
    st = plan.def_stmt.get(r)
    body = id(getattr(loop, "body", None))
    if not (isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name) and
            plan.block_of.get(id(st)) == body):
        return None
    v = st.value
    if isinstance(v, gast.Subscript):
        if plan.tracked(r) and not basic_index(v.slice, plan.int_names):
            return None
        return _unchanged_part(plan, v, st)
    if plan.tracked(r):
        return None
    again = _of_counters(plan, v, loop)
    if again is not None:
        return again  # i + a, j - 1: the pullback has the counters and the numbers
    if plan.column_dtypes.get(r) == "float64":  # (an int's tape is an int64 column)
        again = _recomputed(plan, v, loop, [RECOMPUTED_STEPS])
        if again is not None:
            return again  # -R[i - 1, j - 1] / gamma: final elements and numbers
    base = plan.def_stmt.get(v.value.id) if isinstance(v, gast.Attribute) and \
        isinstance(v.value, gast.Name) else None
    if isinstance(v, gast.Attribute) and v.attr == "T" and isinstance(v.value, gast.Name) and \
            type(plan.kinds.get(v.value.id)) is int and plan.def_count.get(v.value.id, 0) <= 1 \
            and (base is None or id(loop) not in plan.loops_of.get(id(base), ()) or
                 plan.block_of.get(id(base)) == body):
        # a transposed view (A.T, K.T): the same view of the same array object, which the
        # pullback has (a parameter, bound outside the loop, or bound at the top of its body
        # and taped instead of its view), so it sees the same memory a taped view would
        return gast.Attribute(value=gast.Name(v.value.id, gast.Load(), None, None), attr="T",
                              ctx=gast.Load())
    if not (isinstance(v, gast.BinOp) and
            isinstance(v.op, (gast.Mult, gast.Add, gast.Sub, gast.Div))):
        return None
    for part, other in ((v.left, v.right), (v.right, v.left)):
        if not (isinstance(part, gast.Name) and plan.def_count.get(part.id) == 1 and
                _a_number(plan, other)):
            continue
        at = plan.def_stmt.get(part.id)
        if not (isinstance(at, gast.Assign) and isinstance(at.value, gast.Subscript) and
                plan.block_of.get(id(at)) == body):
            continue
        read = _unchanged_part(plan, at.value, at)
        if read is None:
            continue
        left, right = (read, other) if part is v.left else (other, read)
        return gast.BinOp(left=left, op=v.op, right=right)
    return None


def shape_again(plan: Plan, r: str, loop: gast.stmt) -> gast.expr | None:
    """An array expression the pullback may evaluate for the *shape* of ``r`` instead of
    taping it, for an ``r`` the reversed body reads only for its shape; else None.

    ``r`` (an ndarray, bound once at the top level of ``loop``'s body) is a basic part of an
    array ``X[index]`` or elementwise arithmetic of such parts and numbers (syrk's ``A[:i +
    1, k] * ALPHA * B[i, k]``), through the normal form's temporaries. An ndarray keeps its
    shape whatever is written into it, so its values need not be final as in
    :func:`final_value` (seidel-2d's ``A[i - 1:i + 2, j - 1:j + 2]``, written by the next
    step): the answer is the same part ``X[index]`` again (a view, no copy), ``X`` one object
    for the whole call (:func:`_one_object`) and every number of the index spelled out from
    counters and numbers bound outside the loop (:func:`_of_counters`), so the pullback needs
    no tape for it. A number combined with an array broadcasts to the array's shape; two
    arrays combine to either one's shape where analyses.shapes proves it theirs. A loop whose
    tape held only such shapes records nothing (its range runs again)."""
    if type(plan.kinds.get(r)) is not int or plan.def_count.get(r) != 1:
        return None
    return _shaped_like(plan, gast.Name(r, gast.Load(), None, None), loop, 0)


def shape_of_bound(plan: Plan, r: str, loop: gast.stmt, bound: set[str]) -> str | None:
    """A name of ``bound`` (values the reversed body of ``loop`` computes again anyway, at
    its top level) whose array has the shape of ``r``, for an ``r`` the reversed body reads
    only for its shape; else None. The same chain as :func:`shape_again` (a number combined
    with an array keeps the array's shape; two arrays, the one analyses.shapes proves), ending
    at a name the body binds: syr2k's ``t14 = t12 * B[i, k]`` with ``t12 = A[:i + 1, k] *
    ALPHA`` computed again by the pullback has ``t12``'s shape. Reading that shape costs
    nothing (no tape, no view taken again)."""
    if type(plan.kinds.get(r)) is not int or plan.def_count.get(r) != 1 or r in bound:
        return None
    found = _shaped_like(plan, gast.Name(r, gast.Load(), None, None), loop, 0, bound)
    return found.id if isinstance(found, gast.Name) and found.id in bound else None


def _shaped_like(plan: Plan, e: gast.expr, loop: gast.stmt, depth: int,
                 bound: set[str] | None = None) -> gast.expr | None:
    """An expression of an array of ``e``'s shape the pullback can evaluate without a tape
    (:func:`shape_again`); else None. With ``bound``, a name in it is the answer itself."""
    if depth > 8:
        return None
    if isinstance(e, gast.Subscript):
        return _part_again(plan, e, loop)
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
        return _shaped_like(plan, e.operand, loop, depth + 1, bound)
    if isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Add, gast.Sub, gast.Mult,
                                                       gast.Div, gast.FloorDiv, gast.Pow)):
        if _any_number(plan, e.left):
            return _shaped_like(plan, e.right, loop, depth + 1, bound)
        if _any_number(plan, e.right):
            return _shaped_like(plan, e.left, loop, depth + 1, bound)
        return None
    if not isinstance(e, gast.Name) or type(plan.kinds.get(e.id)) is not int:
        return None
    if bound is not None:
        if e.id in bound and plan.def_count.get(e.id) == 1:
            return clone(e)  # one value in the forward: the body's is the same
        if plan.block_of.get(id(plan.def_stmt.get(e.id))) != id(getattr(loop, "body", None)):
            return None  # only a chain inside the body, to a name it binds
    if e.id not in plan.def_count:
        return clone(e) if e.id in {a.id for a in plan.fn.args.args} else None
    at = plan.def_stmt.get(e.id)
    if plan.def_count.get(e.id) != 1 or not isinstance(at, gast.Assign) or \
            len(at.targets) != 1 or not isinstance(at.targets[0], gast.Name):
        return None
    if plan.block_of.get(id(at)) != id(getattr(loop, "body", None)):
        return clone(e) if _one_object(plan, e.id) else None
    v = at.value
    if isinstance(v, gast.BinOp) and isinstance(v.left, gast.Name) and \
            isinstance(v.right, gast.Name) and not _any_number(plan, v.left) and \
            not _any_number(plan, v.right):
        # two arrays: the result has the shape of the one analyses.shapes says it has
        for side in (v.left, v.right):
            if plan.same_shape(e.id, side.id):
                return _shaped_like(plan, side, loop, depth + 1, bound)
        return None
    return _shaped_like(plan, v, loop, depth + 1, bound)


def _part_again(plan: Plan, v: gast.Subscript, loop: gast.stmt) -> gast.expr | None:
    """``X[index]`` with the index's numbers spelled out (:func:`_of_counters`), for ``X``
    an ndarray that is one object for the whole call and an index of numbers, slices of
    numbers, ``None`` and ``...``: the same part of the same array, so the same shape."""
    if not (isinstance(v.value, gast.Name) and type(plan.kinds.get(v.value.id)) is int and
            _one_object(plan, v.value.id)):
        return None
    index = index_again(plan, v.slice, loop)
    return None if index is None else gast.Subscript(
        value=gast.Name(v.value.id, gast.Load(), None, None), slice=index, ctx=gast.Load())


def index_again(plan: Plan, idx: gast.expr, loop: gast.stmt) -> gast.expr | None:
    """The index ``idx`` (numbers, slices of them, ``None``, ``...``; read at the top level
    of ``loop``'s body) with its numbers spelled out from counters and numbers the pullback
    has in every iteration without a tape (:func:`_of_counters`); else None."""

    def spelled(e: gast.expr | None) -> gast.expr | None:
        if e is None or isinstance(e, gast.Constant) and (e.value is None or
                                                          e.value is Ellipsis):
            return clone(e) if e is not None else None
        return _of_counters(plan, e, loop)

    parts = idx.elts if isinstance(idx, gast.Tuple) else [idx]
    out: list[gast.expr] = []
    for e in parts:
        if isinstance(e, gast.Slice):
            bounds = [spelled(b) for b in (e.lower, e.upper, e.step)]
            if any(b is None and o is not None for b, o in zip(bounds, (e.lower, e.upper,
                                                                        e.step))):
                return None
            out.append(gast.Slice(lower=bounds[0], upper=bounds[1], step=bounds[2]))
        else:
            part = spelled(e)
            if part is None:
                return None
            out.append(part)
    return gast.Tuple(elts=out, ctx=gast.Load()) if isinstance(idx, gast.Tuple) else out[0]


def _any_number(plan: Plan, e: gast.expr) -> bool:
    """``e`` is a number (of any origin: only its shape, ``()``, matters here)."""
    if isinstance(e, gast.Constant):
        return type(e.value) in (int, float)
    if not isinstance(e, gast.Name):
        return False
    if e.id not in plan.kinds and e.id not in plan.def_count and \
            e.id not in {a.id for a in plan.fn.args.args}:
        return of_value(plan.resolve_or_none(e)) == NUMBER
    return plan.kinds.get(e.id) == NUMBER


# the most steps (operations and names spelled out) of a number the pullback computes again
RECOMPUTED_STEPS = 8
_EXTREMES = (max, min)


def _recomputed(plan: Plan, e: gast.expr, loop: gast.stmt, budget: list[int]
                ) -> gast.expr | None:
    """The number ``e`` (at the top level of ``loop``'s body) spelled out for the pullback
    to compute again: arithmetic (a negation, ``+``, ``-``, ``*``, ``/``) and the builtins
    ``max`` and ``min`` of numbers the pullback has without a tape (:func:`_of_counters`),
    elements that hold the same value when it runs (:func:`final_load`: ``R[i - 1, j]``
    before ``R[i, j]`` is written), and names of numbers bound once at the top level of the
    body to such expressions, in at most ``budget[0]`` steps (an operation or a name spelled
    out): the same operations on the same values give the same bits (soft-DTW's ``r0 =
    -R[i - 1, j - 1] / gamma`` per cell); else None. Everything is spelled out from the
    array and the counters: a chain of such numbers (soft-DTW's ``rmax = max(max(r0, r1),
    r2)``, ``rsum`` from the taped ``exp`` terms) is over the budget and stays taped; the
    pullback computing it again from the others cost 10-15% of the gradient's time for a
    tape 30% smaller (docs/performance.md, Update 6)."""
    again = _of_counters(plan, e, loop)
    if again is not None:
        return again
    budget[0] -= 1
    if budget[0] < 0:
        return None
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
        inner = _recomputed(plan, e.operand, loop, budget)
        return None if inner is None else gast.UnaryOp(op=gast.USub(), operand=inner)
    if isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Add, gast.Sub, gast.Mult,
                                                       gast.Div)):
        left = _recomputed(plan, e.left, loop, budget)
        right = _recomputed(plan, e.right, loop, budget) if left is not None else None
        return None if right is None else gast.BinOp(left=left, op=e.op, right=right)
    if isinstance(e, gast.Call) and not e.keywords and len(e.args) == 2 and \
            any(plan.resolve_or_none(e.func) is m for m in _EXTREMES):
        args = []
        for a in e.args:
            args.append(_recomputed(plan, a, loop, budget))
            if args[-1] is None:
                return None
        return gast.Call(func=clone(e.func), args=args, keywords=[])
    if not (isinstance(e, gast.Name) and plan.kinds.get(e.id) == NUMBER and
            plan.def_count.get(e.id) == 1):
        return None
    at = plan.def_stmt.get(e.id)
    if not (isinstance(at, gast.Assign) and len(at.targets) == 1 and
            plan.block_of.get(id(at)) == id(getattr(loop, "body", None))):
        return None
    found = final_load(plan, e.id, loop)
    if found is not None:
        return gast.Subscript(value=gast.Name(found[0], gast.Load(), None, None),
                              slice=clone(found[1]), ctx=gast.Load())
    return _recomputed(plan, at.value, loop, budget)


def _of_counters(plan: Plan, e: gast.expr, loop: gast.stmt, depth: int = 0
                 ) -> gast.expr | None:
    """``e`` again, when it is arithmetic (``+``, ``-``, ``*``, ``//``, ``%``, a negation) of
    number constants, counters of ``loop`` or of loops around it, names of numbers bound
    outside ``loop``, ``len(X)`` of an array that is one object for the call (conv's bound
    ``len(k)``, bound in the loop around), and names bound once in ``loop``'s body to such
    arithmetic (spelled
    out in what is returned): values the pullback has in every iteration without a tape
    (``i + a`` in a convolution, ``j - 1`` in a dynamic programme, ``1.0 + 2.0 * d`` in
    ADI); else None."""
    if depth > 6:
        return None
    if isinstance(e, gast.Constant):
        return clone(e) if type(e.value) in (int, float) else None
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
        inner = _of_counters(plan, e.operand, loop, depth + 1)
        return None if inner is None else gast.UnaryOp(op=gast.USub(), operand=inner)
    if isinstance(e, gast.BinOp):
        if not isinstance(e.op, (gast.Add, gast.Sub, gast.Mult, gast.FloorDiv, gast.Mod)):
            return None
        left = _of_counters(plan, e.left, loop, depth + 1)
        right = _of_counters(plan, e.right, loop, depth + 1) if left is not None else None
        return None if right is None else gast.BinOp(left=left, op=e.op, right=right)
    if isinstance(e, gast.Call) and isinstance(e.func, gast.Name) and len(e.args) == 1 and \
            not e.keywords and isinstance(e.args[0], gast.Name) and \
            plan.resolve_or_none(e.func) is len:
        # len(k) of an array that is one object for the call: its shape never changes
        x = e.args[0].id
        rank = plan.kinds.get(x)
        return clone(e) if type(rank) is int and rank >= 1 and _one_object(plan, x) else None
    if not isinstance(e, gast.Name):
        return None
    counted = plan.loop_of_counter.get(e.id)
    if counted is not None:
        return clone(e) if counted is loop or \
            id(counted) in plan.loops_of.get(id(loop), ()) else None
    at = plan.def_stmt.get(e.id)
    if at is None:
        return clone(e) if _a_number(plan, e) else None  # a parameter or a free name
    if plan.kinds.get(e.id) != NUMBER or plan.def_count.get(e.id) != 1 or at is loop:
        return None
    if id(loop) not in plan.loops_of.get(id(at), ()):
        # a number bound once outside the loop (n of n = u0.shape[0] too): the pullback has
        # it as the forward had it
        return clone(e)
    if isinstance(at, gast.Assign) and plan.block_of.get(id(at)) == \
            id(getattr(loop, "body", None)):
        return _of_counters(plan, at.value, loop, depth + 1)  # t21 = 2.0 * d: spelled out
    return None


def counters_again(plan: Plan, e: gast.expr, loop: gast.stmt) -> gast.expr | None:
    """``e`` spelled out from counters and numbers the pullback has in every iteration of
    ``loop`` without a tape (:func:`_of_counters`), for the pullback emitter's other
    analyses (recomputed_rows); else None."""
    return _of_counters(plan, e, loop)


def _a_number(plan: Plan, e: gast.expr) -> bool:
    """A number the pullback has as the forward had it: a constant, or a name of a number
    (immutable) bound by something other than a read of an array (which the pullback may
    itself read again), or the negation of one (the step of ``x[::-1]``)."""
    if isinstance(e, gast.Constant):
        return type(e.value) in (int, float)
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
        return _a_number(plan, e.operand)
    if not isinstance(e, gast.Name):
        return False
    if e.id not in plan.kinds and e.id not in plan.def_count and \
            e.id not in {a.id for a in plan.fn.args.args}:
        # a free name: a number at every call (its binding's guard), which the pullback
        # reads from its saved values (free_values)
        return of_value(plan.resolve_or_none(e)) == NUMBER
    if plan.kinds.get(e.id) != NUMBER:
        return False
    at = plan.def_stmt.get(e.id)
    return not (isinstance(at, gast.Assign) and isinstance(at.value, gast.Subscript))


def _unchanged_part(plan: Plan, v: gast.Subscript, st: gast.stmt, depth: int = 0
                    ) -> gast.expr | None:
    """``X[index]`` again, when the read ``v`` at ``st`` is of an ndarray ``X`` (a parameter,
    or bound once outside any loop) that no write which may run after ``st`` changes, with an
    index of numbers (:func:`_a_number`) and slices of them; else None. ``X`` may also be a
    view bound once earlier in ``st``'s block to such a part (a basic index: the same
    memory), which is spelled out: durbin's ``t8 = t7[::-1]`` with ``t7 = r[:k]`` is
    ``r[:k][::-1]`` again."""
    if not isinstance(v.value, gast.Name) or depth > _VIEW_DEPTH:
        return None
    x = v.value.id
    # an ndarray (the signature's, or one the function makes); or, compiled for any
    # arguments, a parameter of unknown kind (re-indexing it gives the same item as long as
    # nothing, an item stored into a list included, writes it after the read)
    unknown = x not in plan.kinds and x not in plan.objlike and x in plan.eff.buffers and \
        bool(plan.eff.buffers[x])
    if type(plan.kinds.get(x)) is not int and not unknown:
        return None
    parts = v.slice.elts if isinstance(v.slice, gast.Tuple) else [v.slice]
    for e in parts:
        bounds = [e.lower, e.upper, e.step] if isinstance(e, gast.Slice) else [e]
        if not all(b is None or _a_number(plan, b) for b in bounds):
            return None
    base: gast.expr | None = gast.Name(x, gast.Load(), None, None)
    if not _one_object(plan, x):
        # a view taken earlier in the block, of a part no later write changes: the same
        # elements (its own writes are the base's, checked below through its buffers too)
        at = plan.def_stmt.get(x)
        base = None
        if plan.def_count.get(x) == 1 and isinstance(at, gast.Assign) and \
                len(at.targets) == 1 and isinstance(at.value, gast.Subscript) and \
                basic_index(at.value.slice, plan.int_names) and \
                plan.block_of.get(id(at)) == plan.block_of.get(id(st)) and \
                plan.order.get(id(at), -1) < plan.order.get(id(st), -1):
            base = _unchanged_part(plan, at.value, at, depth + 1)
        if base is None:
            return None
    bufs = plan.eff.buffers.get(x, set())
    if any((unknown or not w.container) and w.buffers & bufs and
           plan.may_run_after(w.stmt, st) and not _slice_behind(plan, w, x, v.slice, st)
           for w in plan.eff.writes):
        return None
    return gast.Subscript(value=base, slice=clone(v.slice), ctx=gast.Load())


_VIEW_DEPTH = 4  # views of views followed by _unchanged_part


def _slice_behind(plan: Plan, w: Write, x: str, idx: gast.expr, at: gast.stmt) -> bool:
    """Every run of the write ``w`` after the read ``at`` of ``x[lo:hi]`` (a slice of the
    first axis, ``lo`` absent or a constant >= 0, no step) writes another row: ``w`` is
    ``x[c] = ...`` with ``c`` the counter of a top-level ``for c in range(...)`` loop holding
    the read, and ``hi <= c`` (:func:`_at_most`), so the rows read are below ``c`` and the
    later writes at ``c' >= c`` (trisolv's ``x[:i]`` before ``x[i] = ...``)."""
    if not (isinstance(idx, gast.Slice) and idx.step is None and idx.upper is not None and
            (idx.lower is None or isinstance(idx.lower, gast.Constant) and
             type(idx.lower.value) is int and idx.lower.value >= 0)):
        return False
    found = _element_write(plan, w, x)
    if found is None:
        return False
    _, written, loops = found
    if len(written) != 1 or not loops or \
            plan.loops_of.get(loops[0]) != () or loops[0] not in plan.loops_of.get(id(at), ()):
        return False
    c = written[0]
    return _counter_of(plan, c, loops[0]) and isinstance(c, gast.Name) and \
        _at_most(plan, idx.upper, c.id)


def _one_object(plan: Plan, x: str) -> bool:
    """``x`` names one object for the whole call: a parameter never rebound, or a name bound
    once outside any loop (not rebound, and not another object in each iteration)."""
    params = {a.id for a in plan.fn.args.args}
    if x in plan.def_count:
        at = plan.def_stmt.get(x)
        return x not in params and isinstance(at, gast.Assign) and plan.loops_of.get(id(at)) == ()
    return x in params


def _element_write(plan: Plan, w: Write, x: str
                   ) -> tuple[gast.Assign, list[gast.expr], tuple[int, ...]] | None:
    """For a write ``w`` that is ``x[...] = v`` of ``x`` itself (one target): the statement,
    the elements it writes (:func:`_elements`) and the loops around it; else None."""
    s = w.stmt
    if not (isinstance(s, gast.Assign) and len(s.targets) == 1 and
            isinstance(s.targets[0], gast.Subscript) and
            isinstance(s.targets[0].value, gast.Name) and s.targets[0].value.id == x and
            w.target == x):
        return None
    written = _elements(plan, s.targets[0].slice)
    return None if written is None else (s, written, plan.loops_of.get(id(s), ()))


def _elements(plan: Plan, idx: gast.expr) -> list[gast.expr] | None:
    """The parts of an element index: counters that are never negative and non-negative int
    constants (a negative index is a row counted from the end: ``x[-1]``, read when ``j`` of
    ``range(-1, i)`` is -1, is the last row, which a later ``x[i] = ...`` writes)."""
    parts = idx.elts if isinstance(idx, gast.Tuple) else [idx]
    for e in parts:
        if not (isinstance(e, gast.Name) and _never_negative(plan, e) or
                isinstance(e, gast.Constant) and type(e.value) is int and e.value >= 0):
            return None
    return list(parts)


def _never_negative(plan: Plan, e: gast.expr, depth: int = 0) -> bool:
    """``e`` >= 0 whenever it is evaluated: a non-negative int constant, the counter of
    ``range(stop)`` or of ``range(start, stop)`` whose start is never negative, or a sum of
    such."""
    if depth > 8:
        return False
    if isinstance(e, gast.Constant):
        return type(e.value) is int and e.value >= 0
    if isinstance(e, gast.BinOp) and isinstance(e.op, gast.Add):
        return _never_negative(plan, e.left, depth + 1) and \
            _never_negative(plan, e.right, depth + 1)
    if isinstance(e, gast.BinOp) and isinstance(e.op, gast.Sub) and \
            isinstance(e.left, gast.Name) and e.left.id in plan.loop_of_counter and \
            isinstance(e.right, gast.Constant) and type(e.right.value) is int:
        # c - k: the counter of range(start, ...) with start an int constant >= k
        counted = plan.loop_of_counter[e.left.id]
        args = counted.iter.args
        start = _spelled(plan, args[0], counted) if len(args) == 2 else gast.Constant(0, None)
        return isinstance(start, gast.Constant) and type(start.value) is int and \
            start.value >= e.right.value >= 0
    if not isinstance(e, gast.Name) or e.id not in plan.loop_of_counter:
        return False
    loop = plan.loop_of_counter[e.id]
    args = loop.iter.args
    return len(args) == 1 or _never_negative(plan, _spelled(plan, args[0], loop), depth + 1)


def _behind(plan: Plan, w: Write, x: str, read: list[gast.expr], at: gast.stmt) -> bool:
    """Every run of the write ``w`` after the read ``at`` of ``x[read]`` writes another
    element (the two orders of the module's docstring)."""
    found = _element_write(plan, w, x)
    if found is None:
        return False
    s, written, loops = found
    if len(written) != len(read) or not loops:
        return False
    around = plan.loops_of.get(id(at), ())
    if plan.loops_of.get(loops[0]) != () or loops[0] not in around:
        return False
    # the axes whose written index is the counter of the top-level loop, and of the loop
    # directly in it
    outer = [(k, e.id) for k, e in enumerate(written) if _counter_of(plan, e, loops[0])]
    if any(_below(plan, read[a], c1) for a, c1 in outer):
        return True  # later writes are at c1' >= c1 on axis a
    done = loops[1] if len(loops) > 1 else id(s)
    if plan.loops_of.get(done) == (loops[0],) and done not in around and \
            plan.order[done] < plan.order[id(at)] and \
            any(_at_most(plan, read[a], c1) for a, c1 in outer):
        # the write (or the loop holding it) ran before the read in this iteration of the
        # top-level loop: later writes are at c1' > c1
        return True
    if len(loops) < 2 or plan.loops_of.get(loops[1]) != (loops[0],) or loops[1] not in around:
        return False
    inner = [(k, e.id) for k, e in enumerate(written) if _counter_of(plan, e, loops[1])]
    return any(_at_most(plan, read[a], c1) and _below(plan, read[b], c2)
               for a, c1 in outer for b, c2 in inner)


def _counter_of(plan: Plan, e: gast.expr, loop: int) -> bool:
    return isinstance(e, gast.Name) and e.id in plan.loop_of_counter and \
        id(plan.loop_of_counter[e.id]) == loop


def _stop(plan: Plan, e: gast.expr) -> gast.expr | None:
    if not isinstance(e, gast.Name) or e.id not in plan.loop_of_counter:
        return None
    loop = plan.loop_of_counter[e.id]
    return _spelled(plan, loop.iter.args[-1], loop)


def _spelled(plan: Plan, e: gast.expr, loop: gast.stmt) -> gast.expr:
    """``e``, or for a temporary the normal form bound just before ``loop`` in the same block
    (``t2 = i + 1; for j in range(t2)``), the value bound to it, which the range saw."""
    at = plan.def_stmt.get(e.id) if isinstance(e, gast.Name) else None
    if isinstance(at, gast.Assign) and plan.def_count.get(e.id) == 1 and \
            plan.block_of.get(id(at)) == plan.block_of.get(id(loop)) and \
            plan.order[id(at)] < plan.order[id(loop)] and \
            isinstance(at.value, (gast.BinOp, gast.Name, gast.Constant)):
        return at.value
    return e


def _below(plan: Plan, e: gast.expr, c: str) -> bool:
    """``e`` < ``c``: the counter of ``range(c)``, ``range(a, c)`` or ``range(a, c - k)``, or
    ``e' - k`` for such an ``e'`` (``k >= 0``) or ``c - k`` (``k >= 1``)."""
    if isinstance(e, gast.BinOp) and isinstance(e.op, gast.Sub) and \
            isinstance(e.left, gast.Name) and isinstance(e.right, gast.Constant) and \
            type(e.right.value) is int and e.right.value >= 0:
        return e.left.id == c and e.right.value >= 1 or _below(plan, e.left, c)
    stop = _stop(plan, e)
    if isinstance(stop, gast.Name):
        return stop.id == c
    return isinstance(stop, gast.BinOp) and isinstance(stop.op, gast.Sub) and \
        isinstance(stop.left, gast.Name) and stop.left.id == c and \
        isinstance(stop.right, gast.Constant) and type(stop.right.value) is int and \
        stop.right.value >= 0


def _at_most(plan: Plan, e: gast.expr, c: str) -> bool:
    """``e`` <= ``c``: ``c`` itself, below it, the counter of ``range(..., c + 1)``, or such
    an ``e'`` minus ``k >= 0``."""
    if isinstance(e, gast.Name) and e.id == c:
        return True
    if isinstance(e, gast.BinOp) and isinstance(e.op, gast.Sub) and \
            isinstance(e.right, gast.Constant) and type(e.right.value) is int and \
            e.right.value >= 0:
        return _at_most(plan, e.left, c)
    if _below(plan, e, c):
        return True
    stop = _stop(plan, e)
    return isinstance(stop, gast.BinOp) and isinstance(stop.op, gast.Add) and \
        isinstance(stop.left, gast.Name) and stop.left.id == c and \
        isinstance(stop.right, gast.Constant) and stop.right.value == 1


def replayable_range(plan: Plan, loop: gast.stmt) -> list[gast.expr] | None:
    """The arguments of ``loop``'s ``range`` where its pullback may run the same range again
    instead of taping the counter: a ``for c in range(stop)`` / ``range(start, stop)`` /
    ``range(start, stop, k)`` (``k`` an int constant) loop without ``break`` whose arguments are int constants, counters of the loops around it, or
    names bound once at the top level (each optionally plus or minus an int constant), so
    they hold the same values when the pullback reaches the loop (a name bound once at the
    function's top level: one an arm binds is None on the other paths, which numba cannot
    type as a range's bound). ``Plan.counted`` takes a
    top-level loop whose numbers are taped in columns; this is for a loop (nested, most
    often) that records nothing else once its element reads are read again."""
    if not (isinstance(loop, gast.For) and isinstance(loop.target, gast.Name) and
            (plan.loop_of_counter.get(loop.target.id) is loop or _stepped(plan, loop))) or \
            any(is_break_if(b) for b in loop.body):
        return None
    params = {a.id for a in plan.fn.args.args}
    args = loop.iter.args[:2]

    def fixed(e: gast.expr) -> bool:
        e = _spelled(plan, e, loop)
        if isinstance(e, gast.Constant):
            return type(e.value) is int
        if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
            return isinstance(e.operand, gast.Constant) and type(e.operand.value) is int
        if isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Add, gast.Sub)):
            return fixed(e.left) and isinstance(e.right, gast.Constant) and \
                type(e.right.value) is int
        if not isinstance(e, gast.Name):
            return False
        counter = plan.loop_of_counter.get(e.id)
        if counter is not None:
            return id(counter) in plan.loops_of.get(id(loop), ())
        if e.id in plan.def_count:
            at = plan.def_stmt.get(e.id)
            # bound at the function's top level, or once at the top level of a loop around
            # this one (for b in range(len(k)) inside for a in ...: the enclosing loop's
            # pullback has it, taped or computed again): bound on every path (a name an arm
            # binds is None on the others, which a typed backend cannot take as a range's
            # bound)
            return e.id not in params and at is not None and (
                plan.block_of.get(id(at)) == id(plan.fn.body) or
                plan.def_count.get(e.id) == 1 and any(
                    plan.block_of.get(id(at)) == id(getattr(o, "body", None))
                    for o in _loops_around(plan, loop)))
        return e.id in params

    return list(loop.iter.args) if all(fixed(a) for a in args) else None


def _stepped(plan: Plan, loop: gast.For) -> bool:
    """``for c in range(start, stop, k)`` with ``k`` a nonzero int constant (ADI's ``range(n -
    2, 0, -1)``), ``c`` bound by the loop alone: its range runs again as it ran."""
    it = loop.iter
    c = loop.target.id
    return isinstance(it, gast.Call) and len(it.args) == 3 and not it.keywords and \
        plan.resolve_or_none(it.func) is range and range_step(it.args[2]) is not None and \
        plan.def_stmt.get(c) is loop and plan.kinds.get(c) == NUMBER


def _loops_around(plan: Plan, loop: gast.stmt) -> list[gast.stmt]:
    """The loops that hold ``loop`` (its counters' loops and the others), outermost first."""
    around = set(plan.loops_of.get(id(loop), ()))
    return [node for node in walk(plan.fn) if id(node) in around]
