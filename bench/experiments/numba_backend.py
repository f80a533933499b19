"""The numba backend (issue 16) against the NumPy primal, the njit primal, the default
backend and hand gradients, on scalar-loop workloads.

    python -m bench.experiments.numba_backend                  # every workload, one table
    python -m bench.experiments.numba_backend --quick          # 3 rounds instead of 5
    python -m bench.experiments.numba_backend --workloads "mse N=30,lu n=40"
    python -m bench.experiments.numba_backend --no-compile-times

Workloads: soft-DTW 60 x 50 (bench/workloads/softdtw.py, the issue's example), the seeds'
scalar ``mse`` loop (N = 30), allocate-then-fill (n = 1000), the suite's heat equation (200
points, 100 steps: an array recorded per step) and RNN (rows of a state buffer, matrix-vector
products) and Kalman filter (4 states: np.linalg in the loop), and scalar-loop kernels
defined here: a local-level Kalman filter (2000 steps), an in-place Gauss-Seidel stencil
(100 points, 50 sweeps), forward substitution (n = 60), Cholesky and Doolittle LU (n = 40)
and Polybench seidel-2d (30 x 30, 10 sweeps), all written element by element; and
Polybench's Deriche filter (32 x 24, columns and rows of its output carried by its loops).

Steady state: process CPU time per call (this machine is shared), median of rounds of batches
of at least 20 ms (the numba backend's rounds interleaved with the njit primal's, so that
their ratio sees one load), after every gradient was checked against the hand gradient where the
workload has one, else against the default backend (max error relative to its scale <=
1e-6; tests/test_numba_backend.py checks every one against central differences).
``jax.jit(jax.grad(f))`` runs on mse only (jit unrolls the other Python loops, and several
write in place). Compile time: CPU seconds of the numba backend's first call in a fresh
process with an empty numba cache (cold) and in a second process that finds the first one's
cache (Python's bytecode cache on in both, as in an installation), both after ``import numba``
(about 0.3 s CPU on its own) and after numba's own start
in the process (its first njit function: typing registries, the SciPy import of its BLAS
check), which is timed apart ("numba start"): every program's first njit call pays it.

The suite's vectorised mlp, attention, softmax-xent and gp-nll run too (against their hand
gradients; numba.njit cannot compile the mlp, attention and softmax-xent primals, whose
np.max takes an axis), and its RK4 neural ODE (a helper function per stage, stages stored
into a (4, n) buffer; numba.njit cannot compile its primal, whose helper is plain Python).
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

# --------------------------------------------------------------------------------------------
# Scalar-loop kernels (issue 16's list): written as loops, element by element, the way code
# meant for numba.njit is written. bench/workloads has vectorised-inner-loop versions of some
# (trisolv and seidel-2d over slices); these are the scalar forms.


def stencil(u0, alpha):
    """1-D diffusion in place, Gauss-Seidel order (each point reads its updated left
    neighbour): a scalar inner loop over the grid inside a time loop."""
    u = u0.copy()
    n = u.shape[0]
    for _ in range(STENCIL_STEPS):
        for i in range(1, n - 1):
            u[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])
    s = 0.0
    for i in range(n):
        s += u[i] * u[i]
    return s


def kalman_scalar(zs, q, r):
    """A local-level Kalman filter (random walk plus noise): the negative log-likelihood of
    the observations, wrt the noise variances q and r."""
    x = 0.0
    p = 1.0
    nll = 0.0
    for k in range(zs.shape[0]):
        p = p + q
        s = p + r
        gain = p / s
        innov = zs[k] - x
        x = x + gain * innov
        p = (1.0 - gain) * p
        nll += np.log(s) + innov * innov / s
    return 0.5 * nll


def trisolv_loops(L, b):
    """Forward substitution, L x = b, with an inner loop over the row."""
    n = b.shape[0]
    x = np.zeros(n)
    for i in range(n):
        acc = b[i]
        for j in range(i):
            acc = acc - L[i, j] * x[j]
        x[i] = acc / L[i, i]
    s = 0.0
    for i in range(n):
        s += x[i] * x[i]
    return s


def cholesky_loops(A):
    """Cholesky-Banachiewicz into a fresh L (allocate-then-fill), then a scalar loss."""
    n = A.shape[0]
    L = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1):
            acc = A[i, j]
            for k in range(j):
                acc = acc - L[i, k] * L[j, k]
            if i == j:
                L[i, j] = np.sqrt(acc)
            else:
                L[i, j] = acc / L[j, j]
    s = 0.0
    for i in range(n):
        for j in range(i + 1):
            s += L[i, j] * L[i, j] * (1.0 + 0.1 * j)
    return s


def lu_loops(A):
    """Doolittle LU without pivoting into fresh L and U, then a scalar loss."""
    n = A.shape[0]
    L = np.zeros((n, n))
    U = np.zeros((n, n))
    for i in range(n):
        for k in range(i, n):
            acc = A[i, k]
            for j in range(i):
                acc = acc - L[i, j] * U[j, k]
            U[i, k] = acc
        L[i, i] = 1.0
        for k in range(i + 1, n):
            acc = A[k, i]
            for j in range(i):
                acc = acc - L[k, j] * U[j, i]
            L[k, i] = acc / U[i, i]
    s = 0.0
    for i in range(n):
        for j in range(n):
            s += U[i, j] * U[i, j] + 0.5 * L[i, j] * L[i, j]
    return s


def seidel_loops(A0):
    """Polybench seidel-2d, element by element: each point becomes the mean of its 3 x 3
    neighbourhood, in place (it reads the points already updated this sweep)."""
    A = A0.copy()
    n = A.shape[0]
    for _ in range(SEIDEL_STEPS):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = (A[i - 1, j - 1] + A[i - 1, j] + A[i - 1, j + 1] + A[i, j - 1] +
                           A[i, j] + A[i, j + 1] + A[i + 1, j - 1] + A[i + 1, j] +
                           A[i + 1, j + 1]) / 9.0
    s = 0.0
    for i in range(n):
        for j in range(n):
            s += A[i, j] * A[i, j]
    return s


STENCIL_STEPS, SEIDEL_STEPS = 50, 10


def spd(n: int, rng: np.random.Generator) -> np.ndarray:
    """A well-conditioned symmetric positive definite matrix."""
    M = rng.standard_normal((n, n))
    return M @ M.T / n + np.eye(n)


def dominant(n: int, rng: np.random.Generator) -> np.ndarray:
    """A diagonally dominant matrix (LU without pivoting is stable on it)."""
    return rng.standard_normal((n, n)) + n * np.eye(n)


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


def _cpu_per_call_beside(fn, other, rounds: int) -> tuple[float, float]:
    """:func:`_cpu_per_call` of ``fn`` and of ``other`` with their rounds interleaved (one
    of each in turn): on a shared machine the load changes between two measurements made
    one after the other, and their ratio with it."""
    sizes = []
    for f in (fn, other):
        f()
        batch = 1
        while True:
            t0 = time.process_time()
            for _ in range(batch):
                f()
            if time.process_time() - t0 >= 0.02 or batch >= 1 << 16:
                break
            batch *= 4
        sizes.append(batch)
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(rounds):
        for f, batch, out in zip((fn, other), sizes, times):
            t0 = time.process_time()
            for _ in range(batch):
                f()
            out.append((time.process_time() - t0) / batch)
    return statistics.median(times[0]), statistics.median(times[1])


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
c0 = time.process_time()
# numba's own start in a process (its typing registries, and the SciPy import of its BLAS
# check), which the first njit function of any program pays: timed apart
numba.njit(lambda x: x + 1.0)(1.0)
t1 = time.perf_counter(); c1 = time.process_time()
adgen.grad(f, argnums=argnums, backend="numba")(*args)
t2 = time.perf_counter(); c2 = time.process_time()
print(t2 - t1, c2 - c1, c1 - c0)
"""


