"""Fit an ODE from many starting points at once: gradients on a Dask cluster.

The model is a Lotka-Volterra system integrated with RK4 as numerical code is written: the
four stage derivatives go into one preallocated buffer, the state is updated in place. adgen
differentiates it as it is. ``adgen.value_and_grad(misfit)`` pickles as a reference to
``misfit``, so ``client.map`` sends it to the workers, which compile it once and fit their
share of the starting points with SciPy's L-BFGS-B. The same function goes to a
``concurrent.futures.ProcessPoolExecutor`` unchanged.

The model lives in examples/lotka_volterra.py: a worker imports the functions it runs (Dask
sends the functions of a script's ``__main__`` by value, without the source adgen reads).

Needs dask[distributed] and scipy (pip install 'adgen[interop,examples]'). On a real cluster,
pass the scheduler's address to Client instead of starting a LocalCluster.
"""

from concurrent.futures import ProcessPoolExecutor

import numpy as np
from lotka_volterra import dt, fit, misfit, observed, p_true, starts, y0

import adgen

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
