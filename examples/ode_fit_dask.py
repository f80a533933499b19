"""Fit an ODE from many starting points at once: gradients on a Dask cluster.

The model is a Lotka-Volterra system integrated with RK4 as numerical code is written: the
four stage derivatives go into one preallocated buffer, the state is updated in place. adgen
differentiates it as it is. ``adgen.value_and_grad(misfit)`` pickles as a reference to
``misfit``, so ``client.map`` sends it to the workers, which compile it once and fit their
share of the starting points with SciPy's L-BFGS-B. The same function goes to a
``concurrent.futures.ProcessPoolExecutor`` unchanged.

Needs dask[distributed] and scipy (pip install 'adgen[interop,examples]'). On a real cluster,
pass the scheduler's address to Client instead of starting a LocalCluster.
"""

from concurrent.futures import ProcessPoolExecutor

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
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        data = client.scatter(observed, broadcast=True)  # sent to each worker once
        pairs = client.gather(client.map(adgen.value_and_grad(misfit), starts, y0=y0,
                                         observed=data, dt=dt))
        print("d misfit / d p at start 0 =", pairs[0][1])
        fits = client.gather(client.map(fit, starts, y0=y0, observed=data, dt=dt))

    best_value, best_p = min(fits, key=lambda f: f[0])
    print(f"best misfit of {len(fits)} fits = {best_value:.3e}")
    print("fitted p =", best_p)
    print("true p   =", p_true)

    with ProcessPoolExecutor(max_workers=2) as pool:  # the same, without Dask
        grads = list(pool.map(adgen.grad(misfit), starts, *[[a] * len(starts)
                                                            for a in (y0, observed, dt)]))
    print("same gradients with ProcessPoolExecutor:",
          all(np.allclose(g, pair[1]) for g, pair in zip(grads, pairs)))
