"""Generated time-stepping programs around a factor array ``p`` (analyses.iteration_invariants):
where each step writes ``p``'s columns, and where it reads them (before or after the step
writes them, at offsets around the counter), vary at random; every program's gradient is
checked against central differences, whether its inner tapes were kept once or not, and
the sample holds programs of both kinds.
"""

from __future__ import annotations

import linecache
import random

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

STEPS = 3
N = 6
SEEDS = range(60)


def _program(seed: int) -> tuple[str, str]:
    """The source of one program and its function's name."""
    rng = random.Random(seed)
    first = rng.choice(["p[1:n - 1, 0] = 0.25", "p[1:n - 1, 0] = 0.25",
                        "p[1:n - 1, 0] = 0.1 * step", "", "p[1:n - 1, 1] = 0.5"])
    start = rng.choice([1, 2])
    stop = rng.choice(["n - 1", "n - 2"])
    read = rng.choice([-1, -1, -2, 0, 1])
    write_first = rng.random() < 0.5
    back_step = rng.choice([-1, 1])
    back_read = rng.choice([0, 0, 1, -1])
    write = "p[1:n - 1, j] = -0.5 / (0.5 * p[1:n - 1, j - 1] + 2.0)"
    use = f"u[1:n - 1, j] = u[1:n - 1, j] / (0.5 * p[1:n - 1, j + {read}] + 2.0)"
    body = [write, use] if write_first else [use, write]
    back = (f"range({stop} - 1, {start} - 1, -1)" if back_step < 0
            else f"range({start}, {stop})")
    name = f"program_{seed}"
    lines = [
        f"def {name}(u0):",
        "    n = u0.shape[0]",
        "    u = u0.copy()",
        "    p = np.ones((n, n))",
        f"    for step in range({STEPS}):",
        f"        {first}" if first else "        pass",
        f"        for j in range({start}, {stop}):",
        f"            {body[0]}",
        f"            {body[1]}",
        f"        for j in {back}:",
        f"            u[1:n - 1, j] = p[1:n - 1, j + {back_read}] * u[1:n - 1, j + 1] + "
        "u[1:n - 1, j]",
        "    return np.sum(u ** 2)",
    ]
    return "\n".join(lines) + "\n", name


def _function(seed: int):
    source, name = _program(seed)
    filename = f"<iteration invariants program {seed}>"
    # the compiler reads the function's source through linecache
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"np": np}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - a generated test program
    return namespace[name]


def _kept_once(fn) -> bool:
    """No row of the forward holds an inner loop's tape."""
    forward = adgen.source(fn, _grid()).split("_pullback(")[0]
    return not any(".append(" in line and "tape" in line.split(".append(")[1]
                   for line in forward.splitlines())


def _grid(seed: int = 0):
    return np.random.default_rng(seed).standard_normal((N, N))


@pytest.mark.parametrize("seed", SEEDS)
def test_gradient(seed):
    fn = _function(seed)
    try:
        check_grad(fn, (_grid(seed),), 0)
    except IndexError:
        pytest.skip("the program indexes out of its array")


def test_both_kinds_are_generated():
    kinds = {_kept_once(_function(seed)) for seed in SEEDS}
    assert kinds == {True, False}, kinds
