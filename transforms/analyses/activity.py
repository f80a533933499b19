"""Activity: which names carry a derivative.

Input: a function in SSA form (read only). Output: :class:`Activity`, the set of *varied*
names (they depend on a parameter through a differentiable operation) and *useful* names
(their value may reach the returned value, directly or through a buffer they share).
A name is active when it is both. Ints, bools, shapes, lengths and comparisons never are.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import gast
from adgen.transforms.walk import walk

# Functions and attributes whose result carries no derivative, whatever their inputs.
NONDIFF_CALLS = frozenset({
    "len", "range", "int", "bool", "str", "isinstance", "type", "print", "repr", "id",
    "shape", "ndim", "size", "argmax", "argmin", "argsort", "argwhere", "nonzero",
    "isnan", "isinf", "isfinite", "isclose", "allclose", "array_equal", "searchsorted",
    "count_nonzero", "flatnonzero", "sign", "floor", "ceil", "rint", "trunc", "logical_and",
    "logical_or", "logical_not", "logical_xor", "greater", "less", "equal", "not_equal",
    "greater_equal", "less_equal", "any", "all", "ones", "zeros", "empty", "eye", "identity",
    "arange", "zeros_like", "ones_like", "empty_like", "loop_sequence_len", "tri", "triu_indices",
    "tril_indices", "diag_indices", "indices", "meshgrid_int", "perf_counter", "time",
    "dict_keys", "diagonal_index",
})
NONDIFF_ATTRS = frozenset({"shape", "ndim", "size", "dtype", "itemsize", "nbytes", "strides"})


@dataclass
class Activity:
    """The activity facts of one function."""

    varied: set[str] = field(default_factory=set)
    useful: set[str] = field(default_factory=set)

    def active(self, name: str) -> bool:
        return name in self.varied and name in self.useful


def _call_name(call: gast.Call) -> str | None:
    f = call.func
    if isinstance(f, gast.Attribute):
        return f.attr
    if isinstance(f, gast.Name):
        return f.id
    return None


def _loads(node: gast.AST) -> set[str]:
    return {n.id for n in walk(node) if isinstance(n, gast.Name)
            and isinstance(n.ctx, gast.Load)}


def flows(s: gast.stmt) -> list[tuple[set[str], set[str]]]:
    """(sources, targets) pairs: the values of the targets may depend on the sources."""
    if isinstance(s, gast.Assign):
        t = s.targets[0]
        v = s.value
        if isinstance(v, gast.Compare) or isinstance(v, gast.BoolOp):
            return []
        if isinstance(v, gast.UnaryOp) and isinstance(v.op, gast.Not):
            return []
        if isinstance(v, gast.Call) and _call_name(v) in NONDIFF_CALLS and not (
                _call_name(v) in ("zeros", "ones", "empty", "zeros_like", "ones_like",
                                  "empty_like") and False):
            return []
        if isinstance(v, gast.Attribute) and v.attr in NONDIFF_ATTRS:
            return []
        if isinstance(t, gast.Name):
            src = _loads(v)
            if isinstance(v, gast.Call):
                # out= names the buffer written, not a value the result depends on
                src -= {k.value.id for k in v.keywords if k.arg == "out" and
                        isinstance(k.value, gast.Name)}
                src |= _loads(v.func) | {n for a in v.args for n in _loads(a)}
            if isinstance(v, gast.Subscript):
                src = _loads(v.value)  # the index carries no derivative
            return [(src, {t.id})]
        # x[i] = v / x.a = v: the buffer depends on v
        base = t.value
        while isinstance(base, (gast.Subscript, gast.Attribute)):
            base = base.value
        if isinstance(base, gast.Name):
            return [(_loads(v), {base.id})]
        return []
    if isinstance(s, gast.AugAssign):
        return [(_loads(s.value) | {s.target.id}, {s.target.id})]
    if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call):
        call = s.value
        if _call_name(call) in NONDIFF_CALLS:
            return []
        srcs = _loads(call)
        # A call whose result is discarded can only matter through what it mutates.
        targets = {a.id for a in call.args if isinstance(a, gast.Name)}
        if isinstance(call.func, gast.Attribute) and isinstance(call.func.value, gast.Name):
            targets.add(call.func.value.id)
        return [(srcs, targets)]
    return []


def activity(fn: gast.FunctionDef, aliases: dict[str, set[str]] | None = None,
             outputs: set[str] | None = None,
             closures: list[tuple[set[str], set[str]]] | None = None,
             wrt: set[str] | None = None) -> Activity:
    """Computes varied and useful names by fixpoint over all statements (flow-insensitive).

    Args:
        fn: the function in SSA form.
        aliases: name -> names that may share its buffer (from the effects analysis); a write
            through one name makes all of them varied, and usefulness spreads across them.
        outputs: names whose final value is an output besides the return value (parameters
            written in place: a caller sees them).
        closures: (free variables, def name) of nested defs: calling the def reads them.
        wrt: the parameters differentiated (None: all of them).
    """
    aliases = aliases or {}
    stmts = [s for s in walk(fn) if isinstance(s, gast.stmt)]
    pairs = [p for s in stmts for p in flows(s)] + list(closures or [])
    act = Activity()
    act.varied = {a.id for a in fn.args.args if wrt is None or a.id in wrt}
    changed = True
    while changed:
        changed = False
        for src, dst in pairs:
            if src & act.varied:
                for d in dst:
                    for n in {d} | aliases.get(d, set()):
                        if n not in act.varied:
                            act.varied.add(n)
                            changed = True
    returns = [s for s in stmts if isinstance(s, gast.Return) and s.value is not None]
    for r in returns:
        act.useful |= _loads(r.value)
    act.useful |= outputs or set()
    changed = True
    while changed:
        changed = False
        for src, dst in pairs:
            if dst & act.useful:
                for n in src:
                    for m in {n} | aliases.get(n, set()):
                        if m not in act.useful:
                            act.useful.add(m)
                            changed = True
        for n in list(act.useful):
            for m in aliases.get(n, set()):
                if m not in act.useful:
                    act.useful.add(m)
                    changed = True
    return act
