"""Tape memory and time of a 10,000-step in-place heat equation, with and without
checkpointing: ``@adgen.checkpoint`` on a 100-step helper, and ``adgen.grad(f,
checkpoint=K)`` on the plain top-level loop (K = 100 and K = True, about sqrt(steps)).

    python -m bench.experiments.checkpointing              # 10,000 steps, 200 points
    python -m bench.experiments.checkpointing --steps 2000

The step is nonlinear (a reaction term ``0.05 * sin(u)``), written in place on a fresh
buffer: ``new[1:-1] += alpha * lap + 0.05 * np.sin(u[1:-1])``. The gradient wrt the initial
condition and the diffusivity keeps, per step, what the pullbacks read (the laplacian for
``alpha``'s gradient, ``u[1:-1]`` for sin's): about 2 x 198 floats a step without
checkpointing. With 100-step segments checkpointed, the tape keeps each segment's input and
output, and the backward pass rebuilds one segment's tape at a time.

Prints peak traced memory (tracemalloc, over the gradient call: the tape plus the
transients) and wall time (median of 3) for both, with their ratios, and checks that the
two gradients agree.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import tracemalloc

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np

import adgen

POINTS = 200
SEGMENT = 100


def steps(u, alpha, n):
    for _ in range(n):
        new = u.copy()
        new[1:-1] += alpha * (u[2:] - 2.0 * u[1:-1] + u[:-2]) + 0.05 * np.sin(u[1:-1])
        u = new
    return u


segment = adgen.checkpoint(steps)


def heat(u0, alpha, n_segments):
    """Every step on the tape."""
    u = u0
    for _ in range(n_segments):
        u = steps(u, alpha, SEGMENT)
    return np.sum(u * u)


def heat_checkpointed(u0, alpha, n_segments):
    """Only the segments' inputs on the tape."""
    u = u0
    for _ in range(n_segments):
        u = segment(u, alpha, SEGMENT)
    return np.sum(u * u)


def heat_loop(u0, alpha, n_segments):
    """The plain top-level loop, in place: what adgen.grad(..., checkpoint=K) segments."""
    u = u0.copy()
    for t in range(n_segments * SEGMENT):
        u[1:-1] += alpha * (u[2:] - 2.0 * u[1:-1] + u[:-2]) + 0.05 * np.sin(u[1:-1])
    return np.sum(u * u)


def measure(fn, u0, alpha, n_segments, repeats, **options):
    grad = adgen.grad(fn, argnums=(0, 1), **options)
    grad(u0, alpha, 1)  # compile outside the measurement
    tracemalloc.start()
    g = grad(u0, alpha, n_segments)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        grad(u0, alpha, n_segments)
        times.append(time.perf_counter() - t0)
    return g, peak, statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    n_segments = args.steps // SEGMENT
    u0 = np.sin(np.linspace(0.0, np.pi, POINTS))
    alpha = 0.2
    primal = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        heat(u0, alpha, n_segments)
        primal.append(time.perf_counter() - t0)
    g_plain, mem_plain, t_plain = measure(heat, u0, alpha, n_segments, args.repeats)
    g_ckpt, mem_ckpt, t_ckpt = measure(heat_checkpointed, u0, alpha, n_segments, args.repeats)
    g_loop, mem_loop, t_loop = measure(heat_loop, u0, alpha, n_segments, args.repeats)
    g_k, mem_k, t_k = measure(heat_loop, u0, alpha, n_segments, args.repeats,
                              checkpoint=SEGMENT)
    g_sq, mem_sq, t_sq = measure(heat_loop, u0, alpha, n_segments, args.repeats,
                                 checkpoint=True)
    # the in-place loop computes the same steps: new[1:-1] += ... reads the old u too
    for g in (g_ckpt, g_loop, g_k, g_sq):
        np.testing.assert_allclose(g[0], g_plain[0], rtol=1e-9, atol=1e-12)
        assert abs(g[1] - g_plain[1]) <= 1e-9 * abs(g_plain[1])
    print(f"{args.steps} steps of {POINTS} points, segments of {SEGMENT} "
          f"(primal {statistics.median(primal):.3f} s)")
    print("| gradient | peak traced memory | time |")
    print("|---|---|---|")
    print(f"| every step taped | {mem_plain / 1e6:.2f} MB | {t_plain:.3f} s |")
    print(f"| checkpointed segments | {mem_ckpt / 1e6:.2f} MB | {t_ckpt:.3f} s |")
    print(f"| ratio | {mem_plain / mem_ckpt:.1f}x less | {t_ckpt / t_plain:.2f}x the time |")
    print()
    print("The same steps as one top-level in-place loop, adgen.grad(f, checkpoint=K):")
    print("| gradient | peak traced memory | time |")
    print("|---|---|---|")
    print(f"| every step taped | {mem_loop / 1e6:.2f} MB | {t_loop:.3f} s |")
    print(f"| checkpoint={SEGMENT} | {mem_k / 1e6:.2f} MB | {t_k:.3f} s |")
    print(f"| checkpoint=True | {mem_sq / 1e6:.2f} MB | {t_sq:.3f} s |")
    print(f"| ratio (checkpoint={SEGMENT}) | {mem_loop / mem_k:.1f}x less | "
          f"{t_k / t_loop:.2f}x the time |")
    print(f"| ratio (checkpoint=True) | {mem_loop / mem_sq:.1f}x less | "
          f"{t_sq / t_loop:.2f}x the time |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
