"""Reverse: the forward function (primal + what the pullback reads) and the pullback.

Input: a function in SSA form after lower_mutation, with its activity and effects.
Output: two FunctionDefs, ``<f>_forward(*params) -> (out, saved)`` and
``<f>_pullback(saved, out_bar, sh=None) -> tuple`` (one cotangent per parameter), and the
list of mutation-site decisions.

- Loops record one tuple per iteration on a tape (a list) at the end of the body; the pullback
  iterates over ``reversed(tape)``: it reads the tape and never pops it, so it can run again.
- An if is reversed on its recorded test; a try on the recorded arm that ran.
- Value adjoints (``x_bar``) are assigned on first contribution and added to afterwards; the
  generator tracks statically which are defined, so an adjoint that is never contributed gets
  no code at all (backward dead-code elimination). Adjoints an inner block adds to are
  materialised with ``zeros_like`` before it.
- Names that may view a buffer written in place use shadow memory (``sh.of(x)``), where the
  adjoint of a view is the same view of its base's adjoint.
- Values a pullback reads that a later in-place write may overwrite are captured
  (``capture(...)``), and only the writes that may overwrite them are guarded
  (``before_write(...)``): free sites get no code.
"""

from __future__ import annotations

import copy
import operator
from dataclasses import dataclass, field
from typing import Any

import gast
from adgen.transforms.analyses.activity import NONDIFF_ATTRS, NONDIFF_CALLS, Activity
from adgen.transforms.analyses.effects import Effects, Write
from adgen.transforms.analyses.kinds import NUMBER, expr_kind, shape_keys
from adgen.transforms.desugar import assign, name
from adgen.transforms.hoist_defs import is_marker
from adgen.transforms.names import Namer
from adgen.transforms.parse import Parsed
from adgen.transforms.ssa import is_break_if
from adgen.transforms.walk import walk

from adgen.errors import Location, MissingRuleError, MutationError, UnsupportedError
from adgen.rules import registry

BINOPS = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
          gast.Div: operator.truediv, gast.FloorDiv: operator.floordiv, gast.Mod: operator.mod,
          gast.Pow: operator.pow, gast.MatMult: operator.matmul}
UNARYOPS = {gast.USub: operator.neg, gast.UAdd: operator.pos}


@dataclass
class Site:
    """A mutation site and what was decided there (becomes an adgen.MutationSite)."""

    stmt: gast.stmt
    construct: str
    decision: str
    reason: str
    captured_at: tuple[int, ...] = ()


@dataclass
class Capture:
    stmt: gast.stmt
    name: str
    after: bool  # the capture of an output is taken after its statement
    var: str = ""


@dataclass
class Result:
    forward: gast.FunctionDef
    pullback: gast.FunctionDef
    sites: list[Site]
    callees: dict[str, Any] = field(default_factory=dict)
    mutates_params: bool = False
    reads_params: set[str] | bool = True
    mutates_containers: bool = False
    written_params: set[str] | bool = True


def _src(node: gast.AST) -> str:
    import ast

    try:
        return ast.unparse(gast.gast_to_ast(copy.deepcopy(node))).strip()
    except Exception:  # noqa: BLE001 - only for messages
        return type(node).__name__


def _loads(node: gast.AST) -> set[str]:
    return {n.id for n in walk(node) if isinstance(n, gast.Name)
            and isinstance(n.ctx, gast.Load)}


