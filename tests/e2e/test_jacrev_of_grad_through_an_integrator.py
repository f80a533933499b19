"""``jacrev(grad(f))`` (JAX's Hessian idiom) of an RK4 integrator whose right-hand side, a
nested def over the parameters, writes its stage into a buffer (``rhs(u, k1)``).

Reverse over reverse compiled the generated forward and pullback, but the pullback of that
program refused, when it ran, the step's saved tuple (taken for an array written by index:
UnsupportedError 'a tuple written in place by index ...'), where ``hessian(f)`` and
``jacfwd(grad(f))`` gave the values. ``vjp(grad(f), x)``'s pullback now takes reverse over
forward where the reverse-over-reverse pullback refuses when it runs, as where that program
does not compile. Against central differences of adgen.grad, under both policies.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

POLICIES = ["save", "strict"]
P = np.array([1.2, 0.3, 0.5])


def pendulum(p):
    def rhs(u, out):
        out[0] = u[1]
        out[1] = -p[0] * np.sin(u[0]) - p[1] * u[1]
        return out

    u = np.array([1.0, 0.0])
    k1 = np.empty(2)
    k2 = np.empty(2)
    k3 = np.empty(2)
    k4 = np.empty(2)
    h = 0.1
    for _ in range(5):
        rhs(u, k1)
        rhs(u + 0.5 * h * k1, k2)
        rhs(u + 0.5 * h * k2, k3)
        rhs(u + h * k3, k4)
        u += h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return np.sum(u ** 2) + p[2] * u[0]


@pytest.mark.parametrize("mutation", POLICIES)
def test_jacrev_of_grad_of_an_integrator(mutation):
    g = adgen.grad(pendulum, mutation=mutation)
    rows = np.array([numerical_grad(lambda z, k=k: g(z.copy())[k], (P.copy(),), 0)
                     for k in range(P.size)])
    h = adgen.jacrev(g)(P.copy())
    np.testing.assert_allclose(h, rows, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(h, adgen.hessian(pendulum, mutation=mutation)(P.copy()),
                               rtol=1e-10, atol=1e-12)
    # the pullback of vjp(grad(f), p) is reusable: the same product twice
    out, pullback = adgen.vjp(g, P.copy())
    np.testing.assert_allclose(out, g(P.copy()))
    v = np.array([1.0, -2.0, 0.5])
    first = pullback(v)[0]
    np.testing.assert_allclose(first, rows.T @ v, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(pullback(v)[0], first)
