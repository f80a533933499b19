"""Every jvp in the registry against central differences of its primal, on the per-rule cases
of tests/rules/cases.py (the cases the vjps are checked on).

The test iterates the registry itself: a rule that gains a jvp (registered, or read off its
vjp) is checked on every case without an entry here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from adgen.rules import registry
from adgen.rules.helpers import zero_tangent
from rules.cases import CASES, Case
from rules.test_rules import as_float_tree, axpy, bound_values, has_float, random_like, with_params

JVP_RULES = [r for r in registry.all_rules() if not r.is_rrule and registry.jvp_of(r)]


def _cases() -> list[Any]:
    out = []
    for rule in JVP_RULES:
        for i, case in enumerate(CASES.get(rule.name, [])):
            if case.fd and case.raises is None:
                out.append(pytest.param(rule, case, id=f"{rule.name}-{i}{case!r}"[:120]))
    return out


def _fill(t: Any, x: Any) -> Any:
    """The tangent ``t`` with a zero where random_like left None (an int entry)."""
    if t is None:
        return zero_tangent(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_fill(a, b) for a, b in zip(t, x))
    return t


def _close(a: Any, b: Any, where: str) -> None:
    if isinstance(b, (list, tuple)):
        assert len(a) == len(b), where
        for k, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{where}[{k}]")
        return
    if b is None:
        return
    a = np.asarray(a, dtype=float)
    assert a.shape == np.shape(b), f"{where}: tangent shape {a.shape} != output's {np.shape(b)}"
    np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6, err_msg=where)


@pytest.mark.parametrize("rule,case", _cases())
def test_jvp_matches_central_differences(rule: registry.Rule, case: Case) -> None:
    rng = np.random.default_rng(7)
    values = bound_values(rule, case)
    given = rule.bind(list(case.args), dict(case.kwargs))
    tangents = {}  # None where an argument has no float content (an int, a string)
    for k in rule.diff:
        v = values[k]
        if isinstance(given[k], registry.Default):
            continue  # a default the case leaves out is not moved
        if isinstance(v, tuple) and any(p.varargs and p.name == k for p in rule.params):
            if any(has_float(a) for a in v):
                tangents[k] = tuple(random_like(a, rng) for a in v)
        elif has_float(v):
            tangents[k] = random_like(v, rng)
    out = rule.primal(*case.args, **case.kwargs)
    if not tangents or not has_float(out):
        pytest.skip("no float argument to perturb, or no float output")
    filled = {k: (tuple(_fill(t, a) for t, a in zip(tangents[k], values[k]))
                  if isinstance(values[k], tuple) else _fill(tangents[k], values[k]))
              for k in tangents}
    got = registry.eval_jvp(rule, case.args, case.kwargs, filled)
    eps = 1e-6

    def at(a: float) -> Any:
        moved = {k: (tuple(axpy(x, a, t) for x, t in zip(values[k], tangents[k]))
                     if isinstance(values[k], tuple) and k in [p.name for p in rule.params
                                                                  if p.varargs]
                     else axpy(values[k], a, tangents[k])) for k in tangents}
        args, kwargs = with_params(rule, case, moved)
        return as_float_tree(rule.primal(*args, **kwargs))

    hi, lo = at(eps), at(-eps)

    def diff(a: Any, b: Any) -> Any:
        if isinstance(a, list):
            return [diff(x, y) for x, y in zip(a, b)]
        if a is None:
            return None
        return (a - b) / (2 * eps)

    expected = diff(hi, lo)
    out = as_float_tree(rule.primal(*case.args, **case.kwargs))
    if isinstance(out, list) and not isinstance(got, (list, tuple)):
        got = list(got)
    _close(as_float_tree(got), expected, rule.name)


def test_a_rule_without_jvp_says_so() -> None:
    import numpy.linalg

    rule = registry.lookup(numpy.linalg.svd)
    assert registry.jvp_of(rule) is None
    with pytest.raises(registry.RuleError, match="no jvp"):
        registry.eval_jvp(rule, (np.eye(2),), {}, {"a": np.eye(2)})