def _stores(nodes: list[gast.stmt]) -> set[str]:
    out: set[str] = set()
    for s in nodes:
        for n in walk(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                out.add(n.id)
    return out


def _parse_stmts(src: str) -> list[gast.stmt]:
    return gast.parse(src).body


def _expr(src: str) -> gast.expr:
    return gast.parse(src).body[0].value


def _attr(obj: str | gast.expr, attr: str) -> gast.Attribute:
    value = name(obj) if isinstance(obj, str) else obj
    return gast.Attribute(value=value, attr=attr, ctx=gast.Load())


def _call(func: gast.expr | str, *args: gast.expr) -> gast.Call:
    f = name(func) if isinstance(func, str) else func
    return gast.Call(func=f, args=list(args), keywords=[])


def _comment(text: str) -> gast.stmt:
    """A comment line in generated code (an Expr holding a marker the emitter turns into #)."""
    return gast.Expr(value=gast.Constant(value=f"\x00# {text}", kind=None))


class Reverse:
    """Builds the forward and pullback of one function."""

    def __init__(self, parsed: Parsed, fn: gast.FunctionDef, namer: Namer, act: Activity,
                 eff: Effects, headers: set[str], policy: str,
                 callee_info: Any, kinds: dict[str, Any] | None = None) -> None:
        self.parsed = parsed
        # name -> NUMBER or an array's rank, for the argument signature compiled for
        # (analyses.kinds); empty when compiling for any arguments
        self.kinds: dict[str, Any] = kinds or {}
        self.int_names = {n for n, k in self.kinds.items() if k == NUMBER}
        self.fn = fn
        self.namer = namer
        self.act = act
        self.eff = eff
        self.headers = headers
        self.policy = policy
        self.callee_info = callee_info  # (func) -> CalleeInfo | None
        self.fname = fn.name
        self.sites: list[Site] = []
        self.callees: dict[str, Any] = {}
        self.adj: dict[str, str] = {}
        self.order: dict[int, int] = {}
        self.loops_of: dict[int, tuple[int, ...]] = {}
        self.block_of: dict[int, int] = {}
        self.saved_call: dict[int, str] = {}
        self.caps: dict[tuple[int, str], Capture] = {}
        self.guarded: dict[int, Write] = {}
        self.tape_of: dict[int, str] = {}
        self.arm_of: dict[int, str] = {}
        self.extra_fwd: set[str] = set()
        self.result_of: dict[int, str] = {}
        # parameters whose values the pullback reads (True: cannot tell, all of them)
        self.reads_params: set[str] | bool = set()
        self.numeric: set[str] = set()
        # names used as containers or objects (indexed stores, appends, attribute access)
        self.objlike: set[str] = {n for n, k in eff.kinds.items() if k in ("list", "dict",
                                                                           "tuple")}
        methods = {id(c.func) for c in walk(fn) if isinstance(c, gast.Call)}
        for st in walk(fn):
            if isinstance(st, gast.Attribute) and isinstance(st.value, gast.Name) and \
                    id(st) not in methods and st.attr not in NONDIFF_ATTRS and \
                    st.attr not in ("T", "real", "imag", "flat"):
                self.objlike.add(st.value.id)
        for w in eff.writes:
            if w.container:
                self.objlike.add(w.target)
        self.defs: dict[str, gast.expr] = {}
        for st in walk(fn):
            if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name):
                self.defs[st.targets[0].id] = st.value
        self.records: dict[int, list[str]] = {}

    # ----------------------------------------------------------------------------------------
    # helpers

    def bar(self, n: str) -> str:
        if n not in self.adj:
            self.adj[n] = self.namer.reserve(f"{n}_bar")
        return self.adj[n]

    def active(self, node: gast.AST) -> bool:
        return isinstance(node, gast.Name) and self.act.active(node.id)

    def tracked(self, n: str) -> bool:
        """True for arrays (or scalars) whose adjoint lives in shadow memory; containers and
        objects keep value adjoints, and the arrays they hold are tracked on their own."""
        if self._tracked is None:
            self._tracked = self._tracked_closure()
        return n in self._tracked

    _tracked: set[str] | None = None

    def _tracked_closure(self) -> set[str]:
        # a copy (a = b, loop headers, merges) binds the same object: both names keep their
        # adjoint in the same place, so tracking is closed under copies
        names = set(self.eff.buffers) | set(self.parsed.closure_free)
        out = {n for n in names if (self.eff.tracked(n) or n in self.parsed.closure_free)}
        copies = [(st.targets[0].id, st.value.id) for st in walk(self.fn)
                  if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name)
                  and isinstance(st.value, gast.Name)]
        changed = True
        while changed:
            changed = False
            for a, b in copies:
                if (a in out) != (b in out) and a not in self.objlike and \
                        b not in self.objlike:
                    out |= {a, b}
                    changed = True
        return out - self.objlike

    def loc(self, node: gast.AST) -> Location:
        return self.parsed.location(node)

    def resolve(self, node: gast.expr) -> Any:
        if isinstance(node, gast.Name) and node.id in _RUNTIME_CALLS:
            from adgen import runtime

            return getattr(runtime, node.id)
        parts = []
        while isinstance(node, gast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, gast.Name) or self.parsed.is_local(node.id) or \
                node.id in self.namer_locals:
            return _MISSING
        if node.id in self.parsed.namespace:
            obj = self.parsed.namespace[node.id]
        else:
            import builtins

            if not hasattr(builtins, node.id):
                return _MISSING
            obj = getattr(builtins, node.id)
        for p in reversed(parts):
            try:
                obj = getattr(obj, p)
            except AttributeError:
                return _MISSING
        return obj

    # ----------------------------------------------------------------------------------------
    # analysis of positions, captures and guards

    def index(self) -> None:
        self.namer_locals = _stores(self.fn.body) | {a.id for a in self.fn.args.args}
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
                elif _is_number(v):
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
            return _is_number(v) or v is None

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
        if not _basic_index(idx, self.int_names):
            return False
        return all(self.def_count.get(n.id, 0) <= 1 for n in walk(idx)
                   if isinstance(n, gast.Name))

    def shadow(self, n: str, state: set[str]) -> gast.expr:
        """The shadow of tracked ``n``: its adjoint's name when bound, else the view of the
        array it views, else ``sh.of(n)``."""
        found = self._shadow_at_hand(n, state)
        return found if found is not None else _call(_attr("sh", "of"), name(n))

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
        return gast.Subscript(value=base, slice=copy.deepcopy(view[1]), ctx=gast.Load())

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

    def want_capture(self, stmt: gast.stmt, n: str, after: bool) -> None:
        """Notes that the pullback of ``stmt`` reads the value of ``n``."""
        bufs = self.eff.buffers.get(n, set())
        if "param" in bufs and self.reads_params is not True:
            p = self.param_of(n)
            if p is None:
                self.reads_params = True  # cannot tell which: all of them
            else:
                self.reads_params = self.reads_params | {p}
        if not bufs:
            return
        conflicts = [w for w in self.eff.writes if not w.container and (w.buffers & bufs) and
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
        return text.split("#")[0].strip() or _src(stmt)

    def user_name(self, n: str) -> str:
        """A name the user wrote for what ``n`` holds (temporaries: the expression's text)."""
        base = _user_name(n)
        if base in {a.id for a in self.fn.args.args} or not base.startswith("t") or \
                not base[1:].isdigit():
            return base
        for st in walk(self.fn):
            if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name) and \
                    st.targets[0].id == n:
                return _src(st.value)
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
        a = _interval(view.slice)
        b = _interval(st.targets[0].slice)
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
            if w.container:
                self.sites.append(Site(w.stmt, construct, "free",
                                       "a container store replaces an element reference; the "
                                       "values the gradient reads stay as they were"))
                continue
            line = getattr(w.stmt, "lineno", 0)
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
                    f"{construct} overwrites {_user_name(c.name)}, which the gradient of line "
                    f"{c.stmt.lineno} ({self.construct(c.stmt)}) reads{also}",
                    self.loc(w.stmt),
                    hint=f'use mutation="save" (adgen keeps a copy of {_user_name(c.name)}), '
                         f"or write into a copy: {_user_name(c.name)} = "
                         f"{_user_name(c.name)}.copy() before line {line}",
                    captured_at=self.loc(c.stmt))
            decision = "guarded-save" if self.policy == "save" else "guarded-raise"
            reason = (f"may overwrite {what}, read by the gradient of line(s) "
                      f"{', '.join(map(str, lines))}")
            self.sites.append(Site(w.stmt, construct, decision, reason, lines))
        self.sites.sort(key=lambda s: (getattr(s.stmt, "lineno", 0), self.order[id(s.stmt)]))

    # ----------------------------------------------------------------------------------------
    # the pullback

    def run(self) -> Result:
        self.index()
        self._conflicts: dict[int, list[Capture]] = {}
        self.collect_reads(self.fn.body)
        self.decide_sites()
        state: set[str] = set()
        params = [a.id for a in self.fn.args.args]
        # parameters this function changes in place as containers (lists, dicts, objects):
        # their adjoint starts from what the caller handed over
        cparams = sorted({w.target for w in self.eff.writes if w.container and
                          w.target in params and self.act.active(w.target)})
        for p in cparams:
            state |= {self.bar(p), "owned:" + self.bar(p)}
        rev = self.rev_block(self.fn.body, state, top=True)
        pull_body: list[gast.stmt] = []
        pull_body += _parse_stmts("top = sh is None\nif top:\n    sh = ShadowMap()")
        ret_parts = []
        written = self.written_params()
        for p in params:
            b = self.adj.get(p)
            if self.tracked(p) and (written is True or p in written):
                # written in place: the caller tracks it and finds its adjoint in sh
                ret_parts.append(f"sh.value({p}) if top else None")
            elif self.tracked(p):
                # tracked here only because arguments may alias: hand the adjoint back
                ret_parts.append(f"sh.value({p}) if top else sh.pop({p})")
            elif p in self.objlike or self.eff.tracked(p):
                # a container argument: arrays inside it may have adjoints in shadow memory
                ret_parts.append(f"collect(sh, {p}, {b if b is not None and b in state else None})"
                                 f" if top else {b if b is not None and b in state else None}")
            elif b is not None and b in state:
                ret_parts.append(b)
            else:
                ret_parts.append("None")
        tail = _parse_stmts(f"return ({', '.join(ret_parts)}{',' if len(ret_parts) == 1 else ''})")
        body = rev + tail
        needed = self.free_names(body, set()) | set(cparams)
        saved = sorted(needed - {"sh", "top", "out_bar", "saved"} - self.globals_used(needed))
        self.saved_names = saved
        if saved:
            unpack = _parse_stmts(f"({', '.join(saved)}{',' if len(saved) == 1 else ''}) = saved")
        else:
            unpack = []
        withdraws = [assign(name(self.bar(p), gast.Store), _call(_attr("sh", "withdraw"),
                                                                  name(p)), self.fn)
                     for p in cparams]
        pull_body += unpack + withdraws + body
        if self.kinds:
            pull_body = [_KnownShapes(self.kinds).visit(st) for st in pull_body]
            _accumulate_in_place(pull_body)
        pullback = gast.FunctionDef(
            name=f"{self.fname}_pullback",
            args=_args(["saved", "out_bar", "sh"], defaults=[gast.Constant(None, None)]),
            body=pull_body, decorator_list=[], returns=None, type_comment=None,
            type_params=[])
        forward = self.forward(saved)
        mutates = "param" in self.eff.written
        self.mutates_containers = "param" in self.eff.containers_written
        written = self.written_params()
        return Result(forward, pullback, self.sites, self.callees, mutates, self.reads_params,
                      self.mutates_containers, written)

    def globals_used(self, names: set[str]) -> set[str]:
        return {n for n in names if n not in self.namer_locals and n not in self.extra_fwd
                and n not in self.adj.values()}

    def free_names(self, stmts: list[gast.stmt], bound: set[str]) -> set[str]:
        """Forward names a block of generated pullback code reads before binding them."""
        fwd = self.namer_locals | self.extra_fwd
        free: set[str] = set()
        bound = set(bound)
        for st in stmts:
            if isinstance(st, gast.For):
                free |= _loads(st.iter) - bound
                inner = bound | {n.id for n in walk(st.target) if isinstance(n, gast.Name)}
                free |= self.free_names(st.body, inner)
            elif isinstance(st, gast.If):
                free |= _loads(st.test) - bound
                free |= self.free_names(st.body, bound) | self.free_names(st.orelse, bound)
            else:
                free |= _loads(st) - bound
            bound |= {n.id for n in walk(st) if isinstance(n, gast.Name) and
                      isinstance(n.ctx, gast.Store)} if not isinstance(
                st, (gast.For, gast.If)) else set()
        return {n for n in free if n in fwd}

    def fwd_locals(self, stmts: list[gast.stmt]) -> set[str]:
        """Names the forward binds inside a block, including the ones this pass adds."""
        out = _stores(stmts)
        for st in stmts:
            for n in walk(st):
                if id(n) in self.tape_of:
                    out.add(self.tape_of[id(n)])
                if id(n) in self.saved_call:
                    out.add(self.saved_call[id(n)])
                if id(n) in self.arm_of:
                    out.add(self.arm_of[id(n)])
        for (sid, _), cap in self.caps.items():
            if cap.var and any(sid == id(n) for st in stmts for n in walk(st)):
                out.add(cap.var)
        return out

    # ----------------------------------------------------------------------------------------
    # collect which values pullbacks read (for captures)

    def collect_reads(self, stmts: list[gast.stmt]) -> None:
        for k, s in enumerate(stmts):
            if isinstance(s, gast.AugAssign) and k > 0 and _is_copy_of(stmts[k - 1], s) and \
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
                            for n in _loads_of(bound.get(r)):
                                self.want_capture(s, n, after=False)
                continue
            for fieldname in ("body", "orelse"):
                sub = getattr(s, fieldname, None)
                if isinstance(sub, list):
                    self.collect_reads(sub)
            if isinstance(s, gast.Try):
                for h in s.handlers:
                    self.collect_reads(h.body)
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                t = s.targets[0].id
                if not self.act.active(t):
                    continue
                op = self.op_of(s)
                if op is None:
                    continue
                rule, bound = op
                if rule is _USERCALL:
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
                            for n in _loads_of(bound.get(r)):
                                self.want_capture(s, n, after=False)
            elif isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) and \
                    not is_marker(s):
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
        """The argument names whose values a callee's pullback may read (unknown: all)."""
        everything = _loads(call)
        obj = self.resolve(call.func)
        if obj is _MISSING or not _is_python_function(obj):
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
                out |= _loads(a)
        for kw in call.keywords:
            if kw.arg in reads:
                out |= _loads(kw.value)
        return out

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
        seen = set()
        while n not in params and n not in seen:
            seen.add(n)
            v = self.defs.get(n)
            if isinstance(v, gast.Name):
                n = v.id
            elif isinstance(v, (gast.Subscript, gast.Attribute)) and \
                    isinstance(v.value, gast.Name):
                n = v.value.id
            elif isinstance(v, gast.Call) and isinstance(v.func, gast.Attribute) and \
                    isinstance(v.func.value, gast.Name) and v.func.attr in (
                        "reshape", "ravel", "transpose", "T", "squeeze", "view"):
                n = v.func.value.id
            else:
                return None
        return n if n in params else None

    def kind_of(self, arg: Any) -> Any:
        """NUMBER, an array's rank, or None (unknown) for a bound rule argument."""
        if isinstance(arg, gast.Name):
            return self.kinds.get(arg.id)
        if _is_number(arg):
            return NUMBER
        if isinstance(arg, gast.Subscript):
            return expr_kind(arg, self.kinds, self.resolve_global)
        return None

    def resolve_global(self, node: gast.expr) -> Any:
        obj = self.resolve(node)
        return None if obj is _MISSING else obj

    def _numeric_arg(self, arg: Any) -> bool:
        if isinstance(arg, gast.Name):
            return arg.id in self.numeric
        return _is_number(arg)

    def _any_active(self, arg: Any) -> bool:
        if isinstance(arg, gast.Name):
            return self.act.active(arg.id)
        if isinstance(arg, (gast.Tuple, gast.List, tuple)):
            elts = arg.elts if not isinstance(arg, tuple) else arg
            return any(self._any_active(e) for e in elts)
        return False

    def is_user_call(self, call: gast.Call) -> bool:
        obj = self.resolve(call.func)
        if obj is _MISSING:
            if isinstance(call.func, gast.Attribute) and isinstance(call.func.value, gast.Name):
                from adgen.rules import methods

                if call.func.attr in methods.METHODS or call.func.attr == "append":
                    return False
            return True
        if str(getattr(obj, "__module__", "")).startswith("adgen."):
            return False  # adgen's own runtime functions: rules or no derivative
        return registry.lookup(obj) is None and (_is_python_function(obj) or
                                                 _is_user_class(obj))

    def op_of(self, s: gast.Assign) -> tuple[Any, dict[str, Any]] | None:
        """The rule and bound arguments of an operation statement (None: no rule needed)."""
        v = s.value
        if isinstance(v, gast.BinOp):
            rule = registry.lookup(BINOPS[type(v.op)])
            return (rule, rule.bind([v.left, v.right], {})) if rule else None
        if isinstance(v, gast.UnaryOp) and type(v.op) in UNARYOPS:
            rule = registry.lookup(UNARYOPS[type(v.op)])
            return (rule, rule.bind([v.operand], {})) if rule else None
        if isinstance(v, gast.Attribute):
            from adgen.rules import methods

            if v.attr in methods.ATTRIBUTES and self.resolve(v) is _MISSING:
                rule = registry.lookup(methods.ATTRIBUTES[v.attr])
                return (rule, rule.bind([v.value], {})) if rule else None
            return None
        if isinstance(v, gast.Call):
            if self.is_user_call(v):
                return (_USERCALL, {})
            rule, args = self.call_rule(v)
            if rule is None:
                return None
            kwargs = {k.arg: k.value for k in v.keywords if k.arg != "out"}
            try:
                return rule, rule.bind(list(args), dict(kwargs))
            except TypeError as exc:
                raise UnsupportedError(f"cannot bind the arguments of {rule.name}: {exc}",
                                       self.loc(s)) from exc
        return None

    def call_rule(self, v: gast.Call) -> tuple[Any, list[gast.expr]]:
        obj = self.resolve(v.func)
        if obj is not _MISSING:
            return registry.lookup(obj), list(v.args)
        if isinstance(v.func, gast.Attribute):
            from adgen.rules import methods

            fn = methods.METHODS.get(v.func.attr)
            if fn is not None:
                args = list(v.args)
                if v.func.attr in methods.VARARG_METHODS and len(args) > 1:
                    args = [gast.Tuple(elts=args, ctx=gast.Load())]
                return registry.lookup(fn), [v.func.value] + args
        return None, []

    # ----------------------------------------------------------------------------------------
    # reversing blocks

    def materialize(self, names: set[str], state: set[str]) -> list[gast.stmt]:
        """Zero adjoints that an inner block will add to, so every path defines them."""
        out = []
        for n in sorted(names):
            if self.tracked(n) or not self.act.active(n):
                continue
            b = self.bar(n)
            if b not in state:
                out.append(assign(name(b, gast.Store), _call("zeros_like", name(n)), self.fn))
                state.add(b)
                state.add("owned:" + b)
        return out

    def own(self, n: str, b: str, state: set[str], like: gast.AST) -> list[gast.stmt]:
        """Makes ``b`` (the adjoint of n) an object only this pullback holds, to add in place."""
        if b not in state:
            state |= {b, "owned:" + b}
            return [assign(name(b, gast.Store), _call("zeros_like", name(n)), like)]
        if "owned:" + b not in state:
            state.add("owned:" + b)
            return [assign(name(b, gast.Store), _call("copy_adjoint", name(b)), like)]
        return []

    def contributed_in(self, stmts: list[gast.stmt]) -> set[str]:
        """Active names whose adjoint a block's reverse may add to."""
        names: set[str] = set()
        for s in stmts:
            for n in walk(s):
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and \
                        self.act.active(n.id):
                    names.add(n.id)
        return names

    def rev_block(self, stmts: list[gast.stmt], state: set[str], top: bool = False
                  ) -> list[gast.stmt]:
        out: list[gast.stmt] = []
        skip_next = False
        for i in range(len(stmts) - 1, -1, -1):
            s = stmts[i]
            if skip_next:
                skip_next = False
                continue
            if isinstance(s, gast.AugAssign) and i > 0 and _is_copy_of(stmts[i - 1], s):
                code = self.rev_augassign(s, stmts[i - 1], state)
                skip_next = True
            else:
                code = self.rev_stmt(s, state)
            if code:
                line = getattr(s, "lineno", None)
                if line and line != self._last_line:
                    code = [_comment(f"line {line}: {self.source_line(line)}")] + code
                    self._last_line = line
                out.extend(code)
        return out

    _last_line: int | None = None

    def source_line(self, line: int) -> str:
        try:
            return self.parsed.lines[line - 1].strip()
        except IndexError:
            return ""

    def rev_stmt(self, s: gast.stmt, state: set[str]) -> list[gast.stmt]:
        if is_marker(s):
            return []  # a nested def: its gradient flows when it is called
        if isinstance(s, gast.Return):
            if s.value is not None and self.active(s.value):
                n = s.value.id
                if not self.tracked(n) and n not in self.adj and n not in self.headers and \
                        self.eff.kinds.get(n) is None:
                    # the returned value's adjoint is the pullback's argument itself
                    self.adj[n] = "out_bar"
                    state.add("out_bar")
                    return []
                if self.tracked(n):
                    # a caller whose result shares this buffer passes its shadow as out_bar:
                    # that adjoint is already in place
                    b = self.bar(n)
                    state.add(b)
                    return [assign(name(b, gast.Store), _call("add_out", name("sh"), name(n),
                                                              name("out_bar")), s)]
                return self.contribute(n, name("out_bar"), state, copy_shadow=True)
            return []
        if isinstance(s, gast.Assign):
            t = s.targets[0]
            if isinstance(t, gast.Name):
                return self.rev_assign(s, t.id, state)
            if isinstance(t, gast.Subscript):
                return self.rev_store(s, state)
            if isinstance(t, gast.Attribute):
                return self.rev_setattr(s, state)
            return []
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call):
            return self.rev_expr_call(s, state)
        if isinstance(s, gast.If):
            return self.rev_if(s, state)
        if isinstance(s, (gast.For, gast.While)):
            return self.rev_loop(s, state)
        if isinstance(s, gast.Try):
            return self.rev_try(s, state)
        if isinstance(s, gast.AugAssign):
            raise UnsupportedError("an augmented assignment in this position is not supported",
                                   self.loc(s))
        return []

    def rev_if(self, s: gast.If, state: set[str]) -> list[gast.stmt]:
        inner = self.contributed_in(s.body + s.orelse)
        inner_defined = _stores(s.body + s.orelse)
        pre = self.materialize(inner - inner_defined, state)
        s1, s2 = set(state), set(state)
        self._last_line = None
        body = self.rev_block(s.body, s1)
        self._last_line = None
        orelse = self.rev_block(s.orelse, s2)
        # an adjoint defined in only one arm is zero in the other
        arm_local = _stores(s.body + s.orelse)
        for b in sorted(m for m in (s1 ^ s2) if not m.startswith("owned:")):
            n = next((k for k, v in self.adj.items() if v == b), None)
            if n is None or not self.act.active(n) or n in arm_local:
                continue
            zero = _call(_attr("sh", "of"), name(n)) if self.tracked(n) else \
                _call("zeros_like", name(n))
            (orelse if b in s1 else body).append(assign(name(b, gast.Store), zero, s))
        owned_both = {m for m in s1 & s2 if m.startswith("owned:")}
        state |= {m for m in s1 | s2 if not m.startswith("owned:")} | owned_both
        if not body and not orelse:
            return pre
        test = copy.deepcopy(s.test)
        return pre + [gast.If(test=test, body=body or [gast.Pass()], orelse=orelse)]

    def rev_loop(self, s: gast.For | gast.While, state: set[str]) -> list[gast.stmt]:
        inner = self.contributed_in(s.body)
        local = _stores(s.body) | ({s.target.id} if isinstance(s, gast.For) else set())
        carried = (inner - local) | {h for h in self.headers if h in local and
                                     self.act.active(h)}
        pre = self.materialize(carried, state)
        for n in sorted(inner - local):
            # a buffer defined outside the loop: its shadow is taken once, before the loop
            b = self.bar(n)
            if self.tracked(n) and self.act.active(n) and b not in state:
                pre.append(assign(name(b, gast.Store), _call(_attr("sh", "of"), name(n)), s))
                state.add(b)
        for n in sorted(carried):
            # an adjoint the body changes in place is copied once, before the loop
            b = self.bar(n)
            if b in state and "owned:" + b not in state and self.act.active(n) and \
                    not self.tracked(n) and n not in self.numeric:
                pre += self.own(n, b, state, s)
        body_state = set(state)
        self._last_line = None
        body = self.rev_block([b for b in s.body if not is_break_if(b)], body_state)
        # adjoints the loop carries must be defined again at the end of each reversed iteration
        for n in sorted(carried):
            b = self.bar(n)
            if not self.tracked(n) and self.act.active(n) and b not in body_state:
                body.append(assign(name(b, gast.Store), _call("zeros_like", name(n)), s))
        state |= {self.bar(n) for n in carried if self.act.active(n) and not self.tracked(n)}
        if not body:
            return pre
        tape = self.namer.fresh("tape")
        self.extra_fwd.add(tape)
        self.tape_of[id(s)] = tape
        local = self.fwd_locals(s.body) | local
        recorded = sorted(self.free_names(body, set()) & local)
        self.records[id(s)] = recorded
        target = gast.Tuple(elts=[name(r, gast.Store) for r in recorded], ctx=gast.Store()) \
            if recorded else name("_", gast.Store)
        loop = gast.For(target=target, iter=_call("reversed", name(tape)), body=body,
                        orelse=[], type_comment=None)
        return pre + [loop]

    def rev_try(self, s: gast.Try, state: set[str]) -> list[gast.stmt]:
        arms = [s.body + s.orelse] + [h.body for h in s.handlers]
        inner = set().union(*(self.contributed_in(a) for a in arms))
        pre = self.materialize(inner - _stores(sum(arms, [])), state)
        arm = self.namer.fresh("arm")
        self.extra_fwd.add(arm)
        self.arm_of[id(s)] = arm
        branches = []
        for k, stmts in enumerate(arms):
            st = set(state)
            self._last_line = None
            code = self.rev_block(stmts, st)
            state |= st
            branches.append((k, code))
        out: list[gast.stmt] = []
        chain: list[gast.stmt] | None = None
        for k, code in reversed(branches):
            test = gast.Compare(left=name(arm), ops=[gast.Eq()],
                                comparators=[gast.Constant(k, None)])
            node = gast.If(test=test, body=code or [gast.Pass()], orelse=chain or [])
            chain = [node]
        out = pre + (chain or [])
        return out

    # ----------------------------------------------------------------------------------------
    # contributions

    def contribute(self, n: str, value: gast.expr, state: set[str], *, may_be_none: bool = False,
                   copy_shadow: bool = False) -> list[gast.stmt]:
        """Adds ``value`` to the adjoint of ``n``."""
        if not self.act.active(n):
            return []
        b = self.bar(n)
        if may_be_none:
            # a container's adjoint may lack an entry (zero): fill it in like the primal
            value = _call("or_zeros", value, name(n))
        if self.eff.kinds.get(n) == "list":
            # a rule may give a list's adjoint as an array (np.array, np.stack): as rows
            value = _call("list_adjoint", value)
        if self.tracked(n):
            out = []
            if b not in state:
                out.append(assign(name(b, gast.Store), self.shadow(n, state), self.fn))
                state.add(b)
            out.append(gast.AugAssign(target=name(b, gast.Store), op=gast.Add(), value=value))
            return out
        if b in state:
            if self.eff.kinds.get(n) in ("list", "dict", "object") or self.structured(n):
                new = _call("add", name(b), value)
                state.discard("owned:" + b)
            else:
                new = gast.BinOp(left=name(b), op=gast.Add(), right=value)
                state.add("owned:" + b)
            return [assign(name(b, gast.Store), new, self.fn)]
        state.add(b)
        state.discard("owned:" + b)
        return [assign(name(b, gast.Store), value, self.fn)]

    def structured(self, n: str) -> bool:
        """True unless ``n`` is known to hold a number or an array (then adjoints add with +;
        otherwise with add(), which adds lists, dicts and objects item by item)."""
        return n not in self.numeric

    def g_of(self, t: str, state: set[str]) -> gast.expr | None:
        """The adjoint of ``t`` as an expression, or None when it is (statically) zero."""
        if not self.act.active(t):
            return None
        b = self.bar(t)
        if self.tracked(t):
            return self.shadow(t, state)
        return name(b) if b in state else None

    def rev_assign(self, s: gast.Assign, t: str, state: set[str]) -> list[gast.stmt]:
        out = self._rev_assign(s, t, state)
        # before this definition, t held another value (a loop header's previous iteration)
        if not self.tracked(t):
            state.discard(self.bar(t))
            state.discard("owned:" + self.bar(t))
        return out

    def _rev_assign(self, s: gast.Assign, t: str, state: set[str]) -> list[gast.stmt]:
        v = s.value
        g = self.g_of(t, state)
        if isinstance(v, gast.Name):
            if g is None or not self.act.active(v.id):
                return []
            if self.tracked(t) and self.tracked(v.id):
                return []  # the same buffer: one shadow
            return self.contribute(v.id, g, state, copy_shadow=self.tracked(t))
        if g is None:
            if isinstance(v, gast.Call) and self.is_user_call(v) and self._mutating_call(v):
                return self.rev_user_call(s, v, t, state, forced=True)
            return []
        if isinstance(v, (gast.List, gast.Tuple)):
            out = []
            for k, e in enumerate(v.elts):
                if self.active(e):
                    out += self.contribute(e.id, _call("item", g, gast.Constant(k, None)),
                                           state, may_be_none=True)
            return out
        if isinstance(v, gast.Dict):
            out = []
            for key, e in zip(v.keys, v.values):
                if self.active(e):
                    out += self.contribute(e.id, _call("item", g, copy.deepcopy(key)), state,
                                           may_be_none=True)
            return out
        if isinstance(v, gast.Subscript):
            return self.rev_getitem(s, v, t, g, state)
        if isinstance(v, gast.Attribute) and not (v.attr in NONDIFF_ATTRS):
            from adgen.rules import methods

            if v.attr not in methods.ATTRIBUTES:
                if not self.active(v.value) or self.tracked(t):
                    return []  # a tracked attribute's adjoint lives in shadow memory
                return self.contribute(v.value.id, _call("attr_adjoint", name(v.value.id),
                                                         gast.Constant(v.attr, None), g),
                                       state, may_be_none=True)
        if isinstance(v, gast.Call) and self.is_user_call(v):
            return self.rev_user_call(s, v, t, state, forced=False)
        if isinstance(v, gast.Call) and any(k.arg == "out" for k in v.keywords):
            return self.rev_out_call(s, v, t, state)
        op = self.op_of(s)
        if op is None:
            if isinstance(v, (gast.Compare, gast.BoolOp)) or (
                    isinstance(v, gast.UnaryOp) and isinstance(v.op, gast.Not)):
                return []
            if isinstance(v, gast.Call):
                return self.missing_rule(s, v)
            if isinstance(v, (gast.BinOp, gast.UnaryOp)):
                raise MissingRuleError(f"no derivative rule for the operator in {_src(v)}",
                                       self.loc(s), hint="this is a gap in adgen's rules: "
                                       "rewrite the expression with NumPy functions")
            return []
        rule, bound = op
        return self.apply_rule(s, rule, bound, t, g, state)

    def rev_out_call(self, s: gast.Assign, v: gast.Call, t: str,
                     state: set[str]) -> list[gast.stmt]:
        """``t = f(a, out=o)``: the written values' adjoint goes through f's rule, and the
        old contents of o get none (they were overwritten)."""
        op = self.op_of(s)
        if op is None:
            return self.missing_rule(s, v)
        rule, bound = op
        b = self.bar(t)
        out: list[gast.stmt] = []
        if b not in state:
            out.append(assign(name(b, gast.Store), _call(_attr("sh", "of"), name(t)), s))
            state.add(b)
        g = self.namer.fresh(f"{_user_name(t)}_g")
        out.append(assign(name(g, gast.Store), _call(_attr(name(b), "copy")), s))
        out.append(assign(gast.Subscript(value=name(b), slice=gast.Constant(Ellipsis, None),
                                         ctx=gast.Store()), gast.Constant(0.0, None), s))
        for d, tpl in zip(rule.diff, rule.templates):
            arg = bound.get(d)
            if not self._any_active(arg):
                continue
            expr = self.instantiate(s, tpl, rule, bound, t, name(g))
            if isinstance(arg, gast.Name):
                out += self.contribute(arg.id, expr, state)
            else:
                ct = self.namer.fresh(f"{d}_ct")
                out.append(assign(name(ct, gast.Store), expr, s))
                out += self.distribute(arg, name(ct), state)
        return out

    def missing_rule(self, s: gast.stmt, v: gast.Call) -> list[gast.stmt]:
        if not any(self.active(a) for a in walk(v) if isinstance(a, gast.Name)):
            return []
        fname = _src(v.func)
        if fname.split(".")[-1] in NONDIFF_CALLS:
            return []
        raise MissingRuleError(
            f"{fname}() has no derivative rule and adgen cannot read its source",
            self.loc(s), hint=f"register one with @adgen.rrule({fname})")

    def apply_rule(self, s: gast.stmt, rule: Any, bound: dict[str, Any], t: str,
                   g: gast.expr, state: set[str]) -> list[gast.stmt]:
        if rule.is_rrule:
            return self.rev_rrule(s, t, g, state)
        out: list[gast.stmt] = []
        if self.tracked(t) and rule.view:
            src = bound[rule.params[0].name]
            if isinstance(src, gast.Name) and self.tracked(src.id):
                # a view of a tracked buffer shares its shadow; a copy needs the rule. The
                # shadows the rule adds to are taken before the test, for every path.
                pre: list[gast.stmt] = []
                for n in [t] + [a.id for a in bound.values() if isinstance(a, gast.Name)]:
                    b = self.bar(n)
                    if self.tracked(n) and self.act.active(n) and b not in state:
                        pre.append(assign(name(b, gast.Store), _call(_attr("sh", "of"),
                                                                     name(n)), s))
                        state.add(b)
                inner = self._apply_templates(s, rule, bound, t, name(self.bar(t)), state)
                if not inner:
                    return pre
                return pre + [gast.If(test=_expr(f"root_of({t}) is not root_of({src.id})"),
                                      body=inner, orelse=[])]
        out += self._apply_templates(s, rule, bound, t, g, state)
        return out

    def _apply_templates(self, s: gast.stmt, rule: Any, bound: dict[str, Any], t: str,
                         g: gast.expr, state: set[str]) -> list[gast.stmt]:
        out: list[gast.stmt] = []
        if self.tracked(t) and not isinstance(g, gast.Name):
            gname = self.bar(t)
            if gname not in state:
                out.append(assign(name(gname, gast.Store), g, s))
                state.add(gname)
            g = name(gname)
        scalar = self.kinds.get(t) == NUMBER and all(
            self.kind_of(bound.get(p.name)) == NUMBER for p in rule.params)
        elementwise = bool(self.kinds) and _elementwise(rule)
        for d, tpl in zip(rule.diff, rule.templates):
            arg = bound.get(d)
            if not self._any_active(arg):
                continue
            expr = self.instantiate(s, tpl, rule, bound, t, g)
            if all(self._numeric_arg(bound.get(p.name)) for p in rule.params
                   if p.name in rule.diff):
                expr = _ShapeOnly().visit(expr)  # numbers and arrays: no list cases to keep
            others = [bound.get(p.name) for p in rule.params if p.name != d]
            if scalar or (isinstance(arg, gast.Name) and elementwise and
                          self.same_shape(arg.id, t)):
                # numbers in, a number out, or an operand of the result's shape: nothing
                # was broadcast
                expr = _Unbroadcast().visit(expr)
            elif len(rule.params) == 2 and others and _is_number(others[0]) and \
                    isinstance(arg, gast.Name) and arg.id in self.numeric:
                # the other operand is a Python number: no broadcasting to undo
                expr = _Unbroadcast().visit(expr)
            if isinstance(arg, gast.Name):
                out += self.contribute(arg.id, expr, state)
            else:
                ct = self.namer.fresh(f"{d}_ct")
                out.append(assign(name(ct, gast.Store), expr, s))
                out += self.distribute(arg, name(ct), state)
        return out

    def distribute(self, arg: Any, ct: gast.expr, state: set[str]) -> list[gast.stmt]:
        """Hands the items of a cotangent to the names in a (nested) list/tuple literal."""
        elts = arg.elts if not isinstance(arg, tuple) else list(arg)
        out: list[gast.stmt] = []
        for k, e in enumerate(elts):
            item = gast.Subscript(value=copy.deepcopy(ct), slice=gast.Constant(k, None),
                                  ctx=gast.Load())
            if self.active(e):
                out += self.contribute(e.id, item, state, may_be_none=True)
            elif isinstance(e, (gast.List, gast.Tuple)) and self._any_active(e):
                out += self.distribute(e, item, state)
        return out

    def instantiate(self, s: gast.stmt, tpl: gast.expr, rule: Any, bound: dict[str, Any],
                    t: str, g: gast.expr) -> gast.expr:
        expr = copy.deepcopy(tpl)
        subst: dict[str, gast.expr] = {"g": g, "out": self.read_value(s, t, after=True)}
        for p in rule.params:
            a = bound.get(p.name)
            if isinstance(a, registry.Default):
                subst[p.name] = _const(a.value)
            elif isinstance(a, tuple):
                subst[p.name] = gast.Tuple(elts=[self.read_value(s, e) for e in a],
                                           ctx=gast.Load())
            else:
                subst[p.name] = self.read_value(s, a)
        return _Subst(subst).visit(expr)

    def read_value(self, s: gast.stmt, a: Any, after: bool = False) -> gast.expr:
        if isinstance(a, str):
            a = name(a)
        if isinstance(a, gast.Name):
            cap = self.caps.get((id(s), a.id))
            if cap is not None:
                if not cap.var:
                    cap.var = self.namer.fresh(f"saved_{a.id}_")
                    self.extra_fwd.add(cap.var)
                return gast.Attribute(value=name(cap.var), attr="value", ctx=gast.Load())
            return name(a.id)
        if isinstance(a, (gast.Tuple, gast.List)):
            node = copy.deepcopy(a)
            node.elts = [self.read_value(s, e) for e in a.elts]
            return node
        return copy.deepcopy(a)

    def rev_getitem(self, s: gast.Assign, v: gast.Subscript, t: str, g: gast.expr,
                    state: set[str]) -> list[gast.stmt]:
        if not self.active(v.value):
            return []
        x = v.value.id
        idx = self.read_index(s, v.slice)
        if self.tracked(t) and not self.tracked(x):
            if x in self.objlike:
                return []  # an array held by a container: its adjoint lives in shadow memory
            # an element or view of an untracked array that is itself tracked: its shadow
            # holds its adjoint, which goes to the array's
            b = self.bar(x)
            out = self.own(x, b, state, s)
            out.append(gast.Expr(value=_call("add_item", name(b), _index_value(idx),
                                             _call(_attr("sh", "of"), name(t)))))
            return out
        if self.tracked(x):
            if self.tracked(t):
                if t in self.view_of:
                    return []  # a view (kinds known): it shares x's shadow
                # t views x's buffer (basic index) and shares its shadow, or is a copy
                return [gast.Expr(value=_call("scatter_if_copy", name("sh"), name(x),
                                              _index_value(idx), name(t)))]
            b = self.bar(x)
            if b in state and isinstance(self.kinds.get(x), int) and \
                    _basic_index(v.slice, self.int_names):
                # an element or a basic slice of an array whose shadow is at hand
                return [gast.AugAssign(target=gast.Subscript(value=name(b), slice=idx,
                                                             ctx=gast.Store()),
                                       op=gast.Add(), value=g)]
            return [gast.Expr(value=_call("add_item", _call(_attr("sh", "of"), name(x)),
                                          _index_value(idx), g))]
        b = self.bar(x)
        out: list[gast.stmt] = self.own(x, b, state, s)
        has_names = any(isinstance(e, gast.Name) for e in walk(v.slice))
        if _basic_index(v.slice, self.int_names) and (
                not has_names or isinstance(self.kinds.get(x), int)):
            target = gast.Subscript(value=name(b), slice=idx, ctx=gast.Store())
            if x not in self.numeric:
                out.append(gast.Expr(value=_call("add_item", name(b), _index_value(idx), g)))
            else:
                out.append(gast.AugAssign(target=target, op=gast.Add(), value=g))
        else:
            out.append(gast.Expr(value=_call("add_item", name(b), _index_value(idx), g)))
        return out

    def read_index(self, s: gast.stmt, idx: gast.expr) -> gast.expr:
        node = copy.deepcopy(idx)
        return node

    def rev_store(self, s: gast.Assign, state: set[str]) -> list[gast.stmt]:
        tgt = s.targets[0]
        x = tgt.value.id
        v = s.value
        if not self.act.active(x):
            return []
        idx = copy.deepcopy(tgt.slice)
        kind = self.eff.kinds.get(x)
        out: list[gast.stmt] = []
        if kind in ("list", "dict"):
            b = self.bar(x)
            out += self.own(x, b, state, s)
            taken = _call("take_item", name(b), _index_value(idx))
            if self.active(v):
                out += self.contribute(v.id, taken, state, may_be_none=True)
            else:
                out.append(gast.Expr(value=taken))
            return out
        if isinstance(v, gast.Name) and self.tracked(v.id) and self.same_view(v.id, x, idx):
            return []  # x[idx] = x[idx] updated in place: nothing was overwritten
        b = self.bar(x)
        if b not in state:
            out.append(assign(name(b, gast.Store), self.shadow(x, state), s))
            state.add(b)
        region = gast.Subscript(value=name(b), slice=idx, ctx=gast.Load())
        if self.active(v):
            g = self.namer.fresh(f"{v.id}_g") if self.tracked(v.id) else None
            if self.kind_of(gast.Subscript(value=name(x), slice=idx, ctx=gast.Load())) == \
                    NUMBER:
                # an element: a NumPy scalar, a copy already
                val = copy.deepcopy(region)
                if self.kinds.get(v.id) != NUMBER:
                    val = _call("unbroadcast", val, _call(_attr("np", "shape"), name(v.id)))
            else:
                val = _call("unbroadcast", _call(_attr(region, "copy")),
                            _call(_attr("np", "shape"), name(v.id)))
            if g:
                out.append(assign(name(g, gast.Store), val, s))
                val = name(g)
            out.append(assign(gast.Subscript(value=name(b), slice=copy.deepcopy(idx),
                                             ctx=gast.Store()), gast.Constant(0.0, None), s))
            out += self.contribute(v.id, val, state)
            if not g:
                # the contribution was computed before the zeroing: reorder
                out = _reorder_zero_last(out)
        else:
            out.append(assign(gast.Subscript(value=name(b), slice=idx, ctx=gast.Store()),
                              gast.Constant(0.0, None), s))
        return out

    def rev_setattr(self, s: gast.Assign, state: set[str]) -> list[gast.stmt]:
        tgt = s.targets[0]
        obj = tgt.value.id
        if not self.act.active(obj):
            return []
        b = self.bar(obj)
        out: list[gast.stmt] = self.own(obj, b, state, s)
        taken = _call("take_attr", name(b), gast.Constant(tgt.attr, None))
        if self.active(s.value):
            out += self.contribute(s.value.id, taken, state, may_be_none=True)
        else:
            out.append(gast.Expr(value=taken))
        return out

    def rev_augassign(self, s: gast.AugAssign, copy_stmt: gast.Assign,
                      state: set[str]) -> list[gast.stmt]:
        new = s.target.id
        old = copy_stmt.value.id
        v = s.value
        if not self.act.active(new):
            return []
        op = type(s.op)
        if not self.tracked(new):
            # a rebinding (float, tuple): x_1 = x op v with the operator's rule
            rule = registry.lookup(BINOPS[op])
            g = self.g_of(new, state)
            if g is None:
                return []
            bound = rule.bind([name(old), v], {})
            return self._apply_templates(s, rule, bound, new, g, state)
        out: list[gast.stmt] = []
        b = self.bar(new)
        if b not in state:
            out.append(assign(name(b, gast.Store), self.shadow(new, state), s))
            state.add(b)
        # an ndarray (kinds known) is updated in place: new is old
        in_place = isinstance(self.kinds.get(new), int)
        if op in (gast.Add, gast.Sub):
            if self.active(v):
                val = _call("unbroadcast", _call(_attr(name(b), "copy")),
                            _call(_attr("np", "shape"), name(v.id)))
                if self.same_shape(v.id, new):
                    val = val.args[0]
                if op is gast.Sub:
                    val = gast.UnaryOp(op=gast.USub(), operand=val)
                out += self.contribute(v.id, val, state)
            if not in_place:
                out += _parse_stmts(f"if {new} is not {old}:\n    sh.of({old})[...] += {b}")
            return out
        if op in (gast.Mult, gast.Div) and not self.active(v):
            vsrc = _src(v)
            sym = "*" if op is gast.Mult else "/"
            if in_place:
                out += _parse_stmts(f"{b} {sym}= {vsrc}")
            else:
                out += _parse_stmts(f"if {new} is {old}:\n    {b} {sym}= {vsrc}\nelse:\n"
                                    f"    sh.of({old})[...] += {b} {sym} {vsrc}")
            return out
        # general: the new value's adjoint goes through the operator's rule; for an ndarray
        # updated in place the old value's adjoint restarts from zero in the same shadow
        rule = registry.lookup(BINOPS[op])
        g = self.namer.fresh(f"{_user_name(new)}_g")
        out.append(assign(name(g, gast.Store), _call(_attr(name(b), "copy")), s))
        out += _parse_stmts(f"{b}[...] = 0.0" if in_place else
                            f"if {new} is {old}:\n    {b}[...] = 0.0")
        bound = rule.bind([name(old), v], {})
        for d, tpl in zip(rule.diff, rule.templates):
            arg = bound.get(d)
            if not self._any_active(arg):
                continue
            expr = self.instantiate(s, tpl, rule, bound, new, name(g))
            out += self.contribute(arg.id, expr, state)
        return out

    def rev_expr_call(self, s: gast.Expr, state: set[str]) -> list[gast.stmt]:
        call = s.value
        f = call.func
        if isinstance(f, gast.Attribute) and f.attr == "append" and \
                isinstance(f.value, gast.Name) and self.resolve(f) is _MISSING:
            lst = f.value.id
            if not self.act.active(lst) or not call.args:
                return []
            b = self.bar(lst)
            out: list[gast.stmt] = self.own(lst, b, state, s)
            item = _call("pop_adjoint", name(b))
            if self.active(call.args[0]):
                out += self.contribute(call.args[0].id, item, state, may_be_none=True)
            else:
                out.append(gast.Expr(value=item))
            return out
        if isinstance(f, gast.Attribute) and f.attr == "at" and call.args and \
                isinstance(call.args[0], gast.Name):
            return self.rev_ufunc_at(s, call, state)
        rule = registry.lookup(self.resolve(call.func)) if self.resolve(call.func) is not \
            _MISSING else None
        if rule is not None and rule.is_rrule and rule.mutates:
            self.sites.append(Site(s, self.construct(s), "forced-pullback",
                                   "its rule says it writes an argument in place"))
            return self.rev_rrule(s, None, gast.Constant(None, None), state)
        if self.is_user_call(call):
            if self._mutating_call(call):
                return self.rev_user_call(s, call, None, state, forced=True)
            self.sites.append(Site(s, self.construct(s), "elided-pullback",
                                   "its result is discarded and it mutates nothing active"))
            return []
        return []

    def rev_ufunc_at(self, s: gast.Expr, call: gast.Call, state: set[str]) -> list[gast.stmt]:
        import numpy as np

        ufunc = self.resolve(call.func.value)
        x = call.args[0].id
        if ufunc not in (np.add, np.subtract) or len(call.args) != 3:
            raise UnsupportedError(f"{_src(call.func)} is not supported (np.add.at and "
                                   "np.subtract.at are)", self.loc(s))
        v = call.args[2]
        if not self.active(v) or not self.act.active(x):
            return []
        b = self.bar(x)
        out: list[gast.stmt] = []
        if b not in state:
            out.append(assign(name(b, gast.Store), _call(_attr("sh", "of"), name(x)), s))
            state.add(b)
        gathered = _call("unbroadcast", gast.Subscript(value=name(b),
                                                      slice=copy.deepcopy(call.args[1]),
                                                      ctx=gast.Load()),
                         _call(_attr("np", "shape"), name(v.id)))
        if ufunc is np.subtract:
            gathered = gast.UnaryOp(op=gast.USub(), operand=gathered)
        out += self.contribute(v.id, gathered, state)
        return out

    def _mutating_call(self, call: gast.Call) -> bool:
        info = self.callee_info(self.resolve(call.func))
        return bool(info and info.mutates_params) and any(
            self.act.active(a.id) for a in call.args if isinstance(a, gast.Name))

    def rev_user_call(self, s: gast.stmt, call: gast.Call, t: str | None, state: set[str],
                      forced: bool) -> list[gast.stmt]:
        saved = self._saved_var(s, call)
        if forced:
            self.sites.append(Site(s, self.construct(s), "forced-pullback",
                                   "it mutates an argument the gradient flows through"))
        g: gast.expr
        if t is not None and self.g_of(t, state) is not None:
            g = self.g_of(t, state)
        else:
            # forced: the result got no gradient; the callee still runs its pullback for what
            # it wrote, with a zero for its result
            if t is None:
                t = self.namer.fresh(f"{_callee_name(call)}_result")
                self.result_of[id(s)] = t
                self.extra_fwd.add(t)
            g = _call("zeros_like", name(t))
        args = list(call.args)
        receiver = None
        obj = self.resolve(call.func)
        if obj is _MISSING and isinstance(call.func, gast.Attribute):
            receiver = call.func.value
        if obj is not _MISSING and _is_python_function(obj):
            # cotangents come back per parameter: line the arguments up with them
            import inspect

            names = [p for p in inspect.signature(obj).parameters]
            by_name = {k.arg: k.value for k in call.keywords}
            args = args + [by_name.get(p, gast.Constant(None, None))
                           for p in names[len(args):]]
        targets = ([receiver] if receiver is not None else []) + args
        fn_names = {d.name for d in self.parsed.nested_defs}
        cts = [self.namer.fresh("ct") if isinstance(a, gast.Name) and self.act.active(a.id)
               and a.id not in fn_names else "_" for a in targets]
        pull = self.callee_pullback(call)
        saved_expr: gast.expr = name(saved)
        caps = [self.read_value(s, a) for a in targets if isinstance(a, gast.Name) and
                (id(s), a.id) in self.caps]
        if caps:
            # arguments overwritten after the call: the callee reads the values they had
            saved_expr = _call("remap_saved", saved_expr,
                               gast.List(elts=[c.value for c in caps], ctx=gast.Load()),
                               name("sh"))
        out: list[gast.stmt] = []
        handed: set[str] = set()
        for a, c in zip(targets, cts):
            if c != "_" and isinstance(a, gast.Name) and a.id not in self.numeric and \
                    not self.tracked(a.id) and self.bar(a.id) in state and a.id not in handed:
                # a list/dict/object the callee may change: hand over its adjoint
                out.append(gast.Expr(value=_call(_attr("sh", "deposit"), name(a.id),
                                                 name(self.bar(a.id)))))
                handed.add(a.id)
        out.append(assign(
            gast.Tuple(elts=[name(c, gast.Store) for c in cts], ctx=gast.Store()),
            _call(pull, saved_expr, g, name("sh")), s))
        for a, c in zip(targets, cts):
            if c == "_":
                continue
            if a.id in handed:
                b = self.bar(a.id)
                out.append(assign(name(b, gast.Store), _call(_attr("sh", "merge"), name(a.id),
                                                             name(b), name(c)), s))
                state.discard("owned:" + b)
                handed.discard(a.id)
            else:
                out += self.contribute(a.id, name(c), state, may_be_none=True)
        return out

    def _saved_var(self, s: gast.stmt, call: gast.Call) -> str:
        if id(s) not in self.saved_call:
            v = self.namer.fresh(f"{_callee_name(call)}_saved")
            self.saved_call[id(s)] = v
            self.extra_fwd.add(v)
        return self.saved_call[id(s)]

    def callee_pullback(self, call: gast.Call) -> gast.expr:
        obj = self.resolve(call.func)
        if obj is not _MISSING and _is_python_function(obj):
            info = self.callee_info(obj)
            self.callees[info.name] = info
            return name(f"{info.name}_pullback")
        return name("call_pullback")

    def rev_rrule(self, s: gast.stmt, t: str | None, g: gast.expr, state: set[str]
                  ) -> list[gast.stmt]:
        call = s.value
        saved = self._saved_var(s, call)
        cts = [self.namer.fresh("ct") if self.active(a) else "_" for a in call.args]
        out: list[gast.stmt] = [assign(
            gast.Tuple(elts=[name(c, gast.Store) for c in cts], ctx=gast.Store()),
            _call("call_pullback", name(saved), g, name("sh")), s)]
        for a, c in zip(call.args, cts):
            if c != "_":
                out += self.contribute(a.id, name(c), state, may_be_none=True)
        return out

    # ----------------------------------------------------------------------------------------
    # the forward

    def forward(self, saved: list[str]) -> gast.FunctionDef:
        body = self.fwd_block(self.fn.body, top=True)
        # the final return hands back the saved values
        ret = body[-1]
        assert isinstance(ret, gast.Return)
        tup = gast.Tuple(elts=[name(n) for n in saved], ctx=gast.Load())
        ret.value = gast.Tuple(elts=[ret.value if ret.value is not None else
                                     gast.Constant(None, None), tup], ctx=gast.Load())
        init = self.init_conditional(self.fn.body, saved)
        args = copy.deepcopy(self.fn.args)
        for a in args.args:
            if a.id in self.parsed.renamed_params:
                # the parameter keeps the user's name in the signature (keyword calls)
                old = self.parsed.renamed_params[a.id]
                init.insert(0, assign(name(a.id, gast.Store), name(old), self.fn))
                a.id = old
        fwd = gast.FunctionDef(name=f"{self.fname}_forward", args=args,
                               body=init + body, decorator_list=[], returns=None,
                               type_comment=None, type_params=[])
        return fwd

    def init_conditional(self, stmts: list[gast.stmt], names: list[str]) -> list[gast.stmt]:
        """``n = None`` for recorded names a block does not always bind at its top level."""
        top = set()
        for s in stmts:
            if isinstance(s, gast.Assign):
                top |= {n.id for n in s.targets if isinstance(n, gast.Name)}
            if isinstance(s, gast.AugAssign):
                top.add(s.target.id)
        ids = {id(st) for st in stmts}
        top |= {c.var for (sid, _), c in self.caps.items() if sid in ids and c.var}
        top |= {v for sid, v in self.saved_call.items() if sid in ids}
        top |= {v for sid, v in self.result_of.items() if sid in ids}
        top |= {v for sid, v in self.tape_of.items() if sid in ids}
        params = {a.id for a in self.fn.args.args}
        missing = [n for n in names if n not in top and n not in params and
                   (n in self.namer_locals or n in self.extra_fwd)]
        return [assign(name(n, gast.Store), gast.Constant(None, None), self.fn)
                for n in missing]

    def fwd_block(self, stmts: list[gast.stmt], top: bool = False) -> list[gast.stmt]:
        out: list[gast.stmt] = []
        for s in stmts:
            out.extend(self.fwd_stmt(s))
        return out

    def fwd_stmt(self, s: gast.stmt) -> list[gast.stmt]:
        if is_marker(s):
            return [copy.deepcopy(self.parsed.nested_defs[s.value.args[0].value])]
        pre: list[gast.stmt] = []
        post: list[gast.stmt] = []
        for (sid, n), cap in self.caps.items():
            if sid != id(s) or not cap.var:
                continue
            call = _call("capture", name(n), gast.Constant(self.parsed.file, None),
                         gast.Constant(getattr(s, "lineno", 0), None),
                         gast.Constant(self.user_name(n), None))
            (post if cap.after else pre).append(assign(name(cap.var, gast.Store), call, s))
        w = self.guarded.get(id(s))
        if w is not None:
            pre.append(self.guard(s, w))
        if isinstance(s, gast.If):
            s2 = copy.copy(s)
            s2.body = self.fwd_block(s.body) or [gast.Pass()]
            s2.orelse = self.fwd_block(s.orelse)
            return pre + [s2]
        if isinstance(s, (gast.For, gast.While)):
            s2 = copy.copy(s)
            body = self.fwd_block(s.body)
            tape = self.tape_of.get(id(s))
            if tape is not None:
                recorded = self.records.get(id(s), [])
                rec = gast.Expr(value=_call(_attr(tape, "append"), gast.Tuple(
                    elts=[name(r) for r in recorded], ctx=gast.Load())))
                pos = _record_position(body, self.headers)
                body.insert(pos, rec)
                target = {s.target.id} if isinstance(s, gast.For) else set()
                init = self.init_conditional(s.body, [r for r in recorded if r not in target])
                pre += [assign(name(tape, gast.Store), gast.List(elts=[], ctx=gast.Load()), s)]
                pre += init
            s2.body = body
            return pre + [s2]
        if isinstance(s, gast.Try):
            s2 = copy.copy(s)
            arm = self.arm_of.get(id(s))
            s2.body = self.fwd_block(s.body)
            s2.orelse = self.fwd_block(s.orelse)
            handlers = []
            for k, h in enumerate(s.handlers):
                h2 = copy.copy(h)
                h2.body = self.fwd_block(h.body)
                if arm:
                    h2.body = [assign(name(arm, gast.Store), gast.Constant(k + 1, None), s)] \
                        + h2.body
                handlers.append(h2)
            s2.handlers = handlers
            if arm:
                s2.body = s2.body + [assign(name(arm, gast.Store), gast.Constant(0, None), s)]
            return pre + [s2]
        if isinstance(s, (gast.Assign, gast.Expr)) and isinstance(s.value, gast.Call):
            call = s.value
            saved = self.saved_call.get(id(s))
            rule = None
            obj = self.resolve(call.func)
            if obj is not _MISSING:
                rule = registry.lookup(obj)
            if saved is not None or (rule is not None and rule.is_rrule):
                saved = saved or self.saved_call.setdefault(id(s), self.namer.fresh(
                    f"{_callee_name(call)}_saved"))
                if rule is not None and rule.is_rrule:
                    fcall = _call("call_forward", copy.deepcopy(call.func), *call.args)
                elif obj is not _MISSING and _is_python_function(obj):
                    info = self.callee_info(obj)
                    self.callees[info.name] = info
                    fcall = _call(f"{info.name}_forward", *call.args)
                    fcall.keywords = call.keywords
                else:
                    fcall = _call("call_forward", copy.deepcopy(call.func), *call.args)
                    fcall.keywords = call.keywords
                res = s.targets[0] if isinstance(s, gast.Assign) else name(
                    self.result_of.get(id(s), "_"), gast.Store)
                return pre + [assign(gast.Tuple(elts=[res, name(saved, gast.Store)],
                                                ctx=gast.Store()), fcall, s)] + post
        return pre + [s] + post

    def guard(self, s: gast.stmt, w: Write) -> gast.stmt:
        t = w.target
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Subscript):
            region: gast.expr = _call("write_region", name(t), _index_value(
                copy.deepcopy(s.targets[0].slice)))
        else:
            region = name(t)
        extra = []
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Subscript) and \
                isinstance(s.value, gast.Name):
            extra = [name(s.value.id)]
        return gast.Expr(value=_call(
            "before_write", name(t), region, gast.Constant(self.policy, None),
            gast.Constant(self.parsed.file, None), gast.Constant(getattr(s, "lineno", 0), None),
            gast.Constant(getattr(s, "col_offset", 0), None),
            gast.Constant(self.construct(s), None), *extra))


