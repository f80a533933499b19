"""Why allocate-then-fill loses linearity in a long-lived process: the loop tape's locality.

    python -m bench.experiments.tape_locality          # a fresh heap
    python -m bench.experiments.tape_locality --frag   # a fragmented heap (3M small objects,
                                                       # two thirds freed at random)

Five hand-written versions of fill's gradient (``h[i] = np.tanh(x[i] * w)``), timed per
element at n = 1000 and n = 16000 (medians of 7 interleaved repetitions, process CPU time):

- ``tuple3``: the tape adgen gave every loop before typed tapes: one tuple
  ``(i, x[i], h[i])`` per iteration on a list (what it still gives a loop inside a loop, or
  one that records arrays);
- ``tuple2``: the same without ``x[i]`` (re-read in the reverse loop);
- ``column``: ``h[i]`` recorded in a preallocated float64 array, ``x[i]`` re-read;
- ``ints``: only the index recorded, both values re-read;
- ``hand``: the loop-keeping hand adjoint of bench/workloads/fill.py.

On a fragmented heap (as after JAX and the other peers ran in bench.run's process) the tuple
tapes grow about 1.3-1.9x per element from n = 1000 to 16000 while the other three stay flat
(two runs on 2026-11-23: tuple3 1.81x and 1.38x, tuple2 1.92x and 1.33x, column 0.96x and
1.06x, ints 0.99x and 0.98x, hand 0.84x and 0.99x; on a fresh heap all are flat): the
retained per-iteration objects cost locality, however few of them each tuple holds.

What adgen does since: a counted loop that records only float64 numbers and ints keeps them
in typed columns (docs/how-it-works.md, "typed tape"), the ``column`` shape here; the full
benchmark run measures allocate-then-fill flat again (docs/performance.md).
"""

from __future__ import annotations

import random
import statistics
import sys
import time

import numpy as np

from bench.workloads.fill import fill_hand_loop


def tuple3(x, w):
    n = len(x)
    h = np.empty(n)
    tape = []
    for i in range(n):
        t1 = x[i]
        t3 = np.tanh(t1 * w)
        h[i] = t3
        tape.append((i, t1, t3))
    h_bar = 2.0 * h
    w_bar = 0.0
    x_bar = np.zeros(n)
    for i, t1, t3 in reversed(tape):
        t2_bar = h_bar[i] * (1.0 - t3 * t3)
        h_bar[i] = 0.0
        w_bar = w_bar + t2_bar * t1
        x_bar[i] += t2_bar * w
    return x_bar, w_bar


def tuple2(x, w):
    n = len(x)
    h = np.empty(n)
    tape = []
    for i in range(n):
        t3 = np.tanh(x[i] * w)
        h[i] = t3
        tape.append((i, t3))
    h_bar = 2.0 * h
    w_bar = 0.0
    x_bar = np.zeros(n)
    for i, t3 in reversed(tape):
        t1 = x[i]
        t2_bar = h_bar[i] * (1.0 - t3 * t3)
        h_bar[i] = 0.0
        w_bar = w_bar + t2_bar * t1
        x_bar[i] += t2_bar * w
    return x_bar, w_bar


def column(x, w):
    n = len(x)
    h = np.empty(n)
    c3 = np.empty(n)
    for i in range(n):
        t3 = np.tanh(x[i] * w)
        h[i] = t3
        c3[i] = t3
    h_bar = 2.0 * h
    w_bar = 0.0
    x_bar = np.zeros(n)
    for i in reversed(range(n)):
        t1 = x[i]
        t3 = c3[i]
        t2_bar = h_bar[i] * (1.0 - t3 * t3)
        h_bar[i] = 0.0
        w_bar = w_bar + t2_bar * t1
        x_bar[i] += t2_bar * w
    return x_bar, w_bar


def ints(x, w):
    n = len(x)
    h = np.empty(n)
    tape = []
    for i in range(n):
        h[i] = np.tanh(x[i] * w)
        tape.append(i)
    h_bar = 2.0 * h
    w_bar = 0.0
    x_bar = np.zeros(n)
    for i in reversed(tape):
        t1 = x[i]
        t3 = h[i]
        t2_bar = h_bar[i] * (1.0 - t3 * t3)
        h_bar[i] = 0.0
        w_bar = w_bar + t2_bar * t1
        x_bar[i] += t2_bar * w
    return x_bar, w_bar


def hand(x, w):
    return fill_hand_loop(x, w)


def main() -> None:
    keep = None
    if "--frag" in sys.argv:
        junk = [(i, float(i), str(i)) for i in range(3_000_000)]
        random.seed(0)
        random.shuffle(junk)
        keep = junk[::3]
        del junk
    versions = [tuple3, tuple2, column, ints, hand]
    sizes = (1000, 16000)
    x0 = np.linspace(-1.0, 1.0, 7)
    want = hand(x0, 0.5)
    for f in versions:  # all five compute the same gradient
        np.testing.assert_allclose(f(x0, 0.5)[0], want[0], rtol=1e-12)
    samples: dict[str, dict[int, list[float]]] = {f.__name__: {n: [] for n in sizes}
                                                  for f in versions}
    for _ in range(7):
        for n in sizes:
            x = np.linspace(-1.0, 1.0, n)
            for f in versions:
                start = time.process_time()
                for _ in range(5):
                    f(x, 0.5)
                samples[f.__name__][n].append((time.process_time() - start) / 5 / n * 1e9)
    heap = "fragmented" if keep is not None else "fresh"
    for name, by_n in samples.items():
        a, b = (statistics.median(by_n[n]) for n in sizes)
        print(f"{heap} heap  {name:7s} {a:6.0f} -> {b:6.0f} ns/elt  growth {b / a:.2f}")


if __name__ == "__main__":
    main()
