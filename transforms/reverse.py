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

from typing import Any

import gast
from adgen.transforms.analyses.activity import NONDIFF_ATTRS, Activity, nondiff_call
from adgen.transforms.analyses.effects import Effects, Write
from adgen.transforms.analyses.kinds import NUMBER, expr_kind
from adgen.transforms.desugar import assign, name
from adgen.transforms.hoist_defs import is_marker
from adgen.transforms.names import Namer
from adgen.transforms.parse import Parsed
from adgen.transforms.reverse_ast import (
    BINOPS,
    MISSING,
    RUNTIME_CALLS,
    UNARYOPS,
    USERCALL,
    Capture,
    Result,
    Site,
    Subst,
    args_node,
    attr_node,
    call_node,
    comment_node,
    const_node,
    is_copy_of,
    is_number,
    is_python_function,
    is_user_class,
    loaded_names,
    parse_expr,
    parse_stmts,
    src_text,
    stored_names,
    user_name_of,
)
from adgen.transforms.reverse_calls import CallsMixin
from adgen.transforms.reverse_forward import ForwardMixin
from adgen.transforms.reverse_sites import SitesMixin
from adgen.transforms.reverse_stores import StoresMixin
from adgen.transforms.reverse_tapes import TapesMixin
from adgen.transforms.specialize import (
    accumulate_in_place,
    drop_unbroadcast,
    first_writes,
    is_elementwise,
    known_shapes,
    shape_only,
)
from adgen.transforms.ssa import is_break_if
from adgen.transforms.walk import clone, walk

from adgen.errors import Location, MissingRuleError, UnsupportedError
from adgen.rules import registry


