"""A Lotka-Volterra model integrated with RK4 as numerical code is written, and its misfit.

The four stage derivatives go into one preallocated buffer and the state is updated in place;
adgen differentiates it as it is. This module is what examples/ode_fit_dask.py sends to Dask
workers: functions a worker runs must live in a module it can import, since Dask (cloudpickle)
sends the functions of a script's ``__main__`` by value, without their source, and adgen reads
source. Run it alone to see the gradient of the misfit at the starting points.
"""

import numpy as np

import adgen


def rhs(p, y, dy):
    dy[0] = p[0] * y[0] - p[1] * y[0] * y[1]  # prey: growth, predation
    dy[1] = p[2] * y[0] * y[1] - p[3] * y[1]  # predators: growth, death
    return dy


def simulate(p, y0, dt, steps):
    y = y0.copy()
    k = np.empty((4, 2))  # the RK4 stages, overwritten every step
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


def fit(p0, y0, observed, dt):
    """One local fit, run on a worker: L-BFGS-B with adgen's value and gradient."""
    from scipy.optimize import minimize

    result = minimize(adgen.value_and_grad(misfit), p0, args=(y0, observed, dt), jac=True,
                      method="L-BFGS-B", bounds=[(0.1, 2.0)] * 4)
    return result.fun, result.x


p_true = np.array([1.0, 0.4, 0.3, 0.8])
y0, dt = np.array([2.0, 1.0]), 0.1
observed = simulate(p_true, y0, dt, 40)  # synthetic data
starts = [p_true * f for f in (0.7, 0.85, 1.2, 1.35)]


if __name__ == "__main__":
    for p in starts:
        print("d misfit / d p at", p, "=", adgen.grad(misfit)(p, y0, observed, dt))
