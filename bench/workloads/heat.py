"""An explicit 1-D heat equation: 200 points, 100 steps, in place and functionally.

Gradient of the final energy wrt the initial condition and the diffusivity. The update
``u[1:-1] += alpha * lap`` is linear in ``u``: nothing it overwrites is read by the backward
pass, so a mutation-aware tool needs no copy of ``u`` (the laplacians are fresh arrays).

``heat-functional`` (issue 15) is the same scheme written without mutation, each step a new
``np.concatenate``, differentiated wrt ``u0`` alone: every step is linear in ``u`` and the
adjoint needs no value of the forward pass, only the (static) shapes.
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


def heat_functional_hand(u0, alpha):
    """Gradient wrt ``u0`` only: the step is linear, so nothing of the forward pass is kept."""
    u = u0
    for _ in range(STEPS):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        u = np.concatenate([u[:1], u[1:-1] + alpha * lap, u[-1:]])
    u_bar = 2.0 * u
    for _ in range(STEPS):
        lap_bar = alpha * u_bar[1:-1]
        u_bar[2:] += lap_bar
        u_bar[1:-1] -= 2.0 * lap_bar
        u_bar[:-2] += lap_bar
    return (u_bar,)


def make_args(rng: np.random.Generator) -> tuple[Any, ...]:
    x = np.linspace(0.0, 1.0, POINTS)
    u0 = np.exp(-50.0 * (x - 0.5) ** 2) + 0.1 * rng.standard_normal(POINTS)
    return u0, 0.2


def workloads(quick: bool = False) -> list[Workload]:
    import sys

    return [Workload("heat", LOOP, sys.modules[__name__], heat, (0, 1), make_args, heat_hand,
                     hand_loop=heat_hand_loop, functional=heat_functional,
                     torch_port=heat_torch, torch_functional=heat_torch_functional,
                     size=f"{POINTS} points, {STEPS} steps", loop_iters=STEPS),
            # issue 15: the functional form, u = np.concatenate(...), wrt u0 only
            Workload("heat-functional", LOOP, sys.modules[__name__], heat_functional, (0,),
                     make_args, heat_functional_hand, hand_loop=heat_functional_hand,
                     torch_port=heat_torch_functional, size=f"{POINTS} points, {STEPS} steps, "
                     "wrt u0", loop_iters=STEPS)]