# runtime functions the earlier passes write into the forward (they resolve to adgen.runtime)
_RUNTIME_CALLS = frozenset({"loop_sequence", "dict_keys", "flat_view", "diagonal_index"})


class _Missing:
    pass


_MISSING = _Missing()
_USERCALL = object()


def _interval(idx: gast.expr) -> tuple[int, int] | None:
    """The [start, stop) a constant, non-negative index or unit-step slice covers on axis 0."""
    if isinstance(idx, gast.Tuple) and idx.elts:
        idx = idx.elts[0]
    if isinstance(idx, gast.Constant) and isinstance(idx.value, int) and idx.value >= 0:
        return idx.value, idx.value + 1
    if isinstance(idx, gast.Slice) and idx.step is None:
        lo = idx.lower.value if isinstance(idx.lower, gast.Constant) else (
            0 if idx.lower is None else None)
        hi = idx.upper.value if isinstance(idx.upper, gast.Constant) else (
            2 ** 62 if idx.upper is None else None)
        if isinstance(lo, int) and isinstance(hi, int) and lo >= 0 and hi >= 0:
            return lo, hi
    return None


def _const(value: Any) -> gast.expr:
    if isinstance(value, (int, float, str, bool, type(None))):
        return gast.Constant(value, None)
    if isinstance(value, tuple):
        return gast.Tuple(elts=[_const(v) for v in value], ctx=gast.Load())
    raise UnsupportedError(f"cannot write the default value {value!r} into generated code")


