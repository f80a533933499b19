"""Element reads a loop's pullback may repeat instead of taping: the array holds the same
value there when the pullback runs.

A loop's pullback reads, per iteration, the values its rules need; the forward records them
on a tape (a row per iteration). For ``t = X[i, j]`` (an element of a float64 array, read at
the top level of the loop's body) the pullback can instead read ``X[i, j]`` again, with the
counters it has anyway, when no write that may run after the read can change that element.
A triangular solve's inner loop (``acc -= L[i, j] * x[j]``) then tapes only ``j``, not the
two values (issue 16: trisolv, Cholesky, LU taped a row of values per inner iteration).

:func:`final_load` is the analysis (it reads the plan, rewrites nothing); the pullback
emitter (``reverse_blocks.Blocks.rev_loop``, through ``reverse_rows.Rows``) uses it;
:func:`final_store` is the same for a number the loop stores into an element. The proofs that
every write which may run after the read writes another element are :mod:`writes_behind`'s.
Parts of arrays and numbers the pullback computes again from such elements are
:mod:`values_again`'s, shapes taken again :mod:`shapes_again`'s, ranges walked again
:mod:`replayable_ranges`'.

The array name must be a parameter or bound once outside any loop (the pullback's name is
the forward's object). A parameter read this way is one the pullback reads
(``Plan.reads_params``: a vjp whose argument is changed before its pullback runs raises, as
for any value it reads).
"""

from __future__ import annotations

import gast
from adgen.transforms.analyses.kinds import NUMBER
from adgen.transforms.reverse_plan import Plan
from adgen.transforms.ssa import is_break_if
from adgen.transforms.walk import clone
from adgen.transforms.writes_behind import behind, element_index, never_negative, one_object


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
    if not one_object(plan, x):
        return None
    bufs = plan.eff.buffers.get(x, set())
    for w in plan.eff.writes:
        if w.container or not (w.buffers & bufs) or not plan.may_run_after(w.stmt, st):
            continue
        if not behind(plan, w, x, read, st):
            return None
    if isinstance(st.value.slice, gast.Tuple):
        return x, gast.Tuple(elts=[clone(e) for e in read], ctx=gast.Load())
    return x, clone(read[0])


def _read_elements(plan: Plan, idx: gast.expr, at: gast.stmt, loop: gast.stmt
                   ) -> list[gast.expr] | None:
    """The parts of the index of an element read at ``at`` (:func:`writes_behind.element_index`), where a part
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
            if element_index(plan, e) is None:
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
                and plan.order[id(b)] < plan.order[id(at)] and never_negative(plan, v)):
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

    - the store's index is counters and non-negative int constants (:func:`writes_behind.element_index`), the
      counters exactly those of the loops around the store, so each run of the store
      writes another element (``h[i]``, ``R[i, j]`` in ``for i: for j:``; not
      ``h[i]`` in ``for k: for i:``), and
    - every other write of the array's buffers that may run after the store writes another
      element (:func:`writes_behind.behind`, as for a read at the store), and
    - ``X`` is one object for the whole call, made by the function (not a parameter: a
      caller sees a parameter's contents; :func:`writes_behind.one_object`), and the loop has no
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
        index = element_index(plan, st.targets[0].slice)
        if type(rank) is not int or x not in plan.f64_arrays or index is None or \
                len(index) != rank or x not in plan.def_count or not one_object(plan, x) or \
                "param" in plan.eff.buffers.get(x, {"param"}):
            continue
        # the counters of exactly the loops around the store (which the pullback has)
        around = plan.loops_of.get(id(st), ())
        if not around or {id(plan.loop_of_counter[e.id]) for e in index
                          if isinstance(e, gast.Name)} != set(around):
            continue
        bufs = plan.eff.buffers.get(x, set())
        if all(w.stmt is st or w.container or not (w.buffers & bufs) or
               not plan.may_run_after(w.stmt, st) or behind(plan, w, x, index, st)
               for w in plan.eff.writes):
            return x, st.targets[0].slice
    return None
