"""A reaction-diffusion simulation written with helpers, as a scientist writes it: a time step
that updates the state in place, ``u += dt * rhs(u, D, k)``, whose right-hand side is a
helper calling further helpers (``laplacian``, ``reaction``), called in a loop.

Under ``mutation="save"`` the gradient with respect to the reaction rate was silently wrong
from the second step on (0.8597 where central differences give 0.8458; the gradient of the
initial state was right). The loop keeps a copy of the state as each call left it (the next
call overwrites it) and hands the step's saved values that copy; the step's own copy of the
state as it was before its write (which ``reaction``'s gradient reads) was then not found,
and ``reaction``'s gradient read the state after the write. Under ``"strict"`` the step's
write is refused, naming its line.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen


def laplacian(u):
    return np.roll(u, 1) - 2.0 * u + np.roll(u, -1)


def reaction(u, k):
    return k * u * (1.0 - u)


def rhs(u, D, k):
    return D * laplacian(u) + reaction(u, k)


def euler_step(u, D, k, dt):
    u += dt * rhs(u, D, k)


def heun_step(u, D, k, dt):
    k1 = rhs(u, D, k)
    k2 = rhs(u + dt * k1, D, k)
    u += 0.5 * dt * (k1 + k2)
    return u


def simulate(params, u0, steps=10, dt=0.05):
    D, k = params[0], params[1]
    u = u0.copy()
    for _ in range(steps):
        euler_step(u, D, k, dt)
    return 0.5 * np.sum(u ** 2)


def simulate_heun(D, k, u0, steps=6, dt=0.05):
    u = u0.copy()
    for _ in range(steps):
        u = heun_step(u, D, k, dt)
    return np.sum(u ** 3)


def logistic_growth(k, u0, steps):
    u = u0.copy()
    for _ in range(steps):
        u += 0.05 * reaction(u, k)
    return np.sum(u ** 2)


def grow(u, k):
    u += 0.05 * reaction(u, k)


def logistic_growth_in_a_helper(k, u0, steps):
    u = u0.copy()
    for _ in range(steps):
        grow(u, k)
    return np.sum(u ** 2)


U0 = 0.5 + 0.1 * np.sin(np.linspace(0.0, 2.0 * np.pi, 12, endpoint=False))
PARAMS = np.array([0.3, 0.8])


def test_the_reaction_rate_of_a_loop_of_euler_steps():
    g = adgen.grad(simulate, argnums=(0, 1))(PARAMS, U0)
    assert_grad_close(g[0], numerical_grad(simulate, (PARAMS, U0), 0))
    assert_grad_close(g[1], numerical_grad(simulate, (PARAMS, U0), 1))


def test_a_loop_of_heun_steps_returning_the_state():
    g = adgen.grad(simulate_heun, argnums=(0, 1, 2))(0.3, 0.8, U0)
    for k in range(3):
        assert_grad_close(g[k], numerical_grad(simulate_heun, (0.3, 0.8, U0), k))


@pytest.mark.parametrize("steps", [1, 2, 3])
def test_growth_in_a_helper_matches_the_same_loop_written_inline(steps):
    u0 = np.array([0.5, 0.6])
    g = adgen.grad(logistic_growth_in_a_helper, argnums=(0, 1))(0.8, u0, steps)
    inline = adgen.grad(logistic_growth, argnums=(0, 1))(0.8, u0, steps)
    assert_grad_close(g[0], numerical_grad(logistic_growth_in_a_helper, (0.8, u0, steps), 0))
    assert_grad_close(g[1], numerical_grad(logistic_growth_in_a_helper, (0.8, u0, steps), 1))
    assert_grad_close(g, inline)


def test_strict_refuses_the_step_that_overwrites_what_its_gradient_reads():
    with pytest.raises(adgen.MutationError, match=r"u \+= dt \* rhs\(u, D, k\) overwrites u"):
        adgen.grad(simulate, mutation="strict")(PARAMS, U0)