def _is_number(node: Any) -> bool:
    if isinstance(node, gast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, gast.UnaryOp):
        return _is_number(node.operand)
    return False


class _Unbroadcast(gast.NodeTransformer):
    """``unbroadcast(e, shape)`` -> ``e`` where nothing was broadcast."""

    def visit_Call(self, node: gast.Call) -> gast.expr:
        self.generic_visit(node)
        if isinstance(node.func, gast.Name) and node.func.id == "unbroadcast" and node.args:
            return node.args[0]
        return node


class _ShapeOnly(gast.NodeTransformer):
    """``unbroadcast(e, shape_tree(a), seq=...)`` -> ``unbroadcast(e, np.shape(a))`` where
    ``a`` is known to be a number or an array (the list cases of the rule cannot happen)."""

    def visit_Call(self, node: gast.Call) -> gast.expr:
        self.generic_visit(node)
        f = node.func
        if isinstance(f, gast.Name) and f.id == "shape_tree" and len(node.args) == 1:
            return gast.Call(func=gast.Attribute(value=name("np"), attr="shape",
                                                 ctx=gast.Load()), args=node.args, keywords=[])
        if isinstance(f, gast.Name) and f.id == "unbroadcast":
            node.keywords = [k for k in node.keywords if k.arg != "seq"]
        return node


