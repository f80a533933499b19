"""Allocate-then-fill: ``h = np.empty(n); h[i] = np.tanh(x[i] * w)``, then a reduction.

The write overwrites uninitialised memory nobody reads: a mutation-aware tool needs no copy
and no guard, and its gradient should cost the same per element at every n.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.workloads import LOOP, Workload

torch: Any = None  # bound by the torch adapter

SIZES = (100, 1000, 10000)
QUICK_SIZES = (100,)
LINEARITY_SIZES = (1000, 4000, 16000)


def fill(x, w):
    n = len(x)
    h = np.empty(n)
    for i in range(n):
        h[i] = np.tanh(x[i] * w)
    return np.sum(h * h)


def fill_functional(x, w):
    """The loop kept, the buffer replaced by a list stacked at the end."""
    n = len(x)
    parts = []
    for i in range(n):
        parts.append(np.tanh(x[i] * w))
    h = np.stack(parts)
    return np.sum(h * h)


def fill_hand(x, w):
    h = np.tanh(x * w)
    _value = np.dot(h, h)
    z_bar = 2.0 * h * (1.0 - h * h)
    return z_bar * w, np.dot(z_bar, x)


def fill_hand_loop(x, w):
    """Forward loop as written (h is its own tape), vectorised sum, reversed loop."""
    n = len(x)
    h = np.empty(n)
    for i in range(n):
        h[i] = np.tanh(x[i] * w)
    _value = np.sum(h * h)
    h_bar = 2.0 * h
    x_bar = np.zeros(n)
    w_bar = 0.0
    for i in reversed(range(n)):
        t = h[i]
        z_bar = h_bar[i] * (1.0 - t * t)
        x_bar[i] += z_bar * w
        w_bar += z_bar * x[i]
    return x_bar, w_bar


def fill_torch(x, w):
    n = len(x)
    h = torch.empty(n, dtype=torch.float64)
    for i in range(n):
        h[i] = torch.tanh(x[i] * w)
    return torch.sum(h * h)


def make_args_for(n: int) -> Any:
    def make_args(rng: np.random.Generator) -> tuple[Any, ...]:
        return rng.standard_normal(n), 0.7

    return make_args


def label(n: int) -> str:
    return f"fill-{n // 1000}k" if n >= 1000 and n % 1000 == 0 else f"fill-{n}"


def make(n: int) -> Workload:
    import sys

    return Workload(label(n), LOOP, sys.modules[__name__], fill, (0, 1), make_args_for(n),
                    fill_hand, hand_loop=fill_hand_loop, functional=fill_functional,
                    torch_port=fill_torch, size=f"n = {n}", loop_iters=n, tags={"n": n})


def workloads(quick: bool = False) -> list[Workload]:
    return [make(n) for n in (QUICK_SIZES if quick else SIZES)]
