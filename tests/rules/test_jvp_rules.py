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
from adgen.rules.jvp_evaluation import eval_jvp
from rules.cases import CASES, Case
from rules.test_rules import (
    as_float_tree,
    axpy,
    bound_values,
    call_vjp,
    has_float,
    random_like,
    vdot,
    with_params,
)

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
        items = [_fill(a, b) for a, b in zip(t, x)]
        return type(x)._make(items) if hasattr(type(x), "_fields") else type(x)(items)
    return t


def _close(a: Any, b: Any, where: str) -> None:
    if isinstance(b, dict):
        assert isinstance(a, dict) and set(a) == set(b), where
        for k in b:
            _close(a[k], b[k], f"{where}[{k!r}]")
        return
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
                  if type(values[k]) is tuple else _fill(tangents[k], values[k]))
              for k in tangents}
    got = eval_jvp(rule, case.args, case.kwargs, filled)
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
        if isinstance(a, dict):  # dict(mapping): a dict output
            return {k: diff(a[k], b[k]) for k in a}
        if a is None:
            return None
        return (a - b) / (2 * eps)

    expected = diff(hi, lo)
    out = as_float_tree(rule.primal(*case.args, **case.kwargs))
    if isinstance(out, list) and not isinstance(got, (list, tuple)):
        got = list(got)
    _close(as_float_tree(got), expected, rule.name)


def _tangents(rule: registry.Rule, case: Case, rng: np.random.Generator) -> dict[str, Any]:
    """A random tangent per differentiable parameter the case passes (None inside for an
    entry without float content)."""
    values = bound_values(rule, case)
    given = rule.bind(list(case.args), dict(case.kwargs))
    tangents = {}
    for k in rule.diff:
        v = values[k]
        if isinstance(given[k], registry.Default):
            continue
        if isinstance(v, tuple) and any(p.varargs and p.name == k for p in rule.params):
            if any(has_float(a) for a in v):
                tangents[k] = tuple(random_like(a, rng) for a in v)
        elif has_float(v):
            tangents[k] = random_like(v, rng)
    return tangents


@pytest.mark.parametrize("rule,case", _cases())
def test_jvp_is_the_transpose_of_the_vjp(rule: registry.Rule, case: Case) -> None:
    """<g, J u> by the jvp equals <J^T g, u> by the vjp, for random u and g: the two rules
    of one primal describe the same derivative."""
    rng = np.random.default_rng(11)
    values = bound_values(rule, case)
    tangents = _tangents(rule, case, rng)
    out = rule.primal(*case.args, **case.kwargs)
    if not tangents or not has_float(out):
        pytest.skip("no float argument to perturb, or no float output")
    filled = {k: (tuple(_fill(t, a) for t, a in zip(tangents[k], values[k]))
                  if type(values[k]) is tuple else _fill(tangents[k], values[k]))
              for k in tangents}
    out_dot = eval_jvp(rule, case.args, case.kwargs, filled)
    g = case.g if case.g is not None else random_like(out, rng, numeric=True)
    cts = call_vjp(rule, g, out, case)
    by_jvp = vdot(as_float_tree(g), as_float_tree(out_dot))
    by_vjp = sum(vdot(ct, tangents[k]) for k, ct in zip(rule.diff, cts) if k in tangents)
    assert abs(by_jvp - by_vjp) <= 1e-9 + 1e-7 * max(abs(by_jvp), abs(by_vjp)), \
        f"{rule.name}: <g, J u> = {by_jvp!r} by the jvp, <J^T g, u> = {by_vjp!r} by the vjp"


# Where the vjp refuses (a derivative that is not defined), the jvp refuses too.
REFUSED = [
    (np.linalg.svd, (np.ones((4, 3)) + np.eye(4, 3),), {}),  # completion vectors
    (np.linalg.eigh, (np.diag([2.0, 2.0, 5.0]),), {}),  # a repeated eigenvalue
    (np.linalg.qr, (np.eye(4, 2) + 0.5,), {"mode": "complete"}),  # completion columns
    (np.linalg.qr, (np.ones((3, 3)),), {}),  # rank-deficient
    (np.quantile, (np.arange(5.0), 0.3), {"method": "weibull"}),
]


@pytest.mark.parametrize("primal,args,kwargs", REFUSED)
def test_jvp_refuses_where_the_derivative_is_undefined(primal: Any, args: tuple[Any, ...],
                                                       kwargs: dict[str, Any]) -> None:
    rule = registry.lookup(primal)
    with pytest.raises(registry.RuleError):
        eval_jvp(rule, args, kwargs, {"a": np.ones_like(args[0])})


def test_svd_values_alone_of_a_wide_matrix() -> None:
    """compute_uv=False needs no completion vectors: the values' tangent is diag(U^T dA V)."""
    rng = np.random.default_rng(3)
    a, d = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    rule = registry.lookup(np.linalg.svd)
    got = eval_jvp(rule, (a,), {"compute_uv": False}, {"a": d})
    eps = 1e-6
    fd = (np.linalg.svd(a + eps * d, compute_uv=False) -
          np.linalg.svd(a - eps * d, compute_uv=False)) / (2 * eps)
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)


def test_a_rule_without_jvp_says_so() -> None:
    def halve(x):
        return x / 2.0

    @registry.defvjp(halve, "x", linear=True)
    def _halve_vjp(g, out, x):
        return g / 2.0

    try:
        rule = registry.lookup(halve)
        assert registry.jvp_of(rule) is None
        with pytest.raises(registry.RuleError, match="no jvp"):
            eval_jvp(rule, (np.eye(2),), {}, {"x": np.eye(2)})
    finally:  # the registry is shared by the other tests, which iterate it
        registry._RULES.pop(id(halve), None)
        registry._BY_NAME.pop(rule.name, None)


def test_every_rule_has_a_jvp() -> None:
    """Forward mode covers what reverse mode covers (the runtime's rules get theirs at the
    first forward-mode compilation)."""
    from adgen.rules.jvps import register_runtime_jvps

    register_runtime_jvps()
    # the FFTs take and give complex values, whose tangents forward mode does not carry yet
    missing = [r.name for r in registry.all_rules() if not r.is_rrule and
               registry.jvp_of(r) is None and not r.name.startswith("numpy.fft.")]
    assert not missing, f"rules without a jvp: {missing}"
