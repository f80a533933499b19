"""Every registered rule on complex inputs: right in JAX's convention, or loud.

Each case of ``tests/rules/cases.py`` whose primal accepts complex values is run again with
the floating-point leaves of its differentiable arguments made complex. For an output
cotangent u (complex where the output is) and a direction v, the rule is right when
``Re sum(u * J v)`` by central differences equals ``Re sum(vjp(u) * v)`` (the cotangent of
z = x + iy is dL/dx - i dL/dy); v is checked as a real direction and as an imaginary one, so
the real and the imaginary parts of the cotangent are checked separately. A rule may instead
refuse: an adgen error, or NumPy's ComplexWarning (a complex cotangent stored into real zeros),
which the API turns into NonDifferentiableError at the user's line. A raw exception or a wrong
number fails.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import adgen.rules  # noqa: F401  (registers every rule)
from adgen.errors import AdgenError
from adgen.rules import registry
from adgen.rules.registry import Default
from rules.cases import CASES, Case
from rules.test_rules import RULE_NAMES, ZERO_RULES, call_vjp, has_float, slots, with_params

EPS = 1e-6
RTOL = 1e-5
ATOL = 1e-7

# Rules that stay refused for complex values, and why (docs/supported.md lists them).
REFUSED: dict[str, str] = {}


def complexify(x: Any, rng: np.random.Generator) -> Any:
    """``x`` with every float leaf given a random imaginary part."""
    if isinstance(x, (list, tuple)) and type(x) in (list, tuple):
        return type(x)(complexify(v, rng) for v in x)
    if isinstance(x, dict):
        return {k: complexify(v, rng) for k, v in x.items()}
    if isinstance(x, (bool, np.bool_)):
        return x
    if isinstance(x, (float, np.floating)):
        return complex(x, rng.standard_normal())
    if isinstance(x, np.ndarray) and x.dtype.kind == "f":
        return x + 1j * rng.standard_normal(x.shape)
    return x


def direction(x: Any, rng: np.random.Generator, part: complex) -> Any:
    """A random direction shaped like ``x`` (None where it has no complex leaf), times part."""
    if isinstance(x, (list, tuple)):
        return [direction(v, rng, part) for v in x]
    if isinstance(x, dict):
        return {k: direction(v, rng, part) for k, v in x.items()}
    if isinstance(x, complex):
        return part * rng.standard_normal()
    if isinstance(x, np.ndarray) and x.dtype.kind == "c":
        return part * rng.standard_normal(x.shape)
    return None


def axpy(x: Any, a: float, v: Any) -> Any:
    if v is None:
        return x
    if isinstance(x, (list, tuple)):
        items = [axpy(xi, a, vi) for xi, vi in zip(x, v)]
        return type(x)._make(items) if hasattr(type(x), "_fields") else type(x)(items)
    if isinstance(x, dict):
        return {k: axpy(x[k], a, v[k]) for k in x}
    return x + a * v


def cotangent_like(y: Any, rng: np.random.Generator) -> Any:
    if isinstance(y, (list, tuple)):
        return type(y)(cotangent_like(v, rng) for v in y) if type(y) in (list, tuple) \
            else tuple(cotangent_like(v, rng) for v in y)
    if isinstance(y, dict):
        return {k: cotangent_like(v, rng) for k, v in y.items()}
    if isinstance(y, (np.ndarray, np.number, float, complex)) and \
            np.asarray(y).dtype.kind in "fc":
        u = rng.standard_normal(np.shape(y))
        if np.iscomplexobj(y):
            u = u + 1j * rng.standard_normal(np.shape(y))
        return u if isinstance(y, np.ndarray) else complex(u) if np.iscomplexobj(u) \
            else float(u)
    return None


def pair(a: Any, b: Any) -> float:
    """Re sum(a * b) over two trees (None is zero)."""
    if a is None or b is None:
        return 0.0
    if isinstance(a, (list, tuple)) and not isinstance(b, (list, tuple)):
        a = np.asarray(a)
    if isinstance(b, (list, tuple)) and not isinstance(a, (list, tuple)):
        b = np.asarray(b)
    if isinstance(a, (list, tuple)):
        return sum(pair(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return sum(pair(a[k], b[k]) for k in b)
    return float(np.real(np.sum(np.asarray(a) * np.asarray(b))))


def sub_scale(a: Any, b: Any, s: float) -> Any:
    if a is None or isinstance(a, (str, bool, int)) or (
            isinstance(a, np.ndarray) and a.dtype.kind not in "fc"):
        return None
    if isinstance(a, (list, tuple)):
        return [sub_scale(x, y, s) for x, y in zip(a, b)]
    if isinstance(a, dict):
        return {k: sub_scale(a[k], b[k], s) for k in a}
    return (np.asarray(a) - np.asarray(b)) * s


def complex_cases() -> list[Any]:
    params = []
    for name in RULE_NAMES:
        if name in ZERO_RULES:
            continue
        for i, case in enumerate(CASES.get(name, [])):
            if case.raises is None and case.fd:
                params.append(pytest.param(name, case, id=f"{name}-{i}{case!r}"[:120]))
    return params


@pytest.mark.parametrize("name, case", complex_cases())
def test_complex_vjp(name: str, case: Case) -> None:
    rule = registry._BY_NAME[name]
    rng = np.random.default_rng(abs(hash((name, repr(case), "complex"))) % 2**32)
    bound = rule.bind(list(case.args), dict(case.kwargs))
    passed = slots(rule, case)
    values = {k: (v.value if isinstance(v, Default) else v) for k, v in bound.items()}
    diff = [d for d in rule.diff if has_float(values[d]) and not isinstance(passed[d], Default)]
    if not diff:
        pytest.skip("no float argument to make complex")
    cvalues = {d: complexify(values[d], rng) for d in diff}
    args, kwargs = with_params(rule, case, cvalues)
    ccase = Case(tuple(args), kwargs)
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("error", np.exceptions.ComplexWarning)
            out = rule.primal(*args, **kwargs)
    except (TypeError, ValueError, np.exceptions.ComplexWarning, np.linalg.LinAlgError,
            AdgenError) as exc:
        pytest.skip(f"NumPy refuses complex values here: {type(exc).__name__}")
    u = cotangent_like(out, rng)
    try:
        with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("error", np.exceptions.ComplexWarning)
            cts = call_vjp(rule, u, out, ccase)
    except (AdgenError, np.exceptions.ComplexWarning):
        return  # loud: the API reports it at the user's line
    ct_of = dict(zip(rule.diff, cts))
    for part in (1.0, 1.0j):  # the real, then the imaginary parts of the arguments
        dirs = {d: direction(cvalues[d], rng, part) for d in diff}
        plus = with_params(rule, case, {d: axpy(cvalues[d], EPS, dirs[d]) for d in diff})
        minus = with_params(rule, case, {d: axpy(cvalues[d], -EPS, dirs[d]) for d in diff})
        with np.errstate(all="ignore"):
            jv = sub_scale(rule.primal(*plus[0], **plus[1]), rule.primal(*minus[0], **minus[1]),
                           1 / (2 * EPS))
        numeric = pair(u, jv)
        analytic = sum(pair(ct_of[d], dirs[d]) for d in diff)
        assert abs(numeric - analytic) <= ATOL + RTOL * max(abs(numeric), abs(analytic)), \
            f"{name} ({'real' if part == 1.0 else 'imaginary'} parts): <u, J v> = " \
            f"{numeric!r} by central differences, {analytic!r} by the vjp"
