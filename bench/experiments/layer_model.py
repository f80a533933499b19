"""What a model object with many layers costs a gradient (issue 15, session 22): the
``layers`` workload (``bench/workloads/layers.py``: ``Model.step(u, t)`` writes ``u`` in place
and calls ``self.rhs(u, t)``, one step per layer) at several layer counts, the gradient's time
over the primal's and the hand gradient's, and the share of a gradient's profile spent in the
records of the object's slots around the call (``items_at``, ``shadows_to_items``,
``items_to_shadows``, ``entry_items``) and in its zero adjoints (``zeros_like``).

    python -m bench.experiments.layer_model                    # 25, 50, 100, 200 layers
    python -m bench.experiments.layer_model --layers 100 --rounds 9

Times are CPU times (this process's: the load of a shared machine inflates them less than
the clock), the minimum of ``--rounds`` calls (mutation="save"; "strict" refuses the workload:
``u += DT * self.rhs(u, t)`` overwrites what tanh's pullback reads).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from typing import Any

import numpy as np

import adgen
from bench.workloads import layers

#: the functions whose own time is the slots' record, by module file and name
RECORD = {("item_shadows.py", "items_at"), ("item_shadows.py", "_record"),
          ("item_shadows.py", "_object_record"),
          ("item_shadows.py", "_to_shadows"),
          ("item_shadows.py", "_from_shadows"), ("item_shadows.py", "_slots"),
          ("item_shadows.py", "_is_object"), ("item_shadows.py", "<genexpr>"),
          ("item_shadows.py", "items_to_shadows"), ("item_shadows.py", "shadows_to_items"),
          ("shadow_memory.py", "entry_items")}
ZEROS = {("adjoints.py", "zeros_like"), ("adjoints.py", "_zero_items"),
         ("adjoints.py", "<listcomp>"), ("adjoints.py", "<dictcomp>"),
         ("adjoints.py", "_holds_items")}


def _best(f: Any, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.process_time()
        f()
        best = min(best, time.process_time() - t0)
    return best


def shares(g: Any, args: tuple[Any, ...], calls: int = 3) -> tuple[float, float]:
    """The share of the gradient's profiled time (own time of each function) in the slots'
    records and in zero adjoints."""
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        g(*args)
    prof.disable()
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    total = record = zeros = 0.0
    for (file, _, fn), (_, _, tottime, _, _) in stats.items():
        total += tottime
        key = (file.rsplit("/", 1)[-1], fn)
        record += tottime if key in RECORD else 0.0
        zeros += tottime if key in ZEROS else 0.0
    return record / total, zeros / total


def measure(n_layers: int, rounds: int) -> dict[str, float]:
    args = layers.make_args_for(n_layers)(np.random.default_rng(0))
    g = adgen.grad(layers.layers, argnums=(0, 1), mutation="save")
    got, want = g(*args), layers.layers_hand(*args)
    err = max(float(np.max(np.abs(a - b))) for a, b in zip(got, want))
    primal = _best(lambda: layers.layers(*args), rounds * 20)
    grad = _best(lambda: g(*args), rounds)
    hand = _best(lambda: layers.layers_hand(*args), rounds * 20)
    record, zeros = shares(g, args)
    return {"layers": n_layers, "primal_ms": primal * 1e3, "grad_ms": grad * 1e3,
            "x_primal": grad / primal, "x_hand": grad / hand, "record": record,
            "zeros": zeros, "error": err}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", default="25,50,100,200")
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args(argv)
    print("| layers | primal | gradient | x primal | x hand | slots' records | zero adjoints "
          "| max error vs hand |")
    print("|---|---|---|---|---|---|---|---|")
    for n in (int(s) for s in opts.layers.split(",")):
        r = measure(n, opts.rounds)
        print(f"| {n} | {r['primal_ms']:.2f} ms | {r['grad_ms']:.1f} ms | {r['x_primal']:.0f}x "
              f"| {r['x_hand']:.0f}x | {r['record']:.0%} | {r['zeros']:.0%} "
              f"| {r['error']:.1e} |", flush=True)


if __name__ == "__main__":
    main()
