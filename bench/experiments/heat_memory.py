"""Tape memory at scale: the heat equation at 2,000 points x 1,000 steps (issue 15).

    python -m bench.experiments.heat_memory                  # 2000 points, 1000 steps
    python -m bench.experiments.heat_memory --points 200 --steps 100

Both forms of ``bench/workloads/heat.py``: in place (``u[1:-1] += alpha * lap``, wrt u0 and
alpha: the laplacians are needed for alpha's gradient, 8 bytes a point a step) and functional
(``u = np.concatenate(...)``, wrt u0: every step is linear, an adjoint needs no value of
the forward pass). Prints adgen's tape (what its forward pass keeps, ``bench.memory``) and
the tracemalloc peaks of adgen's gradient and of the loop-keeping hand adjoint, after
checking adgen's gradient against the hand one.
"""

from __future__ import annotations

import argparse

import numpy as np

from bench import memory
from bench.check import RTOL, relative_error
from bench.report import fmt_bytes
from bench.workloads import heat


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=1000)
    options = parser.parse_args(argv)
    import adgen

    heat.STEPS = options.steps  # the workload's functions read the step count from here
    x = np.linspace(0.0, 1.0, options.points)
    args = (np.exp(-50.0 * (x - 0.5) ** 2), 0.2)
    print(f"{options.points} points, {options.steps} steps")
    print("| form | adgen tape | adgen peak | hand-loop peak | tape / hand peak |")
    print("|---|---|---|---|---|")
    cases = (("in place, wrt u0 and alpha", heat.heat, heat.heat_hand_loop, (0, 1)),
             ("functional, wrt u0", heat.heat_functional, heat.heat_functional_hand, (0,)))
    for label, primal, hand, argnums in cases:
        grad = adgen.grad(primal, argnums=argnums)
        got = grad(*args)
        error = relative_error(got if isinstance(got, tuple) else (got,), hand(*args))
        if not error <= RTOL:
            raise SystemExit(f"{label}: adgen's gradient is wrong (max rel. error {error:.1e})")
        tape = memory.adgen_tape(primal, args, argnums)
        hand_peak = memory.peak_bytes(lambda: hand(*args))
        adgen_peak = memory.peak_bytes(lambda: grad(*args))
        print(f"| {label} | {fmt_bytes(tape.held)} | {fmt_bytes(adgen_peak)} | "
              f"{fmt_bytes(hand_peak)} | {tape.held / hand_peak:.3g}× |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
