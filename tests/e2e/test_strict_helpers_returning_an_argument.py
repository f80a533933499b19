"""A helper that fills its ``out`` parameter and returns it (``laplace(u, out)``), called on
a new array by a step that then updates ``u`` in place, itself called in a loop.

adgen took the result of every call of a user function for a view of any of its arguments:
``lap = laplace(u, np.empty_like(u))`` might be ``u``, so the step's gradient "read" ``u``,
and the loop's ``self.step(u, 0.1)`` overwrote it. ``mutation="strict"`` refused
``grad(M.loss)`` and ``hessian(M.loss)`` ("self.step(u, 0.1) overwrites u, which the
gradient of line ... reads") and ``save`` copied ``u`` at each call, though the gradient
reads only the new array. The callee's summary now says which parameters a value it returns
may share memory with (``Compiled.returns_params``): ``out``, not ``u``.

A helper that returns ``u`` itself keeps the refusal (strict) and the copy (save).
Expected values: central differences (tests/gradcheck.py; the Hessian by second
differences).
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen
from adgen.errors import MutationError

U0 = np.linspace(0.1, 1.2, 6) ** 2
POLICIES = ["save", "strict"]


def laplace(u, out):
    out[1:-1] = u[2:] - 2 * u[1:-1] + u[:-2]
    out[0] = out[-1] = 0.0
    return out


class Relax:
    def __init__(self, k):
        self.k = k

    def step(self, u, dt):
        u += dt * self.k * np.sin(laplace(u, np.empty_like(u)))

    def loss(self, u0):
        u = u0.copy()
        for _ in range(4):
            self.step(u, 0.1)
        return np.sum(u ** 2)


M = Relax(0.7)


def relaxed(u0):
    return M.loss(u0)


def smooth_returning_input(u, out):
    out[1:-1] = 0.5 * (u[2:] + u[:-2])
    out[0] = u[0]
    out[-1] = u[-1]
    return u  # the input, not what it filled


def step_on_input(u, dt):
    v = smooth_returning_input(u, np.empty_like(u))  # v is u
    u += dt * np.sin(v)  # overwrites v, whose values sin's gradient reads


def loss_on_input(u0):
    u = u0.copy()
    for _ in range(3):
        step_on_input(u, 0.1)
    return np.sum(u ** 2)


def second_differences(f, x, h=1e-4):
    n = x.size
    H = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            def at(si, sj):
                y = x.copy()
                y[i] += si * h
                y[j] += sj * h
                return f(y)
            H[i, j] = (at(1, 1) - at(1, -1) - at(-1, 1) + at(-1, -1)) / (4 * h * h)
    return H


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("f", [M.loss, relaxed])
def test_gradient_of_a_step_filling_a_new_array(f, mutation):
    g = adgen.grad(f, mutation=mutation)(U0.copy())
    assert_grad_close(g, numerical_grad(f, (U0.copy(),), 0))


@pytest.mark.parametrize("mutation", POLICIES)
def test_hessian_of_the_method(mutation):
    H = adgen.hessian(M.loss, mutation=mutation)(U0.copy())
    np.testing.assert_allclose(H, second_differences(M.loss, U0), rtol=1e-4, atol=1e-5)


def test_strict_saves_nothing_at_the_call():
    sites = adgen.explain(M.loss, U0.copy(), mutation="strict")
    call = [s for s in sites if s.construct == "self.step(u, 0.1)"]
    assert call and all(s.decision == "forced-pullback" for s in call)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_helper_returning_its_input_still_needs_the_copy(mutation):
    if mutation == "strict":
        with pytest.raises(MutationError, match="overwrites"):
            adgen.grad(loss_on_input, mutation=mutation)(U0.copy())
        return
    g = adgen.grad(loss_on_input, mutation=mutation)(U0.copy())
    assert_grad_close(g, numerical_grad(loss_on_input, (U0.copy(),), 0))
