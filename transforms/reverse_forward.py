"""The forward emitter: the primal, plus what the pullback emitter recorded it needs — the
tapes, arms, saved callee results and captures — and the guards of the writes that may
overwrite a captured value (from the plan)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import gast
from adgen.transforms.analyses.effects import Write
from adgen.transforms.analyses.foreign_values import checked_objects, checked_values
from adgen.transforms.analyses.free_containers import READS_AFTER
from adgen.transforms.analyses.kinds import NUMBER
from adgen.transforms.analyses.varied_before import varied_before
from adgen.transforms.desugar import assign, located_at, name
from adgen.transforms.hoist_defs import is_marker
from adgen.transforms.method_reductions import method_reductions
from adgen.transforms.names import Namer
from adgen.transforms.node_index import nodes_of
from adgen.transforms.parse import varargs_of
from adgen.transforms.reverse_ast import (
    HELD_AFTER,
    HELD_AFTER_ANY,
    MISSING,
    Recording,
    attr_node,
    call_node,
    callee_name,
    index_value,
    is_python_function,
    operand_text,
    record_position,
    src_text,
)
from adgen.transforms.reverse_captures import users_rule
from adgen.transforms.reverse_plan import Plan, range_step
from adgen.transforms.slot_changes import (
    changes_noted,
    changes_noted_by_call,
    changes_noted_by_raise,
)
from adgen.transforms.walk import clone, walk

from adgen.passed_derivatives import MASK_KEYWORD
from adgen.rules import registry


class Forward:
    """Emits ``<f>_forward(*params) -> (out, saved)`` of one planned function."""

    def __init__(self, plan: Plan, rec: Recording, namer: Namer) -> None:
        self.plan = plan
        self.rec = rec
        self.namer = namer
        # (loop, base) -> the copy of base taken before the loop (Capture.loop)
        self.copies: dict[tuple[int, str], str] = {}
        self.kept_names: set[str] | None = None  # (None: all of them, before forward())
        # the loops of the function by id (typed tapes' columns are found by their loop)
        self._loops = {id(f): f for f in nodes_of(plan.fn, gast.For)}
        # copies written into their two-dimensional column where they are taken
        self.written_at_copy: set[str] = set()
        self._foreign: dict[int, gast.expr] | None = None  # (foreign_values())
        self._objects: dict[int, list[str]] | None = None  # (foreign_objects())

    def forward(self, saved: list[str]) -> gast.FunctionDef:
        # what the pullback reads of the forward's: the saved values and the loops' rows
        self.kept_names = set(saved).union(*self.rec.records.values())
        body = self.fwd_block(self.plan.fn.body, top=True)
        # the final return hands back the saved values
        ret = body[-1]
        assert isinstance(ret, gast.Return)
        # container parameters' slots as the function returns (Pullback.exit_items_to_shadows)
        body[-1:] = [assign(name(var, gast.Store), self.exit_record(container), self.plan.fn)
                     for container, var, _after in
                     self.rec.items_around.get(id(self.plan.fn.body[-1]), ())] + [ret]
        entries = set(self.rec.entry_of.values())  # bound first, below
        values = [self.rec.shape_of.get(n, (n,))[0] for n in saved if n not in entries and
                  n not in self.rec.shape_after]
        init = self.init_conditional(self.plan.fn.body, values)
        # shapes kept outside the loops around their arrays: bound on every path, to a
        # shape of the same rank until the array is bound (the numba backend types them)
        init += [assign(name(sh, gast.Store), gast.Tuple(
            elts=[gast.Constant(0, None)] * self.plan.kinds[n], ctx=gast.Load()), self.plan.fn)
            for sh, n in sorted(self.rec.shape_after.items())]
        unbound = {st.targets[0].id for st in init}  # None where a path skips them
        # arrays alive when the forward returns anyway: a shape kept for the pullback is read
        # from one of them where the shapes analysis proves it equal, so the array it is
        # the shape of is not kept alive until the return for it (the forward's peak)
        alive = {a.id for a in self.plan.fn.args.args} | {
            n for n in saved if n not in self.rec.shape_of}
        tup = gast.Tuple(elts=[self.kept(n, unbound, alive - unbound) for n in saved],
                         ctx=gast.Load())
        ret.value = gast.Tuple(elts=[ret.value if ret.value is not None else
                                     gast.Constant(None, None), tup], ctx=gast.Load())
        args = clone(self.plan.fn.args)
        for a in args.args:
            if a.id in self.plan.parsed.renamed_params:
                # the parameter keeps the user's name in the signature (keyword calls)
                old = self.plan.parsed.renamed_params[a.id]
                init.insert(0, assign(name(a.id, gast.Store), name(old), self.plan.fn))
                a.id = old
        self.signature_of_user(args)
        # container parameters whose slots the function rebinds: their items as received
        # (where the pullback reads them: collect's entry; a method's self handed back as its
        # adjoint reads none, and a model's many layers walked at every step cost its time)
        init += [assign(name(v, gast.Store), call_node("entry_items", name(p)), self.plan.fn)
                 for p, v in sorted(self.rec.entry_of.items()) if v in saved]
        init += self.refuse_shared()
        fwd = gast.FunctionDef(name=f"{self.plan.fname}_forward", args=args,
                               body=init + body, decorator_list=[], returns=None,
                               type_comment=None, type_params=[])
        if self.plan.kinds:
            fwd = method_reductions(fwd, self.plan.kinds, self.plan.resolve)
            # (imported where np.r_ / np.c_ was lowered: most functions have none)
            if any("r_" in line or "c_" in line for line in self.plan.parsed.lines):
                from adgen.transforms.index_tricks import pieces_as_items

                pieces_as_items(fwd, self.plan.kinds)
        return fwd

    def refuse_shared(self) -> list[gast.stmt]:
        """For each container parameter changed in place (its entry items kept), the check
        that no other parameter is it or holds it (adgen.shared_arguments), where another
        parameter may be a list, dict or object."""
        params = [a.id for a in self.plan.fn.args.args]
        renamed = self.plan.parsed.renamed_params
        out: list[gast.stmt] = []
        for p in sorted(self.rec.entry_of):
            others = [q for q in params if q != p and not _number_or_array(
                self.plan.kinds.get(q))]
            if not others:
                continue
            at = next((w.stmt for w in self.plan.eff.writes if w.container and
                       w.target == p and getattr(w.stmt, "lineno", None)), None) or \
                _first_call_given(self.plan.fn, p)
            call = call_node("refuse_shared", name(p),
                             gast.Tuple(elts=[name(q) for q in others], ctx=gast.Load()),
                             gast.Constant(renamed.get(p, p), None),
                             gast.Tuple(elts=[gast.Constant(renamed.get(q, q), None)
                                              for q in others], ctx=gast.Load()),
                             gast.Constant(self.plan.parsed.file, None),
                             gast.Constant(getattr(at, "lineno", 0), None))
            out.append(gast.copy_location(gast.Expr(call), self.plan.fn))
        return out

    def kept(self, n: str, unbound: frozenset[str] | set[str] = frozenset(),
             alive: set[str] | frozenset[str] = frozenset()) -> gast.expr:
        """What the forward keeps for the pullback's name ``n``: its value, or the shape of
        the value it stands for (shape_saves). ``unbound``: names still None on a path that
        skipped their statement (np.shape(None) is ()). ``alive``: at the top level, arrays
        the forward keeps (or takes) anyway, whose shape may stand for the value's."""
        if n in self.rec.shape_after:  # bound right after its array
            return name(n)
        if n in self.rec.lengths:  # a vector bound in every iteration: its length
            return call_node("len", name(self.rec.lengths[n]))
        of = self.rec.shape_of.get(n)
        if of is None:
            return name(n)
        value, how = of
        if how == "len":  # a grown list's snapshot (snapshot_lengths)
            return call_node("len", name(value))
        if isinstance(self.plan.kinds.get(value), int) and value not in unbound:
            for other in sorted(alive):
                if other != value and isinstance(self.plan.kinds.get(other), int) and \
                        self.top_level(value) and self.top_level(other) and \
                        self.plan.same_shape(value, other):
                    return attr_node(other, "shape")  # value can die before the return
            return attr_node(value, "shape")  # an ndarray for this signature
        if how == "tree":
            return call_node("shape_tree", name(value))
        return call_node(attr_node("np", "shape"), name(value))

    def top_level(self, n: str) -> bool:
        """``n`` is a parameter or bound outside every loop (one value for the call)."""
        at = self.plan.def_stmt.get(n)
        return at is None and n in {a.id for a in self.plan.fn.args.args} or \
            at is not None and self.plan.loops_of.get(id(at), ()) == () and \
            self.plan.def_count.get(n) == 1

    def signature_of_user(self, args: gast.arguments) -> None:
        """The forward takes its arguments as the user's function does: keyword-only
        parameters go back to keyword-only, and every parameter with a default gets one (a
        placeholder here, shown as the value when it is a literal; the pipeline sets the
        function's own ``__defaults__``/``__kwdefaults__`` on the compiled forward)."""
        fn = self.plan.parsed.fn
        kwonly = set(self.plan.parsed.kwonly)
        args.kwonlyargs = [a for a in args.args if a.id in kwonly]
        args.args = [a for a in args.args if a.id not in kwonly]
        kwdefaults = getattr(fn, "__kwdefaults__", None) or {}
        args.kw_defaults = [_shown(kwdefaults[a.id]) if a.id in kwdefaults else None
                            for a in args.kwonlyargs]
        defaults = list(getattr(fn, "__defaults__", None) or ())
        packed = varargs_of(fn) is not None  # *xs: a parameter of its own, a tuple
        if defaults and packed:
            defaults.append(())  # as the pipeline sets the compiled forward's __defaults__
        # a closure's free variables
        lifted = len(args.args) - fn.__code__.co_argcount - int(packed)
        if defaults and lifted > 0:
            defaults += [None] * lifted
        args.defaults = [_shown(d) for d in defaults]

    def init_conditional(self, stmts: list[gast.stmt], names: list[str]) -> list[gast.stmt]:
        """``n = None`` for recorded names a block does not always bind at its top level."""
        top = set()
        for s in stmts:
            if isinstance(s, gast.Assign):
                top |= {n.id for n in s.targets if isinstance(n, gast.Name)}
            if isinstance(s, gast.AugAssign):
                top.add(s.target.id)
        ids = {id(st) for st in stmts}
        top |= {v for (sid, _), v in self.rec.cap_var.items() if sid in ids}
        top |= {v for sid, v in self.rec.saved_call.items() if sid in ids}
        top |= {v for sid, vs in self.rec.saved_parts.items() if sid in ids for _, v in vs}
        top |= {v for sid, v in self.rec.result_of.items() if sid in ids}
        top |= {v for sid, v in self.rec.result_entry.items() if sid in ids}
        top |= {v for sid, vs in self.rec.items_around.items() if sid in ids for _, v, _ in vs}
        top |= {v for sid, v in self.rec.tape_of.items() if sid in ids}
        params = {a.id for a in self.plan.fn.args.args}
        missing = [n for n in names if n not in top and n not in params and
                   (n in self.plan.namer_locals or n in self.rec.extra_fwd)]
        # a value a nested def reads (its closure cell) holds runtime.Unbound until it is
        # bound: calling the def then raises NameError as in Python (dispatch._call_closure),
        # where None would be computed with
        free = self.plan.parsed.closure_free
        return [assign(name(n, gast.Store), name("Unbound") if n in free else
                       gast.Constant(None, None), self.plan.fn) for n in missing]

    def fwd_block(self, stmts: list[gast.stmt], top: bool = False) -> list[gast.stmt]:
        out: list[gast.stmt] = []
        inner = self.inner_ran() if self.rec.try_ran else {}
        for s in stmts:
            out.extend(self.fwd_stmt(s))
            for flag in inner.get(id(s), ()):  # (inside the compound statement last in a
                # try body: partial_try's flag, as the try's forward sets it after its own)
                out.append(assign(name(flag, gast.Store), gast.Constant(True, None), s))
        return out

    def inner_ran(self) -> dict[int, list[str]]:
        """The statements that set a try's flag (``partial_try``) and are not that try
        body's own statements (those are flagged by the try's forward), by id."""
        out: dict[int, list[str]] = {}
        for t in nodes_of(self.plan.fn, gast.Try):
            flag, ids = self.rec.try_ran.get(id(t), (None, ()))
            own = {id(b) for b in t.body}
            for sid in ids:
                if sid not in own:
                    out.setdefault(sid, []).append(flag)
        return out

    def passed_active(self, s: gast.stmt, call: gast.Call) -> list[gast.keyword]:
        """For a call found when it runs (``call_forward``), which of the values it hands
        over carry a derivative here (the function's object first, then the arguments and
        the keywords' values, in order): a keyword ``__adgen_active__`` when some does not,
        so that the callee is compiled for those (its derivative reaching a rule's argument
        without one is refused there, adgen.passed_derivatives); none when all do."""
        act = self.plan.act
        # (a value varied only by what the call itself may store into it has none yet)
        varied = varied_before(act, s)

        def active(e: gast.expr) -> bool:
            return any(isinstance(n, gast.Name) and n.id in varied and n.id in act.useful
                       for n in walk(e))

        mask = [active(call.func), *map(active, call.args),
                *(active(k.value) for k in call.keywords)]
        if all(mask):
            return []
        return [gast.keyword(arg=MASK_KEYWORD, value=gast.Tuple(
            elts=[gast.Constant(m, None) for m in mask], ctx=gast.Load()))]

    def fwd_stmt(self, s: gast.stmt) -> list[gast.stmt]:
        if is_marker(s):
            return [clone(self.plan.parsed.nested_defs[s.value.args[0].value])]
        # the global objects whose methods it runs with a derivative: checked once, before
        # the top-level statement of the first such call (analyses.foreign_values)
        pre: list[gast.stmt] = [located_at(gast.Expr(value=call_node(
            "plain_result", name(n), gast.Constant(self.plan.user_name(n), None))), s)
            for n in self.foreign_objects().get(id(s), ())]
        if isinstance(s, gast.Assign) and isinstance(s.value, gast.Subscript) and \
                isinstance(s.value.value, gast.Name) and self.plan.any_active(s.value.slice):
            # t = c[z, 2 * z] of a c the compiler could not see (np.r_ through a default):
            # the index's derivative is followed only for what the code names (runtime)
            pre.append(located_at(gast.Expr(value=call_node(
                "index_with_derivative", name(s.value.value.id))), s))
        post: list[gast.stmt] = [  # shapes kept outside the loops around their arrays
            assign(name(sh, gast.Store), attr_node(n, "shape"), s)
            for sh, n in sorted(self.rec.shape_after.items()) if self.plan.def_stmt.get(n) is s]
        made = self.foreign_values().get(id(s))
        if made is not None:
            # a value made by code adgen runs as it is (an object's method, a library call, a
            # global object's item), which meets values with a derivative: an np.matrix or
            # masked array there (or in the object it is) would run through plain ndarrays'
            # rules (analyses.foreign_values; the compiler refuses the ones it sees:
            # transforms.array_subclasses)
            post.insert(0, gast.Expr(value=call_node(
                "plain_result", name(s.targets[0].id),
                gast.Constant(self.describe(made), None))))
        views: list[gast.stmt] = []  # after the statement's copies they are views of
        for (sid, n), cap in self.plan.caps.items():
            var = self.rec.cap_var.get((sid, n))
            if sid != id(s) or var is None:
                continue
            if cap.copied and cap.copy_of is not None and \
                    self.rec.cap_var.get(cap.copy_of[0]) is not None:
                if self.kept_names is not None and var not in self.kept_names:
                    continue  # taken again by the pullback (views_of_copies)
                # the same elements as an earlier copy: a view of it (shared_copies)
                value: gast.expr = name(self.rec.cap_var[cap.copy_of[0]])
                for idx in cap.copy_of[1]:
                    value = gast.Subscript(value=value, slice=clone(idx), ctx=gast.Load())
                views.append(assign(name(var, gast.Store), value, s))
                continue
            if cap.copied:
                into = self.copied_into_column(var, n)
                if into is not None:
                    pre += into
                    continue
                at = cap.write
                pre.append(assign(name(var, gast.Store), call_node(
                    "copy_when_read", name(n), gast.Constant(self.plan.parsed.file, None),
                    gast.Constant(getattr(at, "lineno", 0), None),
                    gast.Constant(getattr(at, "col_offset", 0), None)), s))
                continue
            if cap.loop is not None:
                # rows not written yet: the same rows of the copy taken before the loop
                copied = self.copies[(id(cap.loop), cap.base)]
                pre.append(assign(name(var, gast.Store), gast.Subscript(
                    value=name(copied), slice=clone(cap.index), ctx=gast.Load()), s))
                continue
            call = call_node("capture", name(n), gast.Constant(self.plan.parsed.file, None),
                         gast.Constant(getattr(s, "lineno", 0), None),
                         gast.Constant(self.plan.user_name(n), None))
            if cap.after and id(s) in self.rec.saved_call and n in self.plan.objlike:
                # an object handed to a call: only the arrays of it the callee kept matter;
                # a list or dict handed to a function compiled here that reads its arrays
                # only through captures of its own (an optimizer step, linear in them):
                # watched by none of this one's (guards.capture watches the arrays of a list
                # or dict the callee kept)
                unread = self.plan.eff.kinds.get(n) in ("list", "dict") and \
                    self.dynamic_slots(s, n) == ()
                call.keywords = [gast.keyword(arg="watch", value=gast.Constant(False, None))
                                 if unread else gast.keyword(
                                     arg="within", value=name(self.rec.saved_call[id(s)]))]
            elif cap.after and id(s) in self.rec.saved_call and self.users_rule_call(s):
                # an argument of a user's rule: its guard copies it under either policy
                # (guards.RuleArgument)
                call.keywords = [gast.keyword(arg="within",
                                              value=name(self.rec.saved_call[id(s)]))]
            elif cap.after and id(s) in self.rec.saved_call:
                slots = self.dynamic_slots(s, n)
                if slots == ():
                    # an argument of a call of a function compiled here, whose pullback
                    # reads it only through captures of its own (still live, checked by a
                    # guarded write here): kept for it, watched by none of this one's
                    call.keywords = [gast.keyword(arg="watch",
                                                  value=gast.Constant(False, None))]
                elif slots is not None:
                    # an argument of a call resolved when it runs (self.rhs(u)): captured
                    # only if the callee's pullback reads it (guards.capture, passed=)
                    call.keywords = [
                        gast.keyword(arg="within", value=name(self.rec.saved_call[id(s)])),
                        gast.keyword(arg="passed", value=gast.Tuple(
                            elts=[gast.Constant(k, None) for k in slots], ctx=gast.Load()))]
            (post if cap.after else pre).append(assign(name(var, gast.Store), call, s))
        pre += views
        for w in self.plan.guarded.get(id(s), ()):
            if not w.container:  # a list's capture is a copy already
                pre.append(self.guard(s, w))
        if isinstance(s, gast.If):
            s2 = copy.copy(s)
            s2.body = self.fwd_block(s.body) or [gast.Pass()]
            s2.orelse = self.fwd_block(s.orelse)
            return pre + [s2]
        if isinstance(s, (gast.For, gast.While)):
            s2 = copy.copy(s)
            for (sid, n), cap in sorted(self.plan.caps.items(), key=lambda kv: kv[0][1]):
                key = (id(s), cap.base)
                if cap.loop is s and (sid, n) in self.rec.cap_var and key not in self.copies:
                    copied = self.copies[key] = self.namer.fresh(f"{cap.base}_before_loop")
                    at = cap.write
                    pre.append(assign(name(copied, gast.Store), call_node(
                        "copy_before_loop", name(cap.base),
                        gast.Constant(self.plan.parsed.file, None),
                        gast.Constant(getattr(at, "lineno", 0), None),
                        gast.Constant(getattr(at, "col_offset", 0), None)), s))
            body = self.fwd_block(s.body)
            tape = self.rec.tape_of.get(id(s))
            after: list[gast.stmt] = []
            if id(s) in self.rec.columns:
                pre += self.fill_float_tape(s, tape, body)
                after = self.array_columns_kept(s, tape)
            elif tape is not None:
                recorded = self.rec.records.get(id(s), [])
                target = {s.target.id} if isinstance(s, gast.For) else set()
                values = [self.rec.lengths.get(r) or self.rec.shape_of.get(r, (r,))[0]
                          for r in recorded if r not in target and
                          r not in self.rec.shape_after]
                init = self.init_conditional(s.body, values)
                unbound = {st.targets[0].id for st in init}  # None where a path skips them
                rec = gast.Expr(value=call_node(attr_node(tape, "append"), gast.Tuple(
                    elts=[self.kept(r, unbound) for r in recorded], ctx=gast.Load())))
                pos = record_position(body, self.plan.headers)
                body.insert(pos, rec)
                pre += [assign(name(tape, gast.Store), gast.List(elts=[], ctx=gast.Load()), s)]
                pre += init
            s2.body = body
            return pre + [s2] + after
        if isinstance(s, gast.Try):
            s2 = copy.copy(s)
            arm = self.rec.arm_of.get(id(s))
            flag, ran = self.rec.try_ran.get(id(s), (None, set()))
            s2.body = []
            inner = self.inner_ran()  # (a try last in the body of another)
            for b in s.body:
                s2.body += self.fwd_stmt(b)
                if id(b) in ran:
                    s2.body.append(assign(name(flag, gast.Store), gast.Constant(True, None), s))
                for outer in inner.get(id(b), ()):
                    s2.body.append(assign(name(outer, gast.Store), gast.Constant(True, None), s))
            s2.orelse = self.fwd_block(s.orelse)
            handlers = []
            for k, h in enumerate(s.handlers):
                h2 = copy.copy(h)
                # (the statement that raised may have changed a slot before: a call
                # of code adgen does not compile, its note not reached)
                h2.body = changes_noted_by_raise(self.at(h)) + self.fwd_block(h.body)
                if arm:
                    h2.body = [assign(name(arm, gast.Store), gast.Constant(k + 1, None), s)] \
                        + h2.body
                if flag:
                    h2.body = [gast.Expr(value=call_node(
                        "partial_try", name(flag), gast.Constant(self.plan.parsed.file, None),
                        gast.Constant(getattr(s, "lineno", 0), None)))] + h2.body
                handlers.append(h2)
            if flag:
                pre.append(assign(name(flag, gast.Store), gast.Constant(False, None), s))
            s2.handlers = handlers
            if arm:
                s2.body = s2.body + [assign(name(arm, gast.Store), gast.Constant(0, None), s)]
            return pre + [s2]
        if isinstance(s, (gast.Assign, gast.Expr)) and isinstance(s.value, gast.Call):
            call = s.value
            saved = self.rec.saved_call.get(id(s))
            rule = None
            obj = self.plan.resolve(call.func)
            if obj is not MISSING:
                rule = registry.lookup(obj)
            if saved is not None or (rule is not None and rule.is_rrule):
                saved = saved or self.rec.saved_call.setdefault(id(s), self.namer.fresh(
                    f"{callee_name(call)}_saved"))
                dynamic = False  # a callee found when the call runs
                if rule is not None and rule.is_rrule:
                    fcall = call_node("call_forward", clone(call.func), *call.args)
                    fcall.keywords = call.keywords  # f(x, scale=3.0): the rule gets scale
                    if getattr(obj, "__name__", None) == "call_starred" and \
                            getattr(obj, "__module__", None) == "adgen.runtime":
                        # f(*xs, **kw): which of f, xs and kw carry a derivative
                        fcall.keywords = fcall.keywords + self.passed_active(s, call)
                elif obj is not MISSING and is_python_function(obj):
                    info = self.plan.callee_info(obj)
                    self.rec.callees[info.name] = info
                    # arguments handed over as a copy taken just before the call
                    # (reverse_captures.copy_passed)
                    copies = {n: self.rec.cap_var[(sid, n)] for (sid, n), cap in
                              self.plan.caps.items() if sid == id(s) and cap.copied and
                              (sid, n) in self.rec.cap_var}

                    from adgen.transforms.reverse_plan_calls import call_args, packed_keyword

                    def passed(a: gast.expr) -> gast.expr:
                        if isinstance(a, gast.Name) and a.id in copies:
                            return name(copies[a.id])
                        return a

                    fcall = call_node(f"{info.name}_forward",
                                      *map(passed, call_args(self.plan, call, obj)))
                    fcall.keywords = [gast.keyword(arg=k.arg, value=passed(k.value))
                                      for k in call.keywords] + \
                        packed_keyword(self.plan, call, obj)
                else:
                    dynamic = True
                    fcall = call_node("call_forward", clone(call.func), *call.args)
                    fcall.keywords = call.keywords + self.passed_active(s, call)
                    if hasattr(call, READS_AFTER):  # (checked as it runs: unseen_calls)
                        setattr(fcall, READS_AFTER, getattr(call, READS_AFTER))
                res = s.targets[0] if isinstance(s, gast.Assign) else name(
                    self.rec.result_of.get(id(s), "_"), gast.Store)
                for container, var, after in self.rec.items_around.get(id(s), ()):
                    # the container's slots around the call (Calls.items_around)
                    snap = assign(name(var, gast.Store), call_node("items_at", name(container)), s)
                    if after in (HELD_AFTER, HELD_AFTER_ANY):
                        # what a name held_adjoint walks holds after the call (Calls._held_after)
                        post = [assign(name(var, gast.Store), call_node(
                            "held_items", name(container),
                            *([name(saved)] if after == HELD_AFTER else [])), s)] + post
                    elif after:
                        before = [v for c, v, a in self.rec.items_around[id(s)]
                                  if c == container and a is False]
                        if dynamic and before:
                            # the record before the call, where the callee changed no object
                            # (a method that only reads its object: items_at)
                            snap.value.args += [name(saved), name(before[0])]
                        post = [snap] + post
                    else:
                        pre = pre + [snap]
                if id(s) in self.rec.result_entry and isinstance(res, gast.Name):
                    # the result's items as the call returned them (Calls._entry)
                    post = [assign(name(self.rec.result_entry[id(s)], gast.Store),
                                   call_node("entry_items", name(res.id)), s)] + post
                # the elements the callee made, each on its own: the pullback builds the
                # tuple again with the arguments (Calls._saved_again)
                parts = [assign(name(v, gast.Store), _item(name(saved), path), s)
                         for path, v in self.rec.saved_parts.get(id(s), ())]
                return pre + [assign(gast.Tuple(elts=[res, name(saved, gast.Store)],
                                                ctx=gast.Store()), fcall, s)] + \
                    changes_noted_by_call(fcall, saved, self.at(s)) + parts + post
        return pre + [s] + changes_noted(s, self.plan.resolve_or_none, self.plan.kinds,
                                               self.at(s)) + post

    @staticmethod
    def at(s: gast.stmt) -> Callable[[gast.stmt], gast.stmt]:
        """Locates a statement the forward adds at ``s``'s line."""
        return lambda new: located_at(new, s)

    def exit_record(self, container: str) -> gast.expr:
        """``items_at(container)`` as the function returns; the record after its last call
        (``items_at(container, None, after, (written, ...))``) where only names were bound
        or written in place since (exit_records)."""
        from adgen.transforms.exit_records import record_at_exit

        found = record_at_exit(self.plan.fn, container, self.rec.items_around)
        if found is None:
            return call_node("items_at", name(container))
        after, written = found
        return call_node("items_at", name(container), gast.Constant(None, None), name(after),
                         gast.Tuple(elts=[name(w) for w in written], ctx=gast.Load()))

    def users_rule_call(self, s: gast.stmt) -> bool:
        """Whether ``s`` calls a user's ``adgen.rrule`` the compiler found."""
        call = getattr(s, "value", None)
        if not isinstance(call, gast.Call):
            return False
        obj = self.plan.resolve(call.func)
        return obj is not MISSING and users_rule(registry.lookup(obj))

    def dynamic_slots(self, s: gast.stmt, n: str) -> tuple[int | str, ...] | None:
        """Where the call of ``s``, one the dispatch resolves when it runs (a method of an
        object, a function held in a variable, a constructor), is given ``n``: its
        positional slots counted from the last (-1: the last) and its keywords; the capture
        watches ``n`` if the callee's pullback reads it (guards.callee_reads). For a call of
        a function compiled here, () where its pullback reads ``n`` only through captures of
        its own (``Compiled.reads_uncaptured``), else None, as where ``n`` is passed some
        other way (inside an expression, through ``*``, as the receiver, or is the
        result)."""
        call = s.value
        if not isinstance(call, gast.Call) or any(isinstance(a, gast.Starred)
                                                  for a in call.args):
            return None
        if isinstance(s, gast.Assign) and any(t.id == n for t in nodes_of(s.targets[0],
                                                                       gast.Name)):
            return None
        slots: list[int | str] = []
        for k, a in enumerate(call.args):
            if isinstance(a, gast.Name) and a.id == n:
                slots.append(k - len(call.args))
        for kw in call.keywords:
            if kw.arg is None:
                return None  # f(**opts)
            if isinstance(kw.value, gast.Name) and kw.value.id == n:
                slots.append(kw.arg)
        seen = sum(1 for x in nodes_of(call, gast.Name) if x.id == n)
        if not slots or seen != len(slots):
            return None
        obj = self.plan.resolve(call.func)
        if obj is not MISSING and is_python_function(obj):
            # () where the callee reads it only through captures of its own
            from adgen.transforms.reverse_plan_calls import args_callee_reads

            watched = args_callee_reads(self.plan, call, "reads_uncaptured")
            return None if n in watched else ()
        return tuple(slots)

    def describe(self, e: gast.expr) -> str:
        """``e``'s text in the user's names (a temporary: the expression it holds)."""
        e = clone(e)
        for sub in nodes_of(e, gast.Name):
            inner = self.plan.user_name(sub.id)
            sub.id = inner if inner.isidentifier() else operand_text(inner)
        text = src_text(e)
        if len(text) > 60 and isinstance(e, gast.Call):  # a long call: its function
            text = src_text(e.func) + "(...)"
        return text

    def foreign_objects(self) -> dict[int, list[str]]:
        """The free objects the forward checks, by top-level statement (foreign_values)."""
        if self._objects is None:
            self._objects = checked_objects(self.plan.fn, self.plan.act.active,
                                            self.plan.resolve)
        return self._objects

    def foreign_values(self) -> dict[int, gast.expr]:
        """The statements whose value the forward checks (analyses.foreign_values)."""
        if self._foreign is None:
            self._foreign = checked_values(
                self.plan.fn, self.plan.parsed.nested_defs,
                lambda st: st.value.args[0].value if is_marker(st) else None,
                self.plan.act.active, self.plan.resolve, self.plan.kinds)
        return self._foreign

    def fill_float_tape(self, s: gast.For, tape: str, body: list[gast.stmt]
                        ) -> list[gast.stmt]:
        """A typed tape (Plan.counted): one float64 or int64 array (a column) per recorded
        number, allocated before the loop; each iteration writes its row (the index, less the
        range's start)."""
        steps, cols = self.rec.columns[id(s)]
        writes: list[gast.stmt] = []
        for r, c in cols:
            if r not in self.written_at_copy:
                writes += self.column_row(s, r, c, name(r))
        pos = record_position(body, self.plan.headers)
        body[pos:pos] = writes
        alloc = assign(name(tape, gast.Store), call_node(
            "tape_columns", call_node("range", *[clone(a) for a in steps]),
            *[gast.Constant(f"float64[{self.rec.array_columns[r]}]"
                            if r in self.rec.array_columns else
                            self.plan.column_dtypes[r], None) for r, _ in cols]), s)
        split = assign(gast.Tuple(elts=[name(c, gast.Store) for _, c in cols],
                                  ctx=gast.Store()), name(tape), s)
        return [alloc, split]

    def column_row(self, s: gast.For, r: str, c: str, value: gast.expr) -> list[gast.stmt]:
        """``c[i - start] = value``: the row of ``r`` in its column ``c`` of the typed tape of
        the loop ``s``; a two-dimensional column is allocated at the first row, where the
        row's shape, the same in every iteration (array_columns.array_rows), is known."""
        steps = self.rec.columns[id(s)][0]
        row: gast.expr = name(s.target.id)
        if len(steps) == 3 and range_step(steps[2]) == -1:
            row = gast.BinOp(left=clone(steps[0]), op=gast.Sub(), right=row)
        elif len(steps) == 3:  # Plan.counted: a constant step
            row = gast.BinOp(left=gast.BinOp(left=row, op=gast.Sub(), right=clone(steps[0])),
                             op=gast.FloorDiv(), right=clone(steps[2]))
        elif len(steps) == 2:
            row = gast.BinOp(left=row, op=gast.Sub(), right=clone(steps[0]))
        out: list[gast.stmt] = []
        if r in self.rec.array_columns:
            shape = gast.BinOp(left=gast.Tuple(elts=[call_node("len", call_node(
                "range", *[clone(a) for a in steps]))], ctx=gast.Load()), op=gast.Add(),
                right=gast.Attribute(value=clone(value), attr="shape", ctx=gast.Load()))
            empty = gast.Compare(left=call_node("len", name(c)), ops=[gast.Eq()],
                                 comparators=[gast.Constant(0, None)])
            out.append(located_at(gast.If(test=empty, body=[assign(
                name(c, gast.Store), call_node(attr_node("np", "empty"), shape), s)],
                orelse=[]), s))
        out.append(assign(gast.Subscript(value=name(c), slice=row, ctx=gast.Store()),
                          value, s))
        return out

    def copied_into_column(self, var: str, part: str) -> list[gast.stmt] | None:
        """For a copy of a part taken where it is read (``copy_when_read``) that a typed
        tape keeps in a two-dimensional column: the part written into its row there, the
        row being the copy (no copy of its own); else None."""
        if var not in self.rec.array_columns:
            return None
        for lid, (_steps, cols) in self.rec.columns.items():
            for r, c in cols:
                if r == var and lid in self._loops:
                    self.written_at_copy.add(var)
                    return self.column_row(self._loops[lid], r, c, name(part))
        return None

    def array_columns_kept(self, s: gast.For, tape: str) -> list[gast.stmt]:
        """``tape = (t1_col, t41_col)`` after a typed tape's loop that has two-dimensional
        columns: each was allocated again at the loop's first row."""
        _steps, cols = self.rec.columns[id(s)]
        if not any(r in self.rec.array_columns for r, _ in cols):
            return []
        return [assign(name(tape, gast.Store), gast.Tuple(
            elts=[name(c) for _, c in cols], ctx=gast.Load()), s)]

    def guard(self, s: gast.stmt, w: Write) -> gast.stmt:
        t = w.target
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Subscript):
            region: gast.expr = call_node("write_region", name(t), index_value(
                clone(s.targets[0].slice)))
        elif isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) and \
                isinstance(s.value.func, gast.Attribute) and s.value.func.attr == "at" and \
                len(s.value.args) >= 2 and isinstance(s.value.args[0], gast.Name) and \
                s.value.args[0].id == t:
            # np.add.at(x, idx, v) writes x[idx]: the rows idx names
            region = call_node("write_region", name(t), clone(s.value.args[1]))
        else:
            region = name(t)
        extra = []
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Subscript) and \
                isinstance(s.value, gast.Name):
            extra = [name(s.value.id)]
        return gast.Expr(value=call_node(
            "before_write", name(t), region, gast.Constant(self.plan.policy, None),
            gast.Constant(self.plan.parsed.file, None),
            gast.Constant(getattr(s, "lineno", 0), None),
            gast.Constant(getattr(s, "col_offset", 0), None),
            gast.Constant(self.plan.construct(s), None), *extra))


