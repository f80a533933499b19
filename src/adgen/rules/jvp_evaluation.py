"""A rule's jvp evaluated at a call, on the call's values and tangents (``eval_jvp``): forward
mode's calls of a NumPy function found when the call runs (``tangent_calls``), ``adgen.jvp`` of a
NumPy function itself (``higher_order``), and the tests of every registered jvp. The compiler
inlines the same templates into generated code instead (``tangent``).
"""

from __future__ import annotations

from typing import Any

import gast

from adgen.errors import RuleError
from adgen.rules.registry import Default, Rule, jvp_of


def eval_jvp(rule: Rule, args: tuple[Any, ...], kwargs: dict[str, Any],
             tangents: dict[str, Any]) -> Any:
    """Evaluates ``rule``'s jvp at a call (for tests): ``tangents`` maps differentiable
    parameter names to their tangents (a name left out has none). Returns the output's tangent.

    Raises:
        RuleError: when the rule has no jvp.
    """
    import ast

    import numpy as np

    from adgen.rules import helpers

    jvp = jvp_of(rule)
    if jvp is None:
        raise RuleError(f"{rule.name} has no jvp")
    out = rule.primal(*args, **kwargs)
    # (a Python float's tangent from the jvp code, as an np.float64: the templates divide by
    # the operands, 1 / x at 0.0 is inf, transforms/ieee_tangents.py)
    tangents = {k: np.float64(v) if type(v) is float else v for k, v in tangents.items()}
    bound = rule.bind(list(args), dict(kwargs))
    values = {k: (v.value if isinstance(v, Default) else v) for k, v in bound.items()}
    if jvp.kind == "zero":
        return helpers.zero_tangent(out)

    def call_with(replaced: dict[str, Any]) -> Any:
        vals = dict(values)
        vals.update(replaced)
        pos: list[Any] = []
        kw: dict[str, Any] = {}
        skipped = False  # a default left out: the parameters after it go by keyword
        for p in rule.params:
            given = not isinstance(bound[p.name], Default) or p.name in replaced
            if p.varargs:
                pos.extend(vals[p.name])
            elif not given:
                skipped = True  # NumPy's own default (np.diff's prepend is not None)
            elif p.kwonly or skipped:
                kw[p.name] = vals[p.name]
            else:
                pos.append(vals[p.name])
        return rule.primal(*pos, **kw)

    if jvp.kind == "linear":
        return call_with({k: tangents.get(k, helpers.zero_tangent(values[k]))
                          for k in rule.diff if not isinstance(bound[k], Default)})
    if jvp.kind == "multilinear":
        terms = []
        for k in rule.diff:
            if k not in tangents:
                continue
            if any(p.varargs and p.name == k for p in rule.params):  # each operand alone
                for i, t in enumerate(tangents[k]):
                    ops = list(values[k])
                    ops[i] = t
                    terms.append(call_with({k: tuple(ops)}))
            else:
                terms.append(call_with({k: tangents[k]}))
        return sum(terms[1:], terms[0]) if terms else helpers.zero_tangent(out)
    ns: dict[str, Any] = {"np": np, **{n: getattr(helpers, n) for n in helpers.__all__}}
    total = None
    for k, tpl in zip(rule.diff, jvp.templates):
        if k not in tangents:
            continue
        code = compile(ast.fix_missing_locations(ast.Expression(gast.gast_to_ast(tpl))),
                       "<jvp>", "eval")
        term = eval(code, {**ns, **values, "out": out, "d": tangents[k]})
        total = term if total is None else total + term
    if total is None:
        return helpers.zero_tangent(out)
    return helpers.fit_tangent(total, out) if jvp.kind == "elementwise" else total
