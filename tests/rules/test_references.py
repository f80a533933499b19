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

import copy
import functools
import itertools
import linecache
from typing import Any

import numpy as np
import pytest
from gradcheck import check_vjp

import adgen
import adgen.rules
from adgen.errors import AdgenError, RuleError
from adgen.rules import registry
from rules.cases import Case
from rules.reference_cases import REFERENCE_CASES

NAMES = [r.name for r in registry.all_references()]
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


# references returning a frozen scipy distribution (rules/scipy_frozen.py): checked through
# their densities at these points (in the support of each case)
FROZEN_POINTS = {
    "scipy.stats.norm": np.array([-1.2, 0.3, 2.0]),
    "scipy.stats.t": np.array([-1.2, 0.3, 2.0]),
    "scipy.stats.gamma": np.array([0.4, 1.3, 2.5]),
    "scipy.stats.beta": np.array([0.2, 0.5, 0.8]),
    "scipy.stats.multivariate_normal": np.array([[0.3, -0.2], [1.1, 0.4], [-0.5, 0.9]]),
}


# references of NumPy functions that write their first argument and return None
# (rules/composites_writes.py): the user's function returns the argument written
IN_PLACE = {"numpy.place", "numpy.put_along_axis"}


def user_function(name: str, case: Case, then: str = "") -> tuple[Any, list[Any]]:
    """A function written as a user writes it: ``np.diff(x0, 2, axis=x1)``, its float arguments
    as parameters and the others as constants; and the float arguments to call it with.
    ``then``: what follows the call (``.logpdf(points)`` of a frozen distribution)."""
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
    src = f"def user_fn({', '.join(params)}):\n    return {call}({', '.join(args + kwargs)}){then}\n"
    if name in IN_PLACE:  # np.place(x0, c0, x1); return x0 * 1.0: the written argument
        src = (f"def user_fn({', '.join(params)}):\n    {call}({', '.join(args + kwargs)})\n"
               f"    return {args[0]} * 1.0\n")
    filename = f"<adgen reference test {next(_COUNTER)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    namespace = {"np": np, "adgen": adgen, "copy": copy, "functools": functools,
                 "points": FROZEN_POINTS.get(name), **consts}  # adgen: its own helpers
    if name.startswith("scipy."):  # the optional extra's functions, as its user imports them
        import scipy.linalg
        import scipy.stats  # noqa: F401

        namespace["scipy"] = scipy
    exec(compile(src, filename, "exec"), namespace)  # noqa: S102
    return namespace["user_fn"], values


def assert_same_result(got: Any, want: Any) -> None:
    if isinstance(want, dict):  # copy.deepcopy of a dict
        assert type(got) is dict and list(got) == list(want)
        for k in want:
            assert_same_result(got[k], want[k])
        return
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
        if name in IN_PLACE:  # what each writes into its own copy of the first argument
            want, got = ([copy.deepcopy(case.args[0])] for _ in range(2))
            ref.primal(*want, *case.args[1:], **case.kwargs)
            ref.impl(*got, *case.args[1:], **case.kwargs)
        else:
            want = ref.primal(*case.args, **case.kwargs)
            got = ref.impl(*case.args, **case.kwargs)
        if name in FROZEN_POINTS:  # a frozen distribution: its densities at the points
            got, want = ([d.logpdf(FROZEN_POINTS[name]), d.pdf(FROZEN_POINTS[name])]
                         for d in (got, want))
    assert_same_result(got, want)
    fn, values = user_function(name, case, ".logpdf(points)" if name in FROZEN_POINTS else "")
    if not values:
        return
    if any(isinstance(v, np.ndarray) and v.size == 0 for v in values):
        # an empty array: nothing to perturb; its cotangent is an empty array of its shape
        out, pullback = adgen.vjp(fn, *values)
        cts = pullback(np.zeros(np.shape(out)))
        assert [np.shape(c) for c in cts] == [np.shape(v) for v in values]
        return
    with np.errstate(invalid="ignore", over="ignore"):
        check_vjp(fn, values, rtol=1e-5, atol=1e-6)


def _arrays(x: Any) -> list[np.ndarray]:
    if isinstance(x, np.ndarray):
        return [x]
    if isinstance(x, (list, tuple)):
        return [a for v in x for a in _arrays(v)]
    return []


# NumPy's broadcast_arrays returns writable views with a DeprecationWarning on writes (read-only
# in a future NumPy); the reference's are read-only already: a write raises rather than
# writing every element sharing memory
_READ_ONLY_AHEAD_OF_NUMPY = {"numpy.broadcast_arrays"}


