"""The plan of a function's reverse pass, made before any code is emitted: what each name holds
(numbers, arrays, containers and objects), which names keep their adjoint in shadow memory, which
names are views of which arrays, where each statement sits (order, loops, blocks), the rule of
each operation and whether a call is a user function's, which loops take a typed tape — and,
filled in by :mod:`reverse_captures`, the values the pullback reads that a later write may
overwrite (captures), the writes guarded for them, and the decision at each mutation site.

The emitters read it (:mod:`reverse_pullback`, :mod:`reverse_forward`); none writes to it."""

from __future__ import annotations

import functools
from typing import Any

import gast
from adgen.transforms.analyses.activity import NONDIFF_ATTRS, Activity, passed_names
from adgen.transforms.analyses.container_results import may_return_container
from adgen.transforms.analyses.effects import Effects, Write
from adgen.transforms.analyses.kinds import NUMBER, definitions, expr_kind
from adgen.transforms.analyses.shapes import ShapeFacts, shape_facts
from adgen.transforms.analyses.shift_invariance import (
    logs_of_softmaxes,
    normalised_exponentials,
)
from adgen.transforms.analyses.value_chains import value_chains
from adgen.transforms.bindings import NOT_FOUND, dotted_object
from adgen.transforms.front import is_bound_method
from adgen.transforms.hoist_defs import free_names
from adgen.transforms.node_index import nodes_of
from adgen.transforms.parse import Parsed, positional_params, varargs_of
from adgen.transforms.reverse_ast import (
    BINOPS,
    MISSING,
    RUNTIME_CALLS,
    UNARYOPS,
    USERCALL,
    Capture,
    Site,
    basic_index,
    is_callable_object,
    is_number,
    is_python_function,
    is_user_class,
    loaded_names,
    src_text,
    stored_names,
    unsupported_operator,
    user_name_of,
)
from adgen.transforms.ssa import is_break_if
from adgen.transforms.walk import clone, walk

from adgen.errors import Location, UnsupportedError
from adgen.rules import registry


def range_step(e: gast.expr) -> int | None:
    """The step of a range written as a nonzero int constant (``2``, ``-1``), else None."""
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
        v = range_step(e.operand)
        return -v if v is not None else None
    if isinstance(e, gast.Constant) and type(e.value) is int and e.value != 0:
        return e.value
    return None


