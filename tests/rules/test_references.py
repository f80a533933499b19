"""Every reference implementation (``adgen.rules.composites``) against NumPy and central
differences.

The parametrization iterates ``registry.all_references()``: a reference registered without
cases fails ``test_every_reference_has_cases``. For each case:

- the reference computes what NumPy computes (values, shapes, container types);
- adgen compiles a call of the NumPy function, as a user writes it, through the reference, and
  its pullback passes the dot-product test against central differences of NumPy itself
  (:func:`gradcheck.check_vjp`);
- a ``refuse`` case raises ``RuleError`` where the reference does not differentiate a mode.
"""

from __future__ import annotations

import itertools
import linecache
from typing import Any

import numpy as np
import pytest
from gradcheck import check_vjp
from rules.cases import Case
from rules.reference_cases import REFERENCE_CASES

import adgen
import adgen.rules  # noqa: F401  (registers every rule and reference)
from adgen.errors import AdgenError, RuleError
from adgen.rules import registry

NAMES = [r.name for r in registry.all_references()]
# References of functions that write their first argument in place and return None.
WRITES_FIRST: set[str] = set()
_COUNTER = itertools.count()


def reference_cases() -> list[Any]:
    out = []
    for name in NAMES:
        for i, case in enumerate(REFERENCE_CASES.get(name, [])):
            out.append(pytest.param(name, case, id=f"{name}-{i}{case!r}"[:120]))
    return out


def _is_float(x: Any) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (float, np.floating)):
        return True
    if isinstance(x, np.ndarray):
        return x.dtype.kind == "f"
    if isinstance(x, list):
        return bool(x) and all(_is_float(v) for v in x)
    return False


def user_function(name: str, case: Case) -> tuple[Any, list[Any]]:
    """A function written as a user writes it: ``np.diff(x0, 2, axis=x1)``, its float arguments
    as parameters and the others as constants; and the float arguments to call it with."""
    params: list[str] = []
    values: list[Any] = []
    consts: dict[str, Any] = {}

    def slot(v: Any) -> str:
        if _is_float(v):
            params.append(f"x{len(params)}")
            values.append(v)
            return params[-1]
        consts[f"c{len(consts)}"] = v
        return f"c{len(consts) - 1}"

    args = [slot(v) for v in case.args]
    kwargs = [f"{k}={slot(v)}" for k, v in case.kwargs.items()]
    call = name.replace("numpy.", "np.", 1)
    if name in WRITES_FIRST:
        # the function writes its first argument: write a copy, return it
        first = args[0]
        body = (f"    {first} = {first} * 1.0\n    {call}({', '.join(args + kwargs)})\n"
                f"    return {first}\n")
    else:
        body = f"    return {call}({', '.join(args + kwargs)})\n"
    src = f"def user_fn({', '.join(params)}):\n{body}"
    filename = f"<adgen reference test {next(_COUNTER)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    namespace = {"np": np, **consts}
    exec(compile(src, filename, "exec"), namespace)  # noqa: S102
    return namespace["user_fn"], values


def assert_same_result(got: Any, want: Any) -> None:
    if isinstance(want, (list, tuple)):
        assert type(got) is type(want) or (isinstance(want, tuple) and isinstance(got, tuple)), \
            f"{type(got).__name__} for a {type(want).__name__}"
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_same_result(g, w)
        return
    assert np.shape(got) == np.shape(want), f"shape {np.shape(got)} != {np.shape(want)}"
    np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float),
                               rtol=1e-10, atol=1e-12)


def test_every_reference_has_cases() -> None:
    missing = [n for n in NAMES if not REFERENCE_CASES.get(n)]
    assert not missing, f"references without test cases: {missing}"
    assert set(REFERENCE_CASES) <= set(NAMES), set(REFERENCE_CASES) - set(NAMES)


def test_references_do_not_shadow_rules() -> None:
    for ref in registry.all_references():
        assert registry.lookup(ref.primal) is None, f"{ref.name} has a rule and a reference"
        assert registry.reference_of(ref.primal) is ref.impl


@pytest.mark.parametrize("name, case", reference_cases())
def test_reference(name: str, case: Case) -> None:
    ref = next(r for r in registry.all_references() if r.name == name)
    if case.raises is not None:
        with pytest.raises(case.raises):
            ref.impl(*case.args, **case.kwargs)
        fn, values = user_function(name, case)
        with pytest.raises(AdgenError):
            adgen.vjp(fn, *values)
        return
    with np.errstate(all="ignore"):
        if name in WRITES_FIRST:
            want, got = np.copy(case.args[0]), np.copy(case.args[0])
            ref.primal(want, *case.args[1:], **case.kwargs)
            ref.impl(got, *case.args[1:], **case.kwargs)
        else:
            want = ref.primal(*case.args, **case.kwargs)
            got = ref.impl(*case.args, **case.kwargs)
    assert_same_result(got, want)
    fn, values = user_function(name, case)
    if not values:
        return
    if not case.fd:
        # an output whose size depends on the values: the cotangent goes back to the entries
        # the output kept (found by matching values, independently of adgen)
        out, pullback = adgen.vjp(fn, *values)
        u = np.random.default_rng(0).standard_normal(np.shape(out))
        (ct,) = pullback(u)
        x = values[0]
        n = np.size(out)
        start = next(i for i in range(np.size(x) - n + 1)
                     if np.array_equal(x[i:i + n], out))
        want = np.zeros_like(x)
        want[start:start + np.size(out)] = u
        np.testing.assert_array_equal(x[start:start + np.size(out)], out)
        np.testing.assert_allclose(ct, want)
        return
    with np.errstate(invalid="ignore", over="ignore"):
        check_vjp(fn, values, rtol=1e-5, atol=1e-6)


def test_views_stay_views() -> None:
    """NumPy's split returns views; so does the reference (a write through one is seen)."""
    x = np.arange(16.0).reshape(4, 4)
    for fn, args in [(np.split, (2,)), (np.array_split, (3, 1)), (np.hsplit, ([1],))]:
        got = registry.reference_of(fn)(x, *args)
        want = fn(x, *args)
        assert [np.shares_memory(g, x) for g in got] == [np.shares_memory(w, x) for w in want]


def test_a_write_through_a_rotated_view() -> None:
    """y = np.rot90(x) views x: a write into y changes x, and the gradient follows it (a
    reference compiled as a function returning a view of its argument got this wrong: twice
    the adjoint; these are rules with view=True)."""
    from gradcheck import numerical_grad

    w = np.arange(12.0).reshape(3, 4)

    def rotated(x):
        z = x * 1.0
        y = np.rot90(z)
        y[0, 1] = 3.0
        return np.sum(z * z * w)

    def flipped(x):
        z = x * 1.0
        y = np.fliplr(z)
        y[2, 0] *= 3.0
        return np.sum(z * z * w)

    def raised(x):
        z = x * 1.0
        y = np.atleast_3d(z)
        y[1, 2, 0] = 0.5
        return np.sum(z * z * w)

    x = np.random.default_rng(3).standard_normal((3, 4))
    for f in (rotated, flipped, raised):
        got = adgen.grad(f, mutation="save")(x)
        np.testing.assert_allclose(got, numerical_grad(f, [x], 0), rtol=1e-6, atol=1e-8,
                                   err_msg=f.__name__)


def test_a_refused_mode_names_the_line() -> None:
    def f(x):
        return np.sum(np.pad(x, 1, mode="maximum"))

    with pytest.raises(RuleError, match="mode='maximum'"):
        adgen.grad(f)(np.ones(3))
