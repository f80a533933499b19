"""What a reversed loop's row records: the pullback emitter (:mod:`reverse_pullback`) reverses
a loop's body, then :class:`Rows` decides what the forward records in each iteration for it
and binds the rest in the reversed body.

- Values the pullback may read again from an array's final contents (reverse_final), compute
  again from such parts (final_value, invariant_finals, recomputed_rows) or take again as a
  view of a copy the row keeps are bound at the top of the reversed body, not taped.
- Shapes: an array read for its shape only is recorded as its shape (shape_saves), as the
  length of a vector, or not at all where another length of the row gives it, the value is
  computed again anyway, or the shape is the same in every iteration (kept once, outside the
  loop); tapes of inner loops whose rows are the same in every iteration are kept once too.
- The row is a typed tape (one column per number, or array columns) where it is numbers, no
  tape at all where it is the counter of a range walked again, else a tape of tuples.

It assumes the reversed body's free names are the forward's (``Pullback.forward_names``), and
records its decisions in the emitter's :class:`reverse_ast.Recording` (``tape_of``,
``records``, ``columns``, ``shape_of``, ``lengths``, ``extra_fwd``), which the forward
(:mod:`reverse_forward`) reads."""

from __future__ import annotations

from typing import TYPE_CHECKING

import gast
from adgen.transforms.analyses.iteration_invariants import invariant_facts
from adgen.transforms.analyses.loop_shapes import bound_in, same_every_iteration
from adgen.transforms.array_columns import array_rows, counter_offsets
from adgen.transforms.desugar import assign, name
from adgen.transforms.invariant_finals import enclosing_loop, invariant_final_value
from adgen.transforms.node_index import nodes_of
from adgen.transforms.recomputed_rows import recomputed_row
from adgen.transforms.replayable_ranges import replayable_range
from adgen.transforms.reverse_ast import (
    attr_node,
    call_node,
    is_comment,
    read_before_bound,
    record_position,
    stored_names,
)
from adgen.transforms.reverse_final import final_load, final_store
from adgen.transforms.shape_saves import (
    length_expression,
    lengths_not_shapes,
    read_for_shape_only,
    shape_reads,
)
from adgen.transforms.shapes_again import shape_again, shape_of_bound
from adgen.transforms.values_again import final_value, index_again
from adgen.transforms.walk import clone, walk

if TYPE_CHECKING:
    from adgen.transforms.reverse_plan import Plan
    from adgen.transforms.reverse_pullback import Pullback


