"""Typed tapes: a counted loop's recorded numbers kept in float64 and int64 arrays (one
column per number, a row per iteration) instead of a tuple per iteration, which keeps a few
Python objects alive per iteration scattered over the heap (see docs/how-it-works.md).

A part of :class:`adgen.transforms.reverse.Reverse` (a mixin: its methods use the
reverse pass's state); the forward half is ``ForwardMixin.fill_float_tape``."""

from __future__ import annotations

import gast
from adgen.transforms.analyses.kinds import definitions
from adgen.transforms.desugar import name
from adgen.transforms.reverse_ast import call_node, stored_names
from adgen.transforms.ssa import is_break_if
from adgen.transforms.walk import clone


class TapesMixin:
    """Which loops take a typed tape, and the reversed loop that reads one."""

    def counters(self) -> set[str]:
        """Names bound only as the target of a builtin range loop, or only as a copy of one
        (``i = i1`` for ``enumerate``): ints, with or without a signature."""
        if self._counters is None:
            defs, unknown = definitions(self.fn)
            single = {n: d[0] for n, d in defs.items() if len(d) == 1 and n not in unknown}
            found = {n for n, v in single.items() if isinstance(v, tuple) and
                     isinstance(v[1], gast.Call) and self.resolve(v[1].func) is range}
            grown = True
            while grown:
                more = {n for n, v in single.items() if isinstance(v, gast.Name) and
                        v.id in found} - found
                found |= more
                grown = bool(more)
            self._counters = found
        return self._counters

    def counted(self, s: gast.For | gast.While, recorded: list[str]) -> list[gast.expr] | None:
        """The arguments of the range a loop runs through to its end, where the numbers it
        records fit a typed tape (a float64 or int64 array per number, an element per
        iteration); else None. Such a loop: ``for i in range(stop)`` or ``range(start,
        stop)`` (the builtin, over names or int constants the body does not rebind), no
        break, not inside another loop (a tape allocated per outer iteration would cost more
        than the list it replaces), and every recorded name but ``i`` a float64 number or an
        int (analyses.floats) bound at the top level of the body, so in every iteration."""
        if not isinstance(s, gast.For) or self.loops_of.get(id(s)) != () or \
                not isinstance(s.target, gast.Name) or not isinstance(s.iter, gast.Call):
            return None
        f, args = s.iter.func, s.iter.args
        if not (self.resolve(f) is range and not s.iter.keywords and 1 <= len(args) <= 2):
            return None
        stored = stored_names(s.body)
        if any(not (isinstance(a, gast.Name) and a.id not in stored or
                    isinstance(a, gast.Constant) and type(a.value) is int) for a in args) or \
                s.target.id in stored or any(is_break_if(b) for b in s.body):
            return None
        every = {t.id for b in s.body if isinstance(b, gast.Assign) for t in b.targets
                 if isinstance(t, gast.Name)}
        if all(r == s.target.id or (r in self.column_dtypes and r in every) for r in recorded):
            return list(args)
        return None

    def float_tape(self, s: gast.For, recorded: list[str], steps: list[gast.expr],
                   body: list[gast.stmt]) -> gast.For:
        """The reversed loop over a typed tape: ``for i, t1 in reversed_rows(tape, range(n))``
        (``reversed(range(n))`` when only the index is recorded)."""
        numbers = [r for r in recorded if r != s.target.id]
        steps_call = call_node("range", *[clone(a) for a in steps])
        if numbers:
            tape = self.namer.fresh("tape")
            self.extra_fwd.add(tape)
            self.tape_of[id(s)] = tape
            cols = [(r, self.namer.reserve(f"{r}_col")) for r in numbers]
            self.extra_fwd.update(c for _, c in cols)
            self.columns[id(s)] = (steps, cols)
            it = call_node("reversed_rows", name(tape), *([steps_call] if len(numbers) <
                                                      len(recorded) else []))
        else:
            it = call_node("reversed", steps_call)
        elts = [name(r, gast.Store) for r in recorded if r == s.target.id] + \
            [name(r, gast.Store) for r in numbers]
        target = elts[0] if len(elts) == 1 and not numbers else gast.Tuple(
            elts=elts, ctx=gast.Store()) if elts else name("_", gast.Store)
        return gast.For(target=target, iter=it, body=body, orelse=[], type_comment=None)