class Plan:
    """What the reverse pass knows about one function in SSA form (after lower_mutation)."""

    def __init__(self, parsed: Parsed, fn: gast.FunctionDef, act: Activity, eff: Effects,
                 headers: set[str], policy: str, callee_info: Any,
                 kinds: dict[str, Any] | None = None,
                 column_dtypes: dict[str, str] | None = None,
                 f64_arrays: set[str] | None = None) -> None:
        self.parsed = parsed
        # name -> NUMBER or an array's rank, for the argument signature compiled for
        # (analyses.kinds); empty when compiling for any arguments
        self.kinds: dict[str, Any] = kinds or {}
        # names holding float64 numbers or ints for that signature -> the dtype of a tape
        # column that keeps them (analyses.floats)
        self.column_dtypes: dict[str, str] = column_dtypes or {}
        # arrays that are float64 at every call with this signature (analyses.floats): a store
        # into one keeps the stored value's derivative without a run-time dtype check
        self.f64_arrays: set[str] = set(f64_arrays or ())
        self.int_names = {n for n, k in self.kinds.items() if k == NUMBER}
        self.fn = fn
        self.act = act
        self.eff = eff
        self.headers = headers
        self.policy = policy
        self.callee_info = callee_info  # (func) -> CalleeInfo | None
        self.fname = fn.name
        self.order: dict[int, int] = {}
        self.loops_of: dict[int, tuple[int, ...]] = {}
        self.block_of: dict[int, int] = {}
        self.numeric: set[str] = set()
        # names used as containers or objects (indexed stores, appends, attribute access)
        self.objlike: set[str] = {n for n, k in eff.kinds.items() if k in ("list", "dict",
                                                                           "tuple")}
        methods = {id(c.func) for c in nodes_of(fn, gast.Call)}
        for st in nodes_of(fn, gast.Attribute):
            if isinstance(st, gast.Attribute) and isinstance(st.value, gast.Name) and \
                    id(st) not in methods and st.attr not in NONDIFF_ATTRS and \
                    st.attr not in ("T", "real", "imag", "flat"):
                self.objlike.add(st.value.id)
        for w in eff.writes:
            if w.container:
                self.objlike.add(w.target)
        for st in nodes_of(fn, gast.Assign):
            # d.values() / d.items() / d.keys() of a dict: a view, whose adjoint is a list
            # (taken for an array whose items are written in place, its shadow was a 0-d cell)
            if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name) and \
                    isinstance(st.value, gast.Call) and \
                    isinstance(st.value.func, gast.Attribute) and \
                    st.value.func.attr in ("values", "items", "keys") and \
                    isinstance(st.value.func.value, gast.Name) and \
                    eff.kinds.get(st.value.func.value.id) == "dict":
                self.objlike.add(st.targets[0].id)
        self.defs: dict[str, gast.expr] = {}
        for st in nodes_of(fn, gast.Assign):
            if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name):
                self.defs[st.targets[0].id] = st.value
        self._counters: set[str] | None = None
        self._alias_defs: dict[str, list[gast.expr | None]] | None = None
        self._tracked: set[str] | None = None
        self._chains: set[str] | None = None
        # id(p = e / t) -> (s1, e, axis) of each normalised exponential (softmax_of)
        self._softmaxes: dict[int, tuple[str, str, int]] | None = None
        self._softmax_rule: Any = None
        self._log_softmaxes: dict[int, tuple[str, str, int]] = {}
        self._log_softmax_rule: Any = None
        # filled in by reverse_captures.find_captures
        self.caps: dict[tuple[int, str], Capture] = {}
        # statement -> the writes of it that may overwrite a capture (a call may write two
        # of its arguments: each is guarded)
        self.guarded: dict[int, list[Write]] = {}
        self.decisions: list[Site] = []
        # parameters whose values the pullback reads (True: cannot tell, all of them)
        self.reads_params: set[str] | bool = set()
        self.index()

    def active(self, node: gast.AST) -> bool:
        return isinstance(node, gast.Name) and self.act.active(node.id)

    def tracked(self, n: str) -> bool:
        """True for arrays (or scalars) whose adjoint lives in shadow memory; containers and
        objects keep value adjoints, and the arrays they hold are tracked on their own."""
        if self._tracked is None:
            self._tracked = self._tracked_closure()
        return n in self._tracked

    def _tracked_closure(self) -> set[str]:
        # a copy (a = b, loop headers, merges) binds the same object: both names keep their
        # adjoint in the same place, so tracking is closed under copies
        names = set(self.eff.buffers) | set(self.parsed.closure_free)
        out = {n for n in names if (self.eff.tracked(n) or n in self.parsed.closure_free)}
        copies = [(st.targets[0].id, st.value.id) for st in nodes_of(self.fn, gast.Assign)
                  if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name)
                  and isinstance(st.value, gast.Name)]
        # an item read from a list and then written in place (xs[k] *= 3.0 reads t = xs[k]):
        # its adjoint is in the shadow of the object it is, which is one stored into the list
        # or dict ([a, b], {"k": a}, xs[j] = v, xs.append(v)): those keep theirs there too,
        # numbers included (a number known as one kept a value adjoint, and the write's
        # adjoint was lost: a zero gradient, silently)
        stored: dict[str, set[str]] = {}
        reads: list[tuple[str, str]] = []
        for st in nodes_of(self.fn, gast.Assign, gast.Expr):
            if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name):
                t, v = st.targets[0].id, st.value
                if isinstance(v, (gast.List, gast.Tuple, gast.Dict)):
                    items = v.values if isinstance(v, gast.Dict) else v.elts
                    stored.setdefault(t, set()).update(
                        e.id for e in items if isinstance(e, gast.Name))
                elif isinstance(v, (gast.Subscript, gast.Attribute)) and \
                        isinstance(v.value, gast.Name):
                    # (an attribute too: self.h = t; ...; u = self.h, u written or aliased)
                    reads.append((t, v.value.id))
            elif isinstance(st, gast.Assign) and \
                    isinstance(st.targets[0], (gast.Subscript, gast.Attribute)) \
                    and isinstance(st.targets[0].value, gast.Name) and \
                    isinstance(st.value, gast.Name):
                stored.setdefault(st.targets[0].value.id, set()).add(st.value.id)
            elif isinstance(st, gast.Expr) and isinstance(st.value, gast.Call) and \
                    isinstance(st.value.func, gast.Attribute) and \
                    st.value.func.attr == "append" and \
                    isinstance(st.value.func.value, gast.Name):
                stored.setdefault(st.value.func.value.id, set()).update(
                    a.id for a in st.value.args if isinstance(a, gast.Name))
        changed = True
        while changed:
            changed = False
            for a, b in copies:
                if (a in out) != (b in out) and a not in self.objlike and \
                        b not in self.objlike:
                    out |= {a, b}
                    changed = True
            for t, c in reads:
                k = self.kinds.get(c)
                if isinstance(k, int) or (isinstance(k, tuple) and k[0] == "array") or \
                        c not in self.objlike:
                    # an array (known as one, or not known as a list, dict or tuple): a value
                    # stored into it is copied, and an element read from it gets its adjoint
                    # through the array's shadow (x_bar[i])
                    continue
                if t in out:
                    new = stored.get(c, set()) - out - self.objlike
                    if new:
                        out |= new
                        changed = True
        return out - self.objlike - self.value_chains()

    def value_chains(self) -> set[str]:
        """Names of an array written in place whose adjoints are values, as if each write
        made a new array: no shadow memory (analyses.value_chains)."""
        if self._chains is None:
            self._chains = value_chains(self.fn, self.eff, self.kinds,
                                        self.objlike | set(self.parsed.closure_free),
                                        self.is_user_call, self.resolve_or_none)
        return self._chains

    def loc(self, node: gast.AST) -> Location:
        return self.parsed.location(node)

    def resolve(self, node: gast.expr) -> Any:
        """The object a global name or attribute chain is bound to, as the reverse pass reads
        it; MISSING for a local (the passes' names too) or a name bound to nothing.

        The walk is ``bindings.dotted_object``'s, as for ``front.resolve``, which the
        analyses and forward mode use; what differs is deliberate:

        - MISSING, not None, for "not a global": an attribute bound to None (``cfg.T``) is a
          constant here, not ``x.T`` of a local array to differentiate;
        - the runtime functions the earlier passes call (``flat_view``, ``loop_sequence``)
          are adgen.runtime's, so their rules apply (forward mode: ``Tangent.resolve_call``);
        - a NumPy function with a reference implementation (rules/composites.py) is that
          implementation, which is compiled as a user call; an ``lru_cache`` wrapper reached
          through an attribute stays the wrapper, a callable object that the dispatch
          compiles as the function it wraps (a global name's is unwrapped by ``parse``).
        A bound method is MISSING, as it is None in ``front.resolve``: the call goes through
        the dispatch with its receiver (``m.loss(x)`` as ``self.loss(x)``).
        """
        if isinstance(node, gast.Name) and node.id in RUNTIME_CALLS:
            from adgen import runtime

            return getattr(runtime, node.id)
        obj = dotted_object(self.parsed, node, builtin_names=True, also_local=self.namer_locals)
        if obj is NOT_FOUND or is_bound_method(obj):
            return MISSING  # (m.loss(x) of a global object m: called as self.loss(x) is)
        ref = registry.reference_of(obj)
        return ref if ref is not None else obj

    def resolve_or_none(self, node: gast.expr) -> Any:
        """:meth:`resolve`, with None for MISSING (the analyses' resolver)."""
        obj = self.resolve(node)
        return None if obj is MISSING else obj

    def index(self) -> None:
        self.namer_locals = stored_names(self.fn.body) | {a.id for a in self.fn.args.args}
        # names known to hold numbers or arrays: results of arithmetic and NumPy rules, but
        # not tuples and lists joined by + or * (desugar's (*rows, x) is tuple(rows) + (x,):
        # taken for a number, its adjoint's shape was np.shape of a tuple of arrays)
        sequences = {st.targets[0].id for st in nodes_of(self.fn, gast.Assign)
                     if isinstance(st.targets[0], gast.Name) and (
                         isinstance(st.value, (gast.Tuple, gast.List)) or
                         isinstance(st.value, gast.Call) and isinstance(st.value.func, gast.Name)
                         and st.value.func.id in ("tuple", "list"))}
        grew = True
        while grew:
            grew = False
            for st in nodes_of(self.fn, gast.Assign):
                if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name) and \
                        isinstance(st.value, gast.BinOp) and \
                        st.targets[0].id not in sequences and any(
                            isinstance(o, gast.Name) and o.id in sequences
                            for o in (st.value.left, st.value.right)):
                    sequences.add(st.targets[0].id)
                    grew = True
        for st in nodes_of(self.fn, gast.Assign):
            if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name):
                v = st.value
                if isinstance(v, (gast.BinOp, gast.UnaryOp)):
                    if st.targets[0].id not in sequences:
                        self.numeric.add(st.targets[0].id)
                elif isinstance(v, gast.Call):
                    obj = self.resolve(v.func)
                    mod = getattr(obj, "__module__", None) or ""
                    import numpy as _np

                    if (isinstance(obj, _np.ufunc) or mod.startswith(("numpy", "math"))) \
                            and not may_return_container(obj, v):
                        # (r = np.linalg.qr(M) is a tuple: its adjoints add item by item)
                        self.numeric.add(st.targets[0].id)
                elif is_number(v):
                    self.numeric.add(st.targets[0].id)
        # copies, loop headers and augmented assignments of numbers are numbers: the greatest
        # set of names whose every definition is a number or a copy of one of them
        defs: dict[str, list[gast.AST]] = {}
        for st in nodes_of(self.fn, gast.Assign, gast.AugAssign):
            if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name):
                defs.setdefault(st.targets[0].id, []).append(st.value)
            elif isinstance(st, gast.AugAssign):
                defs.setdefault(st.target.id, []).append(st.value)
        candidates = set(defs)
        base = set(self.numeric)

        def numeric_def(v: gast.AST) -> bool:
            if isinstance(v, gast.Name):
                return v.id in candidates
            return is_number(v) or v is None

        shrunk = True
        while shrunk:
            shrunk = False
            for n in list(candidates):
                if n in base:
                    continue
                if not all(numeric_def(v) for v in defs[n]):
                    candidates.discard(n)
                    shrunk = True
        self.numeric = base | {n for n in candidates
                               if any(not isinstance(v, gast.Name) or v.id in base or
                                      v.id in candidates for v in defs[n])} | set(self.kinds)
        self.find_views()
        self.shape_facts: ShapeFacts | None = shape_facts(
            self.fn, self.kinds, self.resolve_or_none) if self.kinds else None
        self.shapes = self.shape_facts.keys if self.shape_facts is not None else {}
        counter = [0]

        def walk_blocks(stmts: list[gast.stmt], loops: tuple[int, ...], block: int) -> None:
            for s in stmts:
                counter[0] += 1
                self.order[id(s)] = counter[0]
                self.loops_of[id(s)] = loops
                self.block_of[id(s)] = block
                inner = loops + (id(s),) if isinstance(s, (gast.For, gast.While)) else loops
                for fieldname in ("body", "orelse"):
                    sub = getattr(s, fieldname, None)
                    if isinstance(sub, list):
                        walk_blocks(sub, inner, id(sub))
                if isinstance(s, gast.Try):
                    for h in s.handlers:
                        walk_blocks(h.body, inner, id(h.body))

        walk_blocks(self.fn.body, (), id(self.fn.body))

    def find_views(self) -> None:
        """With kinds known: the names that are basic-index views of an array (``t = x[1:]``,
        ``t = x[i]`` of a matrix), or the same array under another name (``t = x``, then
        updated in place). Their shadow is the same view of the array's shadow, and they
        never need the run-time test for a copy."""
        self.view_of: dict[str, tuple[str, gast.expr | None]] = {}
        self.loop_of_counter: dict[str, gast.For] = {}
        self.def_stmt: dict[str, gast.stmt] = {}
        self.def_count: dict[str, int] = {}
        if not self.kinds:
            return
        defs: dict[str, list[gast.stmt]] = {}
        for st in nodes_of(self.fn, gast.Assign, gast.AugAssign, gast.For):
            if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name):
                defs.setdefault(st.targets[0].id, []).append(st)
            elif isinstance(st, gast.AugAssign):
                defs.setdefault(st.target.id, []).append(st)
            elif isinstance(st, gast.For) and isinstance(st.target, gast.Name):
                defs.setdefault(st.target.id, []).append(st)
        self.def_count = {n: len(v) for n, v in defs.items()}
        self.def_stmt = {n: v[0] for n, v in defs.items() if len(v) == 1}
        for n, v in defs.items():
            loop = v[0]
            # a counter that only grows: for c in range(stop) / range(start, stop)
            if len(v) == 1 and isinstance(loop, gast.For) and \
                    isinstance(loop.iter, gast.Call) and \
                    isinstance(loop.iter.func, gast.Name) and loop.iter.func.id == "range" \
                    and 1 <= len(loop.iter.args) <= 2 and not loop.iter.keywords and \
                    self.kinds.get(n) == NUMBER:
                self.loop_of_counter[n] = loop
        changed = True
        while changed:
            changed = False
            for n, sts in defs.items():
                if n in self.view_of or not isinstance(self.kinds.get(n), int) or \
                        not self.tracked(n):
                    continue
                assigns = [st for st in sts if isinstance(st, gast.Assign)]
                # an array updated in place keeps its identity
                if len(assigns) != 1 or any(not isinstance(st, (gast.Assign, gast.AugAssign))
                                            for st in sts):
                    continue
                v = assigns[0].value
                if isinstance(v, gast.Name) and isinstance(self.kinds.get(v.id), int) and \
                        self.tracked(v.id):
                    self.view_of[n] = (v.id, None)
                    changed = True
                elif isinstance(v, gast.Subscript) and isinstance(v.value, gast.Name) and \
                        isinstance(self.kinds.get(v.value.id), int) and \
                        self.tracked(v.value.id) and self.stable_index(v.slice):
                    self.view_of[n] = (v.value.id, v.slice)
                    changed = True

    def stable_index(self, idx: gast.expr) -> bool:
        """A basic index whose names are numbers bound once (or loop counters)."""
        if not basic_index(idx, self.int_names):
            return False
        return all(self.def_count.get(n.id, 0) <= 1 for n in nodes_of(idx, gast.Name))

    def same_shape(self, a: str, b: str) -> bool:
        """True when ``a`` and ``b`` have the same shape at every call (analyses.kinds)."""
        k = self.shapes.get(a)
        return k is not None and k == self.shapes.get(b)

    def same_shape_as_part(self, v: str, x: str, idx: gast.expr) -> bool:
        """True when ``v`` has the shape of ``x[idx]`` where one statement reads both
        (analyses.shapes): a store ``x[idx] = v`` broadcasts nothing."""
        if self.shape_facts is None:
            return False
        k = self.shapes.get(v)
        return k is not None and k == self.shape_facts.indexed(x, idx)

    def same_view(self, n: str, x: str, idx: gast.expr) -> bool:
        """True when ``n`` is (statically) the view ``x[idx]``: storing it there copies
        nothing."""
        while n in self.view_of and self.view_of[n][1] is None:
            n = self.view_of[n][0]
        view = self.view_of.get(n)
        return view is not None and view[0] == x and self.stable_index(idx) and \
            gast.dump(self.spelled_out(view[1])) == gast.dump(self.spelled_out(idx))

    def spelled_out(self, idx: gast.expr, depth: int = 0) -> gast.expr:
        """``idx`` with each int name bound once to arithmetic (``t9 = i + 1``) replaced by
        that arithmetic, so two indices computed apart (``C[i, :i + 1] += v`` reads at
        ``t9 = i + 1`` and stores at ``t15 = i + 1``) compare equal. Within one iteration the
        names they reach hold one value each: a name a loop carries over has more than one
        definition in SSA form, and stays a name."""
        node = clone(idx)
        if depth > 8:
            return node

        def spelled(n: gast.Name) -> gast.expr:
            v = self.defs.get(n.id) if self.def_count.get(n.id) == 1 else None
            if n.id in self.int_names and isinstance(v, (gast.BinOp, gast.UnaryOp)) and \
                    all(isinstance(e, gast.Constant) and type(e.value) is int or
                        isinstance(e, gast.Name) for e in gast.iter_child_nodes(v)
                        if isinstance(e, gast.expr)):
                return self.spelled_out(v, depth + 1)
            return n

        if isinstance(node, gast.Name):
            return spelled(node)
        for parent in walk(node):
            for field, value in gast.iter_fields(parent):
                if isinstance(value, gast.Name) and isinstance(value.ctx, gast.Load):
                    setattr(parent, field, spelled(value))
                elif isinstance(value, list):
                    value[:] = [spelled(e) if isinstance(e, gast.Name) and
                                isinstance(e.ctx, gast.Load) else e for e in value]
        return node

    def may_run_after(self, later: gast.stmt, earlier: gast.stmt) -> bool:
        if self.order[id(later)] > self.order[id(earlier)]:
            return True
        return bool(set(self.loops_of[id(later)]) & set(self.loops_of[id(earlier)]))

    def construct(self, stmt: gast.stmt) -> str:
        """The user's source text of the statement a generated one came from."""
        line = getattr(stmt, "lineno", 0)
        text = self.source_line(line) if line else ""
        if self.parsed.file.startswith("<adgen ") and line:
            # generated code differentiated again (the jvp code of hessian, hvp): the line
            # of the user's that its "# line N:" comment names, not the generated statement
            import linecache

            from adgen.adjoints import through_generated

            file, n = through_generated(self.parsed.file, line)
            if file is not None:
                text = linecache.getline(file, n)
        return text.split("#")[0].strip() or src_text(stmt)

    def user_name(self, n: str, depth: int = 0) -> str:
        """A name the user wrote for what ``n`` holds (temporaries: the expression's text, in
        the user's names: ``Z.std(axis=0)``, not ``Z_1.std(axis=0)``)."""
        base = user_name_of(n)
        if base.endswith("_dot") and len(base) > 4 and \
                self.parsed.file.startswith("<adgen ") and self.parsed.file.endswith(" jvp>"):
            # the jvp code adgen differentiates again (hessian, hvp): a tangent is written
            # where its primal is, and the user knows the primal's name
            return self.user_name(base[:-4], depth)
        temporary = base.startswith("t") and base[1:].isdigit() or \
            base.startswith("seq") and base[3:].isdigit()  # (desugar's loop sequences)
        if base in {a.id for a in self.fn.args.args} or not temporary:
            return base
        for st in nodes_of(self.fn, gast.Assign):
            if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name) and \
                    st.targets[0].id == n:
                expr = clone(st.value)
                if isinstance(expr, gast.Call) and isinstance(expr.func, gast.Name) and \
                        expr.func.id == "loop_sequence" and expr.args:
                    expr = expr.args[0]  # (for m in models: the sequence is models)
                for sub in walk(expr):
                    if isinstance(sub, gast.Name):
                        inner = self.user_name(sub.id, depth + 1) if depth < 3 else \
                            user_name_of(sub.id)
                        sub.id = inner if inner.isidentifier() else f"({inner})"
                return src_text(expr)
        return base

    def source_line(self, line: int) -> str:
        try:
            return self.parsed.lines[line - 1].strip()
        except IndexError:
            return ""

    def written_params(self) -> set[str] | bool:
        """The parameters this function writes in place (True: cannot tell which)."""
        written: set[str] | bool = set()
        for w in self.eff.writes:
            if not w.container and "param" in w.buffers and written is not True:
                p = self.param_of(w.target)
                written = True if p is None else written | {p}
        return written

    def param_of(self, n: str) -> str | None:
        """The parameter a name views (through copies, views and indexing), or None."""
        params = {a.id for a in self.fn.args.args}
        if self._alias_defs is None:
            # every value bound to each name: a loop-carried name has two (v_1 = v before a
            # loop, v_1 = v_2 at its end), and a name bound some other way (a for target,
            # unpacking) gets a None, which ends the search
            self._alias_defs = {}
            plain: set[int] = set()
            for st in nodes_of(self.fn, gast.Assign, gast.AugAssign):
                if isinstance(st, gast.Assign) and len(st.targets) == 1 and \
                        isinstance(st.targets[0], gast.Name):
                    self._alias_defs.setdefault(st.targets[0].id, []).append(st.value)
                    plain.add(id(st.targets[0]))
                elif isinstance(st, gast.AugAssign):
                    plain.add(id(st.target))  # in place on a buffer: the name stays bound
            for x in nodes_of(self.fn, gast.Name):
                if isinstance(x, gast.Name) and isinstance(x.ctx, gast.Store) and \
                        id(x) not in plain:
                    self._alias_defs.setdefault(x.id, []).append(None)
        roots: set[str] = set()
        seen: set[str] = set()
        todo = [n]
        while todo:
            m = todo.pop()
            if m in seen:
                continue  # a loop's carried name comes back to itself
            seen.add(m)
            if m in params:
                roots.add(m)
                continue
            values = self._alias_defs.get(m)
            if not values:
                return None
            for v in values:
                if isinstance(v, gast.Name):
                    todo.append(v.id)
                elif isinstance(v, (gast.Subscript, gast.Attribute)) and \
                        isinstance(v.value, gast.Name):
                    todo.append(v.value.id)
                elif isinstance(v, gast.Call) and isinstance(v.func, gast.Attribute) and \
                        isinstance(v.func.value, gast.Name) and v.func.attr in (
                            "reshape", "ravel", "transpose", "T", "squeeze", "view"):
                    todo.append(v.func.value.id)
                elif isinstance(v, gast.Call) and any(
                        k.arg == "out" and isinstance(k.value, gast.Name) for k in v.keywords):
                    # np.multiply(x, k, out=t) is t (in a loop, t's carried name)
                    todo.extend(k.value.id for k in v.keywords
                                if k.arg == "out" and isinstance(k.value, gast.Name))
                else:
                    return None
        return roots.pop() if len(roots) == 1 else None

    def kind_of(self, arg: Any) -> Any:
        """NUMBER, an array's rank, or None (unknown) for a bound rule argument."""
        if isinstance(arg, gast.Name):
            return self.kinds.get(arg.id)
        if is_number(arg):
            return NUMBER
        if isinstance(arg, gast.Subscript):
            return expr_kind(arg, self.kinds, self.resolve_or_none)
        return None

    def numeric_arg(self, arg: Any) -> bool:
        if isinstance(arg, gast.Name):
            return arg.id in self.numeric
        return is_number(arg)

    def any_active(self, arg: Any) -> bool:
        if isinstance(arg, gast.Name):
            return self.act.active(arg.id)
        if isinstance(arg, (gast.Tuple, gast.List, tuple)):
            elts = arg.elts if not isinstance(arg, tuple) else arg
            return any(self.any_active(e) for e in elts)
        return False

    def is_user_call(self, call: gast.Call) -> bool:
        obj = self.resolve(call.func)
        if obj is MISSING:
            if isinstance(call.func, gast.Attribute) and isinstance(call.func.value, gast.Name):
                from adgen.rules import methods

                if self.array_method(call.func) or call.func.attr == "append":
                    return False
                import numpy as np

                if isinstance(self.kinds.get(call.func.value.id), int) and \
                        hasattr(np.ndarray, call.func.attr):
                    return False  # a NumPy method without a rule: said at compile time
            return True
        if str(getattr(obj, "__module__", "")).startswith("adgen.") and \
                not registry.is_reference_impl(obj):
            return False  # adgen's own runtime functions: rules or no derivative
        if isinstance(obj, functools.partial):
            return True  # a partial of a function: called through adgen's dispatch
        return registry.lookup(obj) is None and (is_python_function(obj) or
                                                 is_user_class(obj) or is_callable_object(obj))

    def call_args(self, call: gast.Call, obj: Any) -> list[gast.expr]:
        """The positional arguments of a call of user function ``obj`` as its compiled forward
        takes them: with ``*xs``, the extra ones packed into one tuple (parse.varargs_of)."""
        n = varargs_of(obj)
        args = list(call.args)
        if n is None or len(args) < n:
            return args  # fewer than the named ones: the tuple goes by keyword (packed_keyword)
        return args[:n] + [gast.Tuple(elts=args[n:], ctx=gast.Load())]

    def packed_keyword(self, call: gast.Call, obj: Any) -> list[gast.keyword]:
        """``xs=()`` for a call of ``def g(x, c=2.0, *xs)`` that passes fewer positional
        arguments than the named parameters (``g(z)``, ``g(z, c=0.7)``): the named ones left
        to their defaults or keywords (the empty tuple was passed in c's place: a raw
        broadcasting error, or 'multiple values for argument c')."""
        n = varargs_of(obj)
        if n is None or len(call.args) >= n:
            return []
        return [gast.keyword(arg=obj.__code__.co_varnames[n],
                             value=gast.Tuple(elts=[], ctx=gast.Load()))]

    def refuse_active_partial(self, s: gast.stmt, v: gast.Call) -> None:
        """Refuses ``functools.partial(f, ...)`` binding a value that has a gradient: the
        partial's pullback gives cotangents to the arguments of its call, not to the ones it
        bound (a silently lost gradient otherwise)."""
        if not isinstance(v, gast.Call) or self.resolve(v.func) is not functools.partial:
            return
        bound = list(v.args[1:]) + [k.value for k in v.keywords]
        active = sorted({n.id for a in bound for n in nodes_of(a, gast.Name)
                         if self.act.active(n.id)})
        if active:
            what = ", ".join(user_name_of(n) for n in active)
            raise UnsupportedError(
                f"functools.partial binds {what}, which has a gradient here: adgen follows "
                "gradients through the arguments a partial is called with, not the ones it "
                "binds", self.loc(s),
                hint=f"pass {what} when calling it, or call the function directly")

    def op_of(self, s: gast.Assign) -> tuple[Any, dict[str, Any]] | None:
        """The rule and bound arguments of an operation statement (None: no rule needed)."""
        v = s.value
        softmax = self.softmax_of(s)
        if softmax is not None:
            return softmax
        if isinstance(v, gast.BinOp):
            if type(v.op) not in BINOPS:
                raise unsupported_operator(v.op, self.loc(s))
            if isinstance(v.op, gast.Div) and (found := self.reciprocal_of(v)) is not None:
                return found
            rule = registry.lookup(BINOPS[type(v.op)])
            return (rule, rule.bind([v.left, v.right], {})) if rule else None
        if isinstance(v, gast.UnaryOp) and type(v.op) in UNARYOPS:
            rule = registry.lookup(UNARYOPS[type(v.op)])
            return (rule, rule.bind([v.operand], {})) if rule else None
        if isinstance(v, gast.Attribute):
            from adgen.rules import methods

            if v.attr in methods.ATTRIBUTES and self.resolve(v) is MISSING:
                rule = registry.lookup(methods.ATTRIBUTES[v.attr])
                return (rule, rule.bind([v.value], {})) if rule else None
            return None
        if isinstance(v, gast.Call):
            if self.is_user_call(v):
                return (USERCALL, {})
            rule, args = self.call_rule(v)
            if rule is None:
                return None
            kwargs = {k.arg: k.value for k in v.keywords if k.arg != "out"}
            try:
                return rule, rule.bind(list(args), dict(kwargs))
            except TypeError as exc:
                raise UnsupportedError(
                    f"cannot bind the arguments of {rule.name}: {exc}", self.loc(s),
                    hint=registry.binding_hint(rule, exc)) from exc
        return None

    def reciprocal_of(self, v: gast.BinOp) -> tuple[Any, dict[str, Any]] | None:
        """For ``c / x`` with ``c`` a nonzero finite number written in the code, the rule that
        reads the output only (``-g * out * out / c``; ``np.reciprocal``'s when c is 1): the
        divisor need not be kept for the pullback, which the division's own rule reads. A
        zero ``c`` keeps that rule (out * out / c would be 0 / 0)."""
        c = v.left
        sign = 1
        if isinstance(c, gast.UnaryOp) and isinstance(c.op, (gast.USub, gast.UAdd)):
            sign = -1 if isinstance(c.op, gast.USub) else 1
            c = c.operand
        if not (isinstance(c, gast.Constant) and type(c.value) in (int, float)):
            return None
        value = sign * c.value
        if value == 0 or value != value or abs(value) == float("inf"):
            return None
        if value == 1:
            import numpy as np

            rule = registry.lookup(np.reciprocal)
            return (rule, rule.bind([v.right], {})) if rule else None
        from adgen.rules import arithmetic

        rule = registry.lookup(arithmetic.scaled_reciprocal)
        return (rule, rule.bind([v.left, v.right], {})) if rule else None

    def softmax_of(self, s: gast.Assign) -> tuple[Any, dict[str, Any]] | None:
        """For the division closing a normalised exponential whose exponential and row sums
        nothing else reads (analyses.shift_invariance), the softmax's rule bound to the
        exponential's input: the exponential and the sums then get no adjoint. Arrays whose
        adjoints live in shadow memory keep the statements' own rules (an ``out=`` write
        there moves the shadow)."""
        if self._softmaxes is None:
            from adgen.rules import reductions

            self._softmaxes = normalised_exponentials(self.fn, self.eff, self.kinds,
                                                      self.resolve_or_none)
            self._softmax_rule = registry.lookup(reductions.softmax)
            # q = np.log(p), the only read of a softmax's p: the log-softmax's rule there
            self._log_softmaxes = logs_of_softmaxes(self.fn, self.eff, self.kinds,
                                                    self.resolve_or_none)
            self._log_softmax_rule = registry.lookup(reductions.log_softmax)
        logged = self._log_softmaxes.get(id(s))
        if logged is not None:
            s1, p, axis = logged
            if self.tracked(s1) or self.tracked(p) or not self.act.active(s1) or \
                    self.softmax_of_division(p) is None:
                return None
            rule = self._log_softmax_rule
            return rule, rule.bind([gast.Name(s1, gast.Load(), None, None),
                                    gast.Name(p, gast.Load(), None, None)],
                                   {"axis": gast.Constant(axis, None)})
        found = self._softmaxes.get(id(s))
        if found is None:
            return None
        s1, e, axis = found
        if self.tracked(s1) or self.tracked(e) or not self.act.active(s1):
            return None
        rule = self._softmax_rule
        return rule, rule.bind([gast.Name(s1, gast.Load(), None, None)],
                               {"axis": gast.Constant(axis, None)})

    def softmax_of_division(self, p: str) -> Any:
        """The softmax rule of the division binding ``p`` (softmax_of), or None."""
        at = self.def_stmt.get(p)
        return self.softmax_of(at) if isinstance(at, gast.Assign) and \
            id(at) in (self._softmaxes or {}) else None

    def array_method(self, func: gast.Attribute) -> bool:
        """Whether ``x.m(...)`` (``x`` unresolved) is taken for the ndarray method ``m`` with a
        rule (rules.methods): a name of METHODS, but of ARRAY_RECEIVER_ONLY only where ``x``
        is known to be an ndarray (``cam.view()`` of a user's class is its own method)."""
        from adgen.rules import methods

        if func.attr not in methods.METHODS:
            return False
        return func.attr not in methods.ARRAY_RECEIVER_ONLY or (
            isinstance(func.value, gast.Name) and isinstance(self.kinds.get(func.value.id), int))

    def call_rule(self, v: gast.Call) -> tuple[Any, list[gast.expr]]:
        obj = self.resolve(v.func)
        if obj is not MISSING:
            return registry.lookup(obj), list(v.args)
        if isinstance(v.func, gast.Attribute):
            from adgen.rules import methods

            fn = methods.METHODS.get(v.func.attr) if self.array_method(v.func) else None
            if fn is not None:
                args = list(v.args)
                if v.func.attr in methods.VARARG_METHODS and len(args) > 1:
                    args = [gast.Tuple(elts=args, ctx=gast.Load())]
                return registry.lookup(fn), [v.func.value] + args
        return None, []

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

    def counted(self, s: gast.For | gast.While, recorded: list[str],
                arrays: dict[str, int] | None = None) -> list[gast.expr] | None:
        """The arguments of the range a loop runs through to its end, where the numbers it
        records fit a typed tape (a float64 or int64 array per number, an element per
        iteration); else None. Such a loop: ``for i in range(stop)`` or ``range(start,
        stop)`` (the builtin, over names or int constants the body does not rebind), no
        break, not inside another loop (a tape allocated per outer iteration would cost more
        than the list it replaces), and every recorded name but ``i`` a float64 number or an
        int (analyses.floats) bound at the top level of the body, so in every iteration.

        ``arrays``: recorded names the caller proved to be float64 arrays of one shape in
        every iteration, bound at the top level of the body (name -> rank): each gets a
        two-dimensional column (a row per iteration), and the loop may then be inside
        another (one array per run of the loop replaces a tuple and an array per row)."""
        arrays = arrays or {}
        if not isinstance(s, gast.For) or \
                (self.loops_of.get(id(s)) != () and not arrays) or \
                not isinstance(s.target, gast.Name) or not isinstance(s.iter, gast.Call):
            return None
        f, args = s.iter.func, s.iter.args
        # a step (``range(n - 2, 0, -1)``) only for a tape with two-dimensional columns: a
        # constant int, the row ``(i - start) // step``
        if len(args) == 3 and arrays and range_step(args[2]) is not None:
            args = args[:2]
        elif not (1 <= len(args) <= 2):
            return None
        if not (self.resolve(f) is range and not s.iter.keywords):
            return None
        stored = stored_names(s.body)
        if any(not (isinstance(a, gast.Name) and a.id not in stored or
                    isinstance(a, gast.Constant) and type(a.value) is int) for a in args) or \
                s.target.id in stored or any(is_break_if(b) for b in s.body):
            return None
        every = {t.id for b in s.body if isinstance(b, gast.Assign) for t in b.targets
                 if isinstance(t, gast.Name)}
        if all(r == s.target.id or r in arrays or (r in self.column_dtypes and r in every)
               for r in recorded):
            return list(s.iter.args)
        return None

    def structured(self, n: str) -> bool:
        """True unless ``n`` is known to hold a number or an array (then adjoints add with +;
        otherwise with add(), which adds lists, dicts and objects item by item)."""
        return n not in self.numeric

    def contributed_in(self, stmts: list[gast.stmt]) -> set[str]:
        """Active names whose adjoint a block's reverse may add to (not a nested def: the
        values it reads get their adjoints through its pullback)."""
        names: set[str] = set()
        defs = {d.name for d in self.parsed.nested_defs}
        for s in stmts:
            for n in nodes_of(s, gast.Name):
                if isinstance(n.ctx, gast.Load) and \
                        self.act.active(n.id) and n.id not in defs:
                    names.add(n.id)
        return names

    def outlives(self, b: gast.stmt, body: list[gast.stmt]) -> bool:
        """Whether a statement of a try body leaves something behind if the body raises
        later: an in-place write, a call that may write, or a variable used outside the body
        (a temporary only the body reads does not count). Such a body, cut short, breaks the
        value as well as the gradient: SSA gives the handler's path the variable's value from
        before the try."""
        if isinstance(b, gast.Expr):
            return any(self.act.active(n.id) for n in nodes_of(b, gast.Name)) \
                or isinstance(b.value, gast.Call) and isinstance(b.value.func, gast.Attribute)
        if isinstance(b, gast.AugAssign) or not isinstance(b, gast.Assign) or \
                not isinstance(b.targets[0], gast.Name):
            return True
        # SSA merges a variable the body rebinds with its value from before the try on the
        # handler's path: any version of a variable also used outside the body counts
        inside = {id(n) for st in body for n in nodes_of(st, gast.Name)}
        outside = {user_name_of(n.id) for n in nodes_of(self.fn, gast.Name) if
                   id(n) not in inside}
        return any(isinstance(n.ctx, gast.Store) and user_name_of(n.id) in outside
                   for n in nodes_of(b, gast.Name))

    def info_at(self, obj: Any, node: gast.AST) -> Any:
        """The compiled callee, with its compile errors located at the call."""
        from adgen.errors import AdgenError

        if isinstance(obj, functools.partial):
            inner = obj.func
            while isinstance(inner, functools.partial):
                inner = inner.func
            if not (is_python_function(inner) or is_user_class(inner) or
                    is_callable_object(inner)):
                # a partial of a library's class or builtin (partial(np.ma.masked_array,
                # mask=m)): nothing to compile, it runs as it is, as its function called
                # directly does (compiling the partial raised an internal AttributeError)
                return None
        try:
            return self.callee_info(obj)
        except AdgenError as err:
            if err.location is None or err.location.file != self.parsed.file:
                err.at_call(self.loc(node), obj)
            raise

    def result_made_by_callee(self, call: gast.Call) -> bool:
        """Whether a call of a user function may return values the callee made, which its
        saved values may hold (tanh's output): unless its summary says its results may view
        its arguments (``Compiled.returns_fresh`` false), whose captures cover them."""
        obj = self.resolve(call.func)
        if obj is MISSING or not is_python_function(obj):
            return True  # a function known at run time only (a variable, a nested def)
        info = self.info_at(obj, call)
        return info is None or info.compiled.returns_fresh

    def args_callee_reads(self, call: gast.Call) -> set[str]:
        """The argument names whose values a callee's pullback may read (unknown: all), and
        for a nested def, every version of the enclosing names it reads."""
        everything = loaded_names(call)
        if isinstance(call.func, gast.Name):
            for d in self.parsed.nested_defs:
                if d.name == call.func.id:
                    free = free_names(d, self.parsed.closure_free)
                    everything |= {n.id for n in nodes_of(self.fn, gast.Name)
                                   if user_name_of(n.id) in free}
        obj = self.resolve(call.func)
        if obj is MISSING or not is_python_function(obj):
            return everything
        info = self.info_at(obj, call)
        reads = info.compiled.reads_params if info is not None else True
        if reads is True:
            return everything

        params = positional_params(obj, len(call.args))
        out: set[str] = set()
        for k, a in enumerate(call.args):
            if k < len(params) and params[k] in reads:
                out |= loaded_names(a)
        for kw in call.keywords:
            if kw.arg in reads:
                out |= loaded_names(kw.value)
        return out

    def mutating_call(self, call: gast.Call) -> bool:
        obj = self.resolve(call.func)
        if obj is MISSING and isinstance(call.func, gast.Name):
            # f(o, s) with f a variable (f = setter, a parameter, a list's item): whether it
            # writes its arguments is known only when it runs, so its pullback runs (the
            # dispatch follows a list, dict or object it changes, and refuses an array write);
            # skipped, a write of o.val was silently left out of the gradient
            passed = passed_names(call)
            if any(self.act.active(n) and n not in self.numeric for n in passed):
                return True
            if any(self.act.active(n) and self.kinds.get(n) != NUMBER for n in passed):
                # an array it may write in place (f = sc.scale_inplace; f(w)): the dispatch
                # refuses that write when it runs (elided, the write was silently left out)
                return True
            params = {a.id for a in self.fn.args.args}
            handed = [n for n in passed if n in params and n not in self.numeric]
            if handed and len(set(passed)) > 1 and any(
                    n in params or self.act.active(n) for n in passed if n != handed[0]):
                # a parameter handed to a function held in a variable with other values
                # (init = Base.__init__; init(self, s), or f(o, s) in a helper): whether it
                # writes the parameter (o.val = 2 * s) is known only when it runs, and the
                # parameter is not known to change here, so its gradient would be lost
                raise UnsupportedError(
                    f"{src_text(call)} passes {handed[0]} to a function held in a variable, "
                    "which may change it in place: adgen cannot follow that write here",
                    self.loc(call), hint="call the function by its name (Base.__init__(self, "
                    "...), helper(o, ...)), or have it return the new value")
            return False
        if obj is MISSING and isinstance(call.func, gast.Attribute):
            # o.method(w) of an object whose type is known only when it runs (a parameter, a
            # global model, sc.scale_inplace(w)): its pullback runs, so the dispatch refuses
            # a write of w or of o's arrays; elided, that write was silently left out
            passed = [call.func.value.id] if isinstance(call.func.value, gast.Name) else []
            passed += passed_names(call)
            return any(self.act.active(n) and n not in self.numeric for n in passed)
        if registry.refusal_of(obj) is not None:
            return False  # refused with its reason where the call is differentiated
        if is_user_class(obj) and registry.lookup(obj) is None:
            # Cls(args): what its __init__ writes besides the new object (compiling the class
            # itself fails: a class has no source of its own to compile)
            obj = obj.__init__
        info = self.info_at(obj, call)
        # a callee that writes an argument in place: an array, or a list, dict or object
        # (whose adjoint it takes over from the caller: ShadowMap.deposit / withdraw)
        writes = bool(info and (info.mutates_params or
                                getattr(info.compiled, "mutates_containers", False)))
        if writes and info.mutates_params:
            self.refuse_displays_written(obj, call, info.compiled.written_params)
        return writes and any(self.act.active(n) for n in passed_names(call))

    def refuse_displays_written(self, obj: Any, call: gast.Call,
                                written: set[str] | bool) -> None:
        """Refuses arrays with a derivative handed to a callee inside a list, tuple or dict
        display it may write in place (``sgd_step([W, b], [gW, gb])`` with ``p -= lr * g``
        over the items): the callee is compiled without knowing the parameter holds a list,
        and the caller's own values were left as they were, a silently wrong gradient."""
        names = positional_params(obj, len(call.args))
        handed = [(names[k] if k < len(names) else None, a) for k, a in enumerate(call.args)]
        handed += [(k.arg, k.value) for k in call.keywords]
        for param, a in handed:
            if not isinstance(a, (gast.List, gast.Tuple, gast.Dict)) or \
                    not (written is True or param in written):
                continue
            inner = [n for n in passed_names(gast.Call(func=a, args=[a], keywords=[]))
                     if self.act.active(n) and self.kinds.get(n) != NUMBER]
            if not inner:
                continue
            fname = getattr(obj, "__name__", "the function")
            kind = {gast.List: "list", gast.Tuple: "tuple", gast.Dict: "dict"}[type(a)]
            users = list(dict.fromkeys(self.user_name(n) for n in inner))
            shown = ", ".join(users)
            raise UnsupportedError(
                f"the call of {fname} hands {shown} to it inside a {kind} whose items "
                f"{fname} may write in place: adgen follows an array a function writes when "
                "the array itself is passed to it, not inside a list, tuple or dict made at "
                "the call", self.loc(call),
                hint=f"pass each array itself to a function that writes one (step({users[0]}, "
                     f"...)), or have {fname} return the new arrays and assign them ({shown} = "
                     f"{fname}(...))")
