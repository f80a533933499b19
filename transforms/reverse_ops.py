"""The pullbacks of operations through derivative rules: a rule's templates instantiated with
the values they read (a capture where a later write overwrites one), a contribution to each
differentiable argument, ``unbroadcast`` dropped where nothing was broadcast, ``out=`` calls,
and the error for a call without a rule. A part of the pullback emitter
(:class:`reverse_pullback.Pullback` hands it those statements and lends it its contributions)."""

from __future__ import annotations

import builtins
import operator
from typing import TYPE_CHECKING, Any

import gast
import numpy as np
from adgen.transforms.analyses.activity import nondiff_call
from adgen.transforms.analyses.kinds import NUMBER
from adgen.transforms.desugar import assign, name
from adgen.transforms.reverse_ast import (
    MISSING,
    attr_node,
    call_node,
    const_node,
    is_number,
    parse_expr,
    src_text,
    user_name_of,
)
from adgen.transforms.reverse_plan_rules import op_of
from adgen.transforms.sequence_operands import (
    as_array,
    as_sequence,
    display_names,
    is_sequence_operand,
    of_numpy,
    parameter_sequences,
    template_operands,
)
from adgen.transforms.specialize import (
    drop_unbroadcast,
    inline_extreme,
    inline_matmul,
    is_elementwise,
    shape_only,
)
from adgen.transforms.walk import clone, clone_with, walk

from adgen.errors import MissingRuleError, UnsupportedError
from adgen.rules import nondiff_params, registry
from adgen.rules.nondiff_params import active_nondiff, refusal_text
from adgen.rules.refusals import makes_derivative

if TYPE_CHECKING:
    from adgen.transforms.reverse_pullback import Pullback


