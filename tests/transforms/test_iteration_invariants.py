"""An inner loop's tape the same in every iteration of the loop around it is kept once
(analyses.iteration_invariants, ``Pullback.tapes_kept_once``): ADI's elimination factors
``p``, rebuilt from constants in every time step, give the same divisors and the same copies
of ``p``'s columns in every step.

Gradients against central differences under both policies, the tape kept once where the
rules hold, and look-alikes whose inner tapes differ from step to step (they must stay in
the outer loop's rows, or the gradient is wrong): a factor that depends on the step, a
column read before this step writes it, a factor that depends on the argument, a range that
grows with the step, a column written only before the time loop; as users write them (a
method, a lambda).
"""

from __future__ import annotations

import importlib
import re

import numpy as np
import pytest
from adgen.transforms.analyses import iteration_invariants
from gradcheck import check_grad

import adgen

POLICIES = ["save", "strict"]
STEPS = 3


def sweeps(u0):
    """ADI's column sweep: factors p from constants, a solve per step."""
    n = u0.shape[0]
    u = u0.copy()
    p = np.zeros((n, n))
    q = np.zeros((n, n))
    for _ in range(STEPS):
        p[1:n - 1, 0] = 0.0
        q[1:n - 1, 0] = 1.0
        for j in range(1, n - 1):
            p[1:n - 1, j] = -0.5 / (0.5 * p[1:n - 1, j - 1] + 2.0)
            q[1:n - 1, j] = (u[j, 1:n - 1] - 0.5 * q[1:n - 1, j - 1]) / (
                0.5 * p[1:n - 1, j - 1] + 2.0)
        for j in range(n - 2, 0, -1):
            u[1:n - 1, j] = p[1:n - 1, j] * u[1:n - 1, j + 1] + q[1:n - 1, j]
    return np.sum(u ** 2)


def step_dependent(u0):
    """Look-alike: the first column depends on the step."""
    n = u0.shape[0]
    u = u0.copy()
    p = np.zeros((n, n))
    for t in range(STEPS):
        p[1:n - 1, 0] = 0.1 * t
        for j in range(1, n - 1):
            p[1:n - 1, j] = -0.5 / (0.5 * p[1:n - 1, j - 1] + 2.0)
            u[1:n - 1, j] = u[1:n - 1, j] / (0.5 * p[1:n - 1, j - 1] + 2.0)
    return np.sum(u ** 2)


def read_ahead(u0):
    """Look-alike: column j + 1 is read before this step writes it (the last step's)."""
    n = u0.shape[0]
    u = u0.copy()
    p = np.ones((n, n))
    for _ in range(STEPS):
        p[1:n - 1, 0] = 0.0
        for j in range(1, n - 1):
            p[1:n - 1, j] = -0.5 / (0.5 * p[1:n - 1, j + 1] + 2.0)
            u[1:n - 1, j] = u[1:n - 1, j] / (0.5 * p[1:n - 1, j + 1] + 2.0)
    return np.sum(u ** 2)


def first_column_outside(u0):
    """Look-alike: column 0 written before the time loop only (the same values, but the
    rules do not follow writes outside the loop)."""
    n = u0.shape[0]
    u = u0.copy()
    p = np.zeros((n, n))
    p[1:n - 1, 0] = 0.25
    for _ in range(STEPS):
        for j in range(1, n - 1):
            p[1:n - 1, j] = -0.5 / (0.5 * p[1:n - 1, j - 1] + 2.0)
            u[1:n - 1, j] = u[1:n - 1, j] / (0.5 * p[1:n - 1, j - 1] + 2.0)
    return np.sum(u ** 2)


def argument_dependent(u0):
    """Look-alike: the factors depend on the argument (they carry a derivative)."""
    n = u0.shape[0]
    u = u0.copy()
    p = np.zeros((n, n))
    for _ in range(STEPS):
        p[1:n - 1, 0] = u[1:n - 1, 0] * 0.1
        for j in range(1, n - 1):
            p[1:n - 1, j] = -0.5 / (0.5 * p[1:n - 1, j - 1] + 2.0)
            u[1:n - 1, j] = u[1:n - 1, j] / (0.5 * p[1:n - 1, j - 1] + 2.0)
    return np.sum(u ** 2)


def growing_range(u0):
    """Look-alike: the inner loop's range grows with the step."""
    n = u0.shape[0]
    u = u0.copy()
    p = np.zeros((n, n))
    for t in range(STEPS):
        p[1:n - 1, 0] = 0.0
        for j in range(1, min(n - 1, t + 3)):
            p[1:n - 1, j] = -0.5 / (0.5 * p[1:n - 1, j - 1] + 2.0)
            u[1:n - 1, j] = u[1:n - 1, j] / (0.5 * p[1:n - 1, j - 1] + 2.0)
    return np.sum(u ** 2)


def scaled_later(u0):
    """p is scaled in place after the time loop, after the copies of its columns the
    pullback reads were taken."""
    n = u0.shape[0]
    u = u0.copy()
    p = np.zeros((n, n))
    for _ in range(STEPS):
        p[1:n - 1, 0] = 0.0
        for j in range(1, n - 1):
            p[1:n - 1, j] = -0.5 / (0.5 * p[1:n - 1, j - 1] + 2.0)
        for j in range(n - 2, 0, -1):
            u[1:n - 1, j] = p[1:n - 1, j] * u[1:n - 1, j + 1] + u[1:n - 1, j]
    p *= 2.0
    return np.sum(u ** 2) + np.sum(p)


