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
from adgen.transforms import user_text
from adgen.transforms.analyses.activity import NONDIFF_ATTRS, Activity
from adgen.transforms.analyses.container_results import may_return_container, may_return_object
from adgen.transforms.analyses.effects import Effects, Write
from adgen.transforms.analyses.kinds import NUMBER, definitions, expr_kind
from adgen.transforms.analyses.shapes import ShapeFacts, shape_facts
from adgen.transforms.bindings import NOT_FOUND, dotted_object
from adgen.transforms.cached_functions import uncached
from adgen.transforms.front import is_bound_method
from adgen.transforms.node_index import nodes_of
from adgen.transforms.parse import Parsed
from adgen.transforms.reverse_ast import (
    MISSING,
    RUNTIME_CALLS,
    Capture,
    Site,
    basic_index,
    is_number,
    stored_names,
    user_name_of,
)
from adgen.transforms.reverse_plan_rules import Softmaxes
from adgen.transforms.ssa import is_break_if
from adgen.transforms.user_calls import is_user_call
from adgen.transforms.walk import clone, walk

from adgen.errors import Location
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
        from adgen.rules.methods import ATTRIBUTES

        for st in nodes_of(fn, gast.Attribute):
            # (not an array known as one at this signature: y.flags.writeable, y.device,
            # y.__class__ read of an array made it an object, whose in-place writes then
            # kept no shadow, and their adjoints were lost or counted twice, silently)
            if isinstance(st, gast.Attribute) and isinstance(st.value, gast.Name) and \
                    id(st) not in methods and st.attr not in NONDIFF_ATTRS and \
                    st.attr not in ATTRIBUTES and st.attr not in _ARRAY_ONLY_ATTRS and \
                    not _an_array(self.kinds.get(st.value.id)):
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
        # found once by reverse_plan_rules (softmax_of, array_method)
        self.softmaxes: Softmaxes | None = None
        self.user_methods: set[int] | None = None
        # filled in by reverse_captures.find_captures
        self.caps: dict[tuple[int, str], Capture] = {}
        # statement -> the writes of it that may overwrite a capture (a call may write two
        # of its arguments: each is guarded)
        self.guarded: dict[int, list[Write]] = {}
        self.decisions: list[Site] = []
        # parameters whose values the pullback reads (True: cannot tell, all of them)
        self.reads_params: set[str] | bool = set()
        # parameters it reads that no capture of its own watches (True: cannot tell, all of
        # them; reverse_captures finds them): a dynamic caller's argument capture asks it
        self.reads_uncaptured: set[str] | bool = True
        # the pullback may read memory a returned value shares (reverse_captures)
        self.reads_result = True
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
        made a new array: no shadow memory (analyses.value_chains, imported where the
        function writes in place an array it made: its chains are of those only)."""
        if self._chains is None:
            self._chains = set()
            if any(b.startswith("new:") for b in self.eff.written):
                from adgen.transforms.analyses.value_chains import value_chains

                self._chains = value_chains(self.fn, self.eff, self.kinds,
                                            self.objlike | set(self.parsed.closure_free),
                                            functools.partial(is_user_call, self),
                                            self.resolve_or_none)
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
          implementation, which is compiled as a user call.
        As in ``front.resolve``, a bound method is MISSING (the call goes through the
        dispatch with its receiver: ``m.loss(x)`` as ``self.loss(x)``) unless it has a
        reference (``scipy.stats.norm.cdf``: that implementation), and an ``lru_cache``
        wrapper is the function it wraps (``helpers.cube``, ``cfg.f``: kept as the wrapper,
        the call was refused for want of a rule while forward mode differentiated it).
        """
        if isinstance(node, gast.Name) and node.id in RUNTIME_CALLS:
            from adgen import runtime

            return getattr(runtime, node.id)
        obj = dotted_object(self.parsed, node, builtin_names=True, also_local=self.namer_locals)
        if obj is NOT_FOUND or is_bound_method(obj) and not registry.has_function_reference(obj):
            return MISSING  # (m.loss(x) of a global object m: called as self.loss(x) is)
        obj = uncached(obj)  # an lru_cache'd function: the function it wraps
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
                        st.targets[0].id not in sequences and (
                            isinstance(st.value, gast.BinOp) and any(
                                isinstance(o, gast.Name) and o.id in sequences
                                for o in (st.value.left, st.value.right)) or
                            _sliced_sequence(st.value, sequences)):
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
                            and not may_return_container(obj, v) and \
                            not may_return_object(obj):
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
        """The user's source text of the statement a generated one came from
        (:func:`user_text.construct`)."""
        return user_text.construct(self.parsed, stmt)

    def user_name(self, n: str) -> str:
        """A name the user wrote for what ``n`` holds (:func:`user_text.user_name`)."""
        return user_text.user_name(self.parsed, self.fn, n)

    def code_name(self, n: str) -> str:
        """The name the user's code has for ``n`` (:func:`user_text.code_name`)."""
        return user_text.code_name(self.parsed, n)

    def source_line(self, line: int) -> str:
        """The user's source line ``line``, stripped (:func:`user_text.source_line`)."""
        return user_text.source_line(self.parsed, line)

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
                elif isinstance(v, gast.Call) and isinstance(v.func, gast.Attribute) and \
                        isinstance(v.func.value, gast.Name) and not v.args and \
                        v.func.attr in ("values", "items"):
                    # params.values() of an optimizer step (for p, g in zip(params.values(),
                    # grads.values()): p -= lr * g): the items are params' (a step writing
                    # params was taken to write any parameter, grads too: strict refused)
                    todo.append(v.func.value.id)
                elif isinstance(v, gast.Call) and isinstance(v.func, gast.Name) and \
                        v.func.id == "loop_sequence" and len(v.args) == 1 and \
                        isinstance(v.args[0], gast.Name):
                    todo.append(v.args[0].id)  # what a for loop walks: the sequence itself
                elif isinstance(v, gast.Call) and any(
                        k.arg == "out" and isinstance(k.value, gast.Name) for k in v.keywords):
                    # np.multiply(x, k, out=t) is t (in a loop, t's carried name)
                    todo.extend(k.value.id for k in v.keywords
                                if k.arg == "out" and isinstance(k.value, gast.Name))
                elif isinstance(v, gast.Call) and isinstance(v.func, gast.Name) and \
                        v.func.id == "zero_tangent":
                    # jvp code's ``if u_dot is None: u_dot = zero_tangent(u)``: a new value,
                    # so a write of u_dot writes the parameter u_dot or nothing of the caller's
                    continue
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