class Operations:
    """Reverses operations (arithmetic, NumPy calls, methods) by their rules."""

    def __init__(self, pb: Pullback) -> None:
        self.pb = pb
        self.plan = pb.plan
        self.rec = pb.rec
        self.listed_names: frozenset[str] | None = None  # display_names, found once
        self.given_sequences: frozenset[str] | None = None  # (parameter_sequences)

    def rev_out_call(self, s: gast.Assign, v: gast.Call, t: str,
                     state: set[str]) -> list[gast.stmt]:
        """``t = f(a, out=o)``: the written values' adjoint goes through f's rule, and the
        old contents of o get none (they were overwritten)."""
        op = op_of(self.plan, s)
        if op is None:
            return self.missing_rule(s, v)
        rule, bound = op
        self.refuse_active_nondiff(s, rule, bound)
        b = self.pb.bar(t)
        out: list[gast.stmt] = []
        if b not in state:
            out.append(assign(name(b, gast.Store), call_node(attr_node("sh", "of"), name(t)), s))
            state.add(b)
        g = self.pb.namer.fresh(f"{user_name_of(t)}_g")
        out.append(assign(name(g, gast.Store), call_node(attr_node(name(b), "copy")), s))
        out.append(assign(gast.Subscript(value=name(b), slice=gast.Constant(Ellipsis, None),
                                         ctx=gast.Store()), gast.Constant(0.0, None), s))
        for d, tpl in zip(rule.diff, rule.templates):
            arg = bound.get(d)
            if not self.plan.any_active(arg):
                continue
            expr = self.instantiate(s, tpl, rule, bound, t, name(g), d)
            out += self.give(s, arg, d, expr, state)
        return out

    def refuse_active_nondiff(self, s: gast.stmt, rule: Any, bound: dict[str, Any]) -> None:
        """Refuses a call whose argument outside ``rule.diff`` has a derivative, unless the
        parameter is derivative-free (rules.nondiff_params): its gradient would be a zero."""
        param = active_nondiff(rule, bound, self.plan.any_active)
        if param is not None and not nondiff_params.lenient():
            msg, hint = refusal_text(rule, param)
            err = UnsupportedError(msg, self.plan.loc(s), hint=hint)
            err.active_constant = True  # type: ignore[attr-defined]  # (pipeline._compile_new)
            raise err

    def missing_rule(self, s: gast.stmt, v: gast.Call) -> list[gast.stmt]:
        if not any(self.plan.active(a) for a in walk(v) if isinstance(a, gast.Name)):
            return []
        fname = src_text(v.func)
        if nondiff_call(v, self.plan.resolve_or_none):
            return []
        if self.plan.resolve(v.func) is MISSING and isinstance(v.func, gast.Attribute) and \
                isinstance(v.func.value, gast.Name) and \
                isinstance(self.plan.kinds.get(v.func.value.id), int):
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
                self.plan.loc(s), hint=hint)
        obj = self.plan.resolve(v.func)
        if registry.refusal_of(obj) is not None and \
                str(getattr(obj, "__module__", "")).startswith("adgen."):
            # a helper of adgen's own generated code (ufunc_at_jvp in the jvp code hessian
            # differentiates again): the user never called it, so its name is left out
            from adgen.rules.refusals import refusal_hint_of

            raise MissingRuleError(registry.refusal_of(obj), self.plan.loc(s),
                                   hint=refusal_hint_of(obj))
        from adgen.transforms.effect_calls import effect_error, writes_arguments  # (refusals)

        if writes_arguments(obj):
            # r = operator.iadd(y, v), operator.setitem(y, 1, v) is None: what it changes
            raise effect_error(self.plan, s, v, obj)
        # its reason says what to do (of adgen.grad(inner) too: why_no_rule's), its hint
        # where it has one
        from adgen.rules.refusals import refusal_hint_of

        refused = registry.refusal_of(obj) is not None or makes_derivative(obj)
        raise MissingRuleError(
            f"{fname}() has no derivative rule{registry.why_no_rule(obj)}",
            self.plan.loc(s),
            hint=refusal_hint_of(obj) if refused else
            f"see docs/coverage.md for what adgen covers, or register a rule with "
            f"@adgen.rrule({fname})")

    def apply_rule(self, s: gast.stmt, rule: Any, bound: dict[str, Any], t: str,
                   g: gast.expr, state: set[str]) -> list[gast.stmt]:
        if rule.is_rrule:
            return self.pb.calls.rev_rrule(s, t, g, state)
        self.refuse_active_nondiff(s, rule, bound)
        out: list[gast.stmt] = []
        if self.plan.eff.kinds.get(t) == "tuple" and isinstance(s, gast.Assign) and \
                isinstance(s.value, gast.Call):
            # w, V = np.linalg.eigh(A); V[:, 0] *= -1: V's adjoint is in shadow memory (it
            # was written in place), the tuple's adjoint has none of it: moved in
            g = call_node("with_shadows", name("sh"), name(t), g)
        if self.plan.tracked(t) and rule.may_view(bound.get("copy")):
            src = bound[rule.params[0].name]
            if isinstance(src, gast.Name) and self.plan.tracked(src.id):
                # a view of a tracked buffer shares its shadow; a copy needs the rule. The
                # shadows the rule adds to are taken before the test, for every path.
                pre: list[gast.stmt] = []
                # (of the differentiable arguments: x.astype(t2, copy=False)'s dtype t2 is
                # taken for a name the result may hold, and has no shadow)
                for n in [t] + [a.id for d in rule.diff for a in [bound.get(d)]
                                if isinstance(a, gast.Name)]:
                    b = self.pb.bar(n)
                    if self.plan.tracked(n) and self.plan.act.active(n) and b not in state:
                        pre.append(assign(name(b, gast.Store), call_node(attr_node("sh", "of"),
                                                                     name(n)), s))
                        state.add(b)
                inner = self.apply_templates(s, rule, bound, t, name(self.pb.bar(t)), state)
                if not inner:
                    return pre
                return pre + [gast.If(test=parse_expr(f"root_of({t}) is not root_of({src.id})"),
                                      body=inner, orelse=[])]
            if isinstance(src, gast.Name) and self.plan.act.active(src.id):
                # the view's adjoint is in shadow memory (the view's buffer), its base's a
                # value: move it out, so a later view of the same buffer (the loop's next
                # iteration) starts from zero instead of adding it to the base again
                b = self.pb.bar(t)
                if b not in state:
                    out.append(assign(name(b, gast.Store),
                                      call_node(attr_node("sh", "of"), name(t)), s))
                    state.add(b)
                g = name(self.pb.namer.fresh(f"{user_name_of(t)}_g"))
                out.append(assign(name(g.id, gast.Store), call_node(attr_node(name(b), "copy")),
                                  s))
                out.append(assign(gast.Subscript(value=name(b), ctx=gast.Store(),
                                                 slice=gast.Constant(Ellipsis, None)),
                                  gast.Constant(0.0, None), s))
        out += self.apply_templates(s, rule, bound, t, g, state)
        return out

    def apply_templates(self, s: gast.stmt, rule: Any, bound: dict[str, Any], t: str,
                         g: gast.expr, state: set[str]) -> list[gast.stmt]:
        out: list[gast.stmt] = []
        if self.plan.tracked(t) and not isinstance(g, gast.Name):
            gname = self.pb.bar(t)
            if gname not in state:
                out.append(assign(name(gname, gast.Store), g, s))
                state.add(gname)
            g = name(gname)
        scalar = self.plan.kinds.get(t) == NUMBER and all(
            self.plan.kind_of(bound.get(p.name)) == NUMBER for p in rule.params)
        elementwise = bool(self.plan.kinds) and is_elementwise(rule)
        for d, tpl in zip(rule.diff, rule.templates):
            arg = bound.get(d)
            if not self.plan.any_active(arg):
                continue
            expr = self.instantiate(s, tpl, rule, bound, t, g, d)
            if all(self.plan.numeric_arg(bound.get(p.name)) for p in rule.params
                   if p.name in rule.diff):
                expr = shape_only(expr)  # numbers and arrays: no list cases to keep
            others = [bound.get(p.name) for p in rule.params if p.name != d]
            if scalar or (isinstance(arg, gast.Name) and elementwise and
                          self.plan.same_shape(arg.id, t)):
                # numbers in, a number out, or an operand of the result's shape: nothing
                # was broadcast
                expr = drop_unbroadcast(expr)
            elif len(rule.params) == 2 and others and is_number(others[0]) and \
                    isinstance(arg, gast.Name) and arg.id in self.plan.numeric:
                # the other operand is a Python number: no broadcasting to undo
                expr = drop_unbroadcast(expr)
            if isinstance(arg, gast.Name) and len(others) == 1 and \
                    self.plan.kinds.get(arg.id) == NUMBER and \
                    isinstance(others[0], gast.Name) and \
                    self.plan.kinds.get(others[0].id) == 1 and \
                    self.plan.same_shape(others[0].id, t) and is_elementwise(rule) and \
                    rule.primal in (operator.mul, np.multiply):
                expr = _summed_product(expr)
            if rule.primal in (builtins.max, builtins.min) and \
                    self.plain_number(t) and all(self.plain_number(bound.get(p.name))
                                                 for p in rule.params):
                # max(a, b) of float64 numbers and ints: the helper's branch for them, inline
                expr = inline_extreme(expr)
            if rule.primal in (operator.matmul, np.matmul) and len(rule.params) == 2:
                # a product of known ranks: its adjoints written out (g @ b.T)
                expr = inline_matmul(expr, *(self.plan.kind_of(bound.get(p.name))
                                             for p in rule.params))
            out += self.give(s, arg, d, expr, state)
        return out

    def plain_number(self, arg: Any) -> bool:
        """``arg`` (a name or a bound rule argument) is a Python int or float or a NumPy
        float64 on every path (analyses.floats' column facts; a literal number)."""
        if isinstance(arg, str):
            arg = name(arg)
        if isinstance(arg, gast.Name):
            return self.plan.column_dtypes.get(arg.id) in ("float64", "int64")
        return is_number(arg)

    def give(self, s: gast.stmt, arg: Any, d: str, expr: gast.expr, state: set[str]
             ) -> list[gast.stmt]:
        """Adds ``expr``, the adjoint of the rule's parameter ``d``, to what ``arg`` (bound to
        it) holds: a name's adjoint, or the items of a list/tuple literal through ``d_ct``."""
        if isinstance(arg, gast.Name):
            return self.pb.contribute(arg.id, expr, state)
        ct = self.pb.namer.fresh(f"{d}_ct")
        return [assign(name(ct, gast.Store), expr, s)] + self.distribute(arg, name(ct), state)

    def distribute(self, arg: Any, ct: gast.expr, state: set[str], *,
                   may_be_none: bool = False) -> list[gast.stmt]:
        """Hands the items of a cotangent to the names in a (nested) list/tuple literal.
        ``may_be_none``: the cotangent may be None (zero), as a user function's pullback gives
        for a parameter without a derivative (np.pad's pad_width ((0, 0), (k, k)) with k a
        number of unknown kind); its items are read with ``item``, which has None's items None.
        An item of a nested literal may be None too."""
        elts = arg.elts if not isinstance(arg, tuple) else list(arg)
        out: list[gast.stmt] = []
        for k, e in enumerate(elts):
            item: gast.expr = gast.Subscript(value=clone(ct), slice=gast.Constant(k, None),
                                             ctx=gast.Load())
            if may_be_none:
                item = call_node("item", clone(ct), gast.Constant(k, None))
            if self.plan.active(e):
                out += self.pb.contribute(e.id, item, state, may_be_none=True)
            elif isinstance(e, (gast.List, gast.Tuple)) and self.plan.any_active(e):
                out += self.distribute(e, item, state, may_be_none=True)
        return out

    def display_names(self) -> frozenset[str]:
        """The names the function binds only to displays (sequence_operands), found once."""
        if self.listed_names is None:
            self.listed_names = display_names(self.plan.fn)
        return self.listed_names

    def plain_at_signature(self, n: str) -> bool:
        """Whether the argument signature compiled for makes ``n`` a number or an array
        (analyses.kinds): never a list the function was given (a float array's item x[i]
        read through sequence_operand put array_vjp into the pullback, which the numba
        backend and reverse over reverse have no form of)."""
        k = self.plan.kinds.get(n)
        return k == "number" or (isinstance(k, int) and not isinstance(k, bool)) or \
            (isinstance(k, tuple) and bool(k) and k[0] == "array")

    def parameter_sequences(self) -> frozenset[str]:
        """The names that may hold a list the function was given (sequence_operands), found
        once."""
        if self.given_sequences is None:
            self.given_sequences = parameter_sequences(self.plan.fn)
        return self.given_sequences

    def instantiate(self, s: gast.stmt, tpl: gast.expr, rule: Any, bound: dict[str, Any],
                    t: str, g: gast.expr, d: str | None = None) -> gast.expr:
        """``tpl`` (the cotangent of the rule's parameter ``d``) at this call: its names bound
        to the call's operands, ``g`` and ``out``."""
        subst: dict[str, gast.expr] = {"g": g, "out": self.pb.read_value(s, t, after=True)}
        # a list operand of a ufunc (np.square([a, b]), u = [a, b]; np.square(u)): an array,
        # as NumPy takes it (2.0 * [a, b] * g raised TypeError; sequence_operands)
        listed = self.display_names() if of_numpy(rule.primal) else None
        # an operand of unknown kind that may be a list the function was given (a helper's
        # np.power(L, 3), compiled without a signature: L ** 2 raised TypeError), where the
        # template applies Python's operators to it: read through sequence_operand
        given = frozenset(
            a.id for n, a in bound.items() if n in rule.diff and isinstance(a, gast.Name) and
            a.id not in self.plan.eff.kinds and not self.plain_at_signature(a.id) and
            a.id in self.parameter_sequences()) \
            if listed is not None and isinstance(s.value, gast.Call) else frozenset()
        seq = template_operands(tpl, frozenset(
            n for n, a in bound.items() if isinstance(a, gast.Name) and a.id in given))[0] \
            if given else frozenset()
        for p in rule.params:
            a = bound.get(p.name)
            if isinstance(a, registry.Default):
                subst[p.name] = const_node(a.value)
            elif isinstance(a, tuple):
                subst[p.name] = gast.Tuple(elts=[self.pb.read_value(s, e) for e in a],
                                           ctx=gast.Load())
            elif listed is not None and p.name in rule.diff and (
                    is_sequence_operand(a, listed) or isinstance(s.value, gast.Call) and
                    isinstance(a, gast.Name) and self.plan.eff.kinds.get(a.id) in _SEQUENCES):
                # (a list parameter or its slice, np.square(L), known as one at this
                # signature: the template's 2.0 * L raised TypeError before session 21)
                subst[p.name] = as_array(self.pb.read_value(s, a))
            elif p.name in seq:
                subst[p.name] = as_sequence(self.pb.read_value(s, a))
            else:
                subst[p.name] = self.pb.read_value(s, a)
        expr = clone_with(tpl, subst)
        if d is not None and d in seq:
            # (a list's cotangent as a list, which its caller's pullback adds per item)
            expr = call_node("array_vjp", expr,
                             call_node("shape_tree", self.pb.read_value(s, bound[d])))
        return expr


_SEQUENCES = ("list", "tuple")  # the effects analysis's kinds of a list or tuple


def _summed_product(expr: gast.expr) -> gast.expr:
    """``unbroadcast(g * b, shape)`` -> ``g @ b``: the cotangent of a number that scaled a
    vector ``b`` into a result of b's shape (so ``g`` has it too) is their dot product, one
    call where the product and its sum are two passes and a helper call (about 2 us of a
    syr2k step's 5). ``@`` of vectors of one length is that sum; anything else (a number
    where a vector was expected) raises rather than broadcasting. Other forms are left."""
    if isinstance(expr, gast.Call) and isinstance(expr.func, gast.Name) and \
            expr.func.id == "unbroadcast" and len(expr.args) == 2 and not expr.keywords and \
            isinstance(expr.args[0], gast.BinOp) and isinstance(expr.args[0].op, gast.Mult):
        product = expr.args[0]
        return gast.BinOp(left=product.left, op=gast.MatMult(), right=product.right)
    return expr
