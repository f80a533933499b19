"""Memory of the loop workloads alone: adgen's gradient against the loop-keeping hand adjoint
(issue 15's "the tape at most 1.5x what the hand adjoint keeps").

    python -m bench.experiments.loop_memory                       # every loop workload
    python -m bench.experiments.loop_memory --workloads conv,polybench_stencils

For each loop workload: adgen's gradient is checked against the hand gradient, then the
tracemalloc peaks of one warm call of adgen's gradient and of the hand loop
(``bench.memory.peak_bytes``, what ``bench.run`` measures), adgen's tape and guard copies
(``bench.memory.adgen_tape``), and the CPU time of both (median of 7 batches of at least 50
ms; a ratio moves with the machine's load, compare code in one process for a decision).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from bench import memory
from bench.check import RTOL, relative_error
from bench.report import fmt_bytes
from bench.workloads import LOOP, MODULES, load


def _cpu(call: Callable[[], Any]) -> float:
    call()
    times = []
    for _ in range(7):
        count, start = 0, time.process_time()
        while True:
            call()
            count += 1
            if time.process_time() - start > 0.05:
                break
        times.append((time.process_time() - start) / count)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default=",".join(MODULES),
                        help="comma-separated modules, e.g. conv,polybench_stencils")
    options = parser.parse_args(argv)
    import adgen

    print("| workload | hand loop | adgen | ×hand loop | adgen tape | guard copies | "
          "time ×hand loop |")
    print("|---|---|---|---|---|---|---|")
    for w in load(options.workloads.split(",")):
        if w.kind != LOOP or w.hand_loop is None:
            continue
        args = w.make_args(np.random.default_rng(0))
        grad = adgen.grad(w.primal, argnums=w.argnums)
        got = grad(*args)
        error = relative_error(got if isinstance(got, tuple) else (got,), w.hand(*args))
        if not error <= RTOL:
            print(f"| {w.name} | WRONG (max rel. error {error:.1e}) |")
            continue
        hand = memory.peak_bytes(lambda: w.hand_loop(*args))
        # warm: the second call of a signature builds grad's fast path (fast_gradient,
        # about 0.3 MB traced), which bench.run's memory, measured after the timing, skips
        for _ in range(3):
            grad(*args)
        mine = memory.peak_bytes(lambda: grad(*args))
        tape = memory.adgen_tape(w.primal, args, w.argnums)
        ratio = _cpu(lambda: grad(*args)) / _cpu(lambda: w.hand_loop(*args))
        print(f"| {w.name} | {fmt_bytes(hand)} | {fmt_bytes(mine)} | {mine / hand:.2f}× | "
              f"{fmt_bytes(tape.held)} | {fmt_bytes(tape.guard_saves)} | {ratio:.2f}× |",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
