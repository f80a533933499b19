"""Forward mode and second derivatives through a method of a global array used as a call's
argument (``g(q, P0.copy())``): it was refused as 'P0.copy() has no derivative rule and adgen
cannot read its source', while grad and ``c = P0.copy()`` worked."""
import numpy as np
import pytest

import adgen

P0 = np.array([1.0, 2.0, -0.5])


def leapfrog(q, p, dt, n):
    for _ in range(n):
        p -= 0.5 * dt * np.sin(q)
        q += dt * p
        p -= 0.5 * dt * np.sin(q)
    return 0.5 * p @ p - np.sum(np.cos(q)) + q[0] * p[-1]


def energy(q):
    return leapfrog(q, P0.copy(), 0.1, 10)


def weighted(q):
    return np.sum(q * q * P0.reshape(3)) + leapfrog(q, P0.copy(), 0.1, 3)


def fd_grad(f, x, eps=1e-6):
    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(x.size)])


@pytest.mark.parametrize("f", [energy, weighted, lambda q: leapfrog(q, P0.copy(), 0.1, 5)])
def test_jvp_and_hessian(f):
    q = np.array([0.3, -0.2, 0.5])
    v = np.array([1.0, -0.5, 0.25])
    value, slope = adgen.jvp(f, (q.copy(),), (v,))
    assert np.isclose(value, f(q.copy()))
    assert np.isclose(slope, fd_grad(lambda z: f(z.copy()), q) @ v, rtol=1e-6)
    H = adgen.hessian(f)(q.copy())
    fd_h = np.array([fd_grad(lambda z: adgen.grad(f)(z.copy()) @ e, q) for e in np.eye(3)])
    assert np.allclose(H, fd_h, rtol=1e-5, atol=1e-7)
    assert np.allclose(P0, [1.0, 2.0, -0.5])