@pytest.mark.parametrize("name, case", reference_cases())
def test_results_new_or_shared_as_numpys(name: str, case: Case) -> None:
    """A reference's results share memory with its arguments where NumPy's do, and are
    writable where NumPy's are: np.tile's reshaped broadcast was a read-only view of its
    argument (np.tile(x, (3, 1)) written in place raised ValueError, and a write into x after
    it was refused as a write through a broadcast view), and matrix_power(a, 1) a copy where
    NumPy returns a itself (a write through it did not reach a: a silently wrong value)."""
    if case.raises is not None:
        return
    ref = next(r for r in registry.all_references() if r.name == name)
    args = [np.copy(a) if isinstance(a, np.ndarray) else a for a in case.args]
    with np.errstate(all="ignore"):
        want = ref.primal(*args, **case.kwargs)
        got = ref.impl(*args, **case.kwargs)
    given = [a for a in [*args, *case.kwargs.values()] if isinstance(a, np.ndarray)]
    for w, g in zip(_arrays(want), _arrays(got)):
        assert [np.shares_memory(g, a) for a in given] == \
            [np.shares_memory(w, a) for a in given]
        if name not in _READ_ONLY_AHEAD_OF_NUMPY:
            assert g.flags.writeable == w.flags.writeable


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


def test_writes_through_pieces() -> None:
    """np.unstack returns views in a tuple: a write into one is refused (not silently lost);
    np.trim_zeros returns a slice: a write through it is followed under "save" and refused
    under "strict" (its pullback reads the zeros of the argument)."""
    from gradcheck import numerical_grad

    from adgen.errors import MutationError, UnsupportedError

    w = np.arange(12.0).reshape(3, 4)

    def pieces(x):
        z = x * 1.0
        _, b, _ = np.unstack(z)
        b[1] = 3.0
        return np.sum(z * z * w)

    def trimmed(x):
        z = x[0] * 1.0
        t = np.trim_zeros(z)
        t[0] = 3.0
        return np.sum(z * z * w[0])

    x = np.random.default_rng(4).standard_normal((3, 4))
    with pytest.raises(UnsupportedError):
        adgen.grad(pieces)(x)
    np.testing.assert_allclose(adgen.grad(trimmed)(x), numerical_grad(trimmed, [x], 0),
                               rtol=1e-6, atol=1e-8)
    with pytest.raises(MutationError):
        adgen.grad(trimmed, mutation="strict")(x)


def test_a_refused_mode_names_the_line() -> None:
    def f(x):
        return np.sum(np.pad(x, 1, mode="empty"))  # ("maximum" is taken since session 27)

    with pytest.raises(RuleError, match="mode='empty'"):
        adgen.grad(f)(np.ones(3))


# Where the float32 result differs from NumPy's for a reason that is NumPy's rounding or
# promotion, not adgen's: polydiv keeps float32 rounding noise as leading remainder
# coefficients; choose with a Python float among float32 choices.
FLOAT32_SKIP = {"numpy.polydiv-0", "numpy.polydiv-1", "numpy.polydiv-2", "numpy.choose-1"}


@pytest.mark.parametrize("name, case", [
    p for p in reference_cases() if p.values[1].raises is None
    and not any(p.id.startswith(k + "(") for k in FLOAT32_SKIP)])
def test_reference_float32(name: str, case: Case) -> None:
    """With float32 inputs a reference gives NumPy's values at float32 precision and NumPy's
    dtypes (NumPy 2 promotion: a Python float does not widen a float32 array)."""
    def narrow(v: Any) -> Any:
        if isinstance(v, np.ndarray) and v.dtype == np.float64:
            return v.astype(np.float32)
        if isinstance(v, list):
            return [narrow(i) for i in v]
        return v

    args = [narrow(a) for a in case.args]
    kwargs = {k: narrow(v) for k, v in case.kwargs.items()}
    ref = next(r for r in registry.all_references() if r.name == name)
    with np.errstate(all="ignore"):
        want = ref.primal(*args, **kwargs)
        got = ref.impl(*args, **kwargs)
        if name in FROZEN_POINTS:
            points = narrow(FROZEN_POINTS[name])
            got, want = ([d.logpdf(points), d.pdf(points)] for d in (got, want))
    if isinstance(want, dict) or (isinstance(want, (list, tuple)) and
                                  any(isinstance(w, (dict, list, tuple)) for w in want)):
        assert_same_result(got, want)  # copy.deepcopy of containers: the same values
        return
    for g, w in zip(got if isinstance(got, (list, tuple)) else [got],
                    want if isinstance(want, (list, tuple)) else [want]):
        assert np.asarray(g).dtype == np.asarray(w).dtype, \
            f"dtype {np.asarray(g).dtype}, NumPy gives {np.asarray(w).dtype}"
        np.testing.assert_allclose(np.asarray(g, dtype=float), np.asarray(w, dtype=float),
                                   rtol=2e-5, atol=2e-5)