def _elementwise(rule: Any) -> bool:
    """An operator or ufunc: each operand's cotangent has the (broadcast) result's shape."""
    import numpy as np

    prim = rule.primal
    if isinstance(prim, np.ufunc):
        return True
    return (prim in BINOPS.values() and prim is not operator.matmul) or \
        prim in UNARYOPS.values()


def _accumulate_in_place(body: list[gast.stmt]) -> None:
    """``b = b + e`` -> ``b += e`` for adjoints no other name can see: every store to ``b``
    is a fresh array (``zeros_like``, ``copy_adjoint`` or ``b + e``) and ``b`` is read only
    by its own updates, arithmetic (fresh results) and the final ``return``."""
    fresh_calls = ("zeros_like", "copy_adjoint")
    stores: dict[str, list[gast.Assign]] = {}
    bad: set[str] = set()
    updates: set[int] = set()  # id of the Name b in "b = b + e"
    ok_loads: set[int] = set()
    targets: set[int] = set()
    for node in walk(gast.Module(body=body, type_ignores=[])):
        if isinstance(node, gast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], gast.Name):
            targets.add(id(node.targets[0]))
            b = node.targets[0].id
            v = node.value
            if isinstance(v, gast.BinOp) and isinstance(v.op, gast.Add) and \
                    isinstance(v.left, gast.Name) and v.left.id == b:
                stores.setdefault(b, []).append(node)
                updates.add(id(v.left))
            elif isinstance(v, gast.Call) and isinstance(v.func, gast.Name) and \
                    v.func.id in fresh_calls:
                stores.setdefault(b, []).append(node)
            else:
                bad.add(b)
        elif isinstance(node, gast.Return) and isinstance(node.value, gast.Tuple):
            ok_loads |= {id(e) for e in node.value.elts if isinstance(e, gast.Name)}
        elif isinstance(node, (gast.BinOp, gast.UnaryOp)):
            operands = [node.left, node.right] if isinstance(node, gast.BinOp) else \
                [node.operand]
            ok_loads |= {id(e) for e in operands if isinstance(e, gast.Name)}
        elif isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store) and \
                id(node) not in targets:
            bad.add(node.id)  # bound some other way (a tuple target, a loop target)
    for node in walk(gast.Module(body=body, type_ignores=[])):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) and \
                node.id in stores and id(node) not in ok_loads and id(node) not in updates:
            bad.add(node.id)
    for b, sts in stores.items():
        if b in bad:
            continue
        for st in sts:
            if isinstance(st.value, gast.BinOp):
                aug = gast.AugAssign(target=gast.Name(id=b, ctx=gast.Store(), annotation=None,
                                                      type_comment=None),
                                     op=gast.Add(), value=st.value.right)
                gast.copy_location(aug, st)
                st.__class__ = gast.AugAssign
                st.__dict__.clear()
                st.__dict__.update(aug.__dict__)


