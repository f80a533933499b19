"""An explicit 1-D heat equation updated in place: 200 points, 100 steps.

Gradient of the final energy wrt the initial condition and the diffusivity. The update
``u[1:-1] += alpha * lap`` is linear in ``u``: nothing it overwrites is read by the backward
pass, so a mutation-aware tool needs no copy of ``u`` (the laplacians are fresh arrays).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.workloads import LOOP, Workload

torch: Any = None  # bound by the torch adapter

POINTS, STEPS = 200, 100


def heat(u0, alpha):
    u = u0.copy()
    for _ in range(STEPS):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        u[1:-1] += alpha * lap
    return np.sum(u * u)


def heat_functional(u0, alpha):
    """Each step builds a new array from the unchanged boundary and the updated interior."""
    u = u0
    for _ in range(STEPS):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        u = np.concatenate([u[:1], u[1:-1] + alpha * lap, u[-1:]])
    return np.sum(u * u)


def heat_hand(u0, alpha):
    """The time loop cannot be vectorised; the laplacians go to one preallocated array."""
    u = u0.copy()
    laps = np.empty((STEPS, len(u0) - 2))
    for t in range(STEPS):
        lap = laps[t]
        np.subtract(u[2:], 2.0 * u[1:-1], out=lap)
        lap += u[:-2]
        u[1:-1] += alpha * lap
    _value = np.dot(u, u)
    u_bar = 2.0 * u
    alpha_bar = 0.0
    for t in reversed(range(STEPS)):
        inc_bar = u_bar[1:-1]
        alpha_bar += np.dot(laps[t], inc_bar)
        lap_bar = alpha * inc_bar
        u_bar[2:] += lap_bar
        u_bar[1:-1] -= 2.0 * lap_bar
        u_bar[:-2] += lap_bar
    return u_bar, alpha_bar


def heat_hand_loop(u0, alpha):
    """The adjoint a source-to-source tool writes: a list tape, one statement at a time."""
    u = u0.copy()
    lap_tape = []
    for _ in range(STEPS):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        u[1:-1] += alpha * lap
        lap_tape.append(lap)
    _value = np.sum(u * u)
    u_bar = 2.0 * u
    alpha_bar = 0.0
    for t in reversed(range(STEPS)):
        lap = lap_tape[t]
        inc_bar = u_bar[1:-1]
        alpha_bar += np.sum(inc_bar * lap)
        lap_bar = alpha * inc_bar
        u_bar[2:] += lap_bar
        u_bar[1:-1] += -2.0 * lap_bar
        u_bar[:-2] += lap_bar
    return u_bar, alpha_bar


def heat_torch(u0, alpha):
    u = u0.clone()
    for _ in range(STEPS):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        u[1:-1] += alpha * lap
    return torch.sum(u * u)


def heat_torch_functional(u0, alpha):
    u = u0
    for _ in range(STEPS):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        u = torch.cat([u[:1], u[1:-1] + alpha * lap, u[-1:]])
    return torch.sum(u * u)


def make_args(rng: np.random.Generator) -> tuple[Any, ...]:
    x = np.linspace(0.0, 1.0, POINTS)
    u0 = np.exp(-50.0 * (x - 0.5) ** 2) + 0.1 * rng.standard_normal(POINTS)
    return u0, 0.2


def workloads(quick: bool = False) -> list[Workload]:
    import sys

    return [Workload("heat", LOOP, sys.modules[__name__], heat, (0, 1), make_args, heat_hand,
                     hand_loop=heat_hand_loop, functional=heat_functional,
                     torch_port=heat_torch, torch_functional=heat_torch_functional,
                     size=f"{POINTS} points, {STEPS} steps", loop_iters=STEPS)]
