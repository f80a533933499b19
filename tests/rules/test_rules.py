"""Every registered rule against central differences: the dot-product test of its vjp.

For a random output cotangent u and input direction v, a rule is right when
``<u, J v>`` (central differences of the primal) equals ``sum_i <vjp(u)_i, v_i>`` (the rule's
vjp, called directly). The parametrization iterates the registry itself, so a rule that is
registered without test cases fails here.
"""

from __future__ import annotations

import copy
import inspect
from typing import Any

import numpy as np
import pytest

import adgen.rules  # noqa: F401  (registers every rule)
import adgen.runtime  # noqa: F401  (registers the runtime's own rules)
from adgen.errors import RuleError
from adgen.rules import helpers, methods, registry
from adgen.rules.registry import Default, Rule, all_rules
from rules.cases import CASES, Case

EPS = 1e-6
RTOL = 1e-5
ATOL = 1e-7

# Rules whose gradient is zero everywhere they are differentiable.
ZERO_RULES = {
    "_operator.floordiv", "_operator.lt", "_operator.le", "_operator.gt", "_operator.ge",
    "_operator.eq", "_operator.ne", "builtins.int", "builtins.round",
    "math.floor", "math.ceil", "math.trunc", "math.isnan", "math.isinf", "math.isfinite",
    "numpy.argmax", "numpy.argmin", "numpy.argsort", "numpy.round", "numpy.around",
    "numpy.all", "numpy.any", "numpy.count_nonzero", "numpy.size", "numpy.shape",
    "numpy.ndim", "numpy.isclose", "numpy.allclose", "numpy.array_equal",
    "numpy.linalg.matrix_rank", "numpy.imag", "numpy.angle", "_operator.invert",
    *(f"numpy.{f}" for f in (
        "isneginf", "isposinf", "iscomplex", "isreal", "iscomplexobj", "isrealobj", "spacing",
        "invert", "bitwise_count", "gcd", "lcm", "bitwise_and", "bitwise_or", "bitwise_xor",
        "left_shift", "right_shift", "array_equiv", "nanargmax", "nanargmin", "argpartition",
        "lexsort", "digitize", "isin", "isscalar", "iterable", "tril_indices_from",
        "triu_indices_from", "diag_indices_from", "array_repr", "array_str", "result_type",
        "can_cast", "einsum_path")),
    *(f"numpy.{f}" for f in ("sign", "floor", "ceil", "rint", "trunc", "isnan", "isinf",
                             "isfinite", "signbit", "logical_not", "floor_divide", "greater",
                             "greater_equal", "less", "less_equal", "equal", "not_equal",
                             "logical_and", "logical_or", "logical_xor")),
}

# adgen's own rules; user rrules that other test modules register are not this file's business
RULE_NAMES = [r.name for r in all_rules() if not r.is_rrule]


def rule_cases() -> list[Any]:
    params = []
    for name in RULE_NAMES:
        for i, case in enumerate(CASES.get(name, [])):
            params.append(pytest.param(name, case, id=f"{name}-{i}{case!r}"[:120]))
    return params


# --------------------------------------------------------------------------------------------
# Trees of floats and arrays (arguments and outputs may be lists, tuples, dicts)


def is_float_leaf(x: Any) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (float, np.floating)):
        return True
    return isinstance(x, np.ndarray) and x.dtype.kind == "f"


def has_float(x: Any) -> bool:
    if isinstance(x, (list, tuple)):
        return any(has_float(v) for v in x)
    if isinstance(x, dict):
        return any(has_float(v) for v in x.values())
    return is_float_leaf(x)


def random_like(x: Any, rng: np.random.Generator, numeric: bool = False) -> Any:
    """A random tree shaped like ``x`` (None where ``x`` has no float content)."""
    if isinstance(x, (list, tuple)):
        items = [random_like(v, rng, numeric) for v in x]
        if hasattr(type(x), "_fields"):  # a namedtuple's tangent is one of its type
            return type(x)._make(items)
        return type(x)(items) if type(x) in (list, tuple) else tuple(items)
    if isinstance(x, dict):
        return {k: random_like(v, rng, numeric) for k, v in x.items()}
    if is_float_leaf(x) or (numeric and isinstance(x, (np.ndarray, np.number, int, bool))):
        if np.ndim(x) == 0 and not isinstance(x, np.ndarray):
            return float(rng.standard_normal())
        return rng.standard_normal(np.shape(x))
    return None


