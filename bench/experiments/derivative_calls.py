"""Hypergradients through unrolled gradient descent: a gradient function called inside the
function differentiated (src/adgen/derivative_calls.py), against the hand-written adjoint and
JAX (``jax.grad`` of a function calling ``jax.grad``, eager and under ``jax.jit``).

    python -m bench.experiments.derivative_calls
    python -m bench.experiments.derivative_calls --steps 20 --dim 30

The validation loss after ``steps`` steps of gradient descent on a ridge-regression loss,
differentiated with respect to the learning rate and the ridge weight. Times are medians of
interleaved rounds (best of each round's repeats), in milliseconds.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

import adgen

RNG = np.random.default_rng(0)
N, NV = 50, 20
X = Y = XV = YV = np.empty(0)


def train_loss(w, lam):
    return np.mean((X @ w - Y) ** 2) + lam * np.sum(w ** 2)


STEPS = 10


def validation_loss(lr, lam):
    w = np.zeros(X.shape[1])
    for _ in range(STEPS):
        w = w - lr * adgen.grad(train_loss)(w, lam)
    return np.mean((XV @ w - YV) ** 2)


def hand(lr: float, lam: float) -> tuple[float, float]:
    """The adjoint of the unrolled descent, written out (each step is linear in w)."""
    d = X.shape[1]
    A = 2.0 * X.T @ X / N + 2.0 * lam * np.eye(d)
    b = 2.0 * X.T @ Y / N
    ws = [np.zeros(d)]
    for _ in range(STEPS):
        ws.append(ws[-1] - lr * (A @ ws[-1] - b))
    w_bar = 2.0 * XV.T @ (XV @ ws[-1] - YV) / NV
    lr_bar = lam_bar = 0.0
    for k in range(STEPS, 0, -1):
        w = ws[k - 1]
        lr_bar -= w_bar @ (A @ w - b)
        lam_bar -= lr * (w_bar @ (2.0 * w))
        w_bar = w_bar - lr * (A.T @ w_bar)
    return lr_bar, lam_bar


def _best(f: Any, args: tuple[Any, ...], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        f(*args)
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def main() -> None:
    global X, Y, XV, YV, STEPS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--dim", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args()
    STEPS = opts.steps
    X, Y = RNG.normal(size=(N, opts.dim)), RNG.normal(size=N)
    XV, YV = RNG.normal(size=(NV, opts.dim)), RNG.normal(size=NV)
    args = (0.05, 0.1)
    g = adgen.grad(validation_loss, (0, 1))
    assert np.allclose(g(*args), hand(*args), rtol=1e-8), (g(*args), hand(*args))
    runs: dict[str, Any] = {"primal": validation_loss, "adgen": g, "hand": hand}
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        jnp = jax.numpy

        def jax_validation(lr, lam):
            def jtrain(w, lam):
                return jnp.mean((X @ w - Y) ** 2) + lam * jnp.sum(w ** 2)

            w = jnp.zeros(X.shape[1])
            for _ in range(STEPS):
                w = w - lr * jax.grad(jtrain)(w, lam)
            return jnp.mean((XV @ w - YV) ** 2)

        eager, jitted = jax.grad(jax_validation, (0, 1)), jax.jit(jax.grad(jax_validation, (0, 1)))
        assert np.allclose([float(v) for v in jitted(*args)], hand(*args), rtol=1e-8)
        runs["jax eager"] = lambda *a: [v.block_until_ready() for v in eager(*a)]
        runs["jax.jit"] = lambda *a: [v.block_until_ready() for v in jitted(*a)]
    except ImportError:
        pass
    times: dict[str, list[float]] = {k: [] for k in runs}
    for f in runs.values():
        f(*args)  # compiled, traced, warmed
    for _ in range(opts.rounds):
        for k, f in runs.items():
            times[k].append(_best(f, args, 1 if k == "jax eager" else 5))
    primal = statistics.median(times["primal"])
    print(f"unrolled descent: {STEPS} steps, dim {opts.dim}; medians of {opts.rounds} rounds")
    for k, ts in times.items():
        ms = statistics.median(ts)
        print(f"  {k:10s} {ms:9.3f} ms  {ms / primal:8.1f}x the primal")


if __name__ == "__main__":
    main()
