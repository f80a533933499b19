"""adgen's own rule templates are parsed on first use, and still checked (issue 15, cold start).

``import adgen`` registers every rule without parsing its template (``inspect`` + ``gast``
were most of the import's time); the checks that need the parse (one ``return``, one
expression per differentiable parameter, the declared ``reads``, ``linear``) run when a
template is first used, and here for every rule of the registry. Rules registered from
outside adgen are parsed, and refused, at registration as before (tests/rules/test_rules.py).
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import gast
import numpy as np
import pytest

import adgen.runtime  # noqa: F401  (registers every rule, the runtime's own too)
from adgen.errors import RuleError
from adgen.rules import registry

TEMPLATE_RULES = [r.name for r in registry.all_rules() if not r.is_rrule and r.vjp is not None]


@pytest.mark.parametrize("name", TEMPLATE_RULES)
def test_every_template_parses_and_reads_what_it_declares(name: str) -> None:
    rule = registry._BY_NAME[name]
    templates = rule.templates  # parses (and checks) the template if it was not yet
    assert len(templates) == len(rule.diff)
    assert all(isinstance(t, gast.expr) for t in templates)
    found = registry.value_reads(templates, {p.name for p in rule.params} | {"out"})
    assert found == set(rule.reads), f"{name}: declares {sorted(rule.reads)}, reads {found}"
    if rule.linear:
        assert not found & {*rule.diff, "out"}


def test_parse_all_covers_the_jvps_too() -> None:
    registry.parse_all()
    lazy = [p for p, j in registry._JVPS.values() if isinstance(j, registry._LazyJvp)]
    assert not lazy


def test_import_parses_no_template() -> None:
    code = (
        "import adgen\n"
        "from adgen.rules import registry\n"
        "own = [r for r in registry.all_rules() if r.vjp is not None and not r.is_rrule\n"
        "       and r.vjp.__module__.startswith('adgen.')]\n"
        "parsed = [r.name for r in own if r.parsed._value is not None]\n"
        "assert own and not parsed, parsed\n"
        "print(len(own))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) > 200


def _fake_builtin(fn: Any) -> Any:
    fn.__module__ = "adgen.rules.fake"  # as if it were one of adgen's own templates
    return fn


def test_a_bad_builtin_template_is_refused_at_first_use() -> None:
    def f(x: Any) -> Any:
        return x

    def f_vjp(g: Any, out: Any, x: Any) -> Any:
        return g * x  # reads x, but declares no reads

    registry.defvjp(f, "x", reads="")(_fake_builtin(f_vjp))  # lazy: no error here
    rule = registry.lookup(f)
    try:
        with pytest.raises(RuleError, match="declares reads"):
            _ = rule.templates
        with pytest.raises(RuleError, match="declares reads"):
            registry.parse_all()
    finally:
        registry._RULES.pop(id(f), None)
        registry._BY_NAME.pop(rule.name, None)


def test_a_user_rule_is_still_refused_at_registration() -> None:
    def f(x: Any) -> Any:
        return x

    with pytest.raises(RuleError, match="linear"):
        @registry.defvjp(f, "x", linear=True, reads="x")
        def f_vjp(g: Any, out: Any, x: Any) -> Any:
            return g * x

    assert registry.lookup(f) is None


def test_lazy_templates_compile_the_same_gradient() -> None:
    import adgen

    def h(x):
        return np.sum(np.tanh(x) * np.exp(x))

    from gradcheck import numerical_grad

    x = np.linspace(-1.0, 1.0, 4)
    np.testing.assert_allclose(adgen.grad(h)(x), numerical_grad(h, (x,), 0), rtol=1e-6)


def test_a_lazy_template_is_parsed_from_the_file_as_it_was_imported(tmp_path: Any) -> None:
    # a file edited after the import (an upgrade under a running kernel) must not change the
    # template, nor hand the parser another function's lines
    import importlib.util
    import linecache

    path = tmp_path / "lazy_rule_mod.py"
    path.write_text("def f(x):\n    return x\n\n\ndef f_vjp(g, out, x):\n    return g * 3.0\n")
    spec = importlib.util.spec_from_file_location("lazy_rule_mod", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    registry.defvjp(mod.f, "x", linear=True)(_fake_builtin(mod.f_vjp))
    rule = registry.lookup(mod.f)
    try:
        path.write_text("import os\n\n\ndef f(x):\n    return x\n\n\n"
                        "def f_vjp(g, out, x):\n    return g * out * x\n")
        linecache.checkcache(str(path))
        (tpl,) = rule.templates
        assert gast.dump(tpl) == gast.dump(gast.parse("g * 3.0").body[0].value)
        with pytest.raises(RuleError, match="not where its code says"):
            registry._template_of(mod.f_vjp, 1, "f", linecache.getlines(str(path)))
    finally:
        registry._RULES.pop(id(mod.f), None)
        registry._BY_NAME.pop(rule.name, None)


def test_a_builtin_rule_of_the_wrong_arity_is_refused_by_parse_all() -> None:
    # adgen's own rules are checked against their primal's signature by parse_all (the
    # tests), not at import: inspect's reading of NumPy's signatures was a third of it
    def f(x: Any) -> Any:
        return x

    def f_vjp(g: Any, out: Any, x: Any, y: Any) -> Any:
        return g, g

    registry.defvjp(f, "x, y", linear=True)(_fake_builtin(f_vjp))  # lazy: no error here
    rule = registry.lookup(f)
    try:
        with pytest.raises(RuleError, match="does not fit"):
            registry.parse_all()
    finally:
        registry._RULES.pop(id(f), None)
        registry._BY_NAME.pop(rule.name, None)


def test_a_user_rule_of_the_wrong_arity_is_refused_at_registration() -> None:
    def f(x: Any) -> Any:
        return x

    with pytest.raises(RuleError, match="does not fit"):
        @registry.defvjp(f, "x, y", linear=True)
        def f_vjp(g: Any, out: Any, x: Any, y: Any) -> Any:
            return g, g

    assert registry.lookup(f) is None


def test_a_builtin_reference_of_another_signature_is_refused_by_parse_all() -> None:
    def f(x: Any, axis: Any = None) -> Any:
        return x

    def f_impl(x: Any, scale: Any) -> Any:
        return x * scale

    registry.defreference(f)(_fake_builtin(f_impl))  # lazy: no error here
    try:
        with pytest.raises(RuleError, match="takes 'scale'"):
            registry.parse_all()
    finally:
        registry._REFERENCES.pop(id(f), None)
        registry._REFERENCE_IMPLS.pop(id(f_impl), None)


def test_the_vjp_parameters_read_off_the_code_match_inspect() -> None:
    def plain(g, out, x, y=1.0):  # noqa: ANN001, ANN202
        return g

    def starred(g, out, *xs, axis=None):  # noqa: ANN001, ANN202
        return g

    import functools

    @functools.wraps(plain)
    def wrapped(*args):  # noqa: ANN002, ANN202
        return plain(*args)

    import inspect

    for fn in (plain, starred, wrapped, np.sum):
        assert registry._param_names(fn) == list(inspect.signature(fn).parameters)
