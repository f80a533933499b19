"""Checks for mutation tests: finite differences of the *plain* function, final argument state,
explain decisions, and MutationError messages.

Everything here is independent of adgen's own output: gradients are compared with central
differences of the user's function, each evaluation on fresh deep copies of the arguments (a
mutating function would otherwise see the previous evaluation's writes), and line numbers are
found in the source with ``inspect.getsourcelines``.
"""

from __future__ import annotations

import copy
import inspect
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

# Decisions that mean "no copy and no guard" (design §2.2 and §2.4).
FREE_DECISIONS = frozenset({"free", "forced-pullback", "elided-pullback"})

EPS = 1e-6          # central-difference step
EPS_COARSE = 1e-4   # second step: when the two disagree, the input sits near a kink
RTOL = 1e-5

Marker = str | tuple[Callable[..., Any], str]
GradFn = Callable[[Callable[..., Any], tuple[Any, ...], tuple[int, ...]], tuple[Any, ...]]


class HarnessError(AssertionError):
    """The test itself is unusable (e.g. an input near a kink), not the code under test."""


# ---------------------------------------------------------------------------------------------
# running the plain function

def fresh(args: Sequence[Any]) -> tuple[Any, ...]:
    """Deep copies of the arguments, so a mutating call cannot touch the originals."""
    return tuple(copy.deepcopy(list(args)))


def call_plain(f: Callable[..., Any], args: Sequence[Any]) -> tuple[Any, tuple[Any, ...]]:
    """Calls ``f`` on fresh copies; returns its output and the arguments' final state."""
    a = fresh(args)
    out = f(*a)
    return out, a


def _scalar(out: Any) -> float:
    arr = np.asarray(out, dtype=float)
    if arr.size != 1:
        raise HarnessError(f"expected a scalar output, got shape {arr.shape}")
    return float(arr.reshape(()))


def _perturbed(args: Sequence[Any], n: int, index: tuple[int, ...] | None,
               delta: float) -> tuple[Any, ...]:
    a = list(fresh(args))
    if index is None:
        a[n] = float(a[n]) + delta
    else:
        a[n][index] += delta
    return tuple(a)


def fd_grad(f: Callable[..., Any], args: Sequence[Any], argnums: Sequence[int],
            eps: float = EPS) -> tuple[Any, ...]:
    """Central differences of the scalar ``f`` with respect to each argument in ``argnums``.

    Every evaluation gets fresh copies of all arguments. A float argument gives a float, an
    ndarray an ndarray of its shape.
    """
    grads: list[Any] = []
    for n in argnums:
        arg = args[n]
        if isinstance(arg, np.ndarray):
            g = np.zeros(arg.shape, dtype=float)
            for index in np.ndindex(arg.shape):
                hi = _scalar(f(*_perturbed(args, n, index, eps)))
                lo = _scalar(f(*_perturbed(args, n, index, -eps)))
                g[index] = (hi - lo) / (2 * eps)
            grads.append(g)
        else:
            hi = _scalar(f(*_perturbed(args, n, None, eps)))
            lo = _scalar(f(*_perturbed(args, n, None, -eps)))
            grads.append((hi - lo) / (2 * eps))
    return tuple(grads)


def fd_jacobian(f: Callable[..., Any], args: Sequence[Any], n: int,
                eps: float = EPS) -> np.ndarray:
    """d f(args) / d args[n] for an array-valued ``f``: shape ``out.shape + arg.shape``."""
    out0, _ = call_plain(f, args)
    arg = args[n]
    jac = np.zeros(np.shape(out0) + np.shape(arg))
    for index in np.ndindex(np.shape(arg)):
        hi = np.asarray(f(*_perturbed(args, n, index, eps)), dtype=float)
        lo = np.asarray(f(*_perturbed(args, n, index, -eps)), dtype=float)
        jac[(...,) + index] = (hi - lo) / (2 * eps)
    return jac


def fd_stable(fine: Sequence[Any], coarse: Sequence[Any], tol: float = 1e-4) -> bool:
    """Whether two finite-difference gradients agree (they do not near a kink)."""
    for a, b in zip(fine, coarse):
        a = np.asarray(a, dtype=float)
        b = np.asarray(b, dtype=float)
        if not np.all(np.isfinite(a)) or not np.allclose(a, b, rtol=tol, atol=tol):
            return False
    return True


# ---------------------------------------------------------------------------------------------
# comparisons

