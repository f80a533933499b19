"""Forward mode over a loop of Python floats: ``adgen.jvp`` against hand-written dual numbers
and ``jax.jvp`` (eager, and under ``jax.jit``).

    python -m bench.experiments.forward_scalar_loop
    python -m bench.experiments.forward_scalar_loop --steps 1000 --rounds 9

The workload is a damped scalar recurrence written as scientists write one (``y = y * a + 0.1 *
math.sin(y)``; ``s += y * y / (1 + i)``), differentiated in ``x`` and ``a``. Rows: the primal;
``adgen.jvp`` (the entry point: its checks, the compiled code's lookup, the jvp code); the jvp
code alone (``jvp code``, called directly with the tangents adgen.jvp would give it); the same
function written by hand with dual numbers (a value and a tangent per variable); ``jax.jvp``
of the jax rewrite (``jnp.sin``), eager and jitted. Times are medians over interleaved rounds
of each round's best of several calls, in microseconds, and the ratio to the dual numbers.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable
from typing import Any

import adgen

STEPS = 200


def scalar_loop(x, a):
    s = 0.0
    y = x
    for i in range(STEPS):
        y = y * a + 0.1 * math.sin(y)
        s = s + y * y / (1.0 + i)
    return s


def dual_numbers(x, a, x_dot, a_dot):
    """scalar_loop with a tangent beside each value, by hand."""
    s, s_dot = 0.0, 0.0
    y, y_dot = x, x_dot
    for i in range(STEPS):
        y, y_dot = (y * a + 0.1 * math.sin(y),
                    y_dot * a + y * a_dot + 0.1 * math.cos(y) * y_dot)
        s, s_dot = s + y * y / (1.0 + i), s_dot + 2.0 * y * y_dot / (1.0 + i)
    return s, s_dot


def _best(f: Callable[..., Any], args: tuple[Any, ...], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        f(*args)
        best = min(best, time.perf_counter() - start)
    return best * 1e6


def runs(steps: int, jax_rows: bool = True
         ) -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    """The rows: name -> (function, arguments); each checked against the dual numbers."""
    global STEPS
    STEPS = steps
    from adgen.directional import tangent_compiled
    from adgen.rules.helpers import given_tangent

    primals, tangents = (0.3, 0.9), (1.0, 0.5)
    expected = dual_numbers(*primals, *tangents)
    got = adgen.jvp(scalar_loop, primals, tangents)
    assert math.isclose(got[1], expected[1], rel_tol=1e-12), (got, expected)
    compiled, _ = tangent_compiled(scalar_loop)
    # (the tangents adgen.jvp hands it: a Python float's is a float, ieee_tangents)
    given = tuple(float(given_tangent(t, x)) for t, x in zip(tangents, primals))
    out: dict[str, tuple[Callable[..., Any], tuple[Any, ...]]] = {
        "primal": (scalar_loop, primals),
        "adgen.jvp": (lambda: adgen.jvp(scalar_loop, primals, tangents), ()),
        "jvp code": (compiled.jvp, primals + given),
        "dual numbers": (dual_numbers, primals + tangents),
    }
    try:
        if not jax_rows:
            return out
        import jax
    except ImportError:
        return out
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def jax_loop(x, a):
        s = 0.0
        y = x
        for i in range(STEPS):
            y = y * a + 0.1 * jnp.sin(y)
            s = s + y * y / (1.0 + i)
        return s

    def eager(x, a, xd, ad):
        return [v.block_until_ready() for v in jax.jvp(jax_loop, (x, a), (xd, ad))]

    jitted = jax.jit(lambda x, a, xd, ad: jax.jvp(jax_loop, (x, a), (xd, ad)))
    assert math.isclose(float(jitted(*primals, *tangents)[1]), expected[1], rel_tol=1e-9)
    out["jax.jvp eager"] = (eager, primals + tangents)
    out["jax.jvp jit"] = (lambda *a: [v.block_until_ready() for v in jitted(*a)],
                          primals + tangents)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--no-jax", action="store_true", help="leave jax's rows out")
    opts = parser.parse_args(argv)
    table = runs(opts.steps, jax_rows=not opts.no_jax)
    times: dict[str, list[float]] = {k: [] for k in table}
    for f, args in table.values():
        f(*args)  # compiled, traced, warmed
    for _ in range(opts.rounds):
        for k, (f, args) in table.items():
            times[k].append(_best(f, args, 1 if k == "jax.jvp eager" else opts.repeats))
    dual = statistics.median(times["dual numbers"])
    print(f"jvp of a loop of {opts.steps} Python-float steps; medians of {opts.rounds} rounds")
    for k, ts in times.items():
        us = statistics.median(ts)
        print(f"  {k:14s} {us:10.1f} us  {us / dual:7.2f}x the dual numbers")


if __name__ == "__main__":
    main()
