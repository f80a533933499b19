"""Values the same in every iteration of a loop, so an inner loop's tape can be kept once.

ADI's time loop runs the same two sweeps over ``p`` in every step: ``p[1:n - 1, 0] = 0.0``,
then ``p[1:n - 1, j] = -c / (a * p[1:n - 1, j - 1] + b)`` for ``j`` from 1, then reads of
``p[1:n - 1, j]`` in a back substitution. ``p`` does not depend on the step: every element
read in an iteration was written earlier in the same iteration, from constants and such
elements. The inner loops' tapes (the divisors ``a * p[...] + b``, the copies of ``p``'s
columns) are then the same in every step, and one of them serves every step's pullback.

Input: the reverse pass's plan of a function in SSA form with kinds (read only) and a loop.
Output: :func:`invariants`, the names the loop binds whose value at a given point of its
body is the same in every iteration of one run of the loop.

The rules, for a loop ``L`` (``bound``: the names ``L`` binds):

- A *private* array ``P`` (bound once, outside ``L``, an ndarray with no derivative, no other
  name sharing its buffer except parts of it read in ``L``): every write of ``P`` in ``L`` is
  ``P[S, c] = v`` and every read ``t = P[S, c]``, one index shape ``S`` for all of them (the
  same slices, spelled from numbers bound outside ``L`` and constants) and one axis ``c``,
  at the top level of ``L``'s body or of a ``for`` loop there whose range the iteration
  repeats; and every column read was written earlier in the same iteration of ``L``
  (:class:`_Columns`: a column at the top level; the columns ``[lo + d, hi + d)`` an
  ascending ``for j in range(lo, hi)`` writes at ``j + d``; in such a loop, ``j + e`` with
  ``e < d`` is written by an earlier step or, for its first steps, before the loop; two
  intervals where one starts inside the other or at its end join). Its
  contents at any point of ``L``'s body are then a function of the values written into it
  in that iteration.
- A name bound in ``L`` is invariant when bound once (SSA) by an assignment of a constant,
  arithmetic, a NumPy ufunc or a basic index of invariant names and numbers bound outside
  ``L``, of arrays ``L`` does not write, or of a private array whose every written value is
  invariant (decided together: a greatest fixed point); or when it is the counter of a
  ``for`` loop in ``L`` over a ``range`` of invariant arguments, without a ``break``.

Anything else (a call, a loop-carried value, ``L``'s own counter, a write of ``P`` through
another name, in a branch or an augmented assignment) is not invariant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gast
import numpy as np
from adgen.transforms.analyses.kinds import NUMBER
from adgen.transforms.analyses.loop_shapes import bound_in
from adgen.transforms.node_index import nodes_of

if TYPE_CHECKING:
    from adgen.transforms.reverse_plan import Plan

_ARITH = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.FloorDiv, gast.Mod, gast.Pow)
_DEPTH = 8  # temporaries followed when spelling an index as a linear form

Linear = dict[str, int]  # name -> coefficient; "" -> the constant


def invariants(plan: Plan, loop: gast.For | gast.While) -> set[str]:
    """The names ``loop`` binds whose value is the same at the same point of every iteration
    of one run of it (see the module docstring)."""
    return invariant_facts(plan, loop)[0]


def invariant_facts(plan: Plan, loop: gast.For | gast.While) -> tuple[set[str], set[str]]:
    """``(names, arrays)``: :func:`invariants`, and the private arrays whose every written
    value is invariant (every access ``P[S, c]`` with one ``S``, written in ``loop`` only:
    their contents at a point of the body are the same in every iteration)."""
    bound = bound_in(loop)
    if bound is None or not plan.kinds:
        return set(), set()
    facts = _Facts(plan, loop, bound)
    private = facts.private_candidates()
    while True:
        inv = facts.fixed_point(private)
        kept = {p for p in private if all(facts.value_invariant(v, inv, private)
                                          for v in facts.written_values[p])}
        if kept == private:
            return inv, private
        private = kept


class _Facts:
    def __init__(self, plan: Plan, loop: gast.For | gast.While, bound: set[str]) -> None:
        self.plan = plan
        self.loop = loop
        self.bound = bound
        self.written_values: dict[str, list[gast.expr]] = {}
        self.covered: dict[str, set[int]] = {}  # private array -> its reads (Assign ids)

    # ----- names bound outside the loop

    def outside_number(self, n: str) -> bool:
        if n in self.bound:
            return False
        kind = self.plan.kinds.get(n)
        if kind == NUMBER:
            return True
        if n not in self.plan.kinds and n not in self.plan.def_count and \
                n not in {a.id for a in self.plan.fn.args.args}:
            v = self.plan.resolve_or_none(gast.Name(n, gast.Load(), None, None))
            return isinstance(v, (int, float)) and not isinstance(v, bool)
        return False

    def unwritten_array(self, n: str) -> bool:
        """An ndarray bound outside the loop whose buffers no write in the loop changes."""
        if n in self.bound or type(self.plan.kinds.get(n)) is not int:
            return False
        bufs = self.plan.eff.buffers.get(n)
        if not bufs:
            return False
        return not any(w.buffers & bufs and self._in_loop(w.stmt) for w in self.plan.eff.writes)

    def _in_loop(self, st: gast.stmt) -> bool:
        return id(self.loop) in self.plan.loops_of.get(id(st), ())

    # ----- linear forms of indices

    def linear(self, e: gast.expr | None, depth: int = 0) -> Linear | None:
        """``e`` as a sum of names (numbers bound outside the loop, counters of loops in it)
        times integers plus a constant, through temporaries bound once in the loop."""
        if e is None or depth > _DEPTH:
            return None
        if isinstance(e, gast.Constant):
            return {"": e.value} if type(e.value) is int else None
        if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
            inner = self.linear(e.operand, depth + 1)
            return None if inner is None else {k: -v for k, v in inner.items()}
        if isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Add, gast.Sub)):
            left, right = self.linear(e.left, depth + 1), self.linear(e.right, depth + 1)
            if left is None or right is None:
                return None
            sign = 1 if isinstance(e.op, gast.Add) else -1
            out = dict(left)
            for k, v in right.items():
                out[k] = out.get(k, 0) + sign * v
            return {k: v for k, v in out.items() if v or k == ""}
        if not isinstance(e, gast.Name):
            return None
        if self.outside_number(e.id) and self.plan.def_count.get(e.id, 0) <= 1:
            return {e.id: 1, "": 0}
        if self.counter_loop(e.id) is not None:
            return {e.id: 1, "": 0}
        at = self.plan.def_stmt.get(e.id)
        if self.plan.def_count.get(e.id) == 1 and isinstance(at, gast.Assign) and \
                self._in_loop(at) and self.plan.kinds.get(e.id) == NUMBER:
            return self.linear(at.value, depth + 1)
        return None

    def counter_loop(self, n: str) -> gast.For | None:
        """The ``for`` loop inside the loop whose counter ``n`` is (bound by it alone)."""
        at = self.plan.def_stmt.get(n)
        if isinstance(at, gast.For) and self.plan.def_count.get(n) == 1 and \
                isinstance(at.target, gast.Name) and at.target.id == n and self._in_loop(at):
            return at
        return None

    def range_of(self, f: gast.For) -> tuple[Linear, Linear, int] | None:
        """``(lo, hi, step)`` of ``for j in range(...)`` with step 1 or -1: the counter runs
        over ``[lo, hi)``, upwards (1) or downwards (-1)."""
        it = f.iter
        if not (isinstance(it, gast.Call) and not it.keywords and
                self.plan.resolve_or_none(it.func) is range and 1 <= len(it.args) <= 3):
            return None
        args = [self.linear(a) for a in it.args]
        if any(a is None for a in args):
            return None
        if len(args) == 1:
            return {"": 0}, args[0], 1
        if len(args) == 2:
            return args[0], args[1], 1
        step = args[2]
        if set(step) != {""} or step[""] not in (1, -1):
            return None
        if step[""] == 1:
            return args[0], args[1], 1
        # range(start, stop, -1) runs over [stop + 1, start + 1)
        return _shift(args[1], 1), _shift(args[0], 1), -1

    # ----- private arrays

    def private_candidates(self) -> set[str]:
        out = set()
        for x in sorted({w.target for w in self.plan.eff.writes if self._in_loop(w.stmt)}):
            if self._private(x):
                out.add(x)
        return out

    def _private(self, x: str) -> bool:
        plan = self.plan
        if x in self.bound or type(plan.kinds.get(x)) is not int or plan.act.active(x) or \
                plan.def_count.get(x, 0) > 1 or x in plan.objlike:
            return False
        bufs = plan.eff.buffers.get(x)
        if not bufs:
            return False
        # every other name of its buffers is a part of it read in the loop
        reads: list[gast.Assign] = []
        for n, b in plan.eff.buffers.items():
            if n == x or not (b & bufs):
                continue
            at = plan.def_stmt.get(n)
            if not (isinstance(at, gast.Assign) and isinstance(at.value, gast.Subscript) and
                    isinstance(at.value.value, gast.Name) and at.value.value.id == x and
                    self._in_loop(at)):
                return False
            reads.append(at)
        writes = [w for w in plan.eff.writes if w.buffers & bufs]
        if any(not self._in_loop(w.stmt) for w in writes):
            return False  # (written after the loop: its parts taped stay what they were)
        for w in writes:
            s = w.stmt
            if not (w.target == x and isinstance(s, gast.Assign) and len(s.targets) == 1 and
                    isinstance(s.targets[0], gast.Subscript) and
                    isinstance(s.targets[0].value, gast.Name) and
                    s.targets[0].value.id == x):
                return False
        loads = [n for n in nodes_of(self.loop, gast.Name) if n.id == x]
        if len(loads) != len(reads) + len(writes):
            return False  # read as a whole, or passed somewhere
        columns = _Columns(self, x)
        if not columns.walk(self.loop.body, {id(r) for r in reads},
                            {id(w.stmt) for w in writes}):
            return False
        self.written_values[x] = [w.stmt.value for w in writes]
        self.covered[x] = {id(r) for r in reads}
        return True

    # ----- invariant names

    def fixed_point(self, private: set[str]) -> set[str]:
        plan = self.plan
        # an array written in place in the loop holds more than its definition says (t = w;
        # w[0] = step), unless it is a private array's part, which the columns follow
        own = set().union(*(plan.eff.buffers.get(p, set()) for p in private))
        written = set().union(*(w.buffers for w in plan.eff.writes if self._in_loop(w.stmt)))
        inv = {n for n in self.bound if plan.def_count.get(n) == 1 and
               not (plan.eff.buffers.get(n, set()) & written - own)}
        changed = True
        while changed:
            changed = False
            for n in sorted(inv):
                if not self.defined_invariant(n, inv, private):
                    inv.discard(n)
                    changed = True
        return inv

    def defined_invariant(self, n: str, inv: set[str], private: set[str]) -> bool:
        at = self.plan.def_stmt.get(n)
        if at is None or not self._in_loop(at):
            return False
        if isinstance(at, gast.For):
            it = at.iter
            if self.counter_loop(n) is None or any(True for _ in nodes_of(at, gast.Break)) \
                    or not isinstance(it, gast.Call) or it.keywords or \
                    self.plan.resolve_or_none(it.func) is not range:
                return False
            return all(self.value_invariant(a, inv, private) for a in it.args)
        if not (isinstance(at, gast.Assign) and len(at.targets) == 1 and
                isinstance(at.targets[0], gast.Name)):
            return False
        v = at.value
        if isinstance(v, gast.Subscript) and isinstance(v.value, gast.Name) and \
                v.value.id in private:
            return id(at) in self.covered.get(v.value.id, set()) and \
                self.value_invariant(v.slice, inv, private)
        return self.value_invariant(v, inv, private)

    def value_invariant(self, e: gast.expr, inv: set[str], private: set[str]) -> bool:
        if isinstance(e, gast.Constant):
            return e.value is None or type(e.value) in (int, float, bool)
        if isinstance(e, gast.Name):
            return e.id in inv or self.outside_number(e.id) or self.unwritten_array(e.id)
        if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
            return self.value_invariant(e.operand, inv, private)
        if isinstance(e, gast.BinOp) and isinstance(e.op, _ARITH + (gast.MatMult,)):
            return self.value_invariant(e.left, inv, private) and \
                self.value_invariant(e.right, inv, private)
        if isinstance(e, gast.Slice):
            return all(b is None or self.value_invariant(b, inv, private)
                       for b in (e.lower, e.upper, e.step))
        if isinstance(e, gast.Tuple):
            return all(self.value_invariant(x, inv, private) for x in e.elts)
        if isinstance(e, gast.Subscript):
            # a part of an array the loop does not write (a private one's parts are read
            # into names, decided by defined_invariant)
            return isinstance(e.value, gast.Name) and self.unwritten_array(e.value.id) and \
                self.value_invariant(e.slice, inv, private)
        if isinstance(e, gast.Call) and not e.keywords:
            f = self.plan.resolve_or_none(e.func)
            return isinstance(f, np.ufunc) and len(e.args) == f.nin and \
                all(self.value_invariant(a, inv, private) for a in e.args)
        return False


class _Columns:
    """The columns of a private array written so far in one iteration of the loop, as
    intervals ``[lo, hi)`` of linear forms, and whether each read finds its column there."""

    def __init__(self, facts: _Facts, x: str) -> None:
        self.facts = facts
        self.x = x
        self.shape: tuple[Any, ...] | None = None  # (axis, the other parts spelled)
        self.written: list[tuple[Linear, Linear]] = []
        # _merged's joins of ``written`` and how many intervals ``written`` held then (it only
        # grows): a loop's reads ask for them again and again between two writes
        self._joins: tuple[int, list[tuple[Linear, Linear]]] = (0, [])

    def index(self, idx: gast.expr) -> Linear | None:
        """The column of ``x[idx]``, checking that the other parts match the first access."""
        parts = idx.elts if isinstance(idx, gast.Tuple) else [idx]
        col = [k for k, p in enumerate(parts) if not isinstance(p, gast.Slice)]
        if len(col) != 1:
            return None
        spelled: list[Any] = [col[0], len(parts)]
        for k, p in enumerate(parts):
            if k == col[0]:
                continue
            bounds = []
            for b in (p.lower, p.upper, p.step):
                if b is None:
                    bounds.append(None)
                    continue
                form = self.facts.linear(b)
                if form is None or any(self.facts.counter_loop(n) for n in form if n):
                    return None
                bounds.append(tuple(sorted(form.items())))
            spelled.append(tuple(bounds))
        if self.shape is None:
            self.shape = tuple(spelled)
        elif self.shape != tuple(spelled):
            return None
        return self.facts.linear(parts[col[0]])

    def covered(self, c: Linear) -> bool:
        return any(_at_least(c, lo) and _at_least(hi, _shift(c, 1)) for lo, hi in self.written)

    def range_covered(self, lo: Linear, hi: Linear) -> bool:
        return any(_at_least(lo, wlo) and _at_least(whi, hi) for wlo, whi in self._merged())

    def _merged(self) -> list[tuple[Linear, Linear]]:
        """The written intervals and their joins: where ``b`` starts inside ``a`` or at its
        end, whatever the names' values, ``[a.lo, b.hi)`` is written too (``[0, 1)`` and
        ``[1, n - 1)``: ``[0, n - 1)``; a part of the union where ``b`` is empty); joins of
        joins three deep.

        Each interval is held once, by its forms' keys (:func:`_key`: two forms of one key
        are one linear form), and a join's test compares keys. Comparing every pair of
        forms, and each join with every interval held to drop those held already, grew as
        the cube of the intervals: a function of 16 sweeps of ADI's kind in one time loop
        spent nine tenths of its build here."""
        if self._joins[0] == len(self.written):
            return self._joins[1]
        held: dict[tuple[Any, Any], tuple[Linear, Linear]] = {}
        for lo, hi in self.written:
            held.setdefault((_key(lo), _key(hi)), (lo, hi))
        for _ in range(3):  # joins of joins, a few deep
            now = list(held.items())
            new: dict[tuple[Any, Any], tuple[Linear, Linear]] = {}
            for (alo_k, ahi_k), (alo, _ahi) in now:
                # b.lo >= a.lo and a.hi >= b.lo: the three forms differ by constants only
                if ahi_k[0] != alo_k[0]:
                    continue
                for (blo_k, bhi_k), (_blo, bhi) in now:
                    if blo_k[0] == alo_k[0] and alo_k[1] <= blo_k[1] <= ahi_k[1]:
                        joined = (alo_k, bhi_k)
                        if joined not in held and joined not in new:
                            new[joined] = (alo, bhi)
            if not new:
                break
            held.update(new)
        out = list(held.values())
        self._joins = (len(self.written), out)
        return out

    def walk(self, body: list[gast.stmt], reads: set[int], writes: set[int]) -> bool:
        for st in body:
            touches = [n for n in nodes_of(st, gast.Name) if n.id == self.x]
            if not touches:
                continue
            if id(st) in writes:
                c = self.index(st.targets[0].slice)
                if c is None or _counters(self.facts, c):
                    return False
                self.written.append((c, _shift(c, 1)))
            elif id(st) in reads:
                c = self.index(st.value.slice)
                if c is None or _counters(self.facts, c) or not self.covered(c):
                    return False
            elif isinstance(st, gast.For) and not st.orelse:
                if not self.inner(st, reads, writes):
                    return False
            else:
                return False
        return True

    def inner(self, f: gast.For, reads: set[int], writes: set[int]) -> bool:
        """A loop of the iteration's body: its reads and writes at ``j + k``."""
        j = f.target.id if isinstance(f.target, gast.Name) else None
        span = self.facts.range_of(f)
        if j is None or span is None or self.facts.counter_loop(j) is not f or \
                any(True for _ in nodes_of(f, gast.Break)):
            return False
        lo, hi, step = span
        offsets: list[int] = []  # written this step so far, at j + d
        earlier: list[int] = []  # written by every step, at j + d
        for st in f.body:
            touches = [n for n in nodes_of(st, gast.Name) if n.id == self.x]
            if not touches:
                continue
            if id(st) not in reads and id(st) not in writes:
                return False  # nested deeper, or read as a whole
            idx = st.targets[0].slice if id(st) in writes else st.value.slice
            c = self.index(idx)
            d = _offset(c, j)
            if d is None:
                return False
            if id(st) in writes:
                if step != 1:
                    return False  # (a descending loop's writes: not followed)
                offsets.append(d)
                earlier.append(d)
                continue
            if d in offsets:
                continue  # written earlier in this step
            # written before the loop, for every step's column
            if self.range_covered(_shift(lo, d), _shift(hi, d)):
                continue
            # an earlier step's write at j + w, w > d; the first w - d steps read columns
            # [lo + d, lo + w), which must be written before the loop
            if step == 1 and any(w > d and self.range_covered(_shift(lo, d), _shift(lo, w))
                                 for w in earlier_writes(f, self, j, writes)):
                continue
            return False
        for d in sorted(set(earlier)):
            self.written.append((_shift(lo, d), _shift(hi, d)))
        return True


