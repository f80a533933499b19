"""What the pullback reads and which writes may overwrite it: the captures, the guarded writes
and the decision at each mutation site (free, guarded, certain), filled into the plan."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import gast
from adgen.transforms.analyses.effects import Write
from adgen.transforms.analyses.kinds import NUMBER
from adgen.transforms.hoist_defs import is_marker
from adgen.transforms.reverse_ast import (
    BINOPS,
    MISSING,
    USERCALL,
    Capture,
    Site,
    is_copy_of,
    is_python_function,
    names_of,
    unsupported_operator,
    user_name_of,
)
from adgen.transforms.reverse_plan import Plan
from adgen.transforms.reverse_plan_rules import op_of
from adgen.transforms.user_calls import is_user_call, resolved_at_run_time
from adgen.transforms.walk import walk

from adgen.errors import MutationError, RuleError
from adgen.explanation import overwrite_reason
from adgen.rule_cotangents import mutated_positions
from adgen.rules import registry
from adgen.runtime import copy_hint

if TYPE_CHECKING:
    from adgen.transforms.analyses.regions import Regions


def find_captures(plan: Plan) -> None:
    """Fills ``plan.caps``, ``plan.guarded``, ``plan.reads_params`` and ``plan.decisions``."""
    found = _Captures(plan)
    found.collect_reads(plan.fn.body)
    found.decide_sites()
    if plan.policy == "strict":
        guard_parameter_writes(plan)
    plan.reads_params = found.reads_params
    # (those of them it reads where no capture of its own watches them: Compiled's)
    plan.reads_uncaptured = found.reads_uncaptured
    plan.reads_result = _reads_result(plan, found.read_buffers)
    if any(cap.copied for cap in plan.caps.values()):  # (imported where one is copied)
        from adgen.transforms.shared_copies import share_copies

        share_copies(plan)  # two copies of the same elements: one, and a view of it


def _reads_result(plan: Plan, read_buffers: set[str]) -> bool:
    """Whether the pullback may read the memory of a value the function returns (``return
    np.tanh(v)`` keeps tanh's output): a caller then guards its later in-place writes of
    the result (reverse_plan_calls.result_made_by_callee). False where each returned name
    is a number, or an array whose buffers no value the pullback reads shares (``return
    np.copy(t)``, ``return np.zeros(n)``: strict refused ``t = np.tile(x, (3, 1)); t[1] *=
    2.0``, whose gradient reads no value of t). A returned list, dict or object: it may."""
    if not read_buffers:
        return False
    for r in walk(plan.fn):
        if not isinstance(r, gast.Return) or r.value is None:
            continue
        for node in walk(r.value):
            if not isinstance(node, gast.Name):
                continue
            n = node.id
            if plan.eff.kinds.get(n) in ("list", "dict", "object") or \
                    (n not in plan.eff.buffers and plan.kinds.get(n) != NUMBER) or \
                    plan.eff.buffers.get(n, set()) & read_buffers:
                return True
    return False


def guard_parameter_writes(plan: Plan) -> None:
    """Under "strict", every in-place write of memory a parameter may share is guarded, with
    or without a capture of the function's own: a caller that hands an array inside a list,
    tuple, dict or object (``sgd_step([W, b], grads)``, ``self.step(u)`` writing
    ``self.lap``) cannot tell whether this function writes it or only rebinds its slot, so it
    copies nothing and notes the call (guards.before_write, handoffs); a write here that
    overwrites a value the caller's gradient reads refuses, naming the call, this line and
    the read. An array parameter written through its own name or a view of it (``x[i] =
    v``, ``out[1:-1] = ...``) is left alone: its caller guards the call that hands it over
    (``step(W, g)``), and a guard at every write of a fill loop would cost a call each."""
    params = {a.id for a in plan.fn.args.args}
    view_of = getattr(plan, "view_of", {})
    for w in plan.eff.writes:
        if w.container or "param" not in w.buffers:
            continue
        n = w.target
        for _ in range(64):  # (a chain of views, x_1 = x; t = x_1[1:])
            if n in params or n not in view_of:
                break
            n = view_of[n][0]
        if n in params and isinstance(plan.kinds.get(n), int):
            continue  # an array at every call (analyses.kinds), handed directly
        writes = plan.guarded.setdefault(id(w.stmt), [])
        if all(o.target != w.target for o in writes):
            writes.append(w)


class _Captures:
    """The analysis of positions, captures and guards over one plan."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.caps = plan.caps
        self.guarded = plan.guarded
        self.sites = plan.decisions
        self.reads_params: set[str] | bool = set()
        # the parameters of those read where no capture of this function watches them
        self.reads_uncaptured: set[str] | bool = set()
        # the buffers of every value the pullback reads (_reads_result)
        self.read_buffers: set[str] = set()
        # write statement -> the captures it may overwrite
        self.conflicts: dict[int, list[Capture]] = {}
        # write statement -> the captures of rows it writes later, read from a copy instead
        self.ahead: dict[int, list[Capture]] = {}
        # write statement -> the captures it overwrites, copied where they are read
        self.copied: dict[int, list[Capture]] = {}
        self._bindings: dict[str, list[gast.stmt]] | None = None

    @functools.cached_property
    def regions(self) -> Regions:
        """The rows of the function's arrays its indices name (analyses.regions), made at
        the first write checked against a capture (:meth:`disjoint`): a function writing
        nothing in place does not import it (issue 15's cold start)."""
        from adgen.transforms.analyses.regions import Regions

        return Regions(self.plan.fn, self.plan.eff, self.plan.resolve_or_none)

    def want_capture(self, stmt: gast.stmt, n: str, after: bool, index: bool = False) -> None:
        """Notes that the pullback of ``stmt`` reads the value of ``n`` (``index``: as an
        index, where a Python list's items are the value: storing into it counts)."""
        bufs = self.plan.eff.buffers.get(n, set())
        self.read_buffers |= bufs
        read: set[str] | bool = set()  # the parameters it views (True: cannot tell which)
        if "param" in bufs:
            p = self.plan.param_of(n)
            read = True if p is None else {p}
            if self.reads_params is not True:
                self.reads_params = True if read is True else self.reads_params | read
        if not bufs:
            return
        if not self.plan.eff.writes:
            self.read_uncaptured(read)  # (nothing here can overwrite it)
            return
        # imported here: a function writing nothing in place needs no rows
        from adgen.transforms.counter_rows import disjoint_rows, rows_ahead

        listed = index and self.plan.eff.kinds.get(n) == "list"
        conflicts = [w for w in self.plan.eff.writes if (not w.container or listed) and
                     (w.buffers & bufs) and
                     not self.disjoint(n, w) and
                     not disjoint_rows(self.plan, n, w, stmt, after) and
                     (self.plan.may_run_after(w.stmt, stmt) if (after or w.stmt is not stmt)
                      else True)]
        if not self.plan.loops_of[id(stmt)]:
            # a value captured after its own statement's write is not overwritten by that
            # write; in a loop, the same statement writes again in the next iteration
            conflicts = [w for w in conflicts if not (w.stmt is stmt and after)]
        if not conflicts:
            # read where it is when the pullback runs: a caller's later write of the argument
            # is one its own capture must watch (a capture here, or a copy, stays live after
            # this function returns: a caller's guarded write checks it)
            self.read_uncaptured(read)
            return
        ahead = rows_ahead(self.plan, n, stmt, after, conflicts)
        if ahead is not None:
            loop, base, idx = ahead
            first = min((w.stmt for w in conflicts
                         if id(loop) in self.plan.loops_of.get(id(w.stmt), ())),
                        key=lambda st: self.plan.order[id(st)])
            cap = self.caps.setdefault((id(stmt), n), Capture(stmt, n, after, loop, base, idx,
                                                              first))
            for w in conflicts:
                self.ahead.setdefault(id(w.stmt), []).append(cap)
            return
        if self.copied_when_read(n, stmt, after, conflicts):
            first = min((w.stmt for w in conflicts), key=lambda st: self.plan.order[id(st)])
            cap = self.caps.setdefault((id(stmt), n), Capture(stmt, n, after, write=first,
                                                              copied=True))
            for w in conflicts:
                self.copied.setdefault(id(w.stmt), []).append(cap)
            return
        cap = self.caps.setdefault((id(stmt), n), Capture(stmt, n, after))
        for w in conflicts:
            writes = self.guarded.setdefault(id(w.stmt), [])
            # one guard per statement, and one more per other argument a call writes
            # (bump_both(x, v)); not for the names a write reaches through aliases (the
            # first guard's region check covers them)
            if not writes or (all(o.target != w.target for o in writes) and
                              _passed_to_call(w.stmt, w.target)):
                writes.append(w)
            self.conflicts.setdefault(id(w.stmt), []).append(cap)

    def read_uncaptured(self, read: set[str] | bool) -> None:
        """Notes that the pullback reads the parameters ``read`` (True: any) where no capture
        of this function watches them (``reads_uncaptured``)."""
        if read and self.reads_uncaptured is not True:
            self.reads_uncaptured = True if read is True else self.reads_uncaptured | read

    def disjoint(self, n: str, w: Write) -> bool:
        """True when ``n`` is a constant part of a buffer that ``w`` writes elsewhere: an index
        or slice of the same name on the first axis, apart from the rows the write touches
        (a constant index, slice or list of rows: ``x[[0, 4]] = v``, ``np.add.at(x, [0, 0, 4],
        v)``; analyses.regions). The name must hold one object wherever it is read: bound in
        a loop, ``x = A[k:k + 5]`` is another view of ``A`` each iteration, and ``x[0]`` of a
        later one may be ``x[1:4]`` of an earlier one."""
        view = self.plan.defs.get(n)
        if not (isinstance(view, gast.Subscript) and isinstance(view.value, gast.Name)):
            return False
        written = _written_index(w.stmt)
        if written is None or written[0] != view.value.id or \
                not self.regions.same_binding(view.value.id):
            return False
        a = self.regions.rows(view.slice)
        b = self.regions.rows(written[1])
        if a is None or b is None:
            return False
        from adgen.transforms.analyses.regions import apart

        return apart(a, b)

    def copied_when_read(self, n: str, stmt: gast.stmt, after: bool,
                         conflicts: list[Write]) -> bool:
        """True when ``n`` is a part of an array (``p[1:n - 1, j]``, a basic index) read in a
        loop, and every write that may overwrite it writes that array by its own name (or a
        view of it by name) in another loop inside a loop enclosing both: a later phase that
        fills the array again (ADI's sweeps, one per time step), which overwrites what was
        read. Then the value is copied where the pullback reads it, and the writes need no
        guard (a guard would check every write, then copy it all the same). A write in the
        reading loop itself (a factorisation's ``A[i, j]`` beside its ``A[j, :j]``) is one the
        analysis could not prove apart, and usually is: it keeps its guard, which copies
        nothing then; so does a write outside every loop of the read, which runs once. Only
        under "save"; a choice of cost, not of correctness."""
        plan = self.plan
        if plan.policy != "save" or not plan.kinds:
            return False
        if isinstance(stmt, (gast.Assign, gast.Expr)) and isinstance(stmt.value, gast.Call) \
                and is_user_call(plan, stmt.value):
            # a callee's saved values hold the array itself: only a copy handed to it serves
            return after and self.copy_passed(n, stmt, conflicts)
        if after:
            return False
        if isinstance(plan.kinds.get(n), int) and \
                any(self.overwritten_whole_next(n, stmt, w) for w in conflicts):
            return True
        view = plan.defs.get(n)
        if not (isinstance(plan.kinds.get(n), int) and isinstance(view, gast.Subscript) and
                isinstance(view.value, gast.Name) and
                isinstance(plan.kinds.get(view.value.id), int) and
                plan.stable_index(view.slice)):
            return False
        base = view.value.id
        if any(self.overwritten_next(n, stmt, w) for w in conflicts):
            return True
        loops = plan.loops_of.get(id(stmt), ())
        if not loops:
            return False
        for w in conflicts:
            target = w.target
            while target in plan.view_of and target != base:
                target = plan.view_of[target][0]
            around = plan.loops_of.get(id(w.stmt), ())
            if target != base or loops[-1] in around or not set(loops) & set(around):
                return False
        return True

    def copy_passed(self, n: str, stmt: gast.stmt, conflicts: list[Write]) -> bool:
        """True when the array ``n`` is passed by its name to a user function that writes
        none of its arguments and returns only values it made, and a later statement of the
        same block overwrites all of ``n`` (RK4's ``k[0] = rhs(y, W)``, then ``y += ...``).
        Then the callee is handed a copy of ``n`` taken at the call (its saved values keep
        that), as a person keeps the stage's input: the writes need no guard and the pullback
        no redirection of the callee's saved values (a guard would copy ``n`` at the write
        all the same, after checking it against every live capture). The copy is invisible
        to the callee: it writes no argument, its result views none, and no other argument
        shares ``n``'s memory (``f(y, y)`` keeps ``a is b``). Only under "save"."""
        plan = self.plan
        call = stmt.value
        if not isinstance(plan.kinds.get(n), int) or \
                not any(self.overwritten_whole_next(n, stmt, w) for w in conflicts):
            return False
        obj = plan.resolve(call.func)
        if obj is MISSING or not is_python_function(obj):
            return False
        from adgen.transforms.reverse_plan_calls import info_at

        info = info_at(plan, obj, call)
        if info is None or info.compiled.mutates_params or \
                getattr(info.compiled, "mutates_containers", True) or \
                not info.compiled.returns_fresh:
            return False
        passed = list(call.args) + [k.value for k in call.keywords]
        if not all(isinstance(a, (gast.Name, gast.Constant)) for a in passed) or \
                sum(isinstance(a, gast.Name) and a.id == n for a in passed) != 1:
            return False
        bufs = plan.eff.buffers.get(n, set())
        return not any(isinstance(a, gast.Name) and a.id != n and
                       plan.eff.buffers.get(a.id, set()) & bufs for a in passed)

    def overwritten_whole_next(self, n: str, stmt: gast.stmt, w: Write) -> bool:
        """True when ``w`` comes after ``stmt`` in the same block and writes every element of
        the array ``n`` through ``n`` itself or a copy of the name: ``z -= z.max(axis=1,
        keepdims=True)`` (max's pullback reads the ``z`` this overwrites) or ``np.exp(z,
        out=z)``. Every time the value is read it is overwritten: a guard would copy all of
        it at that write anyway, after checking the write against the live captures."""
        plan = self.plan
        st = w.stmt
        if plan.block_of.get(id(st)) != plan.block_of.get(id(stmt)) or \
                plan.order[id(st)] <= plan.order[id(stmt)]:
            return False
        if self._bindings is None:  # name -> where it is bound (augmented assignments not)
            self._bindings = {}
            for node in walk(plan.fn):
                if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Name):
                    self._bindings.setdefault(node.targets[0].id, []).append(node)
                elif isinstance(node, gast.For):
                    for t in walk(node.target):
                        if isinstance(t, gast.Name):
                            self._bindings.setdefault(t.id, []).append(node)
        if any(plan.order[id(stmt)] < plan.order.get(id(b), -1) < plan.order[id(st)]
               for b in self._bindings.get(n, [])):
            return False  # n rebound in between (a loop's name): the write may be elsewhere
        target = w.target
        for _ in range(8):  # through copies of the name (SSA: z_1 = z before z_1 -= m)
            if target == n:
                break
            v = plan.defs.get(target)
            # bound once, to a name; an array's augmented assignments write it in place
            if len(self._bindings.get(target, [])) != 1 or not isinstance(v, gast.Name) or \
                    not isinstance(plan.kinds.get(target), int):
                return False
            target = v.id
        else:
            return False
        if target != n:
            return False
        if isinstance(st, gast.AugAssign):
            return isinstance(st.target, gast.Name) and st.target.id == w.target
        call = st.value if isinstance(st, (gast.Assign, gast.Expr)) else None
        if not isinstance(call, gast.Call) or any(k.arg == "where" for k in call.keywords):
            return False  # where=: the elements it leaves alone keep their values
        import numpy as np

        out = [k.value for k in call.keywords if k.arg == "out"]
        if out and isinstance(out[0], gast.Tuple) and len(out[0].elts) == 1:
            out = out[0].elts
        # a ufunc's own call (not .at or .reduce) with out= writes every element of out
        return len(out) == 1 and isinstance(out[0], gast.Name) and out[0].id == w.target \
            and isinstance(plan.resolve_or_none(call.func), np.ufunc)

    def overwritten_next(self, n: str, stmt: gast.stmt, w: Write) -> bool:
        """True when ``w`` comes after ``stmt`` in the same block and stores into exactly the
        elements ``n`` views: ``t = y[:k]`` (or ``y[:k][::-1]``) read, then ``y[:k] = z[:k]``
        (Durbin's recursion). Every time the value is read it is overwritten: a guard would
        copy it at that write anyway."""
        plan = self.plan
        st = w.stmt
        if plan.block_of.get(id(st)) != plan.block_of.get(id(stmt)) or \
                plan.order[id(st)] <= plan.order[id(stmt)]:
            return False
        if not (isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Subscript) and
                isinstance(st.targets[0].value, gast.Name) and
                plan.stable_index(st.targets[0].slice)):
            return False
        view = plan.defs.get(n)
        for _ in range(2):
            if not (isinstance(view, gast.Subscript) and isinstance(view.value, gast.Name) and
                    plan.stable_index(view.slice)):
                return False
            if view.value.id == st.targets[0].value.id:
                return gast.dump(plan.spelled_out(view.slice)) == \
                    gast.dump(plan.spelled_out(st.targets[0].slice))
            whole = view.slice
            if not (isinstance(whole, gast.Slice) and whole.lower is None and
                    whole.upper is None and (whole.step is None or (
                        isinstance(whole.step, gast.UnaryOp) and
                        isinstance(whole.step.op, gast.USub) and
                        isinstance(whole.step.operand, gast.Constant) and
                        whole.step.operand.value == 1) or (
                        isinstance(whole.step, gast.Constant) and whole.step.value == -1))):
                return False  # a view of a part of the array: another set of elements
            if plan.def_count.get(view.value.id) != 1:
                return False
            view = plan.defs.get(view.value.id)  # x[::-1] of x = y[:k]: the elements of x
        return False

    def decide_sites(self) -> None:
        for w in self.plan.eff.writes:
            caps = self.conflicts.get(id(w.stmt), [])
            construct = self.plan.construct(w.stmt)
            line = getattr(w.stmt, "lineno", 0)
            if w.container and caps:
                # a list the gradient reads as an index: its capture is a copy, taken at once
                what = ", ".join(sorted({self.plan.user_name(c.name) for c in caps}))
                first = caps[0]
                if self.plan.policy == "strict":
                    # (read as an index, x[idx], or by a rule: ys = sorted(xs) reads the
                    # lists' items)
                    written = self.plan.user_name(w.target)
                    raise MutationError(
                        f"{construct} changes {what}, which the gradient of line "
                        f"{first.stmt.lineno} ({self.plan.construct(first.stmt)}) reads",
                        self.plan.loc(w.stmt),
                        hint=f'use mutation="save" (adgen keeps a copy of {what}), or change '
                             f"a copy: {written} = {written}.copy() before line {line} (or "
                             "index with a NumPy array)",
                        captured_at=self.plan.loc(first.stmt))
                lines = tuple(sorted({getattr(c.stmt, "lineno", 0) for c in caps}))
                self.sites.append(Site(w.stmt, construct, "guarded-save",
                                       f"may overwrite {what}, read as an index by the gradient "
                                       f"of line(s) {', '.join(map(str, lines))}", lines))
                continue
            if w.container:
                self.sites.append(Site(w.stmt, construct, "free",
                                       "a container store replaces an element reference; the "
                                       "values the gradient reads stay as they were"))
                continue
            ahead = self.ahead.get(id(w.stmt), [])
            if not caps and ahead:
                what = ", ".join(sorted({self.plan.user_name(c.base) for c in ahead}))
                lines = tuple(sorted({getattr(c.stmt, "lineno", 0) for c in ahead}))
                at = ", ".join(sorted({str(getattr(c.loop, "lineno", 0)) for c in ahead}))
                self.sites.append(Site(w.stmt, construct, "guarded-save",
                                       f"no guard at the write: the gradient of line(s) "
                                       f"{', '.join(map(str, lines))} reads rows of {what} "
                                       "ahead of the loop counter, which no iteration has "
                                       f"written yet, from one copy of {what} taken before "
                                       f"the loop at line {at}", lines))
                continue
            copied = self.copied.get(id(w.stmt), [])
            if not caps and copied:
                what = ", ".join(sorted({self.plan.user_name(c.name) for c in copied}))
                lines = tuple(sorted({getattr(c.stmt, "lineno", 0) for c in copied}))
                self.sites.append(Site(w.stmt, construct, "guarded-save",
                                       f"no guard at the write: it overwrites {what}, which "
                                       f"the gradient of line(s) {', '.join(map(str, lines))} "
                                       "reads, so that is copied where it is read", lines,
                                       copied=tuple(copied)))
                continue
            if not caps:
                self.sites.append(Site(w.stmt, construct, "free",
                                       "no value the gradient reads is overwritten here"))
                continue
            lines = tuple(sorted({getattr(c.stmt, "lineno", 0) for c in caps}))
            certain = [c for c in caps if c.name == w.target and
                       self.plan.block_of[id(c.stmt)] == self.plan.block_of[id(w.stmt)] and
                       self.plan.order[id(c.stmt)] < self.plan.order[id(w.stmt)] and
                       # (an argument of a call resolved when it runs: whether its callee
                       # reads it is known then, guards.callee_reads)
                       not (c.after and _passed_to_call(c.stmt, c.name) and
                            resolved_at_run_time(self.plan, c.stmt.value)) and
                       # (an object a function compiled here changes: it may rebind a
                       # number of it and overwrite none of its arrays, self.steps += 1;
                       # under strict its writes of parameters are guarded, and one over an
                       # array the gradient reads is refused when it runs, naming this call:
                       # guards.before_write's handoffs)
                       not (self.plan.eff.kinds.get(c.name) == "object" and
                            _handed_to_compiled_call(self.plan, w.stmt, c.name)) and
                       not (c.after and _passed_to_users_rule(self.plan, c.stmt, c.name))]
            if self.plan.policy == "strict" and certain:
                c = certain[0]
                tangent = user_name_of(c.name)
                if tangent.endswith("_dot") and self.plan.fn.name.endswith("_jvp"):
                    # reverse mode over the jvp code adgen generated (hessian, hvp, jacfwd or
                    # jacrev of grad): the value overwritten is a tangent of its own, not a
                    # value of the user's (it said 'overwrites out_1_dot, which the gradient
                    # of line 14 (np.exp(out, out=out)) reads', grad itself being fine)
                    base = tangent[:-len("_dot")].rstrip("_0123456789") or tangent
                    raise MutationError(
                        f"second derivatives under mutation=\"strict\": {construct} writes "
                        f"{base} in place, and adgen's forward-mode code of it writes {base}'s "
                        "tangent in place too, after reading it for this line's derivative; "
                        "the second derivative reads that tangent again (the gradient "
                        "alone keeps nothing here)", self.plan.loc(w.stmt),
                        hint=f'use mutation="save" for second derivatives (adgen keeps a copy '
                             f"of the tangent), or write into a new array here ({base} = ... "
                             "instead of out= or an in-place update)")
                written = self.plan.user_name(c.name)
                others = sorted({(o.stmt.lineno, self.plan.construct(o.stmt),
                                  self.plan.user_name(o.name)) for o in caps
                                 if o.stmt.lineno != c.stmt.lineno})
                # (the write's own line reads a value too, x in a[:] = -x ** 3 where a and x
                # may share memory: 'this line's own gradient', not 'the gradient of line 7
                # (a[:] = -x ** 3) reads it')
                also = "".join(
                    (f"; this line's own gradient reads {_read(name, written)}" if ln == line
                     else f"; the gradient of line {ln} ({text}) reads {_read(name, written)}")
                    for ln, text, name in others)
                raise MutationError(
                    f"{construct} overwrites {written}, which the gradient of line "
                    f"{c.stmt.lineno} ({self.plan.construct(c.stmt)}) reads{also}",
                    self.plan.loc(w.stmt),
                    # (where this line's own gradient reads the value too, a copy made
                    # before it is overwritten in its turn: the hint says out of place)
                    hint=copy_hint(construct, self.plan.code_name(c.name), line if any(
                        o.stmt.lineno == line for o in caps) else c.stmt.lineno, line),
                    captured_at=self.plan.loc(c.stmt))
            decision = "guarded-save" if self.plan.policy == "save" or all(
                c.after and _passed_to_users_rule(self.plan, c.stmt, c.name) for c in caps) \
                else "guarded-raise"
            overwrites = tuple(sorted({(self.plan.user_name(c.name),
                                        getattr(c.stmt, "lineno", 0)) for c in caps}))
            self.sites.append(Site(w.stmt, construct, decision, overwrite_reason(overwrites),
                                   lines))
        self.sites.sort(key=lambda s: (getattr(s.stmt, "lineno", 0), self.plan.order[id(s.stmt)]))

    def collect_reads(self, stmts: list[gast.stmt]) -> None:
        for k, s in enumerate(stmts):
            if isinstance(s, gast.AugAssign) and k > 0 and is_copy_of(stmts[k - 1], s) and \
                    self.plan.act.active(s.target.id):
                if type(s.op) not in BINOPS:
                    raise unsupported_operator(s.op, self.plan.loc(s))  # d |= e
                rule = registry.lookup(BINOPS[type(s.op)])
                old = stmts[k - 1].value
                bound = rule.bind([old, s.value], {})
                for d, tpl in zip(rule.diff, rule.templates):
                    if not self.plan.any_active(bound.get(d)):
                        continue
                    for r in registry.value_reads((tpl,), set(bound) | {"out"}):
                        if r == "out":
                            self.want_capture(s, s.target.id, after=True)
                        else:
                            for n in names_of(bound.get(r)):
                                self.want_capture(s, n, after=False)
                continue
            for fieldname in ("body", "orelse"):
                sub = getattr(s, fieldname, None)
                if isinstance(sub, list):
                    self.collect_reads(sub)
            if isinstance(s, gast.Try):
                for h in s.handlers:
                    self.collect_reads(h.body)
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Subscript) and \
                    isinstance(s.targets[0].value, gast.Name) and \
                    self.plan.act.active(s.targets[0].value.id):
                # the pullback of x[idx] = v reads idx (an index array, a mask)
                for n in names_of(s.targets[0].slice):
                    self.want_capture(s, n, after=False, index=True)
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                t = s.targets[0].id
                if not self.plan.act.active(t):
                    continue
                if isinstance(s.value, gast.Subscript) and isinstance(s.value.value,
                                                                      gast.Name):
                    # the pullback of t = x[idx] reads idx
                    for n in names_of(s.value.slice):
                        self.want_capture(s, n, after=False, index=True)
                op = op_of(self.plan, s)
                if op is None:
                    continue
                rule, bound = op
                if rule is USERCALL:
                    # the callee's saved values may view its arguments as they are when it
                    # returns, and its result (return np.tanh(v) keeps tanh's output for
                    # its pullback): a later write to them is guarded like any capture
                    # (sorted: the order of the captures is the generated text's, which
                    # must not depend on PYTHONHASHSEED)
                    from adgen.transforms.reverse_plan_calls import (
                        args_callee_reads,
                        result_made_by_callee,
                    )

                    for a in sorted(args_callee_reads(self.plan, s.value)):
                        self.want_capture(s, a, after=True)
                    if result_made_by_callee(self.plan, s.value):
                        # (a result that may view an argument is that argument's capture)
                        self.want_capture(s, t, after=True)
                    continue
                if users_rule(rule):
                    # a user's adgen.rrule: its pullback is a closure, which reads its
                    # arguments as they are when it runs; a later write of one is guarded,
                    # and the guard's copy is put back into it while the closure runs
                    # (guards.RuleArgument, dispatch.pullback_of). Not one it writes itself
                    for n in _rule_arguments(rule, s.value):
                        self.want_capture(s, n, after=True)
                    continue
                if _calls_a_found_function(rule):
                    # call_jvp(g, (y,), (y_dot,), ...) of jvp code differentiated again: its
                    # rule runs g's compiled jvp, whose saved values hold y; a later write
                    # of y is guarded (the rule captures what it was given), as for a user
                    # call. Unguarded, g = R.f; y += 0.1 * g(y) had a hessian 0.88 off.
                    for n in sorted(names_of(s.value)):
                        self.want_capture(s, n, after=True)
                    continue
                for d, tpl in zip(rule.diff, rule.templates):
                    if not self.plan.any_active(bound.get(d)):
                        continue
                    reads = registry.value_reads((tpl,), set(bound) | {"out"})
                    # (index: a list's items are the value the rule reads; a store into
                    # the list later, ys = sorted(xs); xs[0] = v, changes it)
                    for r in reads:
                        if r == "out":
                            self.want_capture(s, t, after=True, index=True)
                        else:
                            for n in names_of(bound.get(r)):
                                self.want_capture(s, n, after=False, index=True)
            elif isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) and \
                    not is_marker(s):
                f = s.value.func
                if isinstance(f, gast.Attribute) and f.attr == "at" and \
                        len(s.value.args) == 3:
                    # the pullback of np.add.at(x, idx, v) reads idx
                    for n in names_of(s.value.args[1]):
                        self.want_capture(s, n, after=False, index=True)
                if is_user_call(self.plan, s.value):
                    from adgen.transforms.reverse_plan_calls import args_callee_reads

                    for a in sorted(args_callee_reads(self.plan, s.value)):
                        self.want_capture(s, a, after=True)


