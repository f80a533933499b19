"""The numba backend (issue 16) against the default backend, hand gradients and jax.jit.

    python -m bench.experiments.numba_backend            # soft-DTW 60 x 50, mse N = 30, fill
    python -m bench.experiments.numba_backend --quick    # fewer rounds

Workloads: soft-DTW on a 60 x 50 cost matrix (gradient wrt the costs; the issue's example),
the seeds' scalar ``mse`` loop (bench/workloads/mse.py, N = 30) and allocate-then-fill
(bench/workloads/fill.py, n = 1000). Systems: the NumPy primal (the x-primal unit), the
primal under ``numba.njit``, ``adgen.grad`` (default backend), ``adgen.grad(...,
backend="numba")``, the hand gradient (mse: the vectorised rule; soft-DTW: Cuturi & Blondel's
backward recursion, in NumPy loops and under ``numba.njit``) and ``jax.jit(jax.grad(f))``
where jax is installed (only on mse: jit unrolls soft-DTW's 3,000-cell Python loop and
fill's 1,000 iterations, which bench/README.md does not run, and fill writes in place).

Steady state: process CPU time per call (this machine is shared), median of rounds of batches
of at least 20 ms, after every gradient was checked against the hand gradient (max error
relative to its scale <= 1e-6). Compile time is reported separately: the first call of the
numba backend in a fresh process with an empty numba cache (cold) and in a second process
that finds the first one's cache (warm), both after ``import numba`` (about 0.3 s CPU on its
own); the first call of the default backend and of jax.jit, in this process.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                      "intra_op_parallelism_threads=1")

import numpy as np

from bench.workloads.fill import fill, fill_hand
from bench.workloads.mse import mse, mse_hand
from bench.workloads.softdtw import soft_dtw, soft_dtw_hand


def _cpu_per_call(fn, rounds: int) -> float:
    """Median CPU seconds per call over ``rounds`` batches of at least 20 ms."""
    fn()
    batch, t = 1, 0.0
    while True:
        t0 = time.process_time()
        for _ in range(batch):
            fn()
        t = time.process_time() - t0
        if t >= 0.02 or batch >= 1 << 16:
            break
        batch *= 4
    times = []
    for _ in range(rounds):
        t0 = time.process_time()
        for _ in range(batch):
            fn()
        times.append((time.process_time() - t0) / batch)
    return statistics.median(times)


def _first_call(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _fmt(s: float) -> str:
    if s >= 1.0:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


_CHILD = """
import sys, time, numpy as np
import adgen
from bench.experiments.numba_backend import WORKLOADS
import numba  # imported before the clock starts: the first call is adgen's and numba's work
name = sys.argv[1]
f, args, argnums, _ = WORKLOADS[name]()
t1 = time.perf_counter(); c1 = time.process_time()
adgen.grad(f, argnums=argnums, backend="numba")(*args)
t2 = time.perf_counter(); c2 = time.process_time()
print(t2 - t1, c2 - c1)
"""


def _compile_times(name: str) -> tuple[tuple[float, float], tuple[float, float]]:
    """(wall, CPU) of the numba backend's first call in a fresh process, with an empty
    cache and then with the cache the first process left."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, ADGEN_NUMBA_CACHE=cache,
                   PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
        out = []
        for _ in range(2):
            r = subprocess.run([sys.executable, "-c", _CHILD, name], capture_output=True,
                               text=True, env=env, check=True, cwd=root)
            wall, cpu = map(float, r.stdout.split())
            out.append((wall, cpu))
    return out[0], out[1]


def _soft_dtw_case():
    rng = np.random.default_rng(0)
    C = rng.random((60, 50))
    return soft_dtw, (C, 0.1), 0, lambda C, g: soft_dtw_hand(C, g)


def _mse_case():
    rng = np.random.default_rng(0)
    return mse, (rng.random(30), rng.random(30)), (0, 1), mse_hand


def _fill_case():
    rng = np.random.default_rng(0)
    return fill, (rng.standard_normal(1000), 0.7), (0, 1), fill_hand