class Rows:
    """Decides the rows of the loops one pullback reverses."""

    def __init__(self, pb: Pullback) -> None:
        self.pb = pb
        self.plan = pb.plan
        self.rec = pb.rec
        # per loop: the names it binds (analyses.loop_shapes.bound_in)
        self.bound: dict[int, set[str] | None] = {}
        # per loop: its invariant names and arrays (analyses.iteration_invariants)
        self.invariants_of: dict[int, tuple[set[str], set[str]]] = {}
        # per reversed loop built: what it reads before binding it (read_before_bound's
        # ``loops``), emptied by each rewrite of the reversed code (the shape reads)
        self.loop_reads: dict[int, tuple[gast.For, frozenset[str]]] = {}

    def reads(self, body: list[gast.stmt]) -> set[str]:
        """``read_before_bound(body)``, each inner loop's reads read once (until a rewrite)."""
        return read_before_bound(body, self.loop_reads)

    def shape_reads(self, body: list[gast.stmt], candidates: set[str], known: set[str]
                    ) -> dict[str, tuple[str, str]]:
        """shape_saves.shape_reads (which rewrites ``body``, the reversed loops in it too)."""
        found = shape_reads(body, candidates, known, self.pb.namer.fresh)
        if found:
            self.loop_reads.clear()
        return found

    def reversed_loop(self, s: gast.For | gast.While, body: list[gast.stmt], local: set[str]
                      ) -> gast.For:
        """The reversed loop ``s``: ``body`` (its reversed statements) run over the rows the
        forward records, which hold what ``body`` reads of the names the loop binds
        (``local``) less what it reads again, computes again or keeps outside the loop;
        over a typed tape where the row is numbers (or over the loop's range again where it
        is the counter alone). ``body`` gains the statements that read values again."""
        # what the body reads before binding it, read again only where the body changes
        # (each reading walks the inner loops' reversed bodies too)
        free = self.reads(body)
        recorded = sorted(self.pb.forward_names(free) & local)
        size = len(body)
        reread = self.final_loads(s, recorded, body)
        if reread or len(body) != size:  # len: shapes of values it computes again
            # elements the array still holds when the pullback runs: read again, not taped
            # (under the first "# line N:" comment of the body, which they belong to)
            head = body[:1] if is_comment(body[0]) else []
            body = head + reread + body[len(head):]
            free = self.reads(body)
            recorded = sorted(self.pb.forward_names(free) & local)
        shapes = self.shapes_outside(s, recorded, body)  # (rewrites reads of the shapes)
        outside = shapes | self.tapes_kept_once(s, recorded)
        if outside:
            local -= outside
            if shapes:
                free = self.reads(body)
            recorded = sorted(self.pb.forward_names(free) & local)
        arrays = array_rows(self.plan, s, recorded, self.rec.cap_var,
                            lambda n: self.same_throughout(s, n))
        again = counter_offsets(self.plan, s, recorded)
        counter = getattr(s.target, "id", None) if isinstance(s, gast.For) else None
        if not arrays and not set(recorded) - {counter} <= {b.targets[0].id for b in again}:
            again = []  # (a list's row keeps them: computed again only for no tape at all)
        if again:  # ``t49 = j + 1`` again from the counter: no int column, no int64 index
            head = 1 if body and is_comment(body[0]) else 0
            again = [clone(b) for b in again]
            body[head:head] = again
            # (the body after them reads what they bind from them)
            free = self.reads(again) | (free - stored_names(again))
            recorded = sorted(self.pb.forward_names(free) & local)
        steps = self.plan.counted(s, recorded, arrays)
        if steps is not None:
            self.rec.array_columns.update(arrays)
        if steps is None and isinstance(s, gast.For) and \
                set(recorded) <= {getattr(s.target, "id", None)}:
            steps = replayable_range(self.plan, s)  # the counter alone: its range again
        if steps is not None:
            return self.float_tape(s, recorded, steps, body)
        recorded = self.pb.shapes_not_arrays(body, recorded)
        recorded = self.snapshot_lengths(s, recorded, body)
        recorded = self.lengths_not_shapes(s, recorded, body)
        recorded = self.lengths_from_others(s, recorded, body)
        tape = self.pb.namer.fresh("tape")
        self.rec.extra_fwd.add(tape)
        self.rec.tape_of[id(s)] = tape
        self.rec.records[id(s)] = recorded
        target = gast.Tuple(elts=[name(r, gast.Store) for r in recorded], ctx=gast.Store()) \
            if recorded else name("_", gast.Store)
        loop = gast.For(target=target, iter=call_node("reversed", name(tape)), body=body,
                        orelse=[], type_comment=None)
        return loop

    def shapes_outside(self, s: gast.For | gast.While, recorded: list[str],
                       body: list[gast.stmt]) -> set[str]:
        """The shapes the reversed ``body`` reads that are the same in every iteration of
        the loop ``s`` (analyses.loop_shapes), kept once outside it rather than in each row:
        the arrays ``recorded`` holds that ``body`` reads only for their shape are read
        through a shape name (shape_saves.shape_reads), which, like the shape names inner
        loops kept outside them that are the same here too, the enclosing loop's row or the
        saved values hold (the forward keeps the shape of the value last bound). Returns
        those shape names."""
        plan = self.plan
        if not plan.kinds:
            return set()
        params = {a.id for a in plan.fn.args.args}
        arrays = {r for r in recorded if type(plan.kinds.get(r)) is int and
                  r not in params and r not in plan.objlike}
        hoisted = {r for r in read_for_shape_only(body, arrays) if self.same_throughout(s, r)}
        out = {r for r in recorded if r in self.rec.shape_after and
               self.same_throughout(s, self.rec.shape_after[r])}
        for n, (shape, how) in self.shape_reads(body, hoisted, hoisted).items():
            self.rec.shape_of[shape] = (n, how)
            self.rec.shape_after[shape] = n
            self.rec.extra_fwd.add(shape)
            out.add(shape)
        return out

    def tapes_kept_once(self, s: gast.For | gast.While, recorded: list[str]) -> set[str]:
        """The tapes of loops in ``s`` that ``recorded`` holds whose every row is the same in
        every iteration of ``s`` (analyses.iteration_invariants: ADI's divisors and copies of
        ``p``'s columns, the same in every time step): the saved values (or the enclosing
        loop's row) keep the last one, which the pullback reads in every iteration."""
        tapes = {t: loop for loop, t in self.rec.tape_of.items()}
        found = [r for r in recorded if r in tapes]
        if not found:
            return set()
        inv = self.invariant_facts(s)[0]
        if not inv:
            return set()
        var_of = {v: key for key, v in self.rec.cap_var.items()}
        loops = {id(f): f for f in nodes_of(s, gast.For, gast.While)}

        def same(loop: int, depth: int = 0) -> bool:
            # as many rows in every iteration: a for loop over a range of invariant
            # numbers, without a break (its counter is then invariant), never a while loop
            f = loops.get(loop)
            if not (isinstance(f, gast.For) and isinstance(f.target, gast.Name) and
                    f.target.id in inv):
                return False
            if loop in self.rec.columns:
                names = [r for r, _ in self.rec.columns[loop][1]]
            else:
                names = self.rec.records.get(loop, [])
            for r in names:
                v = self.rec.lengths.get(r) or self.rec.shape_of.get(r, (r,))[0]
                if v in var_of:  # a copy of a part: the same if the part is
                    cap = self.plan.caps.get(var_of[v])
                    if cap is None or not cap.copied or cap.name not in inv:
                        return False
                elif v in tapes:
                    if depth > 4 or not same(tapes[v], depth + 1):
                        return False
                elif v not in inv or self.plan.act.active(v):
                    return False
            return True

        return {r for r in found if same(tapes[r])}

    def invariant_facts(self, loop: gast.For | gast.While) -> tuple[set[str], set[str]]:
        """analyses.iteration_invariants.invariant_facts of ``loop``, once per loop: an
        inner loop's reads again (invariant_final) and the loop's own tapes kept once
        (tapes_kept_once) ask for the same loop's."""
        if id(loop) not in self.invariants_of:
            self.invariants_of[id(loop)] = invariant_facts(self.plan, loop)
        return self.invariants_of[id(loop)]

    def same_throughout(self, s: gast.For | gast.While, n: str) -> bool:
        """``n``, an array bound in the loop ``s``, has one shape in all of its iterations
        (analyses.loop_shapes)."""
        plan = self.plan
        at = plan.def_stmt.get(n)  # bound once: the forward binds its shape right after
        if type(plan.kinds.get(n)) is not int or not (
                isinstance(at, gast.Assign) and len(at.targets) == 1 and
                isinstance(at.targets[0], gast.Name) and at.targets[0].id == n):
            return False
        if id(s) not in self.bound:
            self.bound[id(s)] = bound_in(s)
        bound = self.bound[id(s)]
        return bound is not None and same_every_iteration(
            n, s, bound, plan.kinds, plan.shapes, plan.def_stmt, plan.resolve_or_none)

    def snapshot_lengths(self, s: gast.For | gast.While, recorded: list[str],
                         body: list[gast.stmt]) -> list[str]:
        """A grown list's snapshots in ``recorded`` as their lengths (snapshot_lengths)."""
        if not any(_called(self.plan.def_stmt.get(r)) == "list_snapshot" for r in recorded):
            return recorded
        # (imported where a loop reads a grown list whole: most have none)
        from adgen.transforms.snapshot_lengths import lengths_of_snapshots

        out = lengths_of_snapshots(self.plan, self.rec, self.pb.namer.fresh, s, recorded,
                                   body)
        if out != recorded:
            self.loop_reads.clear()  # (body gained the statements taking the items again)
        return out

    def lengths_not_shapes(self, s: gast.For | gast.While, recorded: list[str],
                           body: list[gast.stmt]) -> list[str]:
        """The shapes ``recorded`` holds of vectors the loop binds at the top level of its
        body (analyses.kinds: rank 1), recorded as their lengths and bound again at the top
        of the reversed ``body`` (shape_saves.lengths_not_shapes)."""
        top = {t.id for b in s.body if isinstance(b, gast.Assign) for t in b.targets
               if isinstance(t, gast.Name)}
        vectors = {n for n in top if self.plan.kinds.get(n) == 1 and
                   type(self.plan.kinds.get(n)) is int}
        recorded, lengths = lengths_not_shapes(recorded, self.rec.shape_of, vectors,
                                               self.pb.namer.fresh)
        if lengths:
            again = []
            for r, n in lengths.items():
                vector = self.rec.shape_of[r][0]
                self.rec.lengths[n] = vector
                self.rec.extra_fwd.add(n)
                again.append(assign(name(r, gast.Store), gast.Tuple(
                    elts=[name(n)], ctx=gast.Load()), self.plan.def_stmt.get(vector) or s))
            head = 1 if body and is_comment(body[0]) else 0
            body[head:head] = again
        return recorded

    def lengths_from_others(self, s: gast.For | gast.While, recorded: list[str],
                            body: list[gast.stmt]) -> list[str]:
        """Lengths ``recorded`` holds (lengths_not_shapes) that are a function of other
        lengths of the same row (analyses.shapes: a slice's length ``len(range(d)[lo:hi])``,
        ``max(0, d + c)``, int arithmetic of such and constants, ``d`` an axis of a vector
        whose length the row keeps): computed again at the top of the reversed ``body``
        instead of taped. Heat's ``u[:1]`` and ``u[1:-1] + ...`` have lengths of ``len(u)``.
        A vector the row keeps the length of counts only where its value at the row is the
        one the other's statement read: bound once at the top of the loop's body before the
        row, or rebound only by the loop's back-edge copies, after it."""
        plan = self.plan
        columns = {r: self.rec.lengths[r] for r in recorded if r in self.rec.lengths}
        if len(columns) < 2:
            return recorded
        pos = record_position(s.body, plan.headers)
        trailing = {id(n) for st in s.body[pos:] for n in nodes_of(st, gast.Name)}
        top = {id(st.targets[0]) for st in s.body[:pos] if isinstance(st, gast.Assign) and
               isinstance(st.targets[0], gast.Name)}

        def stable(v: str) -> bool:
            stores = [n for n in nodes_of(s, gast.Name) if n.id == v and
                      isinstance(n.ctx, gast.Store)]
            return all(id(n) in trailing for n in stores) or \
                len(stores) == 1 and id(stores[0]) in top and plan.def_count.get(v) == 1

        axis_of = {v: r for r, v in columns.items() if stable(v)}
        computed: dict[str, gast.expr] = {}
        needed: set[str] = set()  # columns a computed one reads: taped
        for r, v in sorted(columns.items()):
            key = plan.shapes.get(v)
            if r in needed or not (isinstance(key, tuple) and len(key) == 1):
                continue
            reads: set[str] = set()
            e = length_expression(key[0], {m: c for m, c in axis_of.items()
                                      if m != v and c not in computed}, reads)
            if e is not None:
                computed[r] = e
                needed |= reads
        if not computed:
            return recorded
        head = 1 if body and is_comment(body[0]) else 0
        body[head:head] = [assign(name(r, gast.Store), e, plan.def_stmt.get(columns[r]) or s)
                           for r, e in sorted(computed.items())]
        return [r for r in recorded if r not in computed]

    def final_loads(self, s: gast.For | gast.While, recorded: list[str],
                    body: list[gast.stmt]) -> list[gast.stmt]:
        """``r = X[i, j]`` for each recorded ``r`` that reverse_final proves the pullback may
        read again from ``X`` (the reads of a parameter count as the pullback's), or computes
        again from such a part (``final_value``) where the reversed ``body`` reads its value.
        One read for its shape only takes its shape from the same part of the same array
        again (``shape_again``: a view, whatever was written into it since), else is taped
        as its shape (shapes_not_arrays), cheaper than an operation done again."""
        out = []
        params = {a.id for a in self.plan.fn.args.args}
        # (not a value a nested def reads: its pullback finds that value's adjoint by the
        # object, which a read again is not: w = x[i] in a loop, read by lambda t: t * w,
        # lost its derivative, silently: taped instead)
        closure = self.plan.parsed.closure_free
        recorded = [r for r in recorded
                    if r not in closure and self.plan.user_name(r) not in closure]
        shaped = read_for_shape_only(body, set(recorded))
        deferred: list[str] = []  # read for its shape only: decided after the values
        again: dict[str, gast.expr] = {}  # read for its shape only: the same part again
        copies = self.views_of_copies(s, recorded)
        for r in recorded:
            if r in copies:
                out.append(copies[r])
                continue
            # an element read, or stored, that the array still holds
            found = final_load(self.plan, r, s) or final_store(self.plan, r, s)
            value: gast.expr | None = None
            if found is not None:
                value = gast.Subscript(value=name(found[0]), slice=clone(found[1]),
                                       ctx=gast.Load())
            elif r in shaped:
                deferred.append(r)
            else:
                # a part of an array no later write changes, or that times a number
                value = final_value(self.plan, r, s) or self.invariant_final(s, r)
            if value is None:
                continue
            # (a copy the row kept has no statement of its own: the loop's)
            out.append(assign(name(r, gast.Store), value, self.plan.def_stmt.get(r, s)))
            for x in {n.id for n in walk(value) if isinstance(n, gast.Name)} & params:
                read_again(self.plan, {x})
        if not deferred:
            out += self.recomputed_numbers(s, recorded, out)
        # the shape of a value computed again anyway (above, or by the body) costs nothing
        alike = self.shapes_of_bound(s, set(deferred), body, out)
        # (a shape the same in every iteration is kept outside the loop instead: no work
        # per step)
        alike |= self.shapes_of_operands(
            {r for r in deferred if r not in alike and not self.same_throughout(s, r)},
            set(recorded) - set(deferred), body, out)
        # a shape the same in every iteration is kept outside the loop (shapes_outside)
        outside = {r for r in deferred if r not in alike and self.same_throughout(s, r)}
        for r in deferred:
            part = None if r in alike or r in outside else shape_again(self.plan, r, s)
            if part is not None:
                again[r] = part
        # Taking a part again costs a view (about 0.3 us), more than a shape on a tape that
        # is kept anyway: only where nothing else is left to tape but the counter, or
        # numbers for typed columns (seidel-2d, syrk's inner loop; not syr2k's, where an
        # array's broadcast shape stays: +6% time for a third of the tape)
        left = set(recorded) - alike - set(again) - outside - {
            t.id for st in out for t in st.targets}
        counter = {s.target.id} if isinstance(s, gast.For) and \
            isinstance(s.target, gast.Name) else set()
        if not (left <= counter or self.plan.counted(s, sorted(left)) is not None):
            again = {}
        # the shapes last: their parts spell their numbers out, reading nothing bound above
        for r, (shape, _how) in sorted(self.shape_reads(body, set(again), set(again)).items()):
            out.append(assign(name(shape, gast.Store),
                              gast.Attribute(value=again[r], attr="shape", ctx=gast.Load()),
                              self.plan.def_stmt[r]))
        return out

    def invariant_final(self, s: gast.For | gast.While, r: str) -> gast.expr | None:
        """``r``, or the part a recorded copy ``r`` copies, computed again from the final
        contents of an array that holds it in every iteration of the loop around ``s``
        (invariant_finals: ADI's row sweep reads ``p`` again); else None."""
        around = enclosing_loop(self.plan, s)
        if around is None:
            return None
        inv, private = self.invariant_facts(around)
        if not private:
            return None
        var_of = {v: key for key, v in self.rec.cap_var.items()}
        if r not in var_of:
            return invariant_final_value(self.plan, r, s, inv, private)
        # a copy taken where the part is read: the part's value, and the forward no longer
        # takes the copy (its capture is no longer the pullback's)
        cap = self.plan.caps.get(var_of[r])
        if cap is None or not cap.copied or cap.copy_of is not None:
            return None
        value = invariant_final_value(self.plan, cap.name, s, inv, private)
        if value is not None:
            del self.rec.cap_var[var_of[r]]
            self.rec.read_final.add(var_of[r])  # explain says so (emitted_sites)
        return value

    def views_of_copies(self, s: gast.For | gast.While, recorded: list[str]
                        ) -> dict[str, gast.stmt]:
        """``saved_t15 = saved_t9[::-1]`` for each recorded copy that is a view of another
        copy the row keeps (shared_copies' ``Capture.copy_of``), its index spelled out from
        counters and numbers (values_again.index_again): the view is taken again from the
        same copy, the same memory, and the row loses the view object (durbin's
        ``y[:k][::-1]``, 112 bytes a step)."""
        out: dict[str, gast.stmt] = {}
        var_of = {v: key for key, v in self.rec.cap_var.items()}
        for r in recorded:
            cap = self.plan.caps.get(var_of[r]) if r in var_of else None
            if cap is None or not cap.copied or cap.copy_of is None or \
                    self.rec.cap_var.get(cap.copy_of[0]) not in recorded:
                continue
            value: gast.expr | None = name(self.rec.cap_var[cap.copy_of[0]])
            for idx in cap.copy_of[1]:
                spelled = index_again(self.plan, idx, s)
                if spelled is None:
                    value = None
                    break
                value = gast.Subscript(value=value, slice=spelled, ctx=gast.Load())
            if value is not None:
                out[r] = assign(name(r, gast.Store), value, cap.stmt)
        return out

    def recomputed_numbers(self, s: gast.For | gast.While, recorded: list[str],
                           out: list[gast.stmt]) -> list[gast.stmt]:
        """The numbers of the row that ``out`` (the values read or computed again) leaves,
        bound again by the forward's own statements where all of them can be
        (recomputed_rows: soft-DTW's maxima, ``exp`` terms and their sum, from the cell's
        three final neighbours): the row is left its counter alone; else nothing."""
        have = {t.id for st in out if isinstance(st, gast.Assign) for t in st.targets
                if isinstance(t, gast.Name)}
        counter = s.target.id if isinstance(s, gast.For) and \
            isinstance(s.target, gast.Name) else None
        left = [r for r in recorded if r not in have]
        if self.plan.counted(s, left) is not None:
            return []  # typed columns keep them at 8 bytes a number, without a tuple
        chain = recomputed_row(self.plan, s, [r for r in left if r != counter], have)
        if chain is None:
            return []
        params = {a.id for a in self.plan.fn.args.args}
        read = {n.id for st in chain for n in walk(st.value) if isinstance(n, gast.Name)}
        read_again(self.plan, read & params)
        return chain

    def shapes_of_bound(self, s: gast.For | gast.While, shaped: set[str],
                        body: list[gast.stmt], out: list[gast.stmt]) -> set[str]:
        """``r_shape = t.shape`` for each ``r`` of ``shaped`` (read only for its shape) whose
        shape is that of a value ``t`` the pullback computes again anyway
        (shapes_again.shape_of_bound: syr2k's ``t14 = t12 * B[i, k]``): ``t`` bound by
        ``out`` (the statements read again, put before the reversed ``body``; appended to
        them) or at the top level of ``body`` where ``body`` reads ``r`` only after that
        statement (inserted right after it). The reads of ``r`` are rewritten to ``r_shape``
        (nothing taped, nothing taken again); returns those ``r``."""
        if not shaped:
            return set()
        bound: dict[str, int] = {}  # a name bound -> its first statement of body (-1: out)
        for i, st in [(-1, st) for st in out] + list(enumerate(body)):
            if isinstance(st, gast.Assign):
                for t in st.targets:
                    if isinstance(t, gast.Name):
                        bound.setdefault(t.id, i)
        alike: dict[str, str] = {}
        for r in sorted(shaped):
            t = shape_of_bound(self.plan, r, s, set(bound))
            if t is not None and not any(isinstance(n, gast.Name) and n.id == r
                                         for st in body[:bound[t] + 1] for n in walk(st)):
                alike[r] = t
        if not alike:
            return set()
        shapes = self.shape_reads(body, set(alike), set(alike))
        for r, (shape, _how) in sorted(shapes.items(), key=lambda kv: -bound[alike[kv[0]]]):
            st = assign(name(shape, gast.Store), gast.Attribute(
                value=name(alike[r]), attr="shape", ctx=gast.Load()), self.plan.def_stmt[r])
            if bound[alike[r]] < 0:
                out.append(st)
            else:
                body.insert(bound[alike[r]] + 1, st)
        return set(shapes)

    def shapes_of_operands(self, shaped: set[str], values: set[str],
                           body: list[gast.stmt], out: list[gast.stmt]) -> set[str]:
        """``r_shape = (a.shape[0], b.shape[1])`` for each ``r = a @ b`` of ``shaped`` (read
        only for its shape) whose operands (``x`` or ``x.T``, vectors or matrices, bound once)
        the reversed ``body`` reads for their values (``values``), so the row keeps them or
        ``out`` binds them anyway: NumPy's
        matmul of a matrix or a vector by a matrix or a vector has those axes (Kalman's
        ``K @ v`` and ``K @ S @ K.T``). The reads of ``r`` are rewritten to ``r_shape``,
        bound in ``out`` (nothing taped for ``r``); returns those ``r``."""
        plan = self.plan
        dims: dict[str, list[gast.expr]] = {}
        for r in sorted(shaped):
            st = plan.def_stmt.get(r)
            if not (isinstance(st, gast.Assign) and isinstance(st.value, gast.BinOp) and
                    isinstance(st.value.op, gast.MatMult)):
                continue
            ops = []
            for e in (st.value.left, st.value.right):
                flip = isinstance(e, gast.Attribute) and e.attr == "T"
                x = e.value if flip else e
                rank = plan.kinds.get(x.id) if isinstance(x, gast.Name) else None
                if not (isinstance(x, gast.Name) and x.id in values and type(rank) is int and
                        rank in (1, 2) and plan.def_count.get(x.id) == 1):
                    break
                ops.append((x.id, flip, rank))
            else:
                def axis(n: str, flip: bool, rank: int, k: int) -> gast.expr:
                    at = rank - 1 - k if flip else k
                    if at == 0:
                        return call_node("len", name(n))  # no shape tuple made
                    return gast.Subscript(value=attr_node(n, "shape"),
                                          slice=gast.Constant(at, None), ctx=gast.Load())

                (a, fa, ra), (b, fb, rb) = ops
                if ra == 2:
                    dims[r] = [axis(a, fa, 2, 0)] + ([axis(b, fb, 2, 1)] if rb == 2 else [])
                elif rb == 2:
                    dims[r] = [axis(b, fb, 2, 1)]
        if not dims:
            return set()
        shapes = self.shape_reads(body, set(dims), set(dims))
        for r, (shape, _how) in sorted(shapes.items()):
            out.append(assign(name(shape, gast.Store), gast.Tuple(elts=dims[r], ctx=gast.Load()),
                              self.plan.def_stmt[r]))
        return set(shapes)

    def float_tape(self, s: gast.For, recorded: list[str], steps: list[gast.expr],
                   body: list[gast.stmt]) -> gast.For:
        """The reversed loop over a typed tape: ``for i, t1 in reversed_rows(tape, range(n))``
        (``reversed(range(n))`` when only the index is recorded)."""
        numbers = [r for r in recorded if r != s.target.id]
        steps_call = call_node("range", *[clone(a) for a in steps])
        if numbers:
            tape = self.pb.namer.fresh("tape")
            self.rec.extra_fwd.add(tape)
            self.rec.tape_of[id(s)] = tape
            cols = [(r, self.pb.namer.reserve(f"{r}_col")) for r in numbers]
            self.rec.extra_fwd.update(c for _, c in cols)
            self.rec.columns[id(s)] = (steps, cols)
            it = call_node("reversed_rows", name(tape), *([steps_call] if len(numbers) <
                                                      len(recorded) else []))
        else:
            it = call_node("reversed", steps_call)
        elts = [name(r, gast.Store) for r in recorded if r == s.target.id] + \
            [name(r, gast.Store) for r in numbers]
        target = elts[0] if len(elts) == 1 and not numbers else gast.Tuple(
            elts=elts, ctx=gast.Store()) if elts else name("_", gast.Store)
        return gast.For(target=target, iter=it, body=body, orelse=[], type_comment=None)


def read_again(plan: Plan, params: set[str]) -> None:
    """The pullback reads ``params``' values where they are (computed again from them), watched
    by no capture: ``plan.reads_params`` and ``plan.reads_uncaptured`` (reverse_captures) hold
    them."""
    if params and plan.reads_params is not True:
        plan.reads_params = set(plan.reads_params) | params
    if params and plan.reads_uncaptured is not True:
        plan.reads_uncaptured = set(plan.reads_uncaptured) | params


def _called(st: gast.stmt | None) -> str:
    """The name a statement ``x = f(...)`` calls ("" for any other statement)."""
    v = getattr(st, "value", None)
    return getattr(getattr(v, "func", None), "id", "") if isinstance(v, gast.Call) else ""
