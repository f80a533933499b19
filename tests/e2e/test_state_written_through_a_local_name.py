"""A model holding its state array, stepped by a method that writes the state in place
through a local name, with a call of another method reading the state in between:

    def step(self):
        u = self.u
        u *= 0.9
        u += 0.5 * self.rhs()      # rhs reads self.u

Problem found while testing issue 15 (H5): stepped twice or more, the gradient was 1/0.9 too
large per step after the first, silently (both policies; one step was right). The first
step's pullback reads its saved arrays through the caller's guard copies (remap_saved), and
the record of the object's slots holds the array itself, so the adjoint the call of
``self.rhs()`` left in the object's adjoint did not move to the shadow that ``u *= 0.9``
scales. items_to_shadows and shadows_to_items now match a copy to the array it stands for.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

U0 = np.array([0.3, -1.2, 0.7])


class Model:
    def __init__(self, u0):
        self.u = u0.copy()

    def rhs(self):
        return 0.5 * self.u

    def step(self):
        u = self.u
        u *= 0.9
        u += 0.5 * self.rhs()


class Damped(Model):
    def step(self):
        u = self.u
        u *= 0.9
        u += 0.5 * np.sin(self.rhs())


def run(n, cls=Model):
    def energy(u0):
        m = cls(u0)
        for _ in range(n):
            m.step()
        return np.sum(m.u ** 2)
    return energy


@pytest.mark.parametrize("n", [1, 2, 3])
def test_gradient_by_hand(n):
    # each step: u <- 0.9 u + 0.25 (0.9 u) = 1.125 u
    want = 2 * 1.125 ** (2 * n) * U0
    np.testing.assert_allclose(adgen.grad(run(n))(U0.copy()), want, rtol=1e-12)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("n", [2, 3])
def test_gradient_vs_central_differences(n, mutation):
    check_grad(run(n), (U0.copy(),), mutation=mutation)
    check_grad(run(n, Damped), (U0.copy(),), mutation=mutation)


def test_forward_and_second_order():
    v = np.array([1.0, -0.5, 2.0])
    _, t = adgen.jvp(run(2), (U0.copy(),), (v,))
    assert np.isclose(t, 2 * 1.125 ** 4 * U0 @ v)
    h = adgen.hessian(run(2, Damped))(U0.copy())
    g = adgen.grad(run(2, Damped))
    eps = 1e-5
    rows = [(g(U0 + eps * e) - g(U0 - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(h, np.array(rows), rtol=1e-5, atol=1e-7)