WORKLOADS = {"soft-dtw 60x50": _soft_dtw_case, "mse N=30": _mse_case,
             "fill n=1000": _fill_case}


def _close(g, ref) -> bool:
    g = g if isinstance(g, tuple) else (g,)
    ref = ref if isinstance(ref, tuple) else (ref,)
    for a, b in zip(g, ref):
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        scale = max(np.max(np.abs(b)), 1e-300)
        if np.max(np.abs(a - b)) / scale > 1e-6:
            return False
    return True


def run(name: str, rounds: int) -> list[str]:
    import numba

    import adgen

    f, args, argnums, hand = WORKLOADS[name]()
    rows: list[tuple[str, float | None, str]] = []
    ref = hand(*args)
    primal_t = _cpu_per_call(lambda: f(*args), rounds)
    rows.append(("NumPy primal", primal_t, ""))
    jf = numba.njit(f)
    jf(*args)
    rows.append(("primal under numba.njit", _cpu_per_call(lambda: jf(*args), rounds), ""))
    systems = [("hand gradient (NumPy)", lambda: hand(*args))]
    if hand is not mse_hand and hand is not fill_hand:
        jh = numba.njit(soft_dtw_hand)
        systems.append(("hand gradient under numba.njit", lambda: jh(*args)))
    g_default = adgen.grad(f, argnums=argnums)
    first_default = _first_call(lambda: g_default(*args))
    systems.append(("adgen, default backend", lambda: g_default(*args)))
    g_numba = adgen.grad(f, argnums=argnums, backend="numba")
    g_numba(*args)
    systems.append(("adgen, backend=\"numba\"", lambda: g_numba(*args)))
    first_jax = None
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        if name.startswith("soft-dtw"):
            raise ImportError("not run: jit unrolls the 3,000-cell Python loop")
        if name.startswith("fill"):
            raise ImportError("not run: JAX arrays cannot be written in place, and jit "
                              "unrolls the 1,000-iteration loop")
        from bench.workloads import rebind

        jf_src = rebind(f, np=jax.numpy)
        jg = jax.jit(jax.grad(jf_src, argnums=argnums))
        first_jax = _first_call(lambda: jax.block_until_ready(jg(*args)))
        systems.append(("jax.jit(jax.grad(f))",
                        lambda: jax.block_until_ready(jg(*args))))
    except ImportError as exc:
        rows_jax = str(exc) if "not run" in str(exc) else "not installed"
    else:
        rows_jax = ""
    for label, call in systems:
        ok = _close(call(), ref)
        rows.append((label, _cpu_per_call(call, rounds) if ok else None,
                     "" if ok else "WRONG gradient"))
    if rows_jax:
        rows.append(("jax.jit(jax.grad(f))", None, rows_jax))
    out = [f"### {name}", "", "| system | CPU per call | × NumPy primal | × njit primal | note |",
           "|---|---|---|---|---|"]
    njit_t = rows[1][1]
    for label, t, note in rows:
        if t is None:
            out.append(f"| {label} | — | — | — | {note} |")
        else:
            out.append(f"| {label} | {_fmt(t)} | {t / primal_t:.3g}× | {t / njit_t:.3g}× | "
                       f"{note} |")
    cold, warm = _compile_times(name)
    out += ["", "| first call | wall | CPU |", "|---|---|---|",
            (f"| backend=\"numba\", fresh process, empty numba cache | {_fmt(cold[0])} | "
             f"{_fmt(cold[1])} |"),
            (f"| backend=\"numba\", fresh process, numba's cache from the run above | "
             f"{_fmt(warm[0])} | {_fmt(warm[1])} |"),
            f"| default backend (this process) | {_fmt(first_default)} | |"]
    if first_jax is not None:
        out.append(f"| jax.jit (this process) | {_fmt(first_jax)} | |")
    return out + [""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    opts = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.1f}", file=sys.stderr)
    for name in opts.workloads.split(","):
        print("\n".join(run(name, 3 if opts.quick else 9)), flush=True)


if __name__ == "__main__":
    main()
