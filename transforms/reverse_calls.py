"""The pullbacks of calls of user functions (static ``g_forward``/``g_pullback`` or dynamic
``call_forward``/``call_pullback``) and of ``rrule``s.

A part of :class:`adgen.transforms.reverse.Reverse` (a mixin: its methods use the
reverse pass's state)."""

from __future__ import annotations

import gast
from adgen.transforms.desugar import assign, name
from adgen.transforms.reverse_ast import (
    MISSING,
    Site,
    attr_node,
    call_node,
    callee_name,
    is_python_function,
)


class CallsMixin:
    """The pullbacks of calls of user functions (static ``g_forward``/``g_pullback`` or dynamic"""

    def _mutating_call(self, call: gast.Call) -> bool:
        info = self.callee_info(self.resolve(call.func))
        # a callee that writes an argument in place: an array, or a list, dict or object
        # (whose adjoint it takes over from the caller: ShadowMap.deposit / withdraw)
        writes = bool(info and (info.mutates_params or
                                getattr(info.compiled, "mutates_containers", False)))
        return writes and any(
            self.act.active(a.id) for a in call.args if isinstance(a, gast.Name))

    def rev_user_call(self, s: gast.stmt, call: gast.Call, t: str | None, state: set[str],
                      forced: bool) -> list[gast.stmt]:
        saved = self._saved_var(s, call)
        if forced:
            self.sites.append(Site(s, self.construct(s), "forced-pullback",
                                   "it mutates an argument the gradient flows through"))
        g: gast.expr
        if t is not None and self.g_of(t, state) is not None:
            g = self._result_adjoint(t, state)
        else:
            # forced: the result got no gradient; the callee still runs its pullback for what
            # it wrote, with a zero for its result
            if t is None:
                t = self.namer.fresh(f"{callee_name(call)}_result")
                self.result_of[id(s)] = t
                self.extra_fwd.add(t)
            g = call_node("zeros_like", name(t))
        args = list(call.args)
        receiver = None
        obj = self.resolve(call.func)
        if obj is MISSING and isinstance(call.func, gast.Attribute):
            receiver = call.func.value
        if obj is not MISSING and is_python_function(obj):
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
        # captures at the call: its arguments, and the enclosing names a closure reads
        caps = [self.read_value(s, n) for n in sorted({n for sid, n in self.caps
                                                        if sid == id(s)})]
        if caps:
            # arguments overwritten after the call: the callee reads the values they had
            saved_expr = call_node("remap_saved", saved_expr,
                               gast.List(elts=[c.value for c in caps], ctx=gast.Load()),
                               name("sh"))
        out: list[gast.stmt] = []
        handed: set[str] = set()
        for a, c in zip(targets, cts):
            if c != "_" and isinstance(a, gast.Name) and a.id not in self.numeric and \
                    not self.tracked(a.id) and self.bar(a.id) in state and a.id not in handed:
                # a list/dict/object the callee may change: hand over its adjoint
                out.append(gast.Expr(value=call_node(attr_node("sh", "deposit"), name(a.id),
                                                 name(self.bar(a.id)))))
                handed.add(a.id)
        value = call_node(pull, saved_expr, g, name("sh"))
        if receiver is not None and isinstance(pull, gast.Name) and pull.id == "call_pullback":
            # obj.f(x) is a method (obj is its first argument) or a function held in an
            # attribute (obj is not passed): the receiver's cotangent is None then
            value = call_node("with_receiver", value, gast.Constant(len(targets), None))
        out.append(assign(
            gast.Tuple(elts=[name(c, gast.Store) for c in cts], ctx=gast.Store()), value, s))
        for a, c in zip(targets, cts):
            if c == "_":
                continue
            if a.id in handed:
                b = self.bar(a.id)
                out.append(assign(name(b, gast.Store), call_node(attr_node("sh", "merge"), name(a.id),
                                                             name(b), name(c)), s))
                state.discard("owned:" + b)
                handed.discard(a.id)
            else:
                out += self.contribute(a.id, name(c), state, may_be_none=True)
        return out

    def _result_adjoint(self, t: str, state: set[str]) -> gast.expr:
        """The adjoint of a call's result, as the callee's pullback takes it: a value. A result
        whose adjoint lives in shadow memory may view an argument (``return a[::-1]``, ``return
        a``), whose shadow the callee's cotangent is added to again: its adjoint is taken out
        of shadow memory (``sh.pop``) and comes back through the cotangents."""
        if self.tracked(t):
            return call_node(attr_node("sh", "pop"), name(t))
        return self.g_of(t, state)

    def _saved_var(self, s: gast.stmt, call: gast.Call) -> str:
        if id(s) not in self.saved_call:
            v = self.namer.fresh(f"{callee_name(call)}_saved")
            self.saved_call[id(s)] = v
            self.extra_fwd.add(v)
        return self.saved_call[id(s)]

    def callee_pullback(self, call: gast.Call) -> gast.expr:
        obj = self.resolve(call.func)
        if obj is not MISSING and is_python_function(obj):
            info = self.callee_info(obj)
            self.callees[info.name] = info
            return name(f"{info.name}_pullback")
        return name("call_pullback")

    def rev_rrule(self, s: gast.stmt, t: str | None, g: gast.expr, state: set[str]
                  ) -> list[gast.stmt]:
        call = s.value
        saved = self._saved_var(s, call)
        if t is not None and self.tracked(t) and not (isinstance(g, gast.Constant) and
                                                      g.value is None):
            g = self._result_adjoint(t, state)
        cts = [self.namer.fresh("ct") if self.active(a) else "_" for a in call.args]
        out: list[gast.stmt] = [assign(
            gast.Tuple(elts=[name(c, gast.Store) for c in cts], ctx=gast.Store()),
            call_node("call_pullback", name(saved), g, name("sh")), s)]
        for a, c in zip(call.args, cts):
            if c != "_":
                out += self.contribute(a.id, name(c), state, may_be_none=True)
        return out