class _KnownShapes(gast.NodeTransformer):
    """``np.shape(a)`` -> ``a.shape`` for a known array, ``()`` for a known number."""

    def __init__(self, kinds: dict[str, Any]) -> None:
        self.kinds = kinds

    def visit_Call(self, node: gast.Call) -> gast.expr:
        self.generic_visit(node)
        f = node.func
        if isinstance(f, gast.Attribute) and f.attr == "shape" and \
                isinstance(f.value, gast.Name) and f.value.id == "np" and \
                len(node.args) == 1 and not node.keywords and \
                isinstance(node.args[0], gast.Name):
            k = self.kinds.get(node.args[0].id)
            if k == NUMBER:
                return gast.Tuple(elts=[], ctx=gast.Load())
            if isinstance(k, int):
                return gast.Attribute(value=node.args[0], attr="shape", ctx=gast.Load())
        if isinstance(f, gast.Name) and f.id == "zeros_like" and len(node.args) == 1 and \
                isinstance(node.args[0], gast.Name) and \
                self.kinds.get(node.args[0].id) == NUMBER:
            return gast.Constant(0.0, None)  # the zero adjoint of a number
            if isinstance(k, int):
                return gast.Attribute(value=node.args[0], attr="shape", ctx=gast.Load())
        return node


