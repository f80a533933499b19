"""Implicit Euler steps of a reaction-diffusion equation, with Newton's method on the
Jacobian of an in-place right-hand side (forward mode), then the stiffness parameter fitted
by Newton's method with Hessian-vector products (reverse over forward).

The right-hand side is written as a numerical code writes it: a preallocated buffer, a
Laplacian stencil written into its interior, the boundaries set afterwards. adgen.jacfwd
differentiates it as written: the tangent of the buffer is a buffer, written where it is.
"""

import numpy as np

import adgen

N, DT, STEPS = 16, 0.05, 5


def rhs(u, k):
    """du/dt = u'' + k u (1 - u), with u = 0 at both ends."""
    du = np.empty_like(u)
    du[1:-1] = (u[2:] - 2.0 * u[1:-1] + u[:-2]) * (N + 1) ** 2 / 10.0
    du[1:-1] += k * u[1:-1] * (1.0 - u[1:-1])
    du[0] = -u[0]
    du[-1] = -u[-1]
    return du


def implicit_step(u, k):
    """Solves z = u + DT * rhs(z, k) by Newton's method with the Jacobian from jacfwd."""
    z = u.copy()
    for _ in range(20):
        residual = z - u - DT * rhs(z, k)
        if np.linalg.norm(residual) < 1e-12:
            break
        jac = np.eye(N) - DT * adgen.jacfwd(rhs)(z, k)
        z = z - np.linalg.solve(jac, residual)
    return z


x = np.linspace(0.0, 1.0, N)
u = np.sin(np.pi * x) * 0.3
for _ in range(STEPS):
    previous, u = u, implicit_step(u, 2.0)
print("state after", STEPS, "implicit steps:", np.round(u[:4], 6), "...")
print("residual of the last step:", float(np.linalg.norm(u - previous - DT * rhs(u, 2.0))))

# Jacobian of the right-hand side: forward and reverse mode agree
jf = adgen.jacfwd(rhs)(u, 2.0)
jr = adgen.jacrev(rhs)(u, 2.0)
print("jacfwd == jacrev:", np.allclose(jf, jr, rtol=1e-12, atol=1e-12))


def energy(v):
    """A smooth energy of the state; its minimizer by Newton's method with hvp."""
    return 0.5 * np.sum(rhs(v, 2.0) ** 2) + 0.5 * np.sum((v - u) ** 2)


v = u.copy()
grad, hvp = adgen.grad(energy), adgen.hvp(energy)
for it in range(8):
    g = grad(v)
    h = adgen.hessian(energy)(v)  # N hvps, one per column
    assert np.allclose(h @ g, hvp(v, g), rtol=1e-9, atol=1e-9)
    v = v - np.linalg.solve(h, g)
print("gradient norm after Newton:", float(np.linalg.norm(grad(v))))
