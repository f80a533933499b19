"""The reverse of loops and try statements, for the pullback emitter (``reverse_pullback``,
whose ``Pullback.blocks`` makes one :class:`Blocks` at the first such statement: the first
gradient of a function with neither does not import it, issue 15's cold start).

- A loop (``for`` or ``while``) is reversed over the rows its forward records
  (``reverse_rows.Rows.reversed_loop``): the adjoints it carries are defined before it and
  again at the end of each reversed iteration; a buffer it binds is another object in each
  iteration.
- A try statement is reversed on the arm that ran (recorded by the forward: ``arm``); a body
  that may raise after a statement with a lasting effect ran is flagged (``partial_try``).

Input: a statement of a planned function and the emitter's ``state`` (the adjoints defined).
Output: its pullback statements; what the forward must keep goes into the emitter's
``Recording``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import gast
from adgen.transforms.desugar import assign, name
from adgen.transforms.node_index import nodes_of
from adgen.transforms.reverse_ast import attr_node, call_node, stored_names
from adgen.transforms.ssa import is_break_if
from adgen.transforms.sum_adjoints import sums_into_parts
from adgen.transforms.walk import walk

if TYPE_CHECKING:
    from adgen.transforms.reverse_pullback import Pullback


class Blocks:
    """The reverse of one pullback's loops and try statements (``Pullback.blocks``)."""

    def __init__(self, pb: Pullback) -> None:
        self.pb = pb

    def rev_loop(self, s: gast.For | gast.While, state: set[str]) -> list[gast.stmt]:
        inner = self.pb.plan.contributed_in(s.body)
        local = stored_names(s.body) | ({s.target.id} if isinstance(s, gast.For) else set())
        carried = (inner - local) | {h for h in self.pb.plan.headers if h in local and
                                     self.pb.plan.act.active(h)}
        pre = self.pb.materialize(carried, state)
        for n in sorted(inner - local):
            # a buffer defined outside the loop: its shadow is taken once, before the loop
            b = self.pb.bar(n)
            if self.pb.plan.tracked(n) and self.pb.plan.act.active(n) and b not in state:
                pre.append(assign(name(b, gast.Store),
                                  call_node(attr_node("sh", "of"), name(n)), s))
                state.add(b)
        for n in sorted(carried):
            # an adjoint the body changes in place is copied once, before the loop
            b = self.pb.bar(n)
            if b in state and "owned:" + b not in state and self.pb.plan.act.active(n) and \
                    not self.pb.plan.tracked(n) and n not in self.pb.plan.numeric:
                pre += self.pb.own(n, b, state, s)
        # a buffer the loop binds (a header, a fresh array per iteration) is another object in
        # each iteration: its shadow is taken in the iteration, never reused from outside
        rebound = {self.pb.bar(n) for n in local if self.pb.plan.tracked(n)}
        rebound |= {"owned:" + b for b in rebound}
        state -= rebound
        body_state = set(state)
        self.pb.last_line = None
        body = self.pb.rev_block([b for b in s.body if not is_break_if(b)], body_state)
        sums_into_parts(self.pb, body)
        body = self.iteration_items_to_shadows(local, state, s) + body
        # adjoints the loop carries must be defined again at the end of each reversed iteration
        for n in sorted(carried):
            b = self.pb.bar(n)
            if not self.pb.plan.tracked(n) and self.pb.plan.act.active(n) and b not in body_state:
                body.append(assign(name(b, gast.Store), call_node("zeros_like", name(n)), s))
        state |= {self.pb.bar(n) for n in carried
                  if self.pb.plan.act.active(n) and not self.pb.plan.tracked(n)}
        if not body:
            return pre
        local = self.fwd_locals(s.body) | local
        # shapes inner loops keep outside them, of values this loop binds
        local |= {shape for shape, v in self.pb.rec.shape_after.items() if v in local}
        return pre + [self.pb.rows.reversed_loop(s, body, local)]

    def rev_try(self, s: gast.Try, state: set[str]) -> list[gast.stmt]:
        arms = [s.body + s.orelse] + [h.body for h in s.handlers]
        inner = set().union(*(self.pb.plan.contributed_in(a) for a in arms))
        pre = self.pb.materialize(inner - stored_names(sum(arms, [])), state)
        arm = self.pb.namer.fresh("arm")
        self.pb.rec.extra_fwd.add(arm)
        self.pb.rec.arm_of[id(s)] = arm
        # the pullback of a handler (and SSA, on the handler's path) assumes the body did
        # nothing: a body that raised after a statement with a lasting effect ran is refused
        # when it happens (forward: ``partial_try``)
        ran = [b for b in s.body[:-1] if self.pb.plan.outlives(b, s.body)]
        if s.body and not _simple(s.body[-1]):
            # a loop, a branch or a try last in the body may raise after part of it ran:
            # the flag is set after each statement inside it that leaves something behind
            ran += [b for b in _simple_statements(s.body[-1]) if self.pb.plan.outlives(b, s.body)]
        if ran and s.handlers and not (all(_reraises(h) for h in s.handlers) and
                                       not _caught_inside(self.pb.plan.fn, s)):
            # (a handler that raises again, as lower_control's for a finally block or a
            # with block: no pullback follows; the exception goes on as Python's would)
            flag = self.pb.namer.fresh("ran")
            self.pb.rec.extra_fwd.add(flag)
            self.pb.rec.try_ran[id(s)] = (flag, {id(b) for b in ran})
        branches, states = [], []
        for k, stmts in enumerate(arms):
            st = set(state)
            self.pb.last_line = None
            code = self.pb.rev_block(stmts, st)
            states.append(st)
            branches.append((k, code))
        self.pb.zero_in_arms(s, [code for _, code in branches], states, state,
                          stored_names(sum(arms, [])))
        for st in states:
            state |= st
        out: list[gast.stmt] = []
        chain: list[gast.stmt] | None = None
        for k, code in reversed(branches):
            test = gast.Compare(left=name(arm), ops=[gast.Eq()],
                                comparators=[gast.Constant(k, None)])
            node = gast.If(test=test, body=code or [gast.Pass()], orelse=chain or [])
            chain = [node]
        out = pre + (chain or [])
        return out

    def iteration_items_to_shadows(self, local: set[str], state: set[str],
                                   s: gast.For | gast.While) -> list[gast.stmt]:
        """For each list, dict or object defined outside loop ``s`` whose adjoint is defined
        where the loop's pullback starts and which may hold arrays the loop binds and keeps
        in shadow memory (``for k, p in params.items(): p -= lr * grads[k]``): the parts of
        its adjoint of the items this iteration bound go to their shadows first. The
        adjoint's items went there only for the arrays the names held after the loop (its
        last iteration's, by :meth:`to_shadows` and :meth:`exit_items_to_shadows`): the
        others' stayed in the container's adjoint, which the writes' pullbacks never read
        (grads["w"] got a zero gradient, silently, until session 25)."""
        out: list[gast.stmt] = []
        for n in sorted(self.pb.plan.eff.buffers):
            if n in local or self.pb.bar(n) not in state or not self.pb.plan.act.active(n):
                continue
            bound = [e for e in self.pb.tracked_items(n) if e in local]
            if bound:
                b = self.pb.bar(n)
                out.append(assign(name(b, gast.Store), call_node(
                    "items_to_shadows", name("sh"), name(n), name(b),
                    gast.Tuple(elts=[name(e) for e in bound], ctx=gast.Load())), s))
        return out

    def fwd_locals(self, stmts: list[gast.stmt]) -> set[str]:
        """Names the forward binds inside a block, including the ones this pass adds."""
        out = stored_names(stmts)
        for st in stmts:
            for n in nodes_of(st):
                if id(n) in self.pb.rec.tape_of:
                    out.add(self.pb.rec.tape_of[id(n)])
                if id(n) in self.pb.rec.saved_call:
                    out.add(self.pb.rec.saved_call[id(n)])
                    out.update(v for _, v in self.pb.rec.saved_parts.get(id(n), ()))
                if id(n) in self.pb.rec.result_entry:
                    out.add(self.pb.rec.result_entry[id(n)])
                out.update(v for _, v, _ in self.pb.rec.items_around.get(id(n), ()))
                if id(n) in self.pb.rec.arm_of:
                    out.add(self.pb.rec.arm_of[id(n)])
        inside = {id(n) for st in stmts for n in nodes_of(st)} if self.pb.rec.cap_var else set()
        for (sid, _), var in self.pb.rec.cap_var.items():
            if sid in inside:
                out.add(var)
        return out


def _reraises(h: gast.ExceptHandler) -> bool:
    """Whether the handler raises on every path: a raise among its top-level statements
    (SSA may add dead copies after it)."""
    return any(isinstance(st, gast.Raise) for st in h.body)


def _caught_inside(fn: gast.FunctionDef, s: gast.Try) -> bool:
    """Whether the try statement ``s`` sits in the body of another try statement of ``fn``,
    whose handler may catch what ``s``'s handlers raise again."""
    return any(t is not s and any(n is s for b in t.body for n in walk(b))
               for t in walk(fn) if isinstance(t, gast.Try))


def _simple(st: gast.stmt) -> bool:
    return not isinstance(st, (gast.For, gast.While, gast.If, gast.Try, gast.With))


def _simple_statements(st: gast.stmt) -> list[gast.stmt]:
    """The statements with no block of their own inside the compound statement ``st``."""
    out: list[gast.stmt] = []
    blocks = [getattr(st, f, None) or [] for f in ("body", "orelse", "finalbody")] + \
        [h.body for h in getattr(st, "handlers", [])]
    for block in blocks:
        for b in block:
            out += [b] if _simple(b) else _simple_statements(b)
    return out
