"""Recover the diffusivity of a heat equation from its final state, by its adjoint gradient.

The solver is written the way a numerical code is: explicit Euler steps that update ``u`` in
place, the Laplacian computed into one preallocated buffer. adgen differentiates it as written:
``explain`` shows that the in-place update of ``u`` is free (it is linear in ``u``) and that
overwriting ``lap`` each step is saved, because the gradient with respect to ``alpha`` reads it.
"""

import numpy as np

import adgen

POINTS, STEPS = 41, 200


def simulate(u0, alpha):
    u = u0.copy()
    lap = np.empty(len(u) - 2)  # reused by every step
    for _ in range(STEPS):
        lap[:] = u[2:] - 2.0 * u[1:-1] + u[:-2]
        u[1:-1] += alpha * lap  # the boundary values stay fixed
    return u


def misfit(alpha, u0, observed):
    return np.sum((simulate(u0, alpha) - observed) ** 2)


x = np.linspace(0.0, 1.0, POINTS)
u0 = np.exp(-100.0 * (x - 0.5) ** 2)
observed = simulate(u0, 0.3)  # synthetic data from the true diffusivity 0.3

if __name__ == "__main__":
    adgen.explain(misfit)
    grad_misfit = adgen.grad(misfit)
    alpha, lr = 0.1, 0.05
    print("d misfit / d alpha at 0.1 =", grad_misfit(alpha, u0, observed))
    for step in range(41):  # gradient descent on the one parameter
        alpha -= lr * grad_misfit(alpha, u0, observed)
        if step % 5 == 0:
            print(f"step {step:2d}  alpha {alpha:.6f}  misfit {misfit(alpha, u0, observed):.3e}")
    print(f"recovered alpha = {alpha:.6f} (true: 0.3)")
