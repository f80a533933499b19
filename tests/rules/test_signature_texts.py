"""A rule's signature text read without ``ast.parse`` (registry._plain_signature, a cold-start
saving) gives the parameters ``ast`` gives, or leaves the text to ``ast``."""

from __future__ import annotations

import ast
import inspect

import pytest

import adgen  # noqa: F401  (registers adgen's rules, and with them their signature texts)
from adgen.rules import registry


def _by_ast(signature: str) -> tuple[tuple[object, ...], ...]:
    """The parameters as the registry read them with ``ast`` alone (name, default and its
    type, varargs, kwonly)."""
    fn = ast.parse(f"def _({signature}): pass").body[0]
    a = fn.args
    out = []
    n_defaults = len(a.defaults)
    for i, arg in enumerate(a.args):
        j = i - (len(a.args) - n_defaults)
        default = ast.literal_eval(a.defaults[j]) if j >= 0 else inspect.Parameter.empty
        out.append((arg.arg, default, type(default), False, False))
    if a.vararg is not None:
        out.append((a.vararg.arg, inspect.Parameter.empty, type(inspect.Parameter.empty),
                    True, False))
    for arg, default in zip(a.kwonlyargs, a.kw_defaults):
        value = ast.literal_eval(default) if default is not None else inspect.Parameter.empty
        out.append((arg.arg, value, type(value), False, True))
    return tuple(out)


def _as_rows(params: tuple[registry.Param, ...]) -> tuple[tuple[object, ...], ...]:
    return tuple((p.name, p.default, type(p.default), p.varargs, p.kwonly) for p in params)


def test_every_registered_signature_reads_as_ast_reads_it():
    texts = list(registry._SIGNATURES)
    assert len(texts) > 100  # adgen's own rules registered their texts
    plain = 0
    for text in texts:
        got = registry._plain_signature(text)
        if got is not None:
            plain += 1
            assert _as_rows(got) == _by_ast(text), text
        assert _as_rows(registry._parse_signature_text(text)) == _by_ast(text), text
    assert plain > len(texts) // 2  # the saving is real: most texts are plain


@pytest.mark.parametrize("text", [
    "x", "a, b", "a, axis=None, keepdims=False", "x, n=2, tol=1e-3, k=-1, s=+0.5",
    "a, *arrays", "object, dtype=None, *, copy=True", "a, *args, axis, out=None",
    "x, eps=1.", "x, c=.5", "x, z=-0", "q, *, key", "x, big=1e300",
])
def test_plain_texts(text):
    got = registry._plain_signature(text)
    assert got is not None, text
    assert _as_rows(got) == _by_ast(text)


@pytest.mark.parametrize("text", [
    "x, order='C'", "x, axes=(0, 1)", "x, **kw", "x, n=1_000", "x, n=0x10", "x, v=1j", "",
    "x,", "x, d={}", "x, v=[1]", "a, a",
])
def test_other_valid_texts_are_left_to_ast(text):
    assert registry._plain_signature(text) is None
    assert _as_rows(registry._parse_signature_text(text)) == _by_ast(text)


@pytest.mark.parametrize("text", [
    "a=1, b", "a, *", "*, *args", "a, *args, *b", "1a", "a b", "lambda", "a, n=01",
    "a, =1", "a, *=1", "a, n=1 2",
])
def test_texts_python_refuses_are_refused(text):
    assert registry._plain_signature(text) is None
    with pytest.raises(SyntaxError):
        registry._parse_signature_text(text)


@pytest.mark.parametrize("text", ["x, v=inf", "x, v=nan", "x, v=-Infinity"])
def test_names_as_defaults_are_refused_as_before(text):
    # float() reads these, Python source does not: not a literal, as ast says
    assert registry._plain_signature(text) is None
    with pytest.raises(ValueError):
        registry._parse_signature_text(text)