# attributes only an array has, read without a derivative (if not y.flags.writeable: ...):
# the name is not taken for an object for them, whatever its kind
_ARRAY_ONLY_ATTRS = frozenset({"flags", "ctypes", "__array_interface__", "__array_struct__",
                               "__array_priority__"})


def _an_array(kind: Any) -> bool:
    """Whether a kind (analyses.kinds) is an array's: its rank, or an array of known parts."""
    return (isinstance(kind, int) and not isinstance(kind, bool)) or \
        (isinstance(kind, tuple) and bool(kind) and kind[0] == "array")


def _sliced_sequence(v: gast.AST, sequences: set[str]) -> bool:
    """Whether ``v`` is a slice (``xs[:k]``, ``xs[1:]``) of a sequence: joined by + (``xs[1:]
    + xs[:1]``, a list's pop lowered to ``xs[:k] + xs[k + 1:]``), its items may be lists,
    tuples or objects, whose adjoints add by add_item, not by ``+=`` (which joined a tuple's
    or list's adjoint to the zeros there, and gave a TypeError for an object's). (A slice of
    a name of unknown kind is not taken for one: most are arrays' slices, whose adjoints
    add in place; a list a call returned, rotated, is refused where its adjoints meet.)"""
    return isinstance(v, gast.Subscript) and isinstance(v.slice, gast.Slice) and \
        isinstance(v.value, gast.Name) and v.value.id in sequences