def assert_close(actual: Any, expected: Any, what: str, rtol: float = RTOL) -> None:
    """``actual`` has ``expected``'s type and shape, and its values within tolerance."""
    if isinstance(expected, np.ndarray):
        assert isinstance(actual, np.ndarray), f"{what}: expected an ndarray, got {actual!r}"
        assert actual.shape == expected.shape, (
            f"{what}: shape {actual.shape}, expected {expected.shape}")
    else:
        assert np.ndim(actual) == 0, f"{what}: expected a scalar, got {actual!r}"
    scale = max(1.0, float(np.max(np.abs(expected))) if np.size(expected) else 1.0)
    np.testing.assert_allclose(np.asarray(actual, dtype=float), np.asarray(expected, dtype=float),
                               rtol=rtol, atol=max(10 * RTOL, rtol) * scale, err_msg=what)


def assert_same_state(actual: Any, expected: Any, what: str = "argument") -> None:
    """Deep comparison of final argument states (arrays, lists, dicts, tuples, objects)."""
    if isinstance(expected, np.ndarray):
        assert isinstance(actual, np.ndarray), f"{what}: expected an ndarray, got {actual!r}"
        assert actual.shape == expected.shape and actual.dtype == expected.dtype, (
            f"{what}: {actual.shape}/{actual.dtype} vs {expected.shape}/{expected.dtype}")
        np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12,
                                   err_msg=f"{what}: final contents differ from a plain call")
    elif isinstance(expected, (list, tuple)):
        assert type(actual) is type(expected) and len(actual) == len(expected), what
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same_state(a, e, f"{what}[{i}]")
    elif isinstance(expected, dict):
        assert isinstance(actual, dict) and actual.keys() == expected.keys(), what
        for k in expected:
            assert_same_state(actual[k], expected[k], f"{what}[{k!r}]")
    elif hasattr(expected, "__dict__") and not isinstance(expected, type):
        assert type(actual) is type(expected), what
        assert_same_state(vars(actual), vars(expected), f"{what}.__dict__")
    else:
        assert actual == expected, f"{what}: {actual!r} != {expected!r}"


# ---------------------------------------------------------------------------------------------
# the gradient providers: adgen, or (in the harness self-tests) a hand-written gradient

def adgen_grad(mutation: str) -> GradFn:
    """``adgen.grad(f, argnums=..., mutation=...)(*args)``, always as a tuple."""

    def compute(f: Callable[..., Any], args: tuple[Any, ...],
                argnums: tuple[int, ...]) -> tuple[Any, ...]:
        import adgen

        return tuple(adgen.grad(f, argnums=argnums, mutation=mutation)(*args))

    return compute


def check_gradient(f: Callable[..., Any], args: Sequence[Any], argnums: Sequence[int],
                   compute: GradFn, fd_args: Sequence[Any] | None = None,
                   rtol: float = RTOL) -> tuple[Any, ...]:
    """The gradient from ``compute`` matches central differences of plain ``f``, and the
    arguments end in the state a plain call leaves them in.

    ``fd_args``: the arguments the central differences are taken at, when ``args`` hold
    low-precision arrays (float32: the same values as float64 arrays, see
    :func:`with_dtype`); ``rtol`` the tolerance for that case.

    Raises:
        HarnessError: when the finite differences themselves are unstable (a kink).
        AssertionError: when the gradient or the final state is wrong.
    """
    argnums = tuple(argnums)
    _, expected_state = call_plain(f, args)
    at = args if fd_args is None else fd_args
    fd = fd_grad(f, at, argnums)
    if not fd_stable(fd, fd_grad(f, at, argnums, EPS_COARSE)):
        raise HarnessError("finite differences unstable: the test input sits near a kink")
    ad_args = fresh(args)
    grads = compute(f, ad_args, argnums)
    assert isinstance(grads, tuple) and len(grads) == len(argnums), (
        f"expected {len(argnums)} gradient(s), got {grads!r}")
    for n, g, e in zip(argnums, grads, fd):
        assert_close(g, e, f"gradient of argument {n}", rtol=rtol)
    assert_same_state(ad_args, expected_state, "arguments after grad")
    return grads


def check_value(f: Callable[..., Any], args: Sequence[Any], argnums: Sequence[int],
                mutation: str) -> None:
    """``adgen.value_and_grad`` returns the plain call's value and leaves the same state."""
    import adgen

    expected, expected_state = call_plain(f, args)
    ad_args = fresh(args)
    value, _ = adgen.value_and_grad(f, argnums=tuple(argnums), mutation=mutation)(*ad_args)
    assert_close(value, _scalar(expected), "value", rtol=1e-12)
    assert_same_state(ad_args, expected_state, "arguments after value_and_grad")


