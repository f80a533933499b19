"""The seeds' mean squared error written as a scalar loop (N = 30).

Zygote took 38 us for its gradient against 143 ns with a hand rule: the cost of a tape entry
per scalar operation. No in-place array write: ``s +=`` rebinds a float.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.workloads import LOOP, Workload

torch: Any = None  # bound by the torch adapter

N = 30


def mse(y, y_hat):
    n = len(y)
    s = 0.0
    for i in range(n):
        s += (y[i] - y_hat[i]) ** 2.0
    return s / n


def mse_hand(y, y_hat):
    """The seeds' rrule: one vectorised expression (the value is computed too)."""
    n = len(y)
    d = y - y_hat
    _value = np.dot(d, d) / n
    g = (2.0 / n) * d
    return g, -g


def mse_hand_loop(y, y_hat):
    """Forward loop recording each difference, then the reversed loop."""
    n = len(y)
    d_tape = np.empty(n)
    s = 0.0
    for i in range(n):
        d = y[i] - y_hat[i]
        d_tape[i] = d
        s += d**2.0
    _value = s / n
    s_bar = 1.0 / n
    y_bar = np.zeros_like(y)
    y_hat_bar = np.zeros_like(y_hat)
    for i in reversed(range(n)):
        d_bar = s_bar * 2.0 * d_tape[i]
        y_bar[i] += d_bar
        y_hat_bar[i] -= d_bar
    return y_bar, y_hat_bar


def mse_torch(y, y_hat):
    n = len(y)
    s = 0.0
    for i in range(n):
        s += (y[i] - y_hat[i]) ** 2.0
    return s / n


def make_args(rng: np.random.Generator) -> tuple[Any, ...]:
    return rng.random(N), rng.random(N)


def workloads(quick: bool = False) -> list[Workload]:
    import sys

    return [Workload("mse-loop", LOOP, sys.modules[__name__], mse, (0, 1), make_args, mse_hand,
                     hand_loop=mse_hand_loop, torch_port=mse_torch, size=f"N = {N}",
                     loop_iters=N)]
