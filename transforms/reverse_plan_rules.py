"""The reverse plan's rule of each operation statement: the derivative rule of a binary or
unary operator, an attribute, a NumPy call or an ndarray method, with its arguments bound
(``op_of``), and the rules that replace a statement's own: ``c / x`` by the reciprocal's
(which reads the output only), and a normalised exponential's division or the log of one by
the softmax's or log-softmax's (analyses.shift_invariance).

Functions taking the :class:`reverse_plan.Plan`: they read its ``fn``, ``eff``, ``act``,
``kinds`` and ``def_stmt``, and its ``resolve``, ``resolve_or_none``, ``tracked``,
``is_user_call`` and ``loc``, and keep what they find once in its ``softmaxes`` and
``user_methods``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gast
import numpy as np
from adgen.transforms.analyses.shift_invariance import (
    logs_of_softmaxes,
    normalised_exponentials,
)
from adgen.transforms.reverse_ast import (
    BINOPS,
    MASK_BINOPS,
    MISSING,
    UNARYOPS,
    USERCALL,
    unsupported_operator,
)

from adgen.errors import UnsupportedError
from adgen.rules import registry
from adgen.rules.registry import Default

if TYPE_CHECKING:
    from adgen.transforms.reverse_plan import Plan


class Softmaxes:
    """The normalised exponentials of one function and the logs of them
    (analyses.shift_invariance), with their rules: found at the plan's first
    :func:`softmax_of` (``Plan.softmaxes``)."""

    __slots__ = ("divisions", "rule", "logs", "log_rule")

    def __init__(self, plan: Plan) -> None:
        from adgen.rules import reductions

        # id(p = e / t) -> (s1, e, axis) of each normalised exponential
        self.divisions: dict[int, tuple[str, str, int]] = normalised_exponentials(
            plan.fn, plan.eff, plan.kinds, plan.resolve_or_none)
        self.rule: Any = registry.lookup(reductions.softmax)
        # q = np.log(p), the only read of a softmax's p: the log-softmax's rule there
        self.logs: dict[int, tuple[str, str, int]] = logs_of_softmaxes(
            plan.fn, plan.eff, plan.kinds, plan.resolve_or_none)
        self.log_rule: Any = registry.lookup(reductions.log_softmax)


def op_of(plan: Plan, s: gast.Assign) -> tuple[Any, dict[str, Any]] | None:
    """The rule and bound arguments of an operation statement (None: no rule needed)."""
    v = s.value
    softmax = softmax_of(plan, s)
    if softmax is not None:
        return softmax
    if isinstance(v, gast.BinOp):
        if type(v.op) in MASK_BINOPS:  # (x > 0) & c: no derivative
            rule = registry.lookup(MASK_BINOPS[type(v.op)])
            return (rule, rule.bind([v.left, v.right], {})) if rule else None
        if type(v.op) not in BINOPS:
            raise unsupported_operator(v.op, plan.loc(s))
        if isinstance(v.op, gast.Div) and (found := reciprocal_of(plan, v)) is not None:
            return found
        if isinstance(v.op, gast.Mult) and (found := sequence_product_of(plan, v)) is not None:
            return found
        rule = registry.lookup(BINOPS[type(v.op)])
        return (rule, rule.bind([v.left, v.right], {})) if rule else None
    if isinstance(v, gast.UnaryOp) and type(v.op) in UNARYOPS:
        rule = registry.lookup(UNARYOPS[type(v.op)])
        return (rule, rule.bind([v.operand], {})) if rule else None
    if isinstance(v, gast.Attribute):
        from adgen.rules import methods

        if v.attr in methods.ATTRIBUTES and plan.resolve(v) is MISSING:
            rule = registry.lookup(methods.ATTRIBUTES[v.attr])
            return (rule, rule.bind([v.value], {})) if rule else None
        return None
    if isinstance(v, gast.Call):
        from adgen.transforms.user_calls import is_user_call

        if is_user_call(plan, v):
            return (USERCALL, {})
        rule, args = call_rule(plan, v)
        if rule is None:
            return None
        kwargs = {k.arg: k.value for k in v.keywords if k.arg != "out"}
        try:
            bound = rule.bind(list(args), dict(kwargs))
        except TypeError as exc:
            if not args and not kwargs:
                # dict(), list(), tuple() (a dataclass's field(default_factory=dict)): a new
                # empty container, which no derivative reaches
                return None
            raise UnsupportedError(
                f"this call of {rule.name} is not differentiated: adgen's rule for it "
                f"does not take these arguments ({exc})", plan.loc(s),
                hint=registry.binding_hint(rule, exc)) from exc
        _refuse_layout_order(plan, s, rule.name, bound)
        return rule, bound
    return None


# the rules whose pullback lays the cotangent out in the order given (np.reshape(g, shape,
# order=order))
_LAYOUT_ORDER_RULES = frozenset({"numpy.reshape", "numpy.ravel", "numpy.ndarray.flatten"})


def _refuse_layout_order(plan: Plan, s: gast.stmt, rule: str, bound: dict[str, Any]) -> None:
    """Refuses ``x.ravel('A')``, ``x.reshape(n, order='K')``, ``x.flatten('A')`` (or an order
    known only when it runs): the order then follows the array's layout in memory (an
    F-contiguous ``x.T`` reads as 'F'), which the pullback, laying the cotangent out by the
    order given, did not follow (a gradient 21.8 off, silently, found by H8 in session 29)."""
    order = bound.get("order")
    if rule not in _LAYOUT_ORDER_RULES or order is None or isinstance(order, Default) or (
            isinstance(order, gast.Constant) and order.value in ("C", "F")):
        return
    a = bound.get("a")
    if not (isinstance(a, gast.Name) and plan.act.active(a.id)):
        return  # (no derivative to lay out: an index array, a constant)
    spelled = repr(order.value) if isinstance(order, gast.Constant) else "an order known " \
        "only when it runs"
    raise UnsupportedError(
        f"{rule.split('.')[-1]} with order={spelled} is not differentiated: 'A' and 'K' "
        "take the order from the array's layout in memory, which adgen's pullback does not "
        "follow", plan.loc(s),
        hint="write the order the array has: order='F' for a Fortran-ordered array (x.T of a "
             "C-ordered one), order='C' otherwise")

def reciprocal_of(plan: Plan, v: gast.BinOp) -> tuple[Any, dict[str, Any]] | None:
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

def sequence_product_of(plan: Plan, v: gast.BinOp) -> tuple[Any, dict[str, Any]] | None:
    """For ``a * b`` with an operand the code shows to be a Python list or tuple (a display,
    a name the analyses know holds one, a global one), the rule that tells when it runs a
    repetition (``[v] * n``: the copies' cotangents summed) from NumPy's arithmetic (``W *
    v`` of a list of numbers): the product's own rule repeats a list's cotangent there."""
    if not any(_sequence(plan, o) for o in (v.left, v.right)):
        return None
    from adgen.rules import arithmetic

    rule = registry.lookup(arithmetic.sequence_product)
    return (rule, rule.bind([v.left, v.right], {})) if rule else None

def _sequence(plan: Plan, e: gast.expr) -> bool:
    if isinstance(e, (gast.List, gast.Tuple)):
        return True
    if not isinstance(e, gast.Name):
        return False
    if plan.eff.kinds.get(e.id) in ("list", "tuple"):
        return True
    return isinstance(plan.resolve_or_none(e), (list, tuple))

def softmax_of(plan: Plan, s: gast.Assign) -> tuple[Any, dict[str, Any]] | None:
    """For the division closing a normalised exponential whose exponential and row sums
    nothing else reads (analyses.shift_invariance), the softmax's rule bound to the
    exponential's input: the exponential and the sums then get no adjoint. Arrays whose
    adjoints live in shadow memory keep the statements' own rules (an ``out=`` write
    there moves the shadow)."""
    if plan.softmaxes is None:
        plan.softmaxes = Softmaxes(plan)
    logged = plan.softmaxes.logs.get(id(s))
    if logged is not None:
        s1, p, axis = logged
        if plan.tracked(s1) or plan.tracked(p) or not plan.act.active(s1) or \
                softmax_of_division(plan, p) is None:
            return None
        rule = plan.softmaxes.log_rule
        return rule, rule.bind([gast.Name(s1, gast.Load(), None, None),
                                gast.Name(p, gast.Load(), None, None)],
                               {"axis": gast.Constant(axis, None)})
    found = plan.softmaxes.divisions.get(id(s))
    if found is None:
        return None
    s1, e, axis = found
    if plan.tracked(s1) or plan.tracked(e) or not plan.act.active(s1):
        return None
    rule = plan.softmaxes.rule
    return rule, rule.bind([gast.Name(s1, gast.Load(), None, None)],
                           {"axis": gast.Constant(axis, None)})

def softmax_of_division(plan: Plan, p: str) -> Any:
    """The softmax rule of the division binding ``p`` (softmax_of), or None."""
    at = plan.def_stmt.get(p)
    return softmax_of(plan, at) if isinstance(at, gast.Assign) and \
        plan.softmaxes is not None and id(at) in plan.softmaxes.divisions else None

def array_method(plan: Plan, call: gast.Call) -> bool:
    """Whether ``x.m(...)`` (``x`` unresolved) is taken for the ndarray method ``m`` with a
    rule (rules.methods): a name of METHODS, but of ARRAY_RECEIVER_ONLY only where ``x``
    is known to be an ndarray (``cam.view()`` of a user's class is its own method), and
    not where the code shows ``x`` to be an object of the user's (``c = cam.copy();
    c.w``: analyses.user_methods), whose own method the dispatch runs."""
    from adgen.rules import methods

    func = call.func
    if not isinstance(func, gast.Attribute) or func.attr not in methods.METHODS:
        return False
    if isinstance(func.value, gast.Name) and isinstance(plan.kinds.get(func.value.id), int):
        return True  # an ndarray of this signature
    if plan.user_methods is None:
        from adgen.transforms.analyses.user_methods import user_method_calls

        plan.user_methods = user_method_calls(plan.fn, frozenset(methods.METHODS),
                                              plan.resolve, plan.parsed.fn)
    return func.attr not in methods.ARRAY_RECEIVER_ONLY and \
        id(call) not in plan.user_methods

def call_rule(plan: Plan, v: gast.Call) -> tuple[Any, list[gast.expr]]:
    """The rule of a NumPy call or an ndarray method, with its positional arguments (the
    receiver first); ``(None, [])`` when it has none."""
    obj = plan.resolve(v.func)
    # a method of a global array (E0.copy()) resolves to the bound method: the method's rule,
    # as for a local array's
    bound_to_array = isinstance(v.func, gast.Attribute) and \
        type(getattr(obj, "__self__", None)) is np.ndarray
    if obj is not MISSING and not bound_to_array:
        return registry.lookup(obj), list(v.args)
    if isinstance(v.func, gast.Attribute):
        from adgen.rules import methods

        fn = methods.METHODS.get(v.func.attr) if bound_to_array or array_method(plan, v) \
            else None
        if fn is not None:
            args = list(v.args)
            if v.func.attr in methods.VARARG_METHODS and len(args) > 1:
                args = [gast.Tuple(elts=args, ctx=gast.Load())]
            return registry.lookup(fn), [v.func.value] + args
    return None, []
