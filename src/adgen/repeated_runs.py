"""Derivatives that run the function once per column (``hessian``, ``jacfwd``, and so
``jacfwd(grad(f))``), refused where the runs do not compute the same function.

JAX traces a function once, so every column of its Hessian comes from one state of the
program. adgen runs the function again for each column (an hvp, a jvp), each from the same
argument values (:class:`adgen.jacobian_parts.Runs`). A function that reads state its own
runs change (``def f(x, _state={"n": 0}): _state["n"] += 1; return np.sum(x ** 2) *
_state["n"]``; a global or closure counter; an attribute of an object it increments; a
random generator it draws from) computed each column from another state: its Hessian came
out as diag(2, 4, 6) where every column is 2 n for one n, silently.

The runs are compared where that costs nothing (the value each jvp of ``jacfwd`` computes;
for ``jacrev(grad(f))`` where it runs reverse over forward, a run per row, the derivative
along the row's direction, against the first run's gradient) or two plain runs
(``hessian``: two after its columns); values that differ
raise :class:`~adgen.errors.UnsupportedError` at the function's ``def``, saying what to do
instead. A state that changes without changing the value (a call counter nothing reads)
passes: its columns are right.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from adgen.errors import UnsupportedError

__all__ = ["refuse_changed_direction", "refuse_changed_runs", "same_kind", "same_value"]


def same_value(a: Any, b: Any) -> bool:
    """Whether two results of the function are the same, bit for bit (NaN equal to NaN),
    item by item for a dict, list or tuple."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    try:
        x, y = np.asarray(a), np.asarray(b)
    except Exception:  # an object: compared as Python does  # noqa: BLE001
        return a is b or bool(a == b)
    if x.shape != y.shape or x.dtype.kind == "O" or y.dtype.kind == "O":
        return x.shape == y.shape and a is b
    if x.dtype.kind in "fc" or y.dtype.kind in "fc":
        return bool(np.array_equal(x, y, equal_nan=True))
    return bool(np.array_equal(x, y))


def refuse_changed_runs(values: list[Any], fun: Callable[..., Any], what: str,
                        location: Any, unit: str = "column") -> None:
    """Raises where ``values`` (the function's results in the runs ``what`` made, from the
    same arguments) are not all the same; ``location``: the function's ``def``."""
    first = values[0]
    for k, v in enumerate(values[1:], start=2):
        if not same_value(first, v):
            name = getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None) or \
                type(fun).__name__
            raise UnsupportedError(
                f"{what} runs {name} once per {unit}, each from the same arguments, and its "
                f"runs gave different values (run 1: {_shown(first)}, run {k}: {_shown(v)}): "
                f"{name} reads state that its own runs change (a counter in a default "
                "argument, a global or closure container, an attribute of an object it "
                f"updates, a random generator), so each {unit} would come from another "
                f"state. JAX traces the function once: all its {unit}s come from one state",
                location,
                hint="update the state outside the function differentiated and pass what it "
                     "reads as an argument: n = state['n'] before, then adgen.hessian(lambda "
                     "x: f(x, n))(x), all columns at that state; an object whose methods "
                     "change it (a global kf, kf.update(z) setting kf.x) as an argument: def "
                     "loss(z, kf), then adgen.hessian(loss)(z, kf), each run from the "
                     "arguments as given (kf ends as one call of loss leaves it)")


def same_kind(gradient: Any, direction: Any) -> bool:
    """Whether a gradient and a direction are float arrays (or numbers) of one shape, which
    :func:`refuse_changed_direction` compares."""
    kinds = (float, np.floating, np.ndarray)
    return isinstance(gradient, kinds) and isinstance(direction, kinds) and \
        np.shape(gradient) == np.shape(direction) and \
        np.asarray(gradient).dtype.kind == "f" and np.asarray(direction).dtype.kind == "f"


def refuse_changed_direction(value: Any, gradient: Any, direction: Any,
                             fun: Callable[..., Any], location: Any,
                             what: str = "jacrev(grad(f)) (by reverse over forward here)",
                             unit: str = "row") -> None:
    """Raises where a run's derivative along ``direction`` (``value``) is not the first run's
    ``gradient`` dotted with it, beyond rounding: the runs read another state."""
    g, v = np.asarray(gradient, dtype=float), np.asarray(direction, dtype=float)
    expected = float(np.vdot(g, v))
    scale = float(np.linalg.norm(g) * np.linalg.norm(v))
    if np.isfinite(expected) and np.isfinite(float(value)) and \
            abs(float(value) - expected) > 1e-8 * scale + 1e-12:
        refuse_changed_runs([expected, float(value)], fun, what, location, unit=unit)


def _shown(v: Any) -> str:
    text = np.array2string(v, precision=6, threshold=6) if isinstance(v, np.ndarray) \
        else f"{float(v):.6g}" if isinstance(v, (float, int, np.number)) else repr(v)
    return text if len(text) <= 60 else text[:57] + "..."
