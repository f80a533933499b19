"""A neural ODE ``dy/dt = tanh(W y)`` integrated by classical RK4: 32 states, 100 steps.

Gradient wrt the initial state and ``W``. The four stages go to a preallocated ``(4, n)``
array, ``k[s] = rhs(...)``, and the state is updated in place, ``y += h / 6 * (...)``; the
right-hand side is a helper function (a call between user functions in every stage).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.workloads import LOOP, Workload

torch: Any = None  # bound by the torch adapter

STATES, STEPS, DT = 32, 100, 0.05


def rhs(y, W):
    return np.tanh(W @ y)


def rk4(y0, W):
    y = y0.copy()
    k = np.empty((4, y0.shape[0]))
    for _ in range(STEPS):
        k[0] = rhs(y, W)
        k[1] = rhs(y + 0.5 * DT * k[0], W)
        k[2] = rhs(y + 0.5 * DT * k[1], W)
        k[3] = rhs(y + DT * k[2], W)
        y += DT / 6.0 * (k[0] + 2.0 * k[1] + 2.0 * k[2] + k[3])
    return np.sum(y ** 2)


def rk4_functional(y0, W):
    y = y0
    for _ in range(STEPS):
        k0 = rhs(y, W)
        k1 = rhs(y + 0.5 * DT * k0, W)
        k2 = rhs(y + 0.5 * DT * k1, W)
        k3 = rhs(y + DT * k2, W)
        y = y + DT / 6.0 * (k0 + 2.0 * k1 + 2.0 * k2 + k3)
    return np.sum(y ** 2)


def rk4_hand(y0, W):
    """The stage inputs and outputs go to preallocated tapes; the adjoint runs them back."""
    n = y0.shape[0]
    y = y0.copy()
    z = np.empty((STEPS, 4, n))  # stage inputs
    k = np.empty((STEPS, 4, n))  # stage outputs (tanh's pullback reads its output)
    shift = (0.0, 0.5 * DT, 0.5 * DT, DT)
    weight = np.array([1.0, 2.0, 2.0, 1.0]) * DT / 6.0
    for t in range(STEPS):
        z[t, 0] = y
        k[t, 0] = np.tanh(W @ y)
        for s in range(1, 4):
            z[t, s] = y + shift[s] * k[t, s - 1]
            k[t, s] = np.tanh(W @ z[t, s])
        y += weight @ k[t]
    y_bar = 2.0 * y
    W_bar = np.zeros_like(W)
    for t in reversed(range(STEPS)):
        k_bar = np.outer(weight, y_bar)  # y += sum_s weight_s k_s: y's own adjoint passes on
        for s in (3, 2, 1, 0):
            g = k_bar[s] * (1.0 - k[t, s] ** 2)
            W_bar += np.outer(g, z[t, s])
            z_bar = W.T @ g
            y_bar += z_bar
            if s > 0:
                k_bar[s - 1] += shift[s] * z_bar
    return y_bar, W_bar


def rhs_torch(y, W):
    return torch.tanh(W @ y)


def rk4_torch(y0, W):
    y = y0.clone()
    k = torch.empty((4, y0.shape[0]))
    for _ in range(STEPS):
        k[0] = rhs_torch(y, W)
        k[1] = rhs_torch(y + 0.5 * DT * k[0], W)
        k[2] = rhs_torch(y + 0.5 * DT * k[1], W)
        k[3] = rhs_torch(y + DT * k[2], W)
        y += DT / 6.0 * (k[0] + 2.0 * k[1] + 2.0 * k[2] + k[3])
    return torch.sum(y ** 2)


def rk4_torch_functional(y0, W):
    y = y0
    for _ in range(STEPS):
        k0 = rhs_torch(y, W)
        k1 = rhs_torch(y + 0.5 * DT * k0, W)
        k2 = rhs_torch(y + 0.5 * DT * k1, W)
        k3 = rhs_torch(y + DT * k2, W)
        y = y + DT / 6.0 * (k0 + 2.0 * k1 + 2.0 * k2 + k3)
    return torch.sum(y ** 2)


def make_args(rng: np.random.Generator) -> tuple[Any, ...]:
    return rng.standard_normal(STATES), rng.standard_normal((STATES, STATES)) / np.sqrt(STATES)


def workloads(quick: bool = False) -> list[Workload]:
    import sys

    return [Workload("rk4", LOOP, sys.modules[__name__], rk4, (0, 1), make_args, rk4_hand,
                     hand_loop=rk4_hand, functional=rk4_functional, torch_port=rk4_torch,
                     torch_functional=rk4_torch_functional,
                     size=f"{STATES} states, {STEPS} steps, stages in a (4, n) buffer",
                     loop_iters=STEPS)]
