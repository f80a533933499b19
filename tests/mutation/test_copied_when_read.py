"""A part of an array read in one loop and written again by a later phase (another loop
inside the same enclosing loop, as ADI's sweeps per time step): under "save" it is copied
where the pullback reads it and the writes carry no guard. Writes in the reading loop itself,
or once after every loop, keep their guard. Gradients against central differences of the
plain function, under both policies."""

import sys
from pathlib import Path

import numpy as np
import pytest
from harness import adgen_grad, check_gradient, check_value, fresh, line_of

import adgen
from adgen.errors import MutationError

# Durbin's recursion as the benchmark times it: z[:k] reads y[:k] (and its reverse), then
# y[:k] = z[:k] overwrites it, every iteration
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.workloads.polybench_linalg import durbin  # noqa: E402


def sweeps(u0):
    n = u0.shape[0]
    u = u0.copy()
    p = np.zeros((n, n))
    for _ in range(3):
        for j in range(1, n):
            p[:, j] = np.tanh(p[:, j - 1] + u[:, j])  # a phase filling p again each step
        for j in range(n - 1, 0, -1):
            u[:, j - 1] = p[:, j] * u[:, j] + 0.1 * u[:, j - 1]  # reads p[:, j]
    return np.sum(u ** 2)


def scaled_once_after(x):
    x = x.copy()
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.sum(x[i] ** 3)
    x[0] *= 2.0  # one write after the loop: a guard, not a copy of every row
    return s + np.sum(x ** 2)


def test_a_part_a_later_phase_overwrites_is_copied_when_read():
    args = (np.random.default_rng(0).random((5, 5)) * 0.5,)
    check_gradient(sweeps, args, (0,), adgen_grad("save"))
    check_value(sweeps, args, (0,), "save")
    src = adgen.source(sweeps, *args).split("_pullback")[0]
    assert "copy_when_read(" in src and "before_write(p," not in src
    sites = adgen.explain(sweeps, *fresh(args), file=None)
    at = line_of(sweeps, "p[:, j] = np.tanh(p[:, j - 1] + u[:, j])")
    assert any(s.line == at and s.decision == "guarded-save" and s.bytes_saved
               for s in sites), sites
    with pytest.raises(MutationError):
        adgen.grad(sweeps, mutation="strict")(*fresh(args))


def test_a_write_once_after_the_loop_keeps_its_guard():
    args = (np.random.default_rng(1).random((4, 3)),)
    check_gradient(scaled_once_after, args, (0,), adgen_grad("save"))
    src = adgen.source(scaled_once_after, *args)
    assert "copy_when_read(" not in src and "before_write(" in src


def rows_read_then_part_written(x):
    x = x.copy()
    s = 0.0
    for k in range(1, x.shape[0]):
        t = x[:k]
        s = s + np.sum(t ** 3)
        x[:k - 1] = 0.5 * x[:k - 1]  # a part of what was read: another set of elements
    return s + np.sum(x ** 2)


def test_a_part_overwritten_right_after_its_read_is_copied_when_read():
    args = (0.6 ** np.arange(1, 9) + 0.01 * np.random.default_rng(2).standard_normal(8),)
    check_gradient(durbin, args, (0,), adgen_grad("save"))
    src = adgen.source(durbin, *args).split("_pullback")[0]
    # y[:k] and y[:k][::-1]: one copy, the reversed one a view of it (shared_copies)
    assert src.count("copy_when_read(") == 1 and "before_write(" not in src
    assert "[::-1]\n" in src.split("copy_when_read(")[1], src
    with pytest.raises(MutationError):
        adgen.grad(durbin, mutation="strict")(*fresh(args))


def test_a_part_of_the_part_read_is_not_the_part_read():
    args = (np.random.default_rng(3).random(6),)
    check_gradient(rows_read_then_part_written, args, (0,), adgen_grad("save"))
    src = adgen.source(rows_read_then_part_written, *args)
    assert "copy_when_read(" not in src and "before_write(" in src