# ---------------------------------------------------------------------------------------------
# source lines, explain, errors

def line_of(fn: Callable[..., Any], snippet: str) -> int:
    """The absolute line number of the one line of ``fn``'s source that contains ``snippet``."""
    lines, start = inspect.getsourcelines(fn)
    hits = [start + i for i, text in enumerate(lines) if snippet in text]
    if len(hits) != 1:
        raise HarnessError(f"{snippet!r} occurs on {len(hits)} lines of {fn.__name__}")
    return hits[0]


def resolve(marker: Marker, default_fn: Callable[..., Any]) -> tuple[str, int]:
    """(file basename, line) of a marker: a snippet of ``default_fn`` or ``(fn, snippet)``."""
    fn, snippet = (default_fn, marker) if isinstance(marker, str) else marker
    return os.path.basename(inspect.getsourcefile(fn) or ""), line_of(fn, snippet)


def mentions_number(text: str, n: int) -> bool:
    """Whether ``n`` appears in ``text`` as a whole number (not inside 12 or 2.0)."""
    return re.search(rf"(?<![\w.]){n}(?!\.\d)(?!\d)", text) is not None


def assert_names_conflict(err: BaseException, pairs: Sequence[tuple[int, int]],
                          file: str | None = None) -> None:
    """The error names the capture line and the overwriting line of one of ``pairs``.

    File paths are removed from the message first, so digits in them cannot count as lines.
    """
    msg = str(err)
    if file:
        assert os.path.basename(file) in msg, f"the error does not name the file:\n{msg}"
    for path in set(re.findall(r"[^\s:'\"(]*[/\\][^\s:'\"]*", msg)):
        msg = msg.replace(path, "<file>")
    ok = any(mentions_number(msg, cap) and mentions_number(msg, ovr) for cap, ovr in pairs)
    assert ok, (f"the MutationError does not name both lines of any of (capture, overwrite) "
                f"{list(pairs)}:\n{err}")


def sites_at(sites: Sequence[Any], where: tuple[str, int]) -> list[Any]:
    """The explain rows at a (file basename, line)."""
    base, line = where
    return [s for s in sites if s.line == line and os.path.basename(s.file) == base]


def describe_sites(sites: Sequence[Any]) -> str:
    return "\n".join(str(s) for s in sites) or "(no sites)"


# ---------------------------------------------------------------------------------------------
# the table-driven mutation cases

@dataclass(frozen=True)
class Case:
    """One mutation case of issue 3, run under both policies by :func:`run_case`.

    Attributes:
        name: the test id.
        fn: the function differentiated (its source is what adgen reads).
        make_args: builds fresh inputs (fixed seeds, away from kinks).
        argnums: the arguments differentiated.
        needed: whether a value the backward pass needs is overwritten.
        sites: (free cases) mutation sites that explain must list, each with a free decision.
        forced: sites whose decision must be ``forced-pullback`` (mutating call, result unused).
        conflicts: (needed cases) the (capture, overwrite) marker pairs; the strict error must
            name both lines of one of them.
        guarded: (needed cases) groups of sites; in each group at least one site must be
            ``guarded-save`` under "save".
        unguarded: (needed cases) sites that still need no guard (guards only where needed).
        check_explain: False where only the gradient and the absence of an error are asserted.
    """

    name: str
    fn: Callable[..., Any]
    make_args: Callable[[], tuple[Any, ...]]
    argnums: tuple[int, ...] = (0,)
    needed: bool = False
    sites: tuple[Marker, ...] = ()
    forced: tuple[Marker, ...] = ()
    conflicts: tuple[tuple[Marker, Marker], ...] = ()
    guarded: tuple[tuple[Marker, ...], ...] = ()
    unguarded: tuple[Marker, ...] = ()
    check_explain: bool = True

    def __post_init__(self) -> None:
        # Resolving every marker now makes a typo fail at collection, not as a vague mismatch.
        for m in (*self.sites, *self.forced, *self.unguarded,
                  *(m for pair in self.conflicts for m in pair),
                  *(m for group in self.guarded for m in group)):
            resolve(m, self.fn)
        if self.needed:
            assert self.conflicts and self.guarded, f"{self.name}: a needed case names its lines"


def _widened(args: Sequence[Any]) -> tuple[Any, ...]:
    """The arguments with every float array widened to float64 (the same values)."""

    def conv(v: Any) -> Any:
        if isinstance(v, np.ndarray) and v.dtype.kind == "f":
            return v.astype(np.float64)
        if isinstance(v, (list, tuple)):
            return type(v)(conv(e) for e in v)
        if isinstance(v, dict):
            return {k: conv(e) for k, e in v.items()}
        return v

    return tuple(conv(a) for a in args)