class Reverse(SitesMixin, StoresMixin, CallsMixin, ForwardMixin, TapesMixin):
    """Builds the forward and pullback of one function."""

    def __init__(self, parsed: Parsed, fn: gast.FunctionDef, namer: Namer, act: Activity,
                 eff: Effects, headers: set[str], policy: str,
                 callee_info: Any, kinds: dict[str, Any] | None = None,
                 column_dtypes: dict[str, str] | None = None) -> None:
        self.parsed = parsed
        # name -> NUMBER or an array's rank, for the argument signature compiled for
        # (analyses.kinds); empty when compiling for any arguments
        self.kinds: dict[str, Any] = kinds or {}
        # names holding float64 numbers or ints for that signature -> the dtype of a tape
        # column that keeps them (analyses.floats)
        self.column_dtypes: dict[str, str] = column_dtypes or {}
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
        self._counters: set[str] | None = None
        # try -> (the flag set once an active statement of its body ran, those statements)
        self.try_ran: dict[int, tuple[str, set[int]]] = {}
        # loop -> its typed tape: (the range's arguments, the column per recorded number)
        self.columns: dict[int, tuple[list[gast.expr], list[tuple[str, str]]]] = {}

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
        if isinstance(node, gast.Name) and node.id in RUNTIME_CALLS:
            from adgen import runtime

            return getattr(runtime, node.id)
        parts = []
        while isinstance(node, gast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, gast.Name) or self.parsed.is_local(node.id) or \
                node.id in self.namer_locals:
            return MISSING
        if node.id in self.parsed.namespace:
            obj = self.parsed.namespace[node.id]
        else:
            import builtins

            if not hasattr(builtins, node.id):
                return MISSING
            obj = getattr(builtins, node.id)
        for p in reversed(parts):
            try:
                obj = getattr(obj, p)
            except AttributeError:
                return MISSING
        # a NumPy function with a reference implementation (rules/composites.py) is compiled
        # as a call of that implementation
        ref = registry.reference_of(obj)
        return ref if ref is not None else obj

    def resolve_or_none(self, node: gast.expr) -> Any:
        obj = self.resolve(node)
        return None if obj is MISSING else obj

    # ----------------------------------------------------------------------------------------
    # analysis of positions, captures and guards
















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
        pull_body += parse_stmts("top = sh is None\nif top:\n    sh = ShadowMap()")
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
        tail = parse_stmts(f"return ({', '.join(ret_parts)}{',' if len(ret_parts) == 1 else ''})")
        body = rev + tail
        needed = self.free_names(body, set()) | set(cparams)
        saved = sorted(needed - {"sh", "top", "out_bar", "saved"} - self.globals_used(needed))
        self.saved_names = saved
        if saved:
            unpack = parse_stmts(f"({', '.join(saved)}{',' if len(saved) == 1 else ''}) = saved")
        else:
            unpack = []
        withdraws = [assign(name(self.bar(p), gast.Store), call_node(attr_node("sh", "withdraw"),
                                                                  name(p)), self.fn)
                     for p in cparams]
        pull_body += unpack + withdraws + body
        if self.kinds:
            pull_body = [known_shapes(st, self.kinds) for st in pull_body]
            accumulate_in_place(pull_body)
            first_writes(pull_body, self.kinds)
        pullback = gast.FunctionDef(
            name=f"{self.fname}_pullback",
            args=args_node(["saved", "out_bar", "sh"], defaults=[gast.Constant(None, None)]),
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
                free |= loaded_names(st.iter) - bound
                inner = bound | {n.id for n in walk(st.target) if isinstance(n, gast.Name)}
                free |= self.free_names(st.body, inner)
            elif isinstance(st, gast.If):
                free |= loaded_names(st.test) - bound
                free |= self.free_names(st.body, bound) | self.free_names(st.orelse, bound)
            else:
                free |= loaded_names(st) - bound
            bound |= {n.id for n in walk(st) if isinstance(n, gast.Name) and
                      isinstance(n.ctx, gast.Store)} if not isinstance(
                st, (gast.For, gast.If)) else set()
        return {n for n in free if n in fwd}

    def fwd_locals(self, stmts: list[gast.stmt]) -> set[str]:
        """Names the forward binds inside a block, including the ones this pass adds."""
        out = stored_names(stmts)
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
        if is_number(arg):
            return NUMBER
        if isinstance(arg, gast.Subscript):
            return expr_kind(arg, self.kinds, self.resolve_global)
        return None

    def resolve_global(self, node: gast.expr) -> Any:
        obj = self.resolve(node)
        return None if obj is MISSING else obj

    def _numeric_arg(self, arg: Any) -> bool:
        if isinstance(arg, gast.Name):
            return arg.id in self.numeric
        return is_number(arg)

    def _any_active(self, arg: Any) -> bool:
        if isinstance(arg, gast.Name):
            return self.act.active(arg.id)
        if isinstance(arg, (gast.Tuple, gast.List, tuple)):
            elts = arg.elts if not isinstance(arg, tuple) else arg
            return any(self._any_active(e) for e in elts)
        return False

    def is_user_call(self, call: gast.Call) -> bool:
        obj = self.resolve(call.func)
        if obj is MISSING:
            if isinstance(call.func, gast.Attribute) and isinstance(call.func.value, gast.Name):
                from adgen.rules import methods

                if call.func.attr in methods.METHODS or call.func.attr == "append":
                    return False
                import numpy as np

                if isinstance(self.kinds.get(call.func.value.id), int) and \
                        hasattr(np.ndarray, call.func.attr):
                    return False  # a NumPy method without a rule: said at compile time
            return True
        if str(getattr(obj, "__module__", "")).startswith("adgen.") and \
                not registry.is_reference_impl(obj):
            return False  # adgen's own runtime functions: rules or no derivative
        return registry.lookup(obj) is None and (is_python_function(obj) or
                                                 is_user_class(obj))

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
                raise UnsupportedError(f"cannot bind the arguments of {rule.name}: {exc}",
                                       self.loc(s)) from exc
        return None

    def call_rule(self, v: gast.Call) -> tuple[Any, list[gast.expr]]:
        obj = self.resolve(v.func)
        if obj is not MISSING:
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
                out.append(assign(name(b, gast.Store), call_node("zeros_like", name(n)), self.fn))
                state.add(b)
                state.add("owned:" + b)
        return out

    def own(self, n: str, b: str, state: set[str], like: gast.AST) -> list[gast.stmt]:
        """Makes ``b`` (the adjoint of n) an object only this pullback holds, to add in place."""
        if b not in state:
            state |= {b, "owned:" + b}
            return [assign(name(b, gast.Store), call_node("zeros_like", name(n)), like)]
        if "owned:" + b not in state:
            state.add("owned:" + b)
            return [assign(name(b, gast.Store), call_node("copy_adjoint", name(b)), like)]
        return []

    def contributed_in(self, stmts: list[gast.stmt]) -> set[str]:
        """Active names whose adjoint a block's reverse may add to (not a nested def: the
        values it reads get their adjoints through its pullback)."""
        names: set[str] = set()
        defs = {d.name for d in self.parsed.nested_defs}
        for s in stmts:
            for n in walk(s):
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and \
                        self.act.active(n.id) and n.id not in defs:
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
            if isinstance(s, gast.AugAssign) and i > 0 and is_copy_of(stmts[i - 1], s):
                code = self.rev_augassign(s, stmts[i - 1], state)
                skip_next = True
            else:
                code = self.rev_stmt(s, state)
            if code:
                line = getattr(s, "lineno", None)
                if line and line != self._last_line:
                    code = [comment_node(f"line {line}: {self.source_line(line)}")] + code
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
                    return [assign(name(b, gast.Store), call_node("add_out", name("sh"), name(n),
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
        inner_defined = stored_names(s.body + s.orelse)
        pre = self.materialize(inner - inner_defined, state)
        s1, s2 = set(state), set(state)
        self._last_line = None
        body = self.rev_block(s.body, s1)
        self._last_line = None
        orelse = self.rev_block(s.orelse, s2)
        # an adjoint defined in only one arm is zero in the other
        arm_local = stored_names(s.body + s.orelse)
        for b in sorted(m for m in (s1 ^ s2) if not m.startswith("owned:")):
            n = next((k for k, v in self.adj.items() if v == b), None)
            if n is None or not self.act.active(n) or n in arm_local:
                continue
            zero = call_node(attr_node("sh", "of"), name(n)) if self.tracked(n) else \
                call_node("zeros_like", name(n))
            (orelse if b in s1 else body).append(assign(name(b, gast.Store), zero, s))
        owned_both = {m for m in s1 & s2 if m.startswith("owned:")}
        state |= {m for m in s1 | s2 if not m.startswith("owned:")} | owned_both
        if not body and not orelse:
            return pre
        test = clone(s.test)
        return pre + [gast.If(test=test, body=body or [gast.Pass()], orelse=orelse)]

    def rev_loop(self, s: gast.For | gast.While, state: set[str]) -> list[gast.stmt]:
        inner = self.contributed_in(s.body)
        local = stored_names(s.body) | ({s.target.id} if isinstance(s, gast.For) else set())
        carried = (inner - local) | {h for h in self.headers if h in local and
                                     self.act.active(h)}
        pre = self.materialize(carried, state)
        for n in sorted(inner - local):
            # a buffer defined outside the loop: its shadow is taken once, before the loop
            b = self.bar(n)
            if self.tracked(n) and self.act.active(n) and b not in state:
                pre.append(assign(name(b, gast.Store), call_node(attr_node("sh", "of"), name(n)), s))
                state.add(b)
        for n in sorted(carried):
            # an adjoint the body changes in place is copied once, before the loop
            b = self.bar(n)
            if b in state and "owned:" + b not in state and self.act.active(n) and \
                    not self.tracked(n) and n not in self.numeric:
                pre += self.own(n, b, state, s)
        # a buffer the loop binds (a header, a fresh array per iteration) is another object in
        # each iteration: its shadow is taken in the iteration, never reused from outside
        rebound = {self.bar(n) for n in local if self.tracked(n)}
        rebound |= {"owned:" + b for b in rebound}
        state -= rebound
        body_state = set(state)
        self._last_line = None
        body = self.rev_block([b for b in s.body if not is_break_if(b)], body_state)
        # adjoints the loop carries must be defined again at the end of each reversed iteration
        for n in sorted(carried):
            b = self.bar(n)
            if not self.tracked(n) and self.act.active(n) and b not in body_state:
                body.append(assign(name(b, gast.Store), call_node("zeros_like", name(n)), s))
        state |= {self.bar(n) for n in carried if self.act.active(n) and not self.tracked(n)}
        if not body:
            return pre
        local = self.fwd_locals(s.body) | local
        recorded = sorted(self.free_names(body, set()) & local)
        steps = self.counted(s, recorded)
        if steps is not None:
            return pre + [self.float_tape(s, recorded, steps, body)]
        tape = self.namer.fresh("tape")
        self.extra_fwd.add(tape)
        self.tape_of[id(s)] = tape
        self.records[id(s)] = recorded
        target = gast.Tuple(elts=[name(r, gast.Store) for r in recorded], ctx=gast.Store()) \
            if recorded else name("_", gast.Store)
        loop = gast.For(target=target, iter=call_node("reversed", name(tape)), body=body,
                        orelse=[], type_comment=None)
        return pre + [loop]

    def outlives(self, b: gast.stmt, body: list[gast.stmt]) -> bool:
        """Whether a statement of a try body leaves something behind if the body raises
        later: an in-place write, a call that may write, or a variable used outside the body
        (a temporary only the body reads does not count). Such a body, cut short, breaks the
        value as well as the gradient: SSA gives the handler's path the variable's value from
        before the try."""
        if isinstance(b, gast.Expr):
            return any(isinstance(n, gast.Name) and self.act.active(n.id) for n in walk(b)) \
                or isinstance(b.value, gast.Call) and isinstance(b.value.func, gast.Attribute)
        if isinstance(b, gast.AugAssign) or not isinstance(b, gast.Assign) or \
                not isinstance(b.targets[0], gast.Name):
            return True
        # SSA merges a variable the body rebinds with its value from before the try on the
        # handler's path: any version of a variable also used outside the body counts
        inside = {id(n) for st in body for n in walk(st)}
        outside = {user_name_of(n.id) for n in walk(self.fn) if isinstance(n, gast.Name) and
                   id(n) not in inside}
        return any(isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store) and
                   user_name_of(n.id) in outside for n in walk(b))

    def rev_try(self, s: gast.Try, state: set[str]) -> list[gast.stmt]:
        arms = [s.body + s.orelse] + [h.body for h in s.handlers]
        inner = set().union(*(self.contributed_in(a) for a in arms))
        pre = self.materialize(inner - stored_names(sum(arms, [])), state)
        arm = self.namer.fresh("arm")
        self.extra_fwd.add(arm)
        self.arm_of[id(s)] = arm
        # the pullback of a handler (and SSA, on the handler's path) assumes the body did
        # nothing: a body that raised after a statement with a lasting effect ran is refused
        # when it happens (forward: ``partial_try``)
        ran = [b for b in s.body[:-1] if self.outlives(b, s.body)]
        if ran and s.handlers:
            flag = self.namer.fresh("ran")
            self.extra_fwd.add(flag)
            self.try_ran[id(s)] = (flag, {id(b) for b in ran})
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
            value = call_node("or_zeros", value, name(n))
        if self.eff.kinds.get(n) == "list":
            # a rule may give a list's adjoint as an array (np.array, np.stack): as rows
            value = call_node("list_adjoint", value)
        if self.tracked(n):
            out = []
            if b not in state:
                out.append(assign(name(b, gast.Store), self.shadow(n, state), self.fn))
                state.add(b)
            out.append(gast.AugAssign(target=name(b, gast.Store), op=gast.Add(), value=value))
            return out
        if b in state:
            if self.eff.kinds.get(n) in ("list", "dict", "object") or self.structured(n):
                new = call_node("add", name(b), value)
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
                    out += self.contribute(e.id, call_node("item", g, gast.Constant(k, None)),
                                           state, may_be_none=True)
            return out
        if isinstance(v, gast.Dict):
            out = []
            for key, e in zip(v.keys, v.values):
                if self.active(e):
                    out += self.contribute(e.id, call_node("item", g, clone(key)), state,
                                           may_be_none=True)
            return out
        if isinstance(v, gast.Subscript):
            return self.rev_getitem(s, v, t, g, state)
        if isinstance(v, gast.Attribute) and v.attr not in NONDIFF_ATTRS:
            from adgen.rules import methods

            if v.attr not in methods.ATTRIBUTES:
                if not self.active(v.value) or self.tracked(t):
                    return []  # a tracked attribute's adjoint lives in shadow memory
                return self.contribute(v.value.id, call_node("attr_adjoint", name(v.value.id),
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
                raise MissingRuleError(f"no derivative rule for the operator in {src_text(v)}",
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
            out.append(assign(name(b, gast.Store), call_node(attr_node("sh", "of"), name(t)), s))
            state.add(b)
        g = self.namer.fresh(f"{user_name_of(t)}_g")
        out.append(assign(name(g, gast.Store), call_node(attr_node(name(b), "copy")), s))
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
        fname = src_text(v.func)
        if nondiff_call(v, self.resolve_or_none):
            return []
        if self.resolve(v.func) is MISSING and isinstance(v.func, gast.Attribute) and \
                isinstance(v.func.value, gast.Name) and \
                isinstance(self.kinds.get(v.func.value.id), int):
            attr = v.func.attr
            import numpy as np

            if attr == "view":
                hint = ("x.view(dtype) reinterprets the bytes, which has no gradient: convert "
                        "the values with x.astype(dtype), or take x itself")
            elif hasattr(np, attr):
                hint = (f"write it with a function that has one (np.{attr}(...) if adgen "
                        f"covers it: see docs/coverage.md), or register a rule with "
                        f"@adgen.rrule(np.{attr})")
            else:
                hint = ("rewrite it with NumPy functions adgen covers (docs/coverage.md), or "
                        "move it into a function of yours with an @adgen.rrule")
            raise MissingRuleError(
                f"{fname}() (the NumPy method ndarray.{attr}) has no derivative rule",
                self.loc(s), hint=hint)
        raise MissingRuleError(
            f"{fname}() has no derivative rule{registry.why_no_rule(self.resolve(v.func))}",
            self.loc(s), hint=f"see docs/coverage.md for what adgen covers, or register a "
                              f"rule with @adgen.rrule({fname})")

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
                        pre.append(assign(name(b, gast.Store), call_node(attr_node("sh", "of"),
                                                                     name(n)), s))
                        state.add(b)
                inner = self._apply_templates(s, rule, bound, t, name(self.bar(t)), state)
                if not inner:
                    return pre
                return pre + [gast.If(test=parse_expr(f"root_of({t}) is not root_of({src.id})"),
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
        elementwise = bool(self.kinds) and is_elementwise(rule)
        for d, tpl in zip(rule.diff, rule.templates):
            arg = bound.get(d)
            if not self._any_active(arg):
                continue
            expr = self.instantiate(s, tpl, rule, bound, t, g)
            if all(self._numeric_arg(bound.get(p.name)) for p in rule.params
                   if p.name in rule.diff):
                expr = shape_only(expr)  # numbers and arrays: no list cases to keep
            others = [bound.get(p.name) for p in rule.params if p.name != d]
            if scalar or (isinstance(arg, gast.Name) and elementwise and
                          self.same_shape(arg.id, t)):
                # numbers in, a number out, or an operand of the result's shape: nothing
                # was broadcast
                expr = drop_unbroadcast(expr)
            elif len(rule.params) == 2 and others and is_number(others[0]) and \
                    isinstance(arg, gast.Name) and arg.id in self.numeric:
                # the other operand is a Python number: no broadcasting to undo
                expr = drop_unbroadcast(expr)
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
            item = gast.Subscript(value=clone(ct), slice=gast.Constant(k, None),
                                  ctx=gast.Load())
            if self.active(e):
                out += self.contribute(e.id, item, state, may_be_none=True)
            elif isinstance(e, (gast.List, gast.Tuple)) and self._any_active(e):
                out += self.distribute(e, item, state)
        return out

    def instantiate(self, s: gast.stmt, tpl: gast.expr, rule: Any, bound: dict[str, Any],
                    t: str, g: gast.expr) -> gast.expr:
        expr = clone(tpl)
        subst: dict[str, gast.expr] = {"g": g, "out": self.read_value(s, t, after=True)}
        for p in rule.params:
            a = bound.get(p.name)
            if isinstance(a, registry.Default):
                subst[p.name] = const_node(a.value)
            elif isinstance(a, tuple):
                subst[p.name] = gast.Tuple(elts=[self.read_value(s, e) for e in a],
                                           ctx=gast.Load())
            else:
                subst[p.name] = self.read_value(s, a)
        return Subst(subst).visit(expr)

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
            node = clone(a)
            node.elts = [self.read_value(s, e) for e in a.elts]
            return node
        return clone(a)













    # ----------------------------------------------------------------------------------------
    # the forward
