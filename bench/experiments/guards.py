"""Guard cost as a factorisation grows: in-place Cholesky and LU, N = 10 .. 80.

    python -m bench.experiments.guards                    # N = 10, 20, 40, 80, both policies
    python -m bench.experiments.guards --sizes 10,20 --policies save

Both kernels are the textbook loops over slices (Polybench's ``cholesky`` and ``lu``), written
in place on a copy of the argument. Every write ``A[i, j] = ...`` is a guarded site: the
pullbacks read slices of ``A`` captured earlier (``A[i, :j]``, ``A[j, :j]``, ``A[:j, j]``),
and the static analysis cannot tell that the later writes miss them. None of the writes
overlaps a capture, so nothing is saved (``adgen.explain`` reports 0 bytes), and strict mode
raises nothing: what is measured is the cost of the guards' checks, which should be O(1)
amortised per write, so that the gradient/primal ratio stays flat as N grows (the primal's
loop runs N^2 / 2 times, each doing O(N) work in np.dot).

Prints one markdown row per (kernel, policy, N): primal and gradient median (process CPU
time, thread pools at one thread), their ratio, and the number of guarded writes.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np


def cholesky(A):
    A = A.copy()
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] = np.sqrt(A[i, i] - np.dot(A[i, :i], A[i, :i]))
    return np.sum(np.tril(A) ** 2)


def lu(A):
    A = A.copy()
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[:j, j])
            A[i, j] /= A[j, j]
        for j in range(i, n):
            A[i, j] -= np.dot(A[i, :i], A[:i, j])
    return np.sum(A ** 2)


def spd(n: int, seed: int = 0) -> np.ndarray:
    """A well-conditioned symmetric positive definite matrix (Cholesky's input)."""
    b = np.random.default_rng(seed).standard_normal((n, n))
    return b @ b.T / n + np.eye(n)


def dominant(n: int, seed: int = 0) -> np.ndarray:
    """A diagonally dominant matrix (LU without pivoting is stable on it)."""
    a = np.random.default_rng(seed).standard_normal((n, n))
    return a + n * np.eye(n)


KERNELS = {"cholesky": (cholesky, spd), "lu": (lu, dominant)}


def _median_time(call, budget: float) -> float:
    """Median process CPU time of one call: at least 3 calls, more while under budget."""
    call()  # warm-up (the gradient compiles here)
    samples: list[float] = []
    spent = 0.0
    while len(samples) < 3 or (spent < budget and len(samples) < 15):
        start = time.process_time()
        call()
        samples.append(time.process_time() - start)
        spent += samples[-1]
    return statistics.median(samples)


def _fmt(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,20,40,80")
    parser.add_argument("--policies", default="save,strict")
    parser.add_argument("--kernels", default="cholesky,lu")
    parser.add_argument("--budget", type=float, default=2.0,
                        help="seconds of timing per entry (at least 3 calls)")
    options = parser.parse_args(argv)
    import adgen

    print("| kernel | policy | N | guarded writes | primal | gradient | gradient / primal |")
    print("|---|---|---|---|---|---|---|")
    for kernel in options.kernels.split(","):
        fn, make = KERNELS[kernel]
        for policy in options.policies.split(","):
            g = adgen.grad(fn, mutation=policy)
            for n in (int(s) for s in options.sizes.split(",")):
                a = make(n)
                primal = _median_time(functools.partial(fn, a), options.budget)
                grad = _median_time(functools.partial(g, a), options.budget)
                writes = n * (n - 1) if kernel == "cholesky" else n * (n - 1) + n * (n + 1) // 2
                writes += n if kernel == "cholesky" else 0
                print(f"| {kernel} | {policy} | {n} | {writes} | {_fmt(primal)} | "
                      f"{_fmt(grad)} | {grad / primal:.1f}× |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