# Tolerance of a gradient computed in float32 against central differences in float64.
RTOL_F32 = 2e-3


def with_dtype(args: Sequence[Any], dtype: str) -> tuple[Any, ...]:
    """The arguments with every float64 array (at the top level, or in a list, tuple or dict)
    converted to ``dtype``: the same function, run on buffers of another dtype."""

    def conv(v: Any) -> Any:
        if isinstance(v, np.ndarray) and v.dtype == np.float64:
            return v.astype(dtype)
        if isinstance(v, (list, tuple)):
            return type(v)(conv(e) for e in v)
        if isinstance(v, dict):
            return {k: conv(e) for k, e in v.items()}
        return v

    return tuple(conv(a) for a in args)


def in_dtype(args: Sequence[Any], dtype: str) -> tuple[tuple[Any, ...], tuple[Any, ...] | None,
                                                       float]:
    """``(args, fd_args, rtol)`` for running a case with its float64 arrays as ``dtype``:
    the converted arguments, the same values as float64 arrays where the central differences
    are taken (None for float64: the arguments themselves), and the gradient's tolerance."""
    if dtype == "float64":
        return tuple(args), None, RTOL
    narrow = with_dtype(args, dtype)
    return narrow, _widened(narrow), RTOL_F32


def run_case(case: Case, mutation: str, dtype: str = "float64") -> None:
    """The expectations of design §2 for one case under one policy, with the case's float64
    array arguments as arrays of ``dtype`` (float32: buffers adgen maps element by element;
    the central differences are taken in float64 at the same values)."""
    import adgen

    args = case.make_args()
    fd_args = None
    rtol = RTOL
    if dtype != "float64":
        args = with_dtype(args, dtype)
        fd_args = _widened(args)
        rtol = RTOL_F32
    if case.needed and mutation == "strict":
        file = inspect.getsourcefile(case.fn)
        pairs = [(resolve(c, case.fn)[1], resolve(o, case.fn)[1]) for c, o in case.conflicts]
        try:
            adgen.grad(case.fn, argnums=case.argnums, mutation="strict")(*fresh(args))
        except adgen.MutationError as err:
            assert_names_conflict(err, pairs, file)
        else:
            raise AssertionError(f"{case.name}: mutation='strict' returned a gradient although "
                                 f"a needed value is overwritten (expected MutationError)")
        return

    check_gradient(case.fn, args, case.argnums, adgen_grad(mutation), fd_args, rtol)
    check_value(case.fn, args, case.argnums, mutation)
    if not case.check_explain:
        return
    sites = list(adgen.explain(case.fn, mutation=mutation, file=None))
    table = describe_sites(sites)
    if not case.needed:
        bad = [s for s in sites if s.decision not in FREE_DECISIONS]
        assert not bad, f"{case.name}: guards or saves where nothing is needed:\n{table}"
        for m in case.sites:
            assert sites_at(sites, resolve(m, case.fn)), (
                f"{case.name}: explain lists no site for {m!r}:\n{table}")
        measured = adgen.explain(case.fn, *fresh(args), mutation=mutation, file=None)
        assert all(s.bytes_saved in (None, 0) for s in measured), (
            f"{case.name}: bytes saved in a free case:\n{describe_sites(measured)}")
    else:
        for group in case.guarded:
            rows = [s for m in group for s in sites_at(sites, resolve(m, case.fn))]
            assert any(s.decision == "guarded-save" for s in rows), (
                f"{case.name}: no guarded-save at any of {group!r}:\n{table}")
        for m in case.unguarded:
            rows = sites_at(sites, resolve(m, case.fn))
            assert all(s.decision in FREE_DECISIONS for s in rows), (
                f"{case.name}: a guard at {m!r}, which overwrites nothing needed:\n{table}")
        measured = adgen.explain(case.fn, *fresh(args), mutation=mutation, file=None)
        saved = [s.bytes_saved for group in case.guarded for m in group
                 for s in sites_at(measured, resolve(m, case.fn)) if s.decision == "guarded-save"]
        assert any(b for b in saved), (
            f"{case.name}: the guarded sites report no bytes saved:\n{describe_sites(measured)}")
    for m in case.forced:
        rows = sites_at(sites, resolve(m, case.fn))
        assert any(s.decision == "forced-pullback" for s in rows), (
            f"{case.name}: the mutating call {m!r} must keep its pullback:\n{table}")