def alias_written(u0):
    """Look-alike: an array made in the loop from constants is written in place with the
    step's number after another name took it."""
    n = u0.shape[0]
    u = u0.copy()
    c = np.linspace(1.0, 2.0, n)
    s = np.zeros((STEPS, n))
    for step in range(STEPS):
        for j in range(n):
            w = c * 2.0
            t = w
            w[0] = 0.5 * step
            s[step, j] = t @ u[j]
            w[1] = 7.0
            u[j] = u[j] * 0.9
    return np.sum(s ** 2)


class Solver:
    def __init__(self, scale):
        self.scale = scale

    def loss(self, u0):
        """The sweeps in a method (a callee compiles without the argument's signature, so
        they are written out here)."""
        n = u0.shape[0]
        u = u0.copy()
        p = np.zeros((n, n))
        q = np.zeros((n, n))
        for _ in range(STEPS):
            p[1:n - 1, 0] = 0.0
            q[1:n - 1, 0] = 1.0
            for j in range(1, n - 1):
                p[1:n - 1, j] = -0.5 / (0.5 * p[1:n - 1, j - 1] + 2.0)
                q[1:n - 1, j] = (u[j, 1:n - 1] - 0.5 * q[1:n - 1, j - 1]) / (
                    0.5 * p[1:n - 1, j - 1] + 2.0)
            for j in range(n - 2, 0, -1):
                u[1:n - 1, j] = p[1:n - 1, j] * u[1:n - 1, j + 1] + q[1:n - 1, j]
        return self.scale * np.sum(u ** 2)


LOOK_ALIKES = [step_dependent, read_ahead, first_column_outside, argument_dependent,
               growing_range, scaled_later, alias_written]


def _grid(n=6, seed=0):
    return np.random.default_rng(seed).standard_normal((n, n))


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", [sweeps] + LOOK_ALIKES)
def test_gradients(fn, mutation):
    check_grad(fn, (_grid(),), 0, mutation=mutation)


def test_a_method_and_a_lambda():
    u0 = _grid(5, 1)
    check_grad(Solver(0.5).loss, (u0,), 0)
    check_grad(lambda u0: 2.0 * sweeps(u0 * 1.0), (u0,), 0)


def _outer_row(fn) -> str:
    """The time loop's row in the forward ('' when it records none)."""
    forward = adgen.source(fn, _grid()).split("_pullback(")[0]
    # a row of tapes (or a row of one tape, unwrapped)
    rows = [line.strip() for line in forward.splitlines()
            if re.search(r"\.append\(.*\btape\d", line)]
    return "\n".join(rows)


def test_the_inner_tapes_are_kept_once():
    assert _outer_row(sweeps) == "", adgen.source(sweeps, _grid())
    assert _outer_row(Solver(1.0).loss) == ""


@pytest.mark.parametrize("fn", [step_dependent, read_ahead, first_column_outside,
                                growing_range, alias_written])
def test_look_alikes_keep_a_tape_per_step(fn):
    assert _outer_row(fn) != "", adgen.source(fn, _grid())


def test_the_numba_backend_lays_out_a_tape_kept_once():
    pytest.importorskip("numba")
    u0 = _grid(6, 2)
    expected = adgen.grad(sweeps)(u0)
    np.testing.assert_allclose(adgen.grad(sweeps, backend="numba")(u0), expected,
                               rtol=1e-12, atol=1e-14)
    check_grad(sweeps, (u0,), 0)


SWEEP = '''
        p[1:n - 1, 0] = 0.0
        for j in range(1, n - 1):
            p[1:n - 1, j] = -0.5 / (0.3 * p[1:n - 1, j - 1] + {d})
            q[1:n - 1, j] = (1.4 * u[j, 1:n - 1] - q[1:n - 1, j - 1]) / (0.3 * p[1:n - 1, j - 1] + {d})
        for j in range(n - 2, 0, -1):
            u[1:n - 1, j] = p[1:n - 1, j] * u[1:n - 1, j + 1] + q[1:n - 1, j]
'''


def _sweeps_solver(tmp_path, sweeps: int):
    """A solver of ``sweeps`` sweeps of ADI's kind in one time loop, written out in its file."""
    body = "".join(SWEEP.format(d=f"{2.0 + k}") for k in range(sweeps))
    name = f"many_sweeps_{sweeps}"
    (tmp_path / f"{name}.py").write_text(
        "import numpy as np\n\n\ndef solve(u0):\n    n = u0.shape[0]\n    u = u0.copy()\n"
        "    p = np.zeros((n, n))\n    q = np.zeros((n, n))\n    for _ in range(2):"
        + body + "    return np.sum(u ** 2)\n")
    return importlib.import_module(name).solve


def test_many_sweeps_in_one_time_loop_build_in_quadratic_work(tmp_path, monkeypatch):
    """The joins of the columns written (``analyses.iteration_invariants``) grew as the cube
    of the sweeps in one time loop: the first gradient of 20 sweeps took 13.5 s of CPU to
    build (0.8 s for 10 sweeps). Counted, not timed (the time is bench/'s): the forms the
    joins compare and key grow at most as the square of the sweeps (4x from 10 sweeps to
    20; the cube was 8x). The gradient of 20 sweeps is right and keeps its tapes once."""
    monkeypatch.syspath_prepend(str(tmp_path))
    work = {"n": 0}
    for name in ("_key", "_at_least"):
        fn = getattr(iteration_invariants, name)

        def counted(*args, _fn=fn):
            work["n"] += 1
            return _fn(*args)
        monkeypatch.setattr(iteration_invariants, name, counted)
    u0 = _grid(5, 3)
    made = []
    for sweeps in (10, 20):
        solve = _sweeps_solver(tmp_path, sweeps)
        work["n"] = 0
        adgen.grad(solve)(u0)
        made.append(work["n"])
    assert made[0] > 0 and made[1] <= 4.5 * made[0], made
    assert _outer_row(solve) == ""
    for mutation in POLICIES:
        check_grad(solve, (u0,), 0, mutation=mutation)