def users_rule(rule: object) -> bool:
    """``rule`` is a user's ``adgen.rrule`` (not one of adgen's own runtime rules)."""
    return getattr(rule, "is_rrule", False) and not str(
        getattr(getattr(rule, "primal", None), "__module__", "") or "").startswith("adgen")


def _rule_arguments(rule: object, call: gast.Call) -> list[str]:
    """The names passed by position to the user's rule ``rule`` at ``call`` that it does
    not declare it writes (``mutates=``), sorted."""
    try:
        written = set(mutated_positions(rule, len(call.args)))
    except RuleError:
        written = set()
    return sorted({a.id for k, a in enumerate(call.args)
                   if isinstance(a, gast.Name) and k not in written})


def _passed_to_users_rule(plan: Plan, stmt: gast.stmt, target: str) -> bool:
    """Whether ``stmt`` calls a user's ``adgen.rrule`` given the name ``target``: a write
    after it is guarded and saves under either policy (guards.RuleArgument), so strict
    does not refuse it when it compiles."""
    if not isinstance(stmt, gast.Assign) or not isinstance(stmt.value, gast.Call) or \
            not _passed_to_call(stmt, target):
        return False
    op = op_of(plan, stmt) if isinstance(stmt.targets[0], gast.Name) else None
    return op is not None and users_rule(op[0])


