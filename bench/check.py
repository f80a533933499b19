"""Gradient checks: systems against the hand gradient, the hand gradient against finite differences."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

#: A gradient is right when its largest error is this small relative to the reference's scale.
RTOL = 1e-6


def as_numpy(value: Any) -> Any:
    """A gradient from any system as a float or a float64 ndarray (torch, jax, mygrad...)."""
    if isinstance(value, (float, int, np.floating)):
        return float(value)
    for attr in ("detach",):  # torch
        if hasattr(value, attr):
            value = value.detach().numpy()
    if hasattr(value, "data") and type(value).__module__.startswith("mygrad"):
        value = value.data
    arr = np.asarray(value, dtype=np.float64)
    return float(arr) if arr.ndim == 0 else arr


def relative_error(got: Sequence[Any], want: Sequence[Any]) -> float:
    """The largest absolute error over all gradients, relative to the reference's largest entry."""
    if len(got) != len(want):
        return float("inf")
    worst = 0.0
    for g, w in zip(got, want):
        g_arr = np.asarray(as_numpy(g), dtype=np.float64)
        w_arr = np.asarray(as_numpy(w), dtype=np.float64)
        if g_arr.shape != w_arr.shape:
            return float("inf")
        scale = max(float(np.max(np.abs(w_arr))) if w_arr.size else 0.0, 1e-300)
        err = float(np.max(np.abs(g_arr - w_arr))) / scale if w_arr.size else 0.0
        if not np.isfinite(err):
            return float("inf")
        worst = max(worst, err)
    return worst


def directional_errors(primal: Callable[..., Any], args: tuple[Any, ...],
                       argnums: tuple[int, ...], grads: Sequence[Any], *, directions: int = 3,
                       eps: float = 1e-6, seed: int = 0) -> list[float]:
    """Checks ``grads`` against central differences along random directions.

    For each random direction v (one component per differentiated argument), compares
    <grad, v> with (f(x + eps v) - f(x - eps v)) / (2 eps). Returns the relative error of each.
    """
    rng = np.random.default_rng(seed)
    errors = []
    for _ in range(directions):
        dirs = [rng.standard_normal(np.shape(args[n])) for n in argnums]
        plus, minus = list(args), list(args)
        for n, d in zip(argnums, dirs):
            x = args[n]
            plus[n] = x + eps * d if np.ndim(x) else float(x + eps * d)
            minus[n] = x - eps * d if np.ndim(x) else float(x - eps * d)
        fd = (float(primal(*plus)) - float(primal(*minus))) / (2.0 * eps)
        ad = sum(float(np.sum(np.asarray(as_numpy(g)) * d)) for g, d in zip(grads, dirs))
        errors.append(abs(fd - ad) / max(abs(fd), abs(ad), 1e-12))
    return errors


def central_differences(primal: Callable[..., Any], args: tuple[Any, ...],
                        argnums: tuple[int, ...], *, eps: float = 1e-6) -> tuple[Any, ...]:
    """The full gradient by central differences, one entry at a time (small problems only)."""
    grads: list[Any] = []
    for n in argnums:
        x = args[n]
        if np.ndim(x) == 0:
            plus, minus = list(args), list(args)
            plus[n], minus[n] = float(x) + eps, float(x) - eps
            grads.append((float(primal(*plus)) - float(primal(*minus))) / (2.0 * eps))
            continue
        g = np.empty(np.shape(x))
        for index in np.ndindex(*np.shape(x)):
            bumped = np.array(x, dtype=np.float64)
            bumped[index] = x[index] + eps
            f_plus = float(primal(*args[:n], bumped.copy(), *args[n + 1:]))
            bumped[index] = x[index] - eps
            f_minus = float(primal(*args[:n], bumped, *args[n + 1:]))
            g[index] = (f_plus - f_minus) / (2.0 * eps)
        grads.append(g)
    return tuple(grads)