def _compile_times(name: str) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """(wall, CPU, numba's start in CPU) of the numba backend's first call in a fresh
    process, after numba's start, with an empty cache and then with the cache the first
    process left."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with tempfile.TemporaryDirectory() as cache:
        # Python's bytecode cache on, as in any installation (pip writes it): with
        # PYTHONDONTWRITEBYTECODE=1 (this project's sandbox sets it) every process compiles
        # adgen's own modules from source, about 0.15 s of each first call. Kept in the
        # temporary directory, not written into the source tree.
        env = dict(os.environ, ADGEN_NUMBA_CACHE=cache,
                   PYTHONPYCACHEPREFIX=os.path.join(cache, "pycache"),
                   PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        out = []
        for _ in range(2):
            r = subprocess.run([sys.executable, "-c", _CHILD, name], capture_output=True,
                               text=True, env=env, check=False, cwd=root)
            if r.returncode != 0:  # reported in the table, not a crash of the whole run
                last = (r.stderr.strip().splitlines() or ["?"])[-1]
                raise RuntimeError(f"fresh process failed ({r.returncode}): {last[:120]}")
            wall, cpu, start = map(float, r.stdout.split())
            out.append((wall, cpu, start))
    return out[0], out[1]


def _soft_dtw_case():
    rng = np.random.default_rng(0)
    C = rng.random((60, 50))
    return soft_dtw, (C, 0.1), 0, soft_dtw_hand


def _mse_case():
    rng = np.random.default_rng(0)
    return mse, (rng.random(30), rng.random(30)), (0, 1), mse_hand


def _fill_case():
    rng = np.random.default_rng(0)
    return fill, (rng.standard_normal(1000), 0.7), (0, 1), fill_hand


def _heat_case():
    from bench.workloads import heat

    return heat.heat, heat.make_args(np.random.default_rng(0)), (0, 1), heat.heat_hand


def _rnn_case():
    from bench.workloads import rnn

    return rnn.rnn, rnn.make_args(np.random.default_rng(0)), (0, 1, 2, 3, 4), rnn.rnn_hand


def _kalman_case():
    from bench.workloads import kalman

    w = next(w for w in kalman.workloads() if w.primal is kalman.kalman)
    return kalman.kalman, w.make_args(np.random.default_rng(0)), w.argnums, \
        kalman.kalman_hand


def _kalman_scalar_case():
    zs = np.cumsum(np.random.default_rng(0).standard_normal(2000))
    return kalman_scalar, (zs, 0.5, 1.0), (0, 1, 2), None


def _stencil_case():
    return stencil, (np.random.default_rng(0).random(100), 0.2), (0, 1), None


def _trisolv_case():
    rng = np.random.default_rng(0)
    L = np.tril(rng.random((60, 60))) + 3.0 * np.eye(60)
    return trisolv_loops, (L, rng.random(60)), (0, 1), None


def _cholesky_case():
    return cholesky_loops, (spd(40, np.random.default_rng(0)),), 0, None


def _lu_case():
    return lu_loops, (dominant(40, np.random.default_rng(0)),), 0, None


def _seidel_case():
    return seidel_loops, (np.random.default_rng(0).random((30, 30)),), 0, None


def _deriche_case():
    """Polybench's Deriche filter (bench/workloads/polybench_stencils.py), whose loops carry
    the columns and rows they wrote (fresh zeros on the first iteration): refused before
    session 12, compiled since (transforms/numba_live_bindings.py)."""
    from bench.workloads.polybench_stencils import deriche, deriche_hand

    return deriche, (np.random.default_rng(0).random((32, 24)),), 0, deriche_hand


def _suite_case(module: str):
    """A vectorised workload of the benchmark suite (bench/workloads), with its hand
    gradient."""
    def case():
        import importlib

        w = importlib.import_module(f"bench.workloads.{module}").workloads()[0]
        return w.primal, w.make_args(np.random.default_rng(0)), w.argnums, w.hand
    return case


WORKLOADS = {"soft-dtw 60x50": _soft_dtw_case, "mse N=30": _mse_case,
             "fill n=1000": _fill_case, "heat 200x100": _heat_case,
             "rnn 64/32/25": _rnn_case, "kalman 4x2x50": _kalman_case,
             "kalman-scalar n=2000": _kalman_scalar_case, "stencil 100x50": _stencil_case,
             "trisolv n=60": _trisolv_case, "cholesky n=40": _cholesky_case,
             "lu n=40": _lu_case, "seidel 30x30x10": _seidel_case,
             "deriche 32x24": _deriche_case,
             "mlp (suite)": _suite_case("mlp"), "attention (suite)": _suite_case("attention"),
             "softmax-xent (suite)": _suite_case("softmax_xent"),
             "gp-nll (suite)": _suite_case("gp"), "rk4 (suite)": _suite_case("rk4")}


def _close(g, ref) -> bool:
    g = g if isinstance(g, tuple) else (g,)
    ref = ref if isinstance(ref, tuple) else (ref,)
    for a, b in zip(g, ref):
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        scale = max(np.max(np.abs(b)), 1e-300)
        if np.max(np.abs(a - b)) / scale > 1e-6:
            return False
    return True


COLUMNS = ("NumPy primal", "njit primal", "hand (NumPy)", "jax.jit", "default backend",
           "backend=numba", "numba / NumPy", "numba / njit", "compile cold", "from cache",
           "numba start")


def run(name: str, rounds: int, compile_times: bool = True) -> dict[str, str]:
    """One row of the table: CPU per call of each system, the numba backend's ratios, and
    its first call in a fresh process (CPU seconds) with an empty and a warm numba cache."""
    import warnings

    import numba

    import adgen

    f, args, argnums, hand = WORKLOADS[name]()
    row: dict[str, str] = {}
    primal_t = _cpu_per_call(lambda: f(*args), rounds)
    row["NumPy primal"] = _fmt(primal_t)
    njit_t = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numba's performance hints (np.dot of views)
            jf = numba.njit(f)
            jf(*args)
    except numba.core.errors.NumbaError:  # np.max(x, axis=1): numba cannot compile it
        row["njit primal"] = "not compiled"
    else:
        njit_t = _cpu_per_call(lambda: jf(*args), rounds)
        row["njit primal"] = _fmt(njit_t)
    g_default = adgen.grad(f, argnums=argnums)
    # the reference: the hand gradient where the workload has one, else the default backend
    # (tests/test_numba_backend.py checks both backends against central differences)
    ref = hand(*args) if hand is not None else g_default(*args)
    if hand is not None:
        row["hand (NumPy)"] = _fmt(_cpu_per_call(lambda: hand(*args), rounds))
    row["default backend"] = _fmt(_cpu_per_call(lambda: g_default(*args), rounds)) if \
        _close(g_default(*args), ref) else "WRONG gradient"
    if name.startswith("mse"):
        row["jax.jit"] = _jax_time(f, args, argnums, ref, rounds)
    try:
        g_numba = adgen.grad(f, argnums=argnums, backend="numba")
        g_numba(*args)
    except adgen.AdgenError as err:
        row["backend=numba"] = "refused"
        row["note"] = str(err).splitlines()[0]
        return row
    if not _close(g_numba(*args), ref):
        row["backend=numba"] = "WRONG gradient"
        return row
    if njit_t:  # measured again beside the numba backend's, for their ratio
        t, njit_t = _cpu_per_call_beside(lambda: g_numba(*args), lambda: jf(*args), rounds)
        row["njit primal"] = _fmt(njit_t)
    else:
        t = _cpu_per_call(lambda: g_numba(*args), rounds)
    row["backend=numba"] = _fmt(t)
    row["numba / NumPy"] = f"{t / primal_t:.3g}×"
    row["numba / njit"] = f"{t / njit_t:.3g}×" if njit_t else "—"
    if compile_times:
        try:
            cold, warm = _compile_times(name)
        except RuntimeError as err:
            row["note"] = str(err)
        else:
            row["compile cold"] = f"{cold[1]:.2f} s"
            row["from cache"] = f"{warm[1]:.2f} s"
            row["numba start"] = f"{warm[2]:.2f} s"
    return row


def _jax_time(f, args, argnums, ref, rounds) -> str:
    try:
        import jax
    except ImportError:
        return "not installed"
    from bench.workloads import rebind

    jax.config.update("jax_enable_x64", True)
    jg = jax.jit(jax.grad(rebind(f, np=jax.numpy), argnums=argnums))
    first = _first_call(lambda: jax.block_until_ready(jg(*args)))
    if not _close(tuple(np.asarray(a) for a in jg(*args)), ref):
        return "WRONG gradient"
    t = _cpu_per_call(lambda: jax.block_until_ready(jg(*args)), rounds)
    return f"{_fmt(t)} (compile {_fmt(first)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds instead of 5")
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--no-compile-times", action="store_true",
                        help="skip the fresh-process compile measurements")
    opts = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.1f}", file=sys.stderr)
    rows = {}
    notes = []
    for name in opts.workloads.split(","):
        rows[name] = run(name, 3 if opts.quick else 5, not opts.no_compile_times)
        print(f"{name}: {rows[name]}", file=sys.stderr, flush=True)
    print("| workload | " + " | ".join(COLUMNS) + " |")
    print("|---" * (len(COLUMNS) + 1) + "|")
    for name, row in rows.items():
        print(f"| {name} | " + " | ".join(row.get(c, "—") for c in COLUMNS) + " |")
        if "note" in row:
            notes.append(f"- {name}: {row['note']}")
    print("\n".join([""] + notes))


if __name__ == "__main__":
    main()
