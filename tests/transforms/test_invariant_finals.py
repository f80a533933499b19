"""Values an inner loop reads that the pullback computes again from an array's final contents
(``transforms/invariant_finals.py``): a private array whose columns are the same in every
iteration of the loop around (ADI's ``p``), read where no later write of that iteration
changes the column, is read again by the pullback instead of taped.

Gradients against central differences under both policies; the taken form (the pullback reads
``p``, the loop keeps no tape) next to look-alikes that must keep their tapes: the column
overwritten later in the iteration, a write of the read column after the read, values that
change from step to step, the loop inside another, the array an argument; as users write
them (a method, a lambda) and on the numba backend.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad

import adgen

POLICIES = ["save", "strict"]


def sweeps(u0):
    """An elimination sweep and a back substitution per step, their factors ``p`` the same
    in every step: the divisors and ``p[:, j + 1]`` are read again from ``p``."""
    n = u0.shape[0]
    u = u0.copy()
    p = np.zeros((n, n))
    for _ in range(3):
        p[:, 0] = 0.0
        for j in range(1, n):
            p[:, j] = -0.3 / (0.5 * p[:, j - 1] + 2.0)
            u[:, j] = (u[:, j] - 0.2 * u[:, j - 1]) / (0.5 * p[:, j - 1] + 2.0)
        for j in range(n - 2, -1, -1):
            u[:, j] = p[:, j + 1] * u[:, j + 1] + u[:, j]
    return np.sum(u ** 2)


def made_by_arithmetic(u0):
    """``p`` made by arithmetic (grad's single-use pullback may own such an array): read
    again, it must stay as the forward left it."""
    n = u0.shape[0]
    u = u0.copy()
    p = np.zeros((n, n)) + 0.0
    for _ in range(3):
        p[:, 0] = 0.0
        for j in range(1, n):
            p[:, j] = -0.3 / (0.5 * p[:, j - 1] + 2.0)
            u[:, j] = (u[:, j] - 0.2 * u[:, j - 1]) * (0.5 * p[:, j - 1] + 2.0)
    return np.sum(u ** 2) + np.sum(p * p)


def overwritten_later(u0):
    """Look-alike: a second sweep rewrites ``p`` after the first one's reads (ADI's column
    sweep): ``p`` does not hold them at the end."""
    n = u0.shape[0]
    u = u0.copy()
    p = np.zeros((n, n))
    for _ in range(3):
        p[:, 0] = 0.0
        for j in range(1, n):
            p[:, j] = -0.3 / (0.5 * p[:, j - 1] + 2.0)
            u[:, j] = (u[:, j] - 0.2 * u[:, j - 1]) / (0.5 * p[:, j - 1] + 2.0)
        p[:, 0] = 1.0
        for j in range(1, n):
            p[:, j] = 0.7 * p[:, j - 1] + 0.1
    return np.sum(u ** 2)


def column_written_after(u0):
    """Look-alike: the column read is written again later in the same step."""
    n = u0.shape[0]
    u = u0.copy()
    p = np.zeros((n, n))
    for _ in range(3):
        p[:, 0] = 1.0
        for j in range(1, n):
            p[:, j] = 0.5 * p[:, j - 1] + 1.0
            u[:, j] = u[:, j] * (0.5 * p[:, j - 1] + 0.5)
            p[:, j - 1] = 0.5 * p[:, j]
    return np.sum(u ** 2)


def changes_each_step(u0):
    """Look-alike: the factors depend on the step (``p[:, 0] = t``): not invariant."""
    n = u0.shape[0]
    u = u0.copy()
    p = np.zeros((n, n))
    for t in range(3):
        p[:, 0] = 0.1 * t
        for j in range(1, n):
            p[:, j] = -0.3 / (0.5 * p[:, j - 1] + 2.0)
            u[:, j] = u[:, j] / (0.5 * p[:, j - 1] + 2.0)
    return np.sum(u ** 2)


def inside_another(u0):
    """Look-alike: the step loop runs inside another loop (not once)."""
    n = u0.shape[0]
    u = u0.copy()
    p = np.zeros((n, n))
    for _ in range(2):
        for _ in range(2):
            p[:, 0] = 0.0
            for j in range(1, n):
                p[:, j] = -0.3 / (0.5 * p[:, j - 1] + 2.0)
                u[:, j] = u[:, j] / (0.5 * p[:, j - 1] + 2.0)
    return np.sum(u ** 2)


def buffer_argument(u0, p):
    """Look-alike: ``p`` is an argument (it may change between the forward and the
    pullback of a vjp)."""
    n = u0.shape[0]
    u = u0.copy()
    for _ in range(3):
        p[:, 0] = 0.0
        for j in range(1, n):
            p[:, j] = -0.3 / (0.5 * p[:, j - 1] + 2.0)
            u[:, j] = u[:, j] / (0.5 * p[:, j - 1] + 2.0)
    return np.sum(u ** 2)


class Solver:
    def __init__(self, steps):
        self.steps = steps

    def loss(self, u0):
        n = u0.shape[0]
        u = u0.copy()
        p = np.zeros((n, n))
        for _ in range(self.steps):
            p[:, 0] = 0.0
            for j in range(1, n):
                p[:, j] = -0.3 / (0.5 * p[:, j - 1] + 2.0)
                u[:, j] = u[:, j] / (0.5 * p[:, j - 1] + 2.0)
        return np.sum(u ** 2)


def _grid():
    return np.random.default_rng(7).standard_normal((5, 5))


def _parts(fn, *args):
    """The generated forward and pullback, without their comments (which quote the user's
    lines)."""
    code = "\n".join(line for line in adgen.source(fn, *args).splitlines()
                     if not line.lstrip().startswith("#"))
    forward, pullback = code.split("_pullback(")
    return forward, pullback


LOOK_ALIKES = [overwritten_later, column_written_after, changes_each_step, inside_another]


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", [sweeps, made_by_arithmetic] + LOOK_ALIKES,
                         ids=lambda f: f.__name__)
def test_gradients(fn, mutation):
    check_grad(fn, (_grid(),), mutation=mutation)


@pytest.mark.parametrize("mutation", POLICIES)
def test_buffer_argument(mutation):
    check_grad(buffer_argument, (_grid(), np.zeros((5, 5))), mutation=mutation)


def test_sweeps_read_p_again():
    forward, pullback = _parts(sweeps, _grid())
    # both inner loops: no tape, no copy of p's columns; the pullback reads p
    assert "tape" not in forward and "copy_when_read" not in forward, forward
    assert re.search(r"0\.5 \* p\[:, j\w* - 1\] \+ 2\.0", pullback), pullback
    assert re.search(r"= p\[:, j\w* \+ 1\]", pullback), pullback
    assert "reversed(range(" in pullback, pullback  # the stepped range walked again


@pytest.mark.parametrize("fn", LOOK_ALIKES, ids=lambda f: f.__name__)
def test_look_alikes_keep_their_tapes(fn):
    forward, pullback = _parts(fn, _grid())
    assert "tape" in forward, forward
    assert "p[" not in pullback, pullback


def test_a_method_and_a_lambda():
    s = Solver(3)
    x = _grid()
    assert "p[" in _parts(s.loss, x)[1]
    check_grad(s.loss, (x,))
    f = lambda x: sweeps(2.0 * x)  # noqa: E731 - a lambda, as users write one
    check_grad(f, (x,))


def test_a_pullback_run_twice():
    """The pullback reads ``p`` and changes nothing: a vjp's pullback gives the same twice."""
    x = _grid()
    _, pullback = adgen.vjp(sweeps, x)
    first = pullback(1.0)[0].copy()
    assert_grad_close(pullback(1.0)[0], first, rtol=0, atol=0)


def test_sweeps_on_the_numba_backend():
    pytest.importorskip("numba")
    x = _grid()
    g = adgen.grad(sweeps)(x)
    assert_grad_close(adgen.grad(sweeps, backend="numba")(x), g, rtol=1e-12, atol=1e-14)
