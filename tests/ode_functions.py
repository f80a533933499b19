"""An ODE fit for the process and cluster tests (tests/test_interop_dask.py), in a module of
its own so that worker processes import it by name (gradient functions pickle by reference).
It does not import adgen: a worker running the ``-o`` standalone module never loads it.

Lotka-Volterra, integrated with fixed-step RK4 the way a numerical code is written: the stage
derivatives go into one preallocated buffer, the state is updated in place.
"""

from __future__ import annotations

import importlib
import sys

import numpy as np

P_TRUE = np.array([1.0, 0.4, 0.3, 0.8])  # prey growth, predation, predator growth, death
Y0 = np.array([2.0, 1.0])
DT = 0.1
STEPS = 40


def rhs(p, y, dy):
    dy[0] = p[0] * y[0] - p[1] * y[0] * y[1]
    dy[1] = p[2] * y[0] * y[1] - p[3] * y[1]
    return dy


def simulate(p, y0, dt, steps):
    y = y0.copy()
    k = np.empty((4, 2))  # the four RK4 stages, overwritten every step
    path = np.empty((steps + 1, 2))
    path[0] = y
    for n in range(steps):
        rhs(p, y, k[0])
        rhs(p, y + 0.5 * dt * k[0], k[1])
        rhs(p, y + 0.5 * dt * k[1], k[2])
        rhs(p, y + dt * k[2], k[3])
        y += dt / 6.0 * (k[0] + 2.0 * k[1] + 2.0 * k[2] + k[3])
        path[n + 1] = y
    return path


def misfit(p, y0, observed, dt):
    return np.sum((simulate(p, y0, dt, observed.shape[0] - 1) - observed) ** 2)


OBSERVED = simulate(P_TRUE, Y0, DT, STEPS)


def parameter_sets(count: int) -> list[np.ndarray]:
    """``count`` starting points around the true parameters."""
    rng = np.random.default_rng(11)
    return [P_TRUE * (1.0 + 0.2 * rng.standard_normal(4)) for _ in range(count)]


def standalone_gradient(module_name: str, p: np.ndarray) -> tuple[np.ndarray, bool]:
    """The gradient of ``misfit`` by the ``-o`` module ``module_name``, in a worker; and
    whether adgen was imported in this process."""
    module = importlib.import_module(module_name)
    _, saved = module.misfit_forward(p, Y0, OBSERVED, DT)
    grad = module.misfit_pullback(saved, 1.0)[0]
    return grad, any(m.split(".")[0] == "adgen" for m in sys.modules)