class _Subst(gast.NodeTransformer):
    def __init__(self, subst: dict[str, gast.expr]) -> None:
        self.subst = subst

    def visit_Name(self, node: gast.Name) -> gast.expr:
        if node.id in self.subst and isinstance(node.ctx, gast.Load):
            return copy.deepcopy(self.subst[node.id])
        return node


def _loads_of(arg: Any) -> set[str]:
    if arg is None or isinstance(arg, registry.Default):
        return set()
    if isinstance(arg, tuple):
        return set().union(*(_loads_of(a) for a in arg)) if arg else set()
    return _loads(arg)


def _is_python_function(obj: Any) -> bool:
    import types

    return isinstance(obj, (types.FunctionType, types.MethodType)) and \
        not getattr(obj, "__module__", "").startswith("numpy")


def _is_user_class(obj: Any) -> bool:
    import types

    return isinstance(obj, type) and isinstance(obj.__dict__.get("__init__"),
                                                types.FunctionType)


def _is_copy_of(prev: gast.stmt, aug: gast.AugAssign) -> bool:
    return isinstance(prev, gast.Assign) and isinstance(prev.targets[0], gast.Name) and \
        prev.targets[0].id == aug.target.id and isinstance(prev.value, gast.Name)


def _user_name(n: str) -> str:
    """The user's variable name behind an SSA version (``h_2`` -> ``h``)."""
    base, _, suffix = n.rpartition("_")
    return base if base and suffix.isdigit() else n