def earlier_writes(f: gast.For, columns: _Columns, j: str, writes: set[int]) -> list[int]:
    """The offsets ``w`` of the writes ``x[..., j + w]`` at the top level of ``f``'s body,
    each run in every step (no branch around it)."""
    out = []
    for st in f.body:
        if id(st) in writes:
            c = columns.index(st.targets[0].slice)
            w = _offset(c, j)
            if w is not None:
                out.append(w)
    return out


def _offset(c: Linear | None, j: str) -> int | None:
    """``d`` when ``c`` is ``j + d``."""
    if c is None or c.get(j) != 1 or any(k not in ("", j) and v for k, v in c.items()):
        return None
    return c.get("", 0)


def _counters(facts: _Facts, c: Linear) -> bool:
    return any(k and facts.counter_loop(k) is not None for k in c)


def _shift(form: Linear, k: int) -> Linear:
    out = dict(form)
    out[""] = out.get("", 0) + k
    return out


def _key(form: Linear) -> tuple[frozenset[tuple[str, int]], int]:
    """``form``'s names with their coefficients (those not zero) and its constant: two forms
    are one where their keys are equal, and ``a >= b`` (:func:`_at_least`) where the
    names agree and ``a``'s constant is at least ``b``'s."""
    return frozenset((k, v) for k, v in form.items() if k and v), form.get("", 0)


def _at_least(a: Linear, b: Linear) -> bool:
    """``a >= b`` whatever the names' values: the same names, a constant difference >= 0."""
    names = (set(a) | set(b)) - {""}
    if any(a.get(n, 0) != b.get(n, 0) for n in names):
        return False
    return a.get("", 0) - b.get("", 0) >= 0
