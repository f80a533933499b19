"""What the pullback reads and which writes may overwrite it: the analysis of positions,
captures and guards, and the decision at each mutation site (free, guarded, certain).

A part of :class:`adgen.transforms.reverse.Reverse` (a mixin: its methods use the
reverse pass's state)."""

from __future__ import annotations

from typing import Any

import gast
from adgen.transforms.analyses.effects import Write
from adgen.transforms.analyses.kinds import NUMBER, shape_keys
from adgen.transforms.desugar import name
from adgen.transforms.hoist_defs import free_names, is_marker
from adgen.transforms.reverse_ast import (
    BINOPS,
    MISSING,
    USERCALL,
    Capture,
    Site,
    attr_node,
    basic_index,
    call_node,
    interval,
    is_copy_of,
    is_number,
    is_python_function,
    loaded_names,
    names_of,
    src_text,
    stored_names,
    user_name_of,
)
from adgen.transforms.walk import clone, walk

from adgen.errors import MutationError
from adgen.rules import registry
from adgen.runtime import copy_hint


class SitesMixin:
    """What the pullback reads and which writes may overwrite it: the analysis of positions,"""

    def index(self) -> None:
        self.namer_locals = stored_names(self.fn.body) | {a.id for a in self.fn.args.args}
        # names known to hold numbers or arrays: results of arithmetic and NumPy rules
        for st in walk(self.fn):
            if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name):
                v = st.value
                if isinstance(v, (gast.BinOp, gast.UnaryOp)):
                    self.numeric.add(st.targets[0].id)
                elif isinstance(v, gast.Call):
                    obj = self.resolve(v.func)
                    mod = getattr(obj, "__module__", None) or ""
                    import numpy as _np

                    if isinstance(obj, _np.ufunc) or mod.startswith(("numpy", "math")):
                        self.numeric.add(st.targets[0].id)
                elif is_number(v):
                    self.numeric.add(st.targets[0].id)
        # copies, loop headers and augmented assignments of numbers are numbers: the greatest
        # set of names whose every definition is a number or a copy of one of them
        defs: dict[str, list[gast.AST]] = {}
        for st in walk(self.fn):
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
        self.shapes = shape_keys(self.fn, self.kinds, self.resolve_global) if self.kinds \
            else {}
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
        for st in walk(self.fn):
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
        return all(self.def_count.get(n.id, 0) <= 1 for n in walk(idx)
                   if isinstance(n, gast.Name))

    def shadow(self, n: str, state: set[str]) -> gast.expr:
        """The shadow of tracked ``n``: its adjoint's name when bound, else the view of the
        array it views, else ``sh.of(n)``."""
        found = self._shadow_at_hand(n, state)
        return found if found is not None else call_node(attr_node("sh", "of"), name(n))

    def _shadow_at_hand(self, n: str, state: set[str]) -> gast.expr | None:
        b = self.bar(n)
        if b in state and self.tracked(n):
            return name(b)
        view = getattr(self, "view_of", {}).get(n)
        if view is None:
            return None
        base = self._shadow_at_hand(view[0], state)
        if base is None or view[1] is None:
            return base
        return gast.Subscript(value=base, slice=clone(view[1]), ctx=gast.Load())

    def same_shape(self, a: str, b: str) -> bool:
        """True when ``a`` and ``b`` have the same shape at every call (analyses.kinds)."""
        k = self.shapes.get(a)
        return k is not None and k == self.shapes.get(b)

    def same_view(self, n: str, x: str, idx: gast.expr) -> bool:
        """True when ``n`` is (statically) the view ``x[idx]``: storing it there copies
        nothing."""
        while n in self.view_of and self.view_of[n][1] is None:
            n = self.view_of[n][0]
        view = self.view_of.get(n)
        return view is not None and view[0] == x and \
            gast.dump(view[1]) == gast.dump(idx) and self.stable_index(idx)

    def may_run_after(self, later: gast.stmt, earlier: gast.stmt) -> bool:
        if self.order[id(later)] > self.order[id(earlier)]:
            return True
        return bool(set(self.loops_of[id(later)]) & set(self.loops_of[id(earlier)]))

    def want_capture(self, stmt: gast.stmt, n: str, after: bool, index: bool = False) -> None:
        """Notes that the pullback of ``stmt`` reads the value of ``n`` (``index``: as an
        index, where a Python list's items are the value: storing into it counts)."""
        bufs = self.eff.buffers.get(n, set())
        if "param" in bufs and self.reads_params is not True:
            p = self.param_of(n)
            if p is None:
                self.reads_params = True  # cannot tell which: all of them
            else:
                self.reads_params = self.reads_params | {p}
        if not bufs:
            return
        listed = index and self.eff.kinds.get(n) == "list"
        conflicts = [w for w in self.eff.writes if (not w.container or listed) and
                     (w.buffers & bufs) and
                     not self.disjoint(n, w) and not self.disjoint_rows(n, w, stmt, after) and
                     (self.may_run_after(w.stmt, stmt) if (after or w.stmt is not stmt)
                      else True)]
        if not self.loops_of[id(stmt)]:
            # a value captured after its own statement's write is not overwritten by that
            # write; in a loop, the same statement writes again in the next iteration
            conflicts = [w for w in conflicts if not (w.stmt is stmt and after)]
        if not conflicts:
            return
        cap = self.caps.setdefault((id(stmt), n), Capture(stmt, n, after))
        for w in conflicts:
            self.guarded.setdefault(id(w.stmt), w)
            self._conflicts.setdefault(id(w.stmt), []).append(cap)

    def construct(self, stmt: gast.stmt) -> str:
        """The user's source text of the statement a generated one came from."""
        line = getattr(stmt, "lineno", 0)
        text = self.source_line(line) if line else ""
        return text.split("#")[0].strip() or src_text(stmt)

    def user_name(self, n: str, depth: int = 0) -> str:
        """A name the user wrote for what ``n`` holds (temporaries: the expression's text, in
        the user's names: ``Z.std(axis=0)``, not ``Z_1.std(axis=0)``)."""
        base = user_name_of(n)
        if base in {a.id for a in self.fn.args.args} or not base.startswith("t") or \
                not base[1:].isdigit():
            return base
        for st in walk(self.fn):
            if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name) and \
                    st.targets[0].id == n:
                expr = clone(st.value)
                for sub in walk(expr):
                    if isinstance(sub, gast.Name):
                        inner = self.user_name(sub.id, depth + 1) if depth < 3 else \
                            user_name_of(sub.id)
                        sub.id = inner if inner.isidentifier() else f"({inner})"
                return src_text(expr)
        return base

    def disjoint(self, n: str, w: Write) -> bool:
        """True when ``n`` is a constant slice of a buffer that ``w`` writes elsewhere (a
        constant index or slice of the same name on the first axis)."""
        view = self.defs.get(n)
        if not (isinstance(view, gast.Subscript) and isinstance(view.value, gast.Name)):
            return False
        st = w.stmt
        if not (isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Subscript) and
                isinstance(st.targets[0].value, gast.Name)):
            return False
        if st.targets[0].value.id != view.value.id:
            return False
        a = interval(view.slice)
        b = interval(st.targets[0].slice)
        if a is None or b is None:
            return False
        return a[1] <= b[0] or b[1] <= a[0]

    def disjoint_rows(self, n: str, w: Write, stmt: gast.stmt, after: bool) -> bool:
        """True when ``n = x[c + i]`` is read at ``stmt`` and ``w`` writes ``x[c + j]``, in
        the body of the same top-level ``for c in range(...)`` loop, and no later write can
        reach the row read: ``j > i`` (or ``j >= i`` when the write comes first in the body).
        The counter only grows, so every later iteration writes a row further on."""
        if not self.kinds:
            return False
        view = self.defs.get(n)
        st = w.stmt
        if not (isinstance(view, gast.Subscript) and isinstance(view.value, gast.Name) and
                isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Subscript) and
                isinstance(st.targets[0].value, gast.Name) and
                st.targets[0].value.id == view.value.id and
                isinstance(self.kinds.get(view.value.id), int)):
            return False
        read = self._row(view.slice)
        written = self._row(st.targets[0].slice)
        if read is None or written is None or read[0] != written[0]:
            return False
        loop = self.loop_of_counter.get(read[0])
        if loop is None or self.loops_of.get(id(loop)) != ():
            return False  # a nested loop restarts its counter
        view_stmt = self.def_stmt.get(n)
        for x in (stmt, st, view_stmt):
            if x is None or self.loops_of.get(id(x)) != (id(loop),):
                return False
        write_later = self.order[id(st)] > self.order[id(stmt)] or (st is stmt and not after)
        return written[1] > read[1] if write_later else written[1] >= read[1]

    def _row(self, idx: gast.expr) -> tuple[str, int] | None:
        """(counter, offset) for a first-axis index ``c``, ``c + k`` or ``c - k``."""
        if isinstance(idx, gast.Tuple):
            if not idx.elts:
                return None
            idx = idx.elts[0]
        if isinstance(idx, gast.Name) and idx.id in self.loop_of_counter:
            return idx.id, 0
        if isinstance(idx, gast.Name) and self.def_count.get(idx.id) == 1:
            v = self.defs.get(idx.id)
            if isinstance(v, gast.BinOp) and isinstance(v.left, gast.Name) and \
                    v.left.id in self.loop_of_counter and isinstance(v.right, gast.Constant) \
                    and type(v.right.value) is int and isinstance(v.op, (gast.Add, gast.Sub)):
                k = v.right.value
                return v.left.id, k if isinstance(v.op, gast.Add) else -k
        return None

    def decide_sites(self) -> None:
        for w in self.eff.writes:
            caps = self._conflicts.get(id(w.stmt), [])
            construct = self.construct(w.stmt)
            line = getattr(w.stmt, "lineno", 0)
            if w.container and caps:
                # a list the gradient reads as an index: its capture is a copy, taken at once
                what = ", ".join(sorted({self.user_name(c.name) for c in caps}))
                first = caps[0]
                if self.policy == "strict":
                    raise MutationError(
                        f"{construct} overwrites {what}, which the gradient of line "
                        f"{first.stmt.lineno} ({self.construct(first.stmt)}) reads as an index",
                        self.loc(w.stmt),
                        hint=f'use mutation="save" (adgen keeps a copy of {what}), or index '
                             f"with a copy: {what}.copy() (or a NumPy array)",
                        captured_at=self.loc(first.stmt))
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
            if not caps:
                self.sites.append(Site(w.stmt, construct, "free",
                                       "no value the gradient reads is overwritten here"))
                continue
            lines = tuple(sorted({getattr(c.stmt, "lineno", 0) for c in caps}))
            certain = [c for c in caps if c.name == w.target and
                       self.block_of[id(c.stmt)] == self.block_of[id(w.stmt)] and
                       self.order[id(c.stmt)] < self.order[id(w.stmt)]]
            what = ", ".join(sorted({self.user_name(c.name) for c in caps}))
            if self.policy == "strict" and certain:
                c = certain[0]
                others = sorted({(o.stmt.lineno, self.construct(o.stmt)) for o in caps
                                 if o.stmt.lineno != c.stmt.lineno})
                also = "".join(f"; the gradient of line {ln} ({text}) reads it too"
                               for ln, text in others)
                raise MutationError(
                    f"{construct} overwrites {user_name_of(c.name)}, which the gradient of line "
                    f"{c.stmt.lineno} ({self.construct(c.stmt)}) reads{also}",
                    self.loc(w.stmt),
                    hint=copy_hint(construct, user_name_of(c.name), c.stmt.lineno, line),
                    captured_at=self.loc(c.stmt))
            decision = "guarded-save" if self.policy == "save" else "guarded-raise"
            reason = (f"may overwrite {what}, read by the gradient of line(s) "
                      f"{', '.join(map(str, lines))}")
            self.sites.append(Site(w.stmt, construct, decision, reason, lines))
        self.sites.sort(key=lambda s: (getattr(s.stmt, "lineno", 0), self.order[id(s.stmt)]))

    def collect_reads(self, stmts: list[gast.stmt]) -> None:
        for k, s in enumerate(stmts):
            if isinstance(s, gast.AugAssign) and k > 0 and is_copy_of(stmts[k - 1], s) and \
                    self.act.active(s.target.id):
                rule = registry.lookup(BINOPS[type(s.op)])
                old = stmts[k - 1].value
                bound = rule.bind([old, s.value], {})
                for d, tpl in zip(rule.diff, rule.templates):
                    if not self._any_active(bound.get(d)):
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
                    self.act.active(s.targets[0].value.id):
                # the pullback of x[idx] = v reads idx (an index array, a mask)
                for n in names_of(s.targets[0].slice):
                    self.want_capture(s, n, after=False, index=True)
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                t = s.targets[0].id
                if not self.act.active(t):
                    continue
                if isinstance(s.value, gast.Subscript) and isinstance(s.value.value,
                                                                      gast.Name):
                    # the pullback of t = x[idx] reads idx
                    for n in names_of(s.value.slice):
                        self.want_capture(s, n, after=False, index=True)
                op = self.op_of(s)
                if op is None:
                    continue
                rule, bound = op
                if rule is USERCALL:
                    # the callee's saved values may view its arguments as they are when it
                    # returns; a later write to them is guarded like any capture
                    for a in self.args_callee_reads(s.value):
                        self.want_capture(s, a, after=True)
                    continue
                for d, tpl in zip(rule.diff, rule.templates):
                    if not self._any_active(bound.get(d)):
                        continue
                    reads = registry.value_reads((tpl,), set(bound) | {"out"})
                    for r in reads:
                        if r == "out":
                            self.want_capture(s, t, after=True)
                        else:
                            for n in names_of(bound.get(r)):
                                self.want_capture(s, n, after=False)
            elif isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) and \
                    not is_marker(s):
                f = s.value.func
                if isinstance(f, gast.Attribute) and f.attr == "at" and \
                        len(s.value.args) == 3:
                    # the pullback of np.add.at(x, idx, v) reads idx
                    for n in names_of(s.value.args[1]):
                        self.want_capture(s, n, after=False, index=True)
                if self.is_user_call(s.value):
                    for a in self.args_callee_reads(s.value):
                        self.want_capture(s, a, after=True)

    def info_at(self, obj: Any, node: gast.AST) -> Any:
        """The compiled callee, with its compile errors located at the call."""
        from adgen.errors import AdgenError

        try:
            return self.callee_info(obj)
        except AdgenError as err:
            if err.location is None or err.location.file != self.parsed.file:
                err.location = self.loc(node)
                err.args = (err.format(),)
            raise

    def args_callee_reads(self, call: gast.Call) -> set[str]:
        """The argument names whose values a callee's pullback may read (unknown: all), and
        for a nested def, every version of the enclosing names it reads."""
        everything = loaded_names(call)
        if isinstance(call.func, gast.Name):
            for d in self.parsed.nested_defs:
                if d.name == call.func.id:
                    free = free_names(d, self.parsed.closure_free)
                    everything |= {n.id for n in walk(self.fn) if isinstance(n, gast.Name)
                                   and user_name_of(n.id) in free}
        obj = self.resolve(call.func)
        if obj is MISSING or not is_python_function(obj):
            return everything
        info = self.info_at(obj, call)
        reads = info.compiled.reads_params if info is not None else True
        if reads is True:
            return everything
        import inspect

        params = list(inspect.signature(obj).parameters)
        out: set[str] = set()
        for k, a in enumerate(call.args):
            if k < len(params) and params[k] in reads:
                out |= loaded_names(a)
        for kw in call.keywords:
            if kw.arg in reads:
                out |= loaded_names(kw.value)
        return out