def _opsym(op: type) -> str:
    return {gast.Mult: "*", gast.Div: "/", gast.Add: "+", gast.Sub: "-", gast.Pow: "**",
            gast.FloorDiv: "//", gast.Mod: "%", gast.MatMult: "@"}.get(op, "?")


def _callee_name(call: gast.Call) -> str:
    f = call.func
    if isinstance(f, gast.Attribute):
        return f.attr
    if isinstance(f, gast.Name):
        return f.id
    return "call"


def _basic_index(idx: gast.expr, ints: set[str]) -> bool:
    if isinstance(idx, gast.Name):
        return idx.id in ints
    if isinstance(idx, gast.Constant):
        return isinstance(idx.value, int) or idx.value is Ellipsis
    if isinstance(idx, gast.Slice):
        return True
    if isinstance(idx, gast.UnaryOp):
        return True
    if isinstance(idx, gast.Tuple):
        return all(_basic_index(e, ints) for e in idx.elts)
    return False


def _is_array_like(n: str, eff: Effects) -> bool:
    return eff.kinds.get(n) not in ("list", "dict", "object") and "param" not in \
        eff.buffers.get(n, set())


def _index_value(idx: gast.expr) -> gast.expr:
    """An index written as a value (slices become slice(...) calls)."""
    if isinstance(idx, gast.Slice):
        parts = [idx.lower, idx.upper, idx.step]
        return _call("slice", *[p if p is not None else gast.Constant(None, None)
                                for p in parts])
    if isinstance(idx, gast.Tuple):
        return gast.Tuple(elts=[_index_value(e) for e in idx.elts], ctx=gast.Load())
    return idx


def _reorder_zero_last(out: list[gast.stmt]) -> list[gast.stmt]:
    """Puts the ``x_bar[idx] = 0.0`` after the contribution that reads x_bar[idx]."""
    zero = [s for s in out if isinstance(s, gast.Assign) and
            isinstance(s.targets[0], gast.Subscript) and
            isinstance(s.value, gast.Constant) and s.value.value == 0.0]
    rest = [s for s in out if s not in zero]
    return rest + zero


def _record_position(body: list[gast.stmt], headers: set[str]) -> int:
    """Where the per-iteration record goes: before the back-edge copies and trailing break."""
    pos = len(body)
    while pos > 0:
        s = body[pos - 1]
        if is_break_if(s):
            pos -= 1
            continue
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and \
                s.targets[0].id in headers and isinstance(s.value, gast.Name):
            pos -= 1
            continue
        break
    return pos


def _args(names: list[str], defaults: list[gast.expr] | None = None) -> gast.arguments:
    return gast.arguments(args=[name(n, gast.Param) for n in names], posonlyargs=[],
                          vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                          defaults=defaults or [])