def _shown(value: object) -> gast.expr:
    """A default's placeholder in the forward's signature: the value when it is a literal."""
    if value is None or type(value) in (int, float, bool, str):
        return gast.Constant(value, None)
    return gast.Constant(None, None)


def _item(value: gast.expr, path: tuple[int, ...]) -> gast.expr:
    """``value[i][j]`` for the path ``(i, j)``."""
    for k in path:
        value = gast.Subscript(value=value, slice=gast.Constant(k, None), ctx=gast.Load())
    return value


def _first_call_given(fn: gast.FunctionDef, p: str) -> gast.AST:
    """The first call in ``fn`` handed ``p`` (``p.scale_by(q)``, ``helper(p)``): where a
    callee changes it (the function's own line where there is none)."""
    for node in sorted((n for n in walk(fn) if isinstance(n, gast.Call) and
                        getattr(n, "lineno", None)), key=lambda n: n.lineno):
        given = list(node.args) + [k.value for k in node.keywords]
        if isinstance(node.func, gast.Attribute):
            given.append(node.func.value)
        if any(isinstance(a, gast.Name) and a.id == p for a in given):
            return node
    return fn


def _number_or_array(kind: Any) -> bool:
    """Whether an analyses.kinds entry is a number's or an array's (a rank)."""
    return kind == NUMBER or (isinstance(kind, int) and not isinstance(kind, bool))
