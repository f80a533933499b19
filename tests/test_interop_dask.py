"""Gradients of an ODE fit over several parameter sets, on other processes and a cluster.

``adgen.grad(misfit)`` pickles as a reference to ``misfit`` (``adgen.api.GradientFunction``),
so it is sent as it is to ``concurrent.futures.ProcessPoolExecutor`` workers (spawned) and to
``dask.distributed`` workers (``client.map``); each worker compiles once and computes its
share. A worker without adgen runs the ``-o`` standalone module instead. Every gradient is
compared with ``adgen.grad`` in this process and with central differences. Sized for two
cores: two workers, one thread each, every wait bounded. Dask tests skip without
``distributed`` (the "interop" extra).
"""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import ode_functions as ode
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

TIMEOUT = 120  # seconds for any one batch of results
PARAMS = ode.parameter_sets(4)
ARGS = (ode.Y0, ode.OBSERVED, ode.DT)


def expected_gradients() -> list[np.ndarray]:
    grads = [adgen.grad(ode.misfit)(p.copy(), *ARGS) for p in PARAMS]
    for p, g in zip(PARAMS, grads):
        assert_grad_close(g, numerical_grad(ode.misfit, (p, *ARGS), 0))
    return grads


def check(results: list[np.ndarray]) -> None:
    assert len(results) == len(PARAMS)
    for got, expected in zip(results, expected_gradients()):
        assert got.shape == (4,) and got.dtype == np.float64
        assert_grad_close(got, expected)


def test_process_pool_executor() -> None:
    spawn = multiprocessing.get_context("spawn")  # the workers import ode_functions afresh
    with ProcessPoolExecutor(max_workers=2, mp_context=spawn) as pool:
        grads = list(pool.map(adgen.grad(ode.misfit), PARAMS, *[[a] * len(PARAMS)
                                                                 for a in ARGS],
                              timeout=TIMEOUT))
    check(grads)


def test_process_pool_with_the_standalone_module(tmp_path: Path) -> None:
    # the deployment path without adgen: `adgen ode_functions.py -f misfit -o ...`
    module = tmp_path / "misfit_adjoint.py"
    r = subprocess.run([sys.executable, "-m", "adgen", ode.__file__, "-f", "misfit", "-o",
                        str(module)], capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    sys.path.insert(0, str(tmp_path))  # spawned workers get this process's sys.path
    try:
        spawn = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=2, mp_context=spawn) as pool:
            results = list(pool.map(ode.standalone_gradient, ["misfit_adjoint"] * len(PARAMS),
                                    PARAMS, timeout=TIMEOUT))
    finally:
        sys.path.remove(str(tmp_path))
    assert not any(imported for _, imported in results)  # adgen never loaded in the workers
    check([g for g, _ in results])


@pytest.mark.parametrize("processes", [True, False], ids=["processes", "threads"])
def test_dask_client_map(processes: bool) -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=processes,
                                  dashboard_address=None, silence_logs=40) as cluster, \
            distributed.Client(cluster, timeout=TIMEOUT) as client:
        futures = client.map(adgen.grad(ode.misfit), PARAMS, y0=ode.Y0,
                             observed=ode.OBSERVED, dt=ode.DT, pure=False)
        distributed.wait(futures, timeout=TIMEOUT)
        grads = client.gather(futures)
        # and value_and_grad, scattered data, one task per parameter set
        observed = client.scatter(ode.OBSERVED, broadcast=True)
        futures = client.map(adgen.value_and_grad(ode.misfit), PARAMS, y0=ode.Y0,
                             observed=observed, dt=ode.DT, pure=False)
        distributed.wait(futures, timeout=TIMEOUT)
        pairs = client.gather(futures)
    check(grads)
    check([g for _, g in pairs])
    for (value, _), p in zip(pairs, PARAMS):
        assert np.isclose(value, ode.misfit(p, *ARGS))


def test_a_gradient_function_has_a_deterministic_dask_token() -> None:
    # client.map names its tasks by the function's token; after a call, the gradient closure
    # held weak references (the partials it points at a direct call), which do not pickle:
    # dask refused to tokenize it ("cannot be deterministically hashed")
    dask = pytest.importorskip("dask")
    from dask.tokenize import tokenize

    g = adgen.value_and_grad(ode.misfit)
    g(ode.P_TRUE * 1.1, ode.Y0, ode.OBSERVED, ode.DT)
    with dask.config.set({"tokenize.ensure-deterministic": True}):
        assert tokenize(g) == tokenize(g)


def phase(x):
    # np.angle of a complex value: its pullback adds a complex cotangent into a real array's
    # adjoint, which puts it in adgen's set of complex pullbacks
    return np.angle(x[0] + 1j * x[1]) ** 2 * x[2]


def test_the_token_after_a_complex_gradient() -> None:
    # the gradient closure reads that set as a global, which cloudpickle pickled by value:
    # after any complex gradient in the process, its weak references did not pickle and
    # dask refused every gradient function (CI, after tests/e2e/test_angle_at_second_order)
    dask = pytest.importorskip("dask")
    from dask.tokenize import tokenize

    adgen.hessian(phase)(np.array([0.7, -1.2, 0.4]))
    g = adgen.value_and_grad(ode.misfit)
    g(ode.P_TRUE * 1.1, ode.Y0, ode.OBSERVED, ode.DT)
    with dask.config.set({"tokenize.ensure-deterministic": True}):
        assert tokenize(g) == tokenize(g)