def axpy(x: Any, a: float, v: Any) -> Any:
    """``x + a * v`` leaf by leaf (leaves where v is None are unchanged)."""
    if v is None:
        return x
    if isinstance(x, (list, tuple)):
        items = [axpy(xi, a, vi) for xi, vi in zip(x, v)]
        return type(x)._make(items) if hasattr(type(x), "_fields") else type(x)(items)
    if isinstance(x, dict):
        return {k: axpy(x[k], a, v[k]) for k in x}
    res = x + a * v
    return float(res) if isinstance(x, float) else res


def as_float_tree(y: Any) -> Any:
    if isinstance(y, (list, tuple)):
        return [as_float_tree(v) for v in y]
    if isinstance(y, dict):
        return {k: as_float_tree(v) for k, v in y.items()}
    if isinstance(y, (str, type(None))):
        return None
    return np.asarray(np.real(y), dtype=np.float64)  # a complex output: its real part


def vdot(a: Any, b: Any) -> float:
    """Sum of the elementwise products of two trees (None is zero)."""
    if a is None or b is None:
        return 0.0
    if isinstance(b, (list, tuple)) and isinstance(a, np.ndarray):
        b = np.asarray(b, dtype=np.float64)  # an array cotangent of a list argument
    if isinstance(a, (list, tuple)) and isinstance(b, np.ndarray):
        a = np.asarray(a, dtype=np.float64)
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b), (len(a), len(b))
        return sum(vdot(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return sum(vdot(a[k], b[k]) for k in b)
    return float(np.sum(np.asarray(np.real(a), dtype=np.float64) *
                        np.asarray(np.real(b), dtype=np.float64)))


def check_structure(ct: Any, x: Any, where: str) -> None:
    """A cotangent has its argument's structure: shapes equal, floats, zeros never None."""
    if not has_float(x) and not isinstance(x, (list, tuple, dict)):
        return
    assert ct is not None, f"{where}: cotangent is None"
    if isinstance(x, dict):
        assert isinstance(ct, dict) and set(ct) == set(x), f"{where}: {ct!r} for a dict"
        for k in x:
            check_structure(ct[k], x[k], f"{where}[{k!r}]")
        return
    if isinstance(x, (list, tuple)):
        if isinstance(ct, np.ndarray):
            assert ct.shape == np.shape(x), f"{where}: shape {ct.shape} != {np.shape(x)}"
            assert ct.dtype.kind == "f"
            return
        assert isinstance(ct, list if isinstance(x, list) else tuple) and len(ct) == len(x), \
            f"{where}: {type(ct).__name__} of {len(ct)} for a {type(x).__name__} of {len(x)}"
        for i, (c, xi) in enumerate(zip(ct, x)):
            check_structure(c, xi, f"{where}[{i}]")
        return
    assert np.shape(ct) == np.shape(x), f"{where}: shape {np.shape(ct)} != {np.shape(x)}"
    # a real input's cotangent may be complex (fft of a real x): its real part is the gradient
    # (JAX's convention; the API takes it), so the checks below pair real parts
    assert np.asarray(ct).dtype.kind in "fc", f"{where}: dtype {np.asarray(ct).dtype}"
    if isinstance(x, np.ndarray) and x.ndim:
        assert isinstance(ct, np.ndarray), f"{where}: {type(ct).__name__} for an array"


def is_zero(ct: Any) -> bool:
    if isinstance(ct, (list, tuple)):
        return all(is_zero(c) for c in ct)
    if isinstance(ct, dict):
        return all(is_zero(c) for c in ct.values())
    return ct is not None and not np.any(np.asarray(ct))


# --------------------------------------------------------------------------------------------
# Calling a rule


def slots(rule: Rule, case: Case) -> dict[str, Any]:
    """Where each parameter's argument sits in the case: a position, positions, a key."""
    return rule.bind(list(range(len(case.args))), {k: k for k in case.kwargs})


def with_params(rule: Rule, case: Case, values: dict[str, Any]) -> tuple[list, dict]:
    """The case's args and kwargs with the given parameters replaced."""
    args, kwargs = list(case.args), dict(case.kwargs)
    where = slots(rule, case)
    for pname, val in values.items():
        w = where[pname]
        if isinstance(w, tuple):  # varargs
            for pos, vi in zip(w, val):
                args[pos] = vi
        elif isinstance(w, str):
            kwargs[w] = val
        elif isinstance(w, int):
            args[w] = val
    return args, kwargs


def call_vjp(rule: Rule, g: Any, out: Any, case: Case) -> tuple[Any, ...]:
    bound = rule.bind(list(case.args), dict(case.kwargs))
    values = {k: (v.value if isinstance(v, Default) else v) for k, v in bound.items()}
    cts = rule.vjp(g, out, **values)
    if len(rule.diff) == 1:
        cts = (cts,)
    assert isinstance(cts, tuple) and len(cts) == len(rule.diff), \
        f"vjp returned {type(cts).__name__}, expected {len(rule.diff)} cotangents"
    return cts


def bound_values(rule: Rule, case: Case) -> dict[str, Any]:
    bound = rule.bind(list(case.args), dict(case.kwargs))
    return {k: (v.value if isinstance(v, Default) else v) for k, v in bound.items()}


def snapshot(x: Any) -> Any:
    return copy.deepcopy(x)


def same(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b, equal_nan=True)
    if type(a) is type(b) and type(a).__module__.startswith("adgen.") and hasattr(a, "__dict__"):
        return same(vars(a), vars(b))  # a runtime object (a shadow map): by its contents
    nan = isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b)
    return a is b or a == b or nan


# --------------------------------------------------------------------------------------------
# The tests


@pytest.mark.parametrize("name", RULE_NAMES)
def test_every_rule_has_cases(name: str) -> None:
    """A rule registered without test cases is a rule nobody checked."""
    assert CASES.get(name), f"rule {name} has no test cases in tests/rules/cases.py"


def test_every_case_names_a_rule() -> None:
    stale = sorted(set(CASES) - set(RULE_NAMES))
    assert not stale, f"cases for rules that are not registered: {stale}"


@pytest.mark.parametrize("name, case", rule_cases())
def test_vjp(name: str, case: Case) -> None:
    rule = registry._BY_NAME[name]
    rng = np.random.default_rng(abs(hash((name, repr(case)))) % 2**32)
    with np.errstate(all="ignore"):
        out = rule.primal(*case.args, **case.kwargs)
    values = bound_values(rule, case)

    if case.raises is not None:
        g = case.g if case.g is not None else random_like(out, rng, numeric=True)
        with pytest.raises(case.raises):
            call_vjp(rule, g, out, case)
        return

    g = case.g if case.g is not None else random_like(out, rng, numeric=True)
    before = snapshot((case.args, case.kwargs, g, out))
    with np.errstate(divide="ignore", invalid="ignore"):
        cts = call_vjp(rule, g, out, case)
    assert same(before, (case.args, case.kwargs, g, out)), "the vjp changed its inputs"

    for d, ct in zip(rule.diff, cts):
        check_structure(ct, values[d], f"{name}: cotangent of {d}")
    if name in ZERO_RULES:
        for d, ct in zip(rule.diff, cts):
            if has_float(values[d]):
                assert is_zero(ct), f"{name}: zero-gradient rule gave {ct!r} for {d}"

    if case.expect is not None:
        for d, ct, want in zip(rule.diff, cts, case.expect):
            np.testing.assert_allclose(np.asarray(ct, dtype=float), want, rtol=1e-12,
                                       atol=1e-12, err_msg=f"cotangent of {d}")
    if not case.fd:
        return

    # Perturb the differentiable arguments the call passes (a default is not an argument).
    passed = slots(rule, case)
    directions = {d: random_like(values[d], rng) for d in rule.diff
                  if has_float(values[d]) and not isinstance(passed[d], Default)}
    if not directions:
        return  # nothing differentiable to perturb (creation from shapes)
    plus = with_params(rule, case, {d: axpy(values[d], EPS, v) for d, v in directions.items()})
    minus = with_params(rule, case, {d: axpy(values[d], -EPS, v) for d, v in directions.items()})
    f_plus = as_float_tree(rule.primal(*plus[0], **plus[1]))
    f_minus = as_float_tree(rule.primal(*minus[0], **minus[1]))
    jv = _tree_scale(_tree_sub(f_plus, f_minus), 1.0 / (2 * EPS))
    numeric = vdot(as_float_tree(g), jv)
    analytic = sum(vdot(ct, directions[d]) for d, ct in zip(rule.diff, cts) if d in directions)
    assert abs(numeric - analytic) <= ATOL + RTOL * max(abs(numeric), abs(analytic)), \
        f"{name}: <u, J v> = {numeric!r} by central differences, {analytic!r} by the vjp"


def _tree_sub(a: Any, b: Any) -> Any:
    if a is None:
        return None
    if isinstance(a, list):
        return [_tree_sub(x, y) for x, y in zip(a, b)]
    if isinstance(a, dict):
        return {k: _tree_sub(a[k], b[k]) for k in a}
    return a - b


def _tree_scale(a: Any, s: float) -> Any:
    if a is None:
        return None
    if isinstance(a, list):
        return [_tree_scale(x, s) for x in a]
    if isinstance(a, dict):
        return {k: _tree_scale(v, s) for k, v in a.items()}
    return a * s


# --------------------------------------------------------------------------------------------
# Declarations the compiler relies on


def test_wrong_reads_are_refused() -> None:
    """The mutation analysis trusts ``reads``: a declaration that lies fails to register."""
    def f(x: Any) -> Any:
        return x

    with pytest.raises(RuleError, match="reads"):
        @registry.defvjp(f, "x")  # reads nothing declared, but the template reads x
        def f_vjp(g: Any, out: Any, x: Any) -> Any:
            return g * np.cos(x)

    with pytest.raises(RuleError, match="reads"):
        @registry.defvjp(f, "x", reads="x, out")  # declares out, which it does not read
        def f_vjp2(g: Any, out: Any, x: Any) -> Any:
            return g * np.cos(x)

    with pytest.raises(RuleError, match="linear"):
        @registry.defvjp(f, "x", reads="out", linear=True)
        def f_vjp3(g: Any, out: Any, x: Any) -> Any:
            return g * out

    assert registry.lookup(f) is None


def test_shape_reads_are_not_value_reads() -> None:
    def f(arrays: Any, x: Any) -> Any:
        return x

    @registry.defvjp(f, "arrays, x", diff="x", linear=True)
    def f_vjp(g: Any, out: Any, arrays: Any, x: Any) -> Any:
        return g * len(arrays) + np.ndim(x) + sum(np.size(a) for a in arrays)

    rule = registry.lookup(f)
    try:
        assert rule.reads == frozenset()
        assert "a" not in rule.free_names  # a comprehension variable is not a free name
    finally:
        registry._RULES.pop(id(f), None)
        registry._BY_NAME.pop(rule.name, None)


def test_keyword_only_parameters_do_not_bind_positionally() -> None:
    rule = registry.lookup(np.sum)
    assert rule.bind(["x", 0], {"keepdims": True})["keepdims"] is True
    with pytest.raises(TypeError):
        rule.bind(["x", 0, "dtype"], {})  # numpy's third positional is dtype, not keepdims


@pytest.mark.parametrize("name", RULE_NAMES)
def test_templates_use_only_numpy_builtins_and_helpers(name: str) -> None:
    """Generated code imports numpy and adgen.runtime (which re-exports the helpers)."""
    import builtins

    rule = registry._BY_NAME[name]
    unknown = {n for n in rule.free_names
               if n != "np" and n not in helpers.__all__ and not hasattr(builtins, n)}
    assert not unknown, f"{name}: templates use {sorted(unknown)}"


def test_helpers_are_standalone() -> None:
    """Each helper uses only numpy, builtins and public helpers, so -o output can copy it."""
    allowed = set(helpers.__all__) | {"np"}
    for hname in helpers.__all__:
        fn = getattr(helpers, hname)
        used = set(inspect.getclosurevars(fn).globals)
        assert used <= allowed, f"{hname} uses {sorted(used - allowed)}"
    # And they run from copies of their source in a namespace holding only numpy and them.
    namespace: dict[str, Any] = {"np": np}
    for hname in helpers.__all__:
        source = inspect.getsource(getattr(helpers, hname))
        exec(compile(source, f"<{hname}>", "exec"), namespace)  # noqa: S102
    assert namespace["sum_vjp"](1.0, (2, 3), None, False).shape == (2, 3)
    assert namespace["unbroadcast"](np.ones((3, 4)), (4,)).tolist() == [3.0] * 4
    assert namespace["unbroadcast"]([1.0, 2.0, 3.0], [(), ()], seq="tail") == [2.0, 3.0]
    parts = namespace["einsum_vjp"](np.ones((2, 2)), "ij,jk->ik", (np.eye(2), np.eye(2)))
    assert [p.shape for p in parts] == [(2, 2), (2, 2)]
    assert namespace["getitem_vjp"](1.0, namespace["shape_tree"]([1.0, np.ones(2)]), 0)[0] == 1
    with pytest.raises(RuleError):
        namespace["norm_vjp"](1.0, 1.0, np.eye(2), "max", None, False)


def test_helpers_star_import() -> None:
    namespace: dict[str, Any] = {}
    exec("from adgen.rules.helpers import *", namespace)  # noqa: S102
    assert set(helpers.__all__) <= set(namespace)
    assert all(callable(getattr(helpers, n)) for n in helpers.__all__)


def test_method_targets_have_rules() -> None:
    for table in (methods.METHODS, methods.ATTRIBUTES):
        for attr, fn in table.items():
            assert registry.lookup(fn) is not None, f".{attr} maps to {fn!r}, which has no rule"
    for attr, pname in methods.VARARG_METHODS.items():
        rule = registry.lookup(methods.METHODS[attr])
        assert [p.name for p in rule.params][1] == pname, attr


@pytest.mark.parametrize("attr, receiver, args, kwargs", [
    ("sum", np.arange(6.0).reshape(2, 3), (0,), {}),
    ("mean", np.arange(6.0).reshape(2, 3), (), {"axis": 1, "keepdims": True}),
    ("max", np.arange(6.0).reshape(2, 3), (1,), {}),
    ("var", np.arange(6.0), (), {"ddof": 1}),
    ("cumsum", np.arange(6.0).reshape(2, 3), (1,), {}),
    ("cumprod", np.arange(1.0, 7.0).reshape(2, 3), (), {}),
    ("repeat", np.arange(6.0).reshape(2, 3), ([1, 2],), {"axis": 0}),
    ("conj", np.arange(6.0), (), {}),
    ("reshape", np.arange(6.0), ((3, 2),), {}),
    ("transpose", np.arange(24.0).reshape(2, 3, 4), ((2, 0, 1),), {}),
    ("swapaxes", np.arange(6.0).reshape(2, 3), (0, 1), {}),
    ("flatten", np.arange(6.0).reshape(2, 3), ("F",), {}),
    ("clip", np.arange(6.0), (1.0, 4.0), {}),
    ("astype", np.arange(6.0), (np.float32,), {}),
    ("item", np.arange(6.0).reshape(2, 3), (1, 2), {}),
    ("dot", np.arange(6.0).reshape(2, 3), (np.ones(3),), {}),
    ("round", np.arange(6.0) / 7, (2,), {}),
])
def test_methods_compute_what_the_method_does(attr: str, receiver: np.ndarray,
                                              args: tuple, kwargs: dict) -> None:
    want = getattr(receiver, attr)(*args, **kwargs)
    got = methods.METHODS[attr](receiver, *args, **kwargs)
    np.testing.assert_array_equal(got, want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    rule = registry.lookup(methods.METHODS[attr])
    rule.bind([receiver, *args], dict(kwargs))  # and the rule binds the call


def test_runtime_reexports_helpers_unshadowed() -> None:
    """Generated code finds each helper by name in adgen.runtime: the runtime's own names must
    not shadow one (a template would silently call the wrong function)."""
    from adgen import runtime

    shadowed = [n for n in helpers.__all__ if getattr(runtime, n, None) is not getattr(helpers, n)]
    assert not shadowed, f"adgen.runtime shadows rule helpers {shadowed}"
