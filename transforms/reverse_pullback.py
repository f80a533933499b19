"""The pullback emitter: reverses the statements of a planned function into its pullback,
``<f>_pullback(saved, out_bar, sh=None) -> tuple`` (one cotangent per parameter), and records
what the forward must keep for it (a :class:`Recording`: tapes, arms, saved callee results,
captures).

- Loops are reversed over a tape of one tuple per iteration (or a typed tape: one column per
  recorded number); the pullback reads the tape and never pops it, so it can run again.
- An if is reversed on its recorded test; a try on the recorded arm that ran.
- Value adjoints (``x_bar``) are assigned on first contribution and added to afterwards; the
  emitter tracks statically which are defined (``state``), so an adjoint that is never
  contributed gets no code at all. Adjoints an inner block adds to are materialised with
  ``zeros_like`` before it.
- Names that may view a buffer written in place use shadow memory (``sh.of(x)``), where the
  adjoint of a view is the same view of its base's adjoint.
- Operations are reversed through their rules by :mod:`reverse_ops`; element and slice
  stores, attribute stores and augmented assignments by :mod:`reverse_stores`; calls of user
  functions and rrules by :mod:`reverse_calls`; loops and try statements by
  :mod:`reverse_blocks`; what a loop's row records (and what its reversed body reads or
  computes again instead) by :mod:`reverse_rows`. Each of these is imported at the first
  statement that needs it (issue 15's cold start)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gast
from adgen.transforms.analyses.activity import NONDIFF_ATTRS
from adgen.transforms.analyses.kinds import NUMBER
from adgen.transforms.desugar import assign, name
from adgen.transforms.hoist_defs import is_marker
from adgen.transforms.lean_pullback import LeanFacts
from adgen.transforms.names import Namer
from adgen.transforms.node_index import nodes_of
from adgen.transforms.pullback_parameters import popped_first, returned, taken_over
from adgen.transforms.reverse_ast import (
    MISSING,
    Recording,
    args_node,
    attr_node,
    call_node,
    comment_node,
    is_copy_of,
    parse_stmts,
    read_before_bound,
    src_text,
    stored_names,
)
from adgen.transforms.reverse_ops import Operations
from adgen.transforms.reverse_plan import Plan
from adgen.transforms.reverse_plan_rules import op_of
from adgen.transforms.shape_saves import shape_reads
from adgen.transforms.shared_inverse import share_inverses
from adgen.transforms.specialize import (
    accumulate_in_place,
    first_slice_writes,
    first_writes,
    known_shapes,
    split_concatenations,
)
from adgen.transforms.sum_adjoints import (
    broadcast_by_the_addition,
    scalar_sums,
)
from adgen.transforms.user_calls import is_user_call, refuse_active_partial
from adgen.transforms.walk import clone

from adgen.errors import MissingRuleError, UnsupportedError
from adgen.rules import registry

if TYPE_CHECKING:
    from adgen.transforms.reverse_blocks import Blocks
    from adgen.transforms.reverse_calls import Calls
    from adgen.transforms.reverse_rows import Rows
    from adgen.transforms.reverse_stores import Stores


class Pullback:
    """Emits the pullback of one planned function."""

    def __init__(self, plan: Plan, namer: Namer) -> None:
        self.plan = plan
        self.namer = namer
        self.rec = Recording(sites=list(plan.decisions))
        self.adj: dict[str, str] = {}
        self.last_line: int | None = None
        self._stores: Stores | None = None
        self.ops = Operations(self)
        self._calls: Calls | None = None
        self._rows: Rows | None = None
        self._blocks: Blocks | None = None
        # per container name: the arrays kept in shadow memory that may be its items
        self._tracked_items: dict[str, tuple[str, ...]] = {}

    @property
    def stores(self) -> Stores:
        """The reverse of stores, reads by index and calls made for their effect
        (:mod:`reverse_stores`), made at the first: the first gradient of a function with
        none does not import it (issue 15's cold start)."""
        if self._stores is None:
            from adgen.transforms.reverse_stores import Stores

            self._stores = Stores(self)
        return self._stores

    @property
    def calls(self) -> Calls:
        """The reverse of calls of the user's functions and rrules (:mod:`reverse_calls`),
        made at the first (as :attr:`stores`)."""
        if self._calls is None:
            from adgen.transforms.reverse_calls import Calls

            self._calls = Calls(self)
        return self._calls

    @property
    def rows(self) -> Rows:
        """What the rows of this function's loops record (:mod:`reverse_rows`), made at the
        first loop: the first gradient of a function without loops does not import it and
        the seven modules only it needs (the analyses of loops)."""
        if self._rows is None:
            from adgen.transforms.reverse_rows import Rows

            self._rows = Rows(self)
        return self._rows

    def emit(self) -> gast.FunctionDef:
        """The pullback; ``self.rec`` then says what the forward must keep."""
        state: set[str] = set()
        params = [a.id for a in self.plan.fn.args.args]
        self.parts, cparams, joined = taken_over(self, params, state)
        rev = self.rev_block(self.plan.fn.body, state, top=True)
        # (a copy of a parameter, joined from it and a new one, too: self_dot_2 in the jvp
        # code of a method counting self.i += 1 beside self.data[self.i] = v; the caller's
        # adjoint of self_dot.data stayed in the deposit, and hessian was zero, silently)
        rev = self.exit_items_to_shadows([*cparams, *joined]) + rev
        pull_body: list[gast.stmt] = []
        pull_body += parse_stmts("top = sh is None\nif top:\n    sh = ShadowMap()")
        first = popped_first(self, params)
        ret_parts = returned(self, params, state, first)
        popped = (f"{', '.join(first.values())} = {(None,) * len(first)} if top else "
                  f"sh.pop_each(({', '.join(first)},))\n") if first else ""
        tail = parse_stmts(popped +
                           f"return ({', '.join(ret_parts)}{',' if len(ret_parts) == 1 else ''})")
        body = rev + tail
        if self.plan.kinds:
            # a full sum's adjoint that only scales an array of the summed one's shape: the
            # number itself (out_bar * 2 * out), not an array filled with it (nor the shape
            # kept for it)
            scalar_sums(self, body)
            # a shadow no other lookup reaches is a zero of the array's shape, which is then
            # all the pullback keeps of it (ADI's q and v); imported where the pullback looks
            # a shadow up at its top level (x_bar = sh.of(x)): most keep none
            if any(isinstance(st, gast.Assign) and isinstance(st.value, gast.Call) and
                   isinstance(st.value.func, gast.Attribute) and st.value.func.attr == "of"
                   for st in body):
                from adgen.transforms.unshared_shadows import unshared_shadows

                unshared_shadows(body, self.plan)
        needed = self.free_names(body, set()) | set(cparams) | set(joined)
        saved = sorted(needed - {"sh", "top", "out_bar", "saved"} - self.globals_used(needed))
        if self.plan.kinds:
            # an array the pullback reads only for its shape is handed over as its shape,
            # not kept alive for the backward pass (np.sum(h ** 2): the adjoint needs h ** 2's
            # shape only)
            saved = self.shapes_not_arrays(body, saved)
        self.rec.saved_names = saved
        if saved:
            unpack = parse_stmts(f"({', '.join(saved)}{',' if len(saved) == 1 else ''}) = saved")
        else:
            unpack = []
        withdraws = [assign(name(self.bar(p), gast.Store), call_node(attr_node("sh", "withdraw"),
                                                                  name(p)), self.plan.fn)
                     for p in [*cparams, *joined]]
        pull_body += unpack + withdraws + body
        if self.plan.kinds:
            pull_body = [known_shapes(st, self.plan.kinds) for st in pull_body]
            accumulate_in_place(pull_body)
            first_writes(pull_body, self.plan.kinds)
            # the parts of a concatenation's adjoint as slices, where their shapes are kept
            # (of an ndarray, np.shape and shape_tree are one tuple)
            shape_ranks = {shape: self.plan.kinds[n]
                           for shape, (n, _how) in self.rec.shape_of.items()
                           if isinstance(self.plan.kinds.get(n), int)}
            split_concatenations(pull_body, shape_ranks, self.plan.kinds, self.namer.fresh)
            # slices of a fresh zero adjoint written for the first time: stored, not added
            first_slice_writes(pull_body, shape_ranks, self.plan.kinds)
            # one inverse per matrix the pullback inverts anyway, for its solves too
            pull_body = share_inverses(pull_body, self.plan.kinds, self.plan.defs,
                                       self.plan.def_count, self.namer.fresh,
                                       self.plan.resolve_or_none)
        pullback = gast.FunctionDef(
            name=f"{self.plan.fname}_pullback",
            args=args_node(["saved", "out_bar", "sh"], defaults=[gast.Constant(None, None)]),
            body=pull_body, decorator_list=[], returns=None, type_comment=None,
            type_params=[])
        return pullback

    def lean_facts(self) -> LeanFacts:
        """What :mod:`lean_pullback` may assume of this pullback's names (after cleanup):
        the adjoints of arrays bound outside every loop, with their shapes' equalities, and
        the saved values of known dtype. Empty without a signature's kinds."""
        plan = self.plan
        if not plan.kinds:
            return LeanFacts()
        arrays = {b: x for x, b in self.adj.items()
                  if type(plan.kinds.get(x)) is int and
                  plan.loops_of.get(id(plan.def_stmt.get(x)), ()) == ()}
        weak = {n for n, d in plan.column_dtypes.items() if d in ("int64", "float64")}
        # every name holding an array (a value or its adjoint), inside loops too
        ranks = {n: k for n, k in plan.kinds.items() if type(k) is int}
        ranks.update((b, plan.kinds[x]) for x, b in self.adj.items()
                     if type(plan.kinds.get(x)) is int)
        return LeanFacts(arrays, plan.same_shape, set(plan.f64_arrays), weak,
                         in_place=plan.policy != "strict", ranks=ranks)

    def shapes_not_arrays(self, body: list[gast.stmt], recorded: list[str]) -> list[str]:
        """What a loop records for the reversed ``body``: the arrays it reads only for their
        shape are recorded as shapes (shape_saves), so the tape does not keep them alive
        for the backward pass. Only arrays known for this signature (analyses.kinds) are
        considered: their shape is one attribute read, and a number is as cheap to keep as
        its shape. The names the loop binds are the ones ``body`` reads."""
        kinds = self.plan.kinds
        params = {a.id for a in self.plan.fn.args.args}
        candidates = {r for r in recorded if isinstance(kinds.get(r), int) and
                      r not in params and r not in self.plan.objlike}
        shaped = shape_reads(body, candidates, candidates, self.namer.fresh)
        if shaped and self._rows is not None:
            self._rows.loop_reads.clear()  # (the reversed loops in body are rewritten too)
        for n, (shape, how) in shaped.items():
            self.rec.shape_of[shape] = (n, how)
            self.rec.extra_fwd.add(shape)
        return [shaped[r][0] if r in shaped else r for r in recorded]

    def bar(self, n: str) -> str:
        if n not in self.adj:
            self.adj[n] = self.namer.reserve(f"{n}_bar")
        return self.adj[n]

    def globals_used(self, names: set[str]) -> set[str]:
        return {n for n in names if n not in self.plan.namer_locals and n not in self.rec.extra_fwd
                and n not in self.adj.values()}

    def free_names(self, stmts: list[gast.stmt], bound: set[str]) -> set[str]:
        """Forward names a block of generated pullback code reads before binding them
        (``bound``: the names bound before it)."""
        return self.forward_names(read_before_bound(stmts) - bound)

    def forward_names(self, names: set[str]) -> set[str]:
        """The names of ``names`` the forward binds (its locals and what this pass adds)."""
        fwd = self.plan.namer_locals | self.rec.extra_fwd
        return {n for n in names if n in fwd}

    def materialize(self, names: set[str], state: set[str]) -> list[gast.stmt]:
        """Zero adjoints that an inner block will add to, so every path defines them."""
        out = []
        for n in sorted(names):
            if self.plan.tracked(n) or not self.plan.act.active(n):
                continue
            b = self.bar(n)
            if b not in state:
                out.append(assign(name(b, gast.Store), call_node("zeros_like", name(n)),
                                  self.plan.fn))
                state.add(b)
                state.add("owned:" + b)
        return out

    def own(self, n: str, b: str, state: set[str], like: gast.AST) -> list[gast.stmt]:
        """Makes ``b`` (the adjoint of n) an object only this pullback holds, to add in place."""
        part = getattr(self, "parts", {}).get(n)
        if part is not None:
            # the caller's adjoint of the part, taken out of the parameter's (given back by
            # the read that bound n)
            pb = self.bar(part.param)
            taken = call_node("take_attr", name(pb), gast.Constant(part.attr, None)) \
                if part.attr is not None else call_node("take_item", name(pb), clone(part.key))
            # (n is read nowhere else: parameter_parts), so nothing else adds to b; a holder
            # built here whose adjoint nothing made yet (no later read) gives zero
            start = call_node("copy_adjoint", call_node("or_zeros", taken, name(n))) \
                if pb in state else call_node("zeros_like", name(n))
            state |= {b, "owned:" + b}
            return [assign(name(b, gast.Store), start, like)]
        if b not in state:
            state |= {b, "owned:" + b}
            return [assign(name(b, gast.Store), call_node("zeros_like", name(n)), like)]
        if "owned:" + b not in state:
            state.add("owned:" + b)
            return [assign(name(b, gast.Store), call_node("copy_adjoint", name(b)), like)]
        return []

    def rev_block(self, stmts: list[gast.stmt], state: set[str], top: bool = False
                  ) -> list[gast.stmt]:
        out: list[gast.stmt] = []
        skip_next = False
        for i in range(len(stmts) - 1, -1, -1):
            s = stmts[i]
            if skip_next:
                skip_next = False
                continue
            if isinstance(s, gast.AugAssign) and i > 0 and is_copy_of(stmts[i - 1], s):
                code = self.stores.rev_augassign(s, stmts[i - 1], state)
                skip_next = True
            else:
                code = self.rev_stmt(s, state)
            if code:
                line = getattr(s, "lineno", None)
                if line and line != self.last_line:
                    code = [comment_node(f"line {line}: {self.plan.source_line(line)}")] + code
                    self.last_line = line
                out.extend(code)
        return out

    @property
    def blocks(self) -> Blocks:
        """The reverse of loops and try statements (:mod:`reverse_blocks`), made at the
        first (as :attr:`stores`)."""
        if self._blocks is None:
            from adgen.transforms.reverse_blocks import Blocks

            self._blocks = Blocks(self)
        return self._blocks

    def rev_stmt(self, s: gast.stmt, state: set[str]) -> list[gast.stmt]:
        if is_marker(s):
            return []  # a nested def: its gradient flows when it is called
        if isinstance(s, gast.Return):
            if s.value is not None and self.plan.active(s.value):
                n = s.value.id
                if not self.plan.tracked(n) and n not in self.adj and \
                        n not in self.plan.headers and \
                        self.plan.eff.kinds.get(n) is None:
                    # the returned value's adjoint is the pullback's argument itself
                    self.adj[n] = "out_bar"
                    state.add("out_bar")
                    return []
                if self.plan.tracked(n):
                    # a caller whose result shares this buffer passes its shadow as out_bar:
                    # that adjoint is already in place
                    b = self.bar(n)
                    state.add(b)
                    return [assign(name(b, gast.Store), call_node("add_out", name("sh"), name(n),
                                                              name("out_bar")), s)]
                return self.contribute(n, name("out_bar"), state, copy_shadow=True)
            return []
        if isinstance(s, gast.Assign):
            t = s.targets[0]
            if isinstance(t, gast.Name):
                return self.rev_assign(s, t.id, state)
            if isinstance(t, gast.Subscript):
                return self.stores.rev_store(s, state)
            if isinstance(t, gast.Attribute):
                return self.stores.rev_setattr(s, state)
            return []
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call):
            return self.stores.rev_expr_call(s, state)
        if isinstance(s, gast.If):
            return self.rev_if(s, state)
        if isinstance(s, (gast.For, gast.While)):
            return self.blocks.rev_loop(s, state)
        if isinstance(s, gast.Try):
            return self.blocks.rev_try(s, state)
        if isinstance(s, gast.AugAssign):
            raise UnsupportedError("an augmented assignment in this position is not supported",
                                   self.plan.loc(s))
        return []

    def rev_if(self, s: gast.If, state: set[str]) -> list[gast.stmt]:
        inner = self.plan.contributed_in(s.body + s.orelse)
        inner_defined = stored_names(s.body + s.orelse)
        pre = self.materialize(inner - inner_defined, state)
        s1, s2 = set(state), set(state)
        self.last_line = None
        body = self.rev_block(s.body, s1)
        self.last_line = None
        orelse = self.rev_block(s.orelse, s2)
        # an adjoint defined in only one arm is zero in the other; also one defined after the
        # if that an arm binds again (a name a loop carries, `r2 = 0.0` in the arm): before
        # that arm, the name held another value, whose adjoint starts at zero there
        self.zero_in_arms(s, [body, orelse], [s1, s2], state, stored_names(s.body + s.orelse))
        owned_both = {m for m in s1 & s2 if m.startswith("owned:")}
        state |= {m for m in s1 | s2 if not m.startswith("owned:")} | owned_both
        if not body and not orelse:
            return pre
        test = clone(s.test)
        return pre + [gast.If(test=test, body=body or [gast.Pass()], orelse=orelse)]

    def zero_in_arms(self, s: gast.stmt, codes: list[list[gast.stmt]], states: list[set[str]],
                     state: set[str], arm_local: set[str]) -> None:
        """Where the reversed arms of ``s`` (an if's two, a try's) end with different adjoints
        defined (``states``, from ``state`` where the pullback enters ``s``), the arms without
        one define it as zero: an adjoint another arm defines, and one defined after ``s``
        that an arm binds again (a name a loop carries, ``r2 = 0.0`` in the arm: before that
        arm it held another value, whose adjoint starts at zero there; kept, it added the
        later iteration's adjoint into the earlier one's, silently, until session 25)."""
        defined = set().union(*states)
        for code, st in zip(codes, states):
            for b in sorted(m for m in defined - st if not m.startswith("owned:")):
                n = next((k for k, v in self.adj.items() if v == b), None)
                if n is None or not self.plan.act.active(n) or \
                        n in arm_local and (b not in state or self.plan.tracked(n)):
                    continue
                zero = call_node(attr_node("sh", "of"), name(n)) if self.plan.tracked(n) \
                    else call_node("zeros_like", name(n))
                code.append(assign(name(b, gast.Store), zero, s))

    def contribute(self, n: str, value: gast.expr, state: set[str], *, may_be_none: bool = False,
                   copy_shadow: bool = False, items: gast.expr | None = None
                   ) -> list[gast.stmt]:
        """Adds ``value`` to the adjoint of ``n``; ``items``: for a container, its slots the
        adjoint is that of (``runtime.items_at`` before a call; default: as they are when
        the pullback runs). A nested def or lambda has no adjoint of its own: the values it
        closes over get theirs where it is called (its pullback deposits them in shadow
        memory), so an item of ``[lambda t: t * a, g]`` adds nothing here (its adjoint read
        the lifted function, which the forward did not save: a raw NameError)."""
        if not self.plan.act.active(n) or \
                any(d.name == n for d in self.plan.parsed.nested_defs):
            return []
        b = self.bar(n)
        if may_be_none:
            # a container's adjoint may lack an entry (zero): fill it in like the primal
            value = call_node("or_zeros", value, name(n))
        if b in state and isinstance(self.plan.kinds.get(n), int):
            value = broadcast_by_the_addition(n, value)
        if self.plan.eff.kinds.get(n) == "list":
            # a rule may give a list's adjoint as an array (np.array, np.stack): as rows
            value = call_node("list_adjoint", value)
        if self.plan.tracked(n):
            # (imported where an adjoint is kept in shadow memory: most functions keep none)
            from adgen.transforms.analyses.real_parts import real_part_views

            out = []
            if b not in state:
                out.append(assign(name(b, gast.Store), self.shadow(n, state), self.plan.fn))
                state.add(b)
            if n in real_part_views(self.plan.fn):
                # z.real's shadow is float64 in every mode: a complex cotangent adds its real
                # part (the adjoint of a real value)
                value = call_node("cotangent_as", value, attr_node(b, "dtype"))
            out.append(gast.AugAssign(target=name(b, gast.Store), op=gast.Add(), value=value))
            return out
        if b in state:
            if self.plan.eff.kinds.get(n) in ("list", "dict", "object") or self.plan.structured(n):
                new = call_node("add", name(b), value)
                state.discard("owned:" + b)
            else:
                new = gast.BinOp(left=name(b), op=gast.Add(), right=value)
                state.add("owned:" + b)
            return [assign(name(b, gast.Store), new, self.plan.fn)] + self.to_shadows(n, items)
        state.add(b)
        state.discard("owned:" + b)
        return [assign(name(b, gast.Store), value, self.plan.fn)] + self.to_shadows(n, items)

    def to_shadows(self, n: str, items: gast.expr | None = None) -> list[gast.stmt]:
        """For a list, tuple, dict or object ``n`` that may hold arrays kept in shadow memory
        (written in place): their parts of ``n``'s adjoint go to their shadows at once, since
        the pullbacks of writes into them (earlier in the function) read the shadows before
        the pullback of the statement that put them into ``n`` is reached. ``items``: the
        slots the adjoint is that of (see ``contribute``)."""
        arrays = self.tracked_items(n)
        if not arrays:
            return []
        b = self.bar(n)
        return [assign(name(b, gast.Store), call_node(
            "items_to_shadows", name("sh"), items or name(n), name(b),
            gast.Tuple(elts=[name(e) for e in arrays], ctx=gast.Load())), self.plan.fn)]

    def exit_items_to_shadows(self, cparams: list[str]) -> list[gast.stmt]:
        """For each container parameter whose adjoint the pullback takes over from the caller
        (sh.withdraw) and that holds arrays this function writes in place: the adjoint the
        caller handed over is that of its slots as the function returned (a caller's
        shadows_to_items put the shadows of its arrays there), while this pullback reads and
        kills those arrays' adjoints in shadow memory. They move there first, found by the
        slots as the function left them (the forward keeps them, runtime.items_at, as the
        items around the final return). Left in the parameter's adjoint, the gradient of
        what ``h.b[1:] = v`` overwrote went on to the array h.b held before (g(h) rebinding
        h.a, then writing h.b from it, gave b a gradient it has not, silently)."""
        ret = self.plan.fn.body[-1] if self.plan.fn.body else None
        if not isinstance(ret, gast.Return):
            return []
        out: list[gast.stmt] = []
        for p in cparams:
            arrays = self.tracked_items(p)
            if not arrays:
                continue
            v = self.namer.fresh(f"{p}_exit")
            self.rec.extra_fwd.add(v)
            self.rec.items_around.setdefault(id(ret), []).append((p, v, False))
            b = self.bar(p)
            # (a saved array a caller's guard copied stands for the one the slot holds,
            # remap_saved: p.step(dt) in a loop, step rebinding self.v and writing self.x[:],
            # gave 2.45 for 4.68)
            out.append(assign(name(b, gast.Store), call_node(
                "items_to_shadows", name("sh"), name(v), name(b),
                gast.Tuple(elts=[call_node(attr_node("sh", "through_stand_in"), name(e))
                                 for e in arrays], ctx=gast.Load())), self.plan.fn))
        return out

    def _handed_on(self, n: str) -> bool:
        """Whether list ``n`` is an argument (or in one: ``construct_jvp(C, (lst,), ...)``)
        of a call of a class or of the user's code, which may keep it."""
        for c in nodes_of(self.plan.fn, gast.Call):
            if not isinstance(c, gast.Call) or not any(
                    isinstance(x, gast.Name) and x.id == n for a in c.args + [
                        k.value for k in c.keywords] for x in gast.walk(a)):
                continue
            obj = self.plan.resolve(c.func)
            if isinstance(obj, type) or is_user_call(self.plan, c) or \
                    getattr(obj, "__name__", "") in ("construct_jvp", "call_jvp",
                                                     "call_forward"):
                return True
        return False

    def tracked_items(self, n: str) -> tuple[str, ...]:
        """The arrays kept in shadow memory (written in place) that the list, tuple, dict or
        object ``n`` may hold."""
        items = self._tracked_items.get(n)
        if items is None:
            items = self._tracked_items[n] = self._items_in_shadows(n)
        return items

    def _items_in_shadows(self, n: str) -> tuple[str, ...]:
        """The tracked arrays that may be items of ``n`` (they share a buffer of it); which
        of them are, is checked by identity when the pullback runs."""
        if self.plan.tracked(n) or n in self.plan.numeric or \
                self.plan.kinds.get(n) == NUMBER or isinstance(self.plan.kinds.get(n), int) or \
                self.plan.eff.kinds.get(n) not in ("list", "dict", "object", None):
            return ()  # (a number or an array holds no items)
        mine = self.plan.eff.buffers.get(n, set())
        return tuple(sorted(e for e, bufs in self.plan.eff.buffers.items()
                            if e != n and bufs & mine and self.plan.tracked(e) and
                            self.plan.act.active(e)))

    def g_of(self, t: str, state: set[str]) -> gast.expr | None:
        """The adjoint of ``t`` as an expression, or None when it is (statically) zero."""
        if not self.plan.act.active(t):
            return None
        b = self.bar(t)
        if self.plan.tracked(t):
            return self.shadow(t, state)
        return name(b) if b in state else None

    def rev_assign(self, s: gast.Assign, t: str, state: set[str]) -> list[gast.stmt]:
        out = self._rev_assign(s, t, state)
        # before this definition, t held another value (a loop header's previous iteration)
        if not self.plan.tracked(t):
            state.discard(self.bar(t))
            state.discard("owned:" + self.bar(t))
        return out

    def _rev_assign(self, s: gast.Assign, t: str, state: set[str]) -> list[gast.stmt]:
        v = s.value
        refuse_active_partial(self.plan, s, v)
        g = self.g_of(t, state)
        if isinstance(v, gast.Name):
            if g is None or not self.plan.act.active(v.id):
                return []
            if self.plan.tracked(t) and self.plan.tracked(v.id):
                return []  # the same buffer: one shadow
            return self.contribute(v.id, g, state, copy_shadow=self.plan.tracked(t))
        if g is None:
            if isinstance(v, gast.Call) and is_user_call(self.plan, v):
                from adgen.transforms.reverse_plan_calls import mutating_call

                if mutating_call(self.plan, v):
                    return self.calls.rev_user_call(s, v, t, state, forced=True)
                if self.plan.act.active(t) and self.calls.may_hold_arrays(t):
                    # s = make(x); u = s["u"]; u[0] = 5.0: s got no adjoint of its own, the
                    # arrays in it keep theirs in shadow memory (Calls.rev_user_call hands
                    # them to make's pullback)
                    return self.calls.rev_user_call(s, v, t, state, forced=False)
            elif isinstance(v, gast.Call) and self.calls.may_set_owner(v):
                # call_jvp(self.setup, (), (), {}, self, self_dot) whose result nothing reads:
                # the method may set attributes of self and self_dot, read after it (a
                # __post_init__ in an __init__'s jvp code); its pullback runs for those
                return self.calls.rev_rrule(s, t, gast.Constant(None, None), state)
            elif isinstance(v, gast.Call):
                obj = self.plan.resolve(v.func)
                if obj is not MISSING and registry.lookup(obj) is None:
                    # _ = operator.setitem(y, 1, v), heapq.heappush(h, v) inside a test
                    from adgen.transforms.effect_calls import refuse_unknown_effect

                    refuse_unknown_effect(self.plan, s, v, obj, result_used=True)
            written = next((k.value for k in v.keywords if k.arg == "out"), None) \
                if isinstance(v, gast.Call) else None
            if isinstance(written, gast.Name) and self.plan.tracked(written.id) and \
                    self.plan.act.active(written.id):
                # f(..., out=o) writes values without a derivative (of arguments not
                # differentiated) over o: o's old contents get no adjoint from here back
                region = gast.Subscript(value=self.shadow(written.id, state),
                                        slice=gast.Constant(Ellipsis, None), ctx=gast.Store())
                return [assign(region, gast.Constant(0.0, None), s)]
            if not (isinstance(v, gast.Call) and self.plan.act.active(t) and
                    self.plan.eff.kinds.get(t) == "tuple" and op_of(self.plan, s) is not None):
                return []
            # r = np.linalg.svd(M); r.S[0] = 0.0: r got no adjoint of its own (its fields
            # were read as tracked attributes), its arrays keep theirs in shadow memory:
            # the rule runs on zeros, into which apply_rule moves them (with_shadows)
            g = call_node("zeros_like", name(t))
        if isinstance(v, (gast.List, gast.Tuple)):
            out = []
            if isinstance(v, gast.List) and self._handed_on(t):
                # a list handed to a call that may keep it (o = Recorder(lst)): items its
                # object's methods append later must have been taken back by now
                out.append(gast.Expr(value=call_node("made_list_adjoint", g,
                                                     gast.Constant(len(v.elts), None))))
            for k, e in enumerate(v.elts):
                if self.plan.active(e):
                    out += self.contribute(e.id, call_node("item", g, gast.Constant(k, None)),
                                           state, may_be_none=True)
            return out
        if isinstance(v, gast.Dict):
            out = []
            for key, e in zip(v.keys, v.values):
                if self.plan.active(e):
                    out += self.contribute(e.id, call_node("item", g, clone(key)), state,
                                           may_be_none=True)
            return out
        if isinstance(v, gast.Subscript):
            return self.stores.rev_getitem(s, v, t, g, state)
        if isinstance(v, gast.Attribute) and v.attr not in NONDIFF_ATTRS:
            from adgen.rules import methods

            if v.attr not in methods.ATTRIBUTES:
                if not self.plan.active(v.value):
                    return []
                if self.plan.tracked(t):
                    # a tracked attribute's adjoint lives in shadow memory: that of the object's
                    # stored array, which a property's new array is not (refused there)
                    return [gast.Expr(value=call_node("stored_attribute", name(v.value.id),
                                                      gast.Constant(v.attr, None)))]
                return self.contribute(v.value.id, call_node("attr_adjoint", name(v.value.id),
                                                         gast.Constant(v.attr, None), g),
                                       state, may_be_none=True)
        if isinstance(v, gast.Call) and is_user_call(self.plan, v):
            return self.calls.rev_user_call(s, v, t, state, forced=False)
        if isinstance(v, gast.Call) and any(k.arg == "out" for k in v.keywords) and \
                self.plan.tracked(t):
            return self.ops.rev_out_call(s, v, t, state)
        # (an out= call of a buffer whose adjoints are values, Plan.value_chains: the
        # operation's rule, as if it made a new array)
        op = op_of(self.plan, s)
        if op is None:
            if isinstance(v, (gast.Compare, gast.BoolOp)) or (
                    isinstance(v, gast.UnaryOp) and isinstance(v.op, gast.Not)):
                return []
            if isinstance(v, gast.Call):
                return self.ops.missing_rule(s, v)
            if isinstance(v, (gast.BinOp, gast.UnaryOp)):
                raise MissingRuleError(f"no derivative rule for the operator in {src_text(v)}",
                                       self.plan.loc(s), hint="this is a gap in adgen's rules: "
                                       "rewrite the expression with NumPy functions")
            return []
        rule, bound = op
        return self.ops.apply_rule(s, rule, bound, t, g, state)

    def read_value(self, s: gast.stmt, a: Any, after: bool = False) -> gast.expr:
        if isinstance(a, str):
            a = name(a)
        if isinstance(a, gast.Name):
            key = (id(s), a.id)
            if key in self.plan.caps:
                var = self.rec.cap_var.get(key)
                if var is None:
                    var = self.rec.cap_var[key] = self.namer.fresh(f"saved_{a.id}_")
                    self.rec.extra_fwd.add(var)
                if self.plan.caps[key].loop is not None or self.plan.caps[key].copied:
                    return name(var)  # a copy (or a view of one): no guard watches it
                return gast.Attribute(value=name(var), attr="value", ctx=gast.Load())
            return name(a.id)
        if isinstance(a, (gast.Tuple, gast.List)):
            node = clone(a)
            node.elts = [self.read_value(s, e) for e in a.elts]
            return node
        return clone(a)

    def shadow(self, n: str, state: set[str]) -> gast.expr:
        """The shadow of tracked ``n``: its adjoint's name when bound, else the view of the
        array it views, else ``sh.of(n)``."""
        found = self.shadow_at_hand(n, state)
        return found if found is not None else call_node(attr_node("sh", "of"), name(n))

    def shadow_at_hand(self, n: str, state: set[str]) -> gast.expr | None:
        b = self.bar(n)
        if b in state and self.plan.tracked(n):
            return name(b)
        view = self.plan.view_of.get(n)
        if view is None:
            return None
        base = self.shadow_at_hand(view[0], state)
        if base is None or view[1] is None:
            return base
        return gast.Subscript(value=base, slice=clone(view[1]), ctx=gast.Load())