def _calls_a_found_function(rule: object) -> bool:
    """``rule`` is that of forward mode's call of a function found when it runs
    (``call_jvp``, ``call_jvp_tangent``), whose rule captures the arrays it is given
    (tangent_calls._jvp_rrule)."""
    primal = getattr(rule, "primal", None)
    return str(getattr(primal, "__module__", "")) in ("adgen.runtime", "adgen.tangent_calls") \
        and getattr(primal, "__name__", None) in ("call_jvp", "call_jvp_tangent")


def _passed_to_call(stmt: gast.stmt, target: str) -> bool:
    """Whether ``stmt`` is a call that takes the name ``target`` itself as an argument."""
    call = getattr(stmt, "value", None)
    if not isinstance(call, gast.Call):
        return False
    values = list(call.args) + [k.value for k in call.keywords]
    return any(isinstance(a, gast.Name) and a.id == target for a in values)


def _handed_to_compiled_call(plan: Plan, stmt: gast.stmt, target: str) -> bool:
    """Whether ``stmt`` is a call of a user function compiled with this one (not resolved
    when it runs) that takes the name ``target`` itself as an argument (``G.step(u)`` of a
    global object is ``step_of_Stepper(G, u)``: transforms/bound_callees.py)."""
    return _passed_to_call(stmt, target) and is_user_call(plan, stmt.value) and \
        not resolved_at_run_time(plan, stmt.value)


def _written_index(stmt: gast.stmt) -> tuple[str, gast.expr] | None:
    """(name, index) of an indexed write ``name[index] = v`` or ``ufunc.at(name, index, ...)``
    (which writes ``name[index]``, repeated rows included)."""
    if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Subscript) and \
            isinstance(stmt.targets[0].value, gast.Name):
        return stmt.targets[0].value.id, stmt.targets[0].slice
    call = stmt.value if isinstance(stmt, gast.Expr) else None
    if isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) and \
            call.func.attr == "at" and len(call.args) >= 2 and not call.keywords and \
            isinstance(call.args[0], gast.Name):
        return call.args[0].id, call.args[1]
    return None


def _read(name: str, written: str) -> str:
    """What a capture of ``name`` reads, said after a write of ``written``: "it too" when
    the same, else ``name`` and that it may share ``written``'s memory."""
    return "it too" if name == written else f"{name} too ({name} may share {written}'s memory)"
