"""Every parameter of adgen's rules outside ``rule.diff`` is classified in
rules/nondiff_params.py: derivative-free (an axis, a dtype, a mask, a piecewise-constant
cutoff) or refused where a derivative reaches it (np.var's ddof). A new rule with an
unclassified one fails here: decide which it is (or differentiate it, in ``diff``)."""

from __future__ import annotations

import pytest

from adgen.rules import nondiff_params, registry


def all_rules():
    for module in ("scipy.special", "scipy.stats", "scipy.linalg"):
        try:
            __import__(module)
        except ImportError:
            pass
    import adgen  # noqa: F401  (its rules)

    registry.load_optional_rules()
    return registry.all_rules()


def test_every_non_differentiable_parameter_is_classified():
    unclassified = sorted(
        f"{r.name}: {p.name}" for r in all_rules() if not r.is_rrule and r.diff
        for p in r.params if p.name not in r.diff and
        nondiff_params.classification(r, p.name) is None)
    assert unclassified == []


def test_the_refused_ones_are_rules_parameters_outside_diff():
    by_name = {r.name: r for r in all_rules()}
    for rule_name, param in nondiff_params.REFUSED:
        if rule_name.startswith("scipy.") and rule_name not in by_name:
            pytest.skip("scipy is not installed")
        rule = by_name[rule_name]
        assert param in {p.name for p in rule.params} and param not in rule.diff
    for rule_name, param in nondiff_params.FREE:
        rule = by_name[rule_name]
        assert param in {p.name for p in rule.params} and param not in rule.diff


def test_an_unclassified_parameter_is_refused_where_it_has_a_derivative():
    rule = registry.lookup(__import__("numpy").var)
    assert nondiff_params.active_nondiff(rule, {"a": 1, "ddof": 2}, lambda a: a == 2) == "ddof"
    assert nondiff_params.active_nondiff(rule, {"a": 1, "axis": 2}, lambda a: a == 2) is None

    class Fake:
        name, diff, is_rrule = "my.rule", ("x",), False
        params = (registry.Param("x"), registry.Param("scale"))

    assert nondiff_params.classification(Fake, "scale") is None
    assert nondiff_params.active_nondiff(Fake, {"x": 0, "scale": 1}, bool) == "scale"
    msg, hint = nondiff_params.refusal_text(Fake, "scale")
    assert "scale of my.rule()" in msg and "diff=" in hint
