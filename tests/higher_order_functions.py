"""Functions for the forward-mode and higher-order tests: loops, branches, allocate-then-fill,
in-place stencils, views, out=, np.add.at, user callees that write their arguments.

Module-level, so adgen reads their source as a user's. ``SCALAR`` maps each scalar function
of an array to an input away from its kinks; ``VECTOR`` the same for vector-valued ones.
"""

from __future__ import annotations

import math

import numpy as np

import adgen


def fill_loop(x):
    h = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        h[i] = np.sin(x[i]) * x[i]
    return np.sum(h ** 2)


def stencil_inplace(x):
    u = x.copy()
    for k in range(3):
        u[1:-1] += 0.1 * (u[2:] - 2.0 * u[1:-1] + u[:-2])
    return np.sum(u ** 3)


def view_scaled(x):
    y = x.copy()
    v = y[::2]
    v *= 3.0
    return np.sum(y * y * x)


def times_equal(x):
    y = x * 1.0
    y *= x
    y /= 1.0 + x * x
    return np.sum(y ** 2)


def branch(x):
    if np.sum(x) > 0.0:
        s = np.sum(x ** 3)
    else:
        s = np.sum(np.cos(x))
    return s * np.sum(x)


def while_loop(x):
    s = 0.0
    i = 0
    while i < len(x):
        s += np.exp(x[i]) * x[i]
        i += 1
    return s


def add_at(x):
    y = np.zeros(3)
    np.add.at(y, [0, 1, 0, 2], x[:4] ** 2)
    return np.sum(y ** 2)


def out_argument(x):
    y = np.empty_like(x)
    np.multiply(x, x, out=y)
    return np.sum(np.sin(y))


def fill_then_copyto(x):
    y = np.empty(x.shape[0])
    y.fill(1.0)
    np.copyto(y, x * x)
    return np.sum(y * x)


def gram(x):
    a = x.reshape(2, 3)
    return np.sum((a @ a.T) ** 2)


def solve_outer(x):
    m = 4.0 * np.eye(3) + np.outer(x[:3], x[:3])
    return np.sum(np.linalg.solve(m, x[:3]))


def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def power(x, n):
    if n == 0:
        return 1.0
    return x * power(x, n - 1)


def recursive(x):
    return np.sum(power(x, 3))


def scale_in_place(buf, c):
    buf *= c


def callee_writes(x):
    y = x.copy()
    scale_in_place(y, x[0])
    return np.sum(y ** 2)


def list_append(x):
    parts = []
    for i in range(1, x.shape[0]):
        parts.append(x[i] ** 2 * x[i - 1])
    return np.sum(np.stack(parts))


def early_return(x):
    for i in range(x.shape[0]):
        if x[i] > 1.5:
            return np.sum(x[:i] ** 2)
    return np.sum(x ** 4)


def det2(x):
    return np.linalg.det(x[:4].reshape(2, 2) + 3.0 * np.eye(2))


def softplus(x):
    return np.sum(np.log1p(np.exp(x)))


def running(x):
    y = x.copy()
    for i in range(1, y.shape[0]):
        y[i] += y[i - 1] * 0.5
    return np.sum(y ** 2) * y[0]


def norm_cubed(x):
    return np.linalg.norm(x) ** 3


def heat(x):
    u = x.copy()
    new = np.empty_like(u)
    for t in range(4):
        new[1:-1] = u[1:-1] + 0.2 * (u[2:] - 2.0 * u[1:-1] + u[:-2])
        new[0] = u[0]
        new[-1] = u[-1]
        u[:] = new
    return np.sum(u ** 2 * x)


def where_branches(x):
    y = np.where(x > 0.0, x ** 2, -x)
    return np.sum(y * np.tanh(x))


def tridiagonal(x):
    a = np.zeros((3, 3))
    for i in range(3):
        a[i, i] = 2.0 + x[i] ** 2
        if i > 0:
            a[i, i - 1] = x[i] * x[i - 1]
    return np.sum(np.linalg.inv(a + a.T))


def scalar_cubic(x):
    return x ** 3 * math.sin(x)


def scalar_loop(x):
    s = 0.0
    for k in range(1, 4):
        s += math.exp(-k * x) * x ** k
    return s


def reaction_stencil(x):
    """An in-place update whose increment is nonlinear in the slice it overwrites (hvp was
    silently wrong here under "save": forward mode's float_part was not declared a view)."""
    u = x.copy()
    for _ in range(2):
        u[1:-1] += 0.05 * np.sin(u[1:-1]) + 0.1 * (u[2:] - 2.0 * u[1:-1] + u[:-2])
    return np.sum(u ** 3)


def view_nonlinear(x):
    u = x.copy()
    v = u[1:]                  # a view, scaled by a function of its own values
    v *= np.tanh(v)
    return np.sum(u ** 2) * u[0]


def _segment(u, c):
    new = u.copy()
    new[1:-1] += c * np.sin(u[2:] - u[:-2])
    return new


checkpointed_segment = adgen.checkpoint(_segment)


def checkpointed_steps(x):
    u = x
    for _ in range(3):
        u = checkpointed_segment(u, 0.3)
    return np.sum(u ** 2 * x)


X5 = np.array([0.3, -0.7, 1.1, 0.45, -0.2])
X6 = np.array([0.3, -0.7, 1.1, 0.45, -0.2, 0.8])
SCALAR = {
    fill_loop: X5, stencil_inplace: X5, view_scaled: X5, times_equal: X5, branch: X5,
    while_loop: X5, add_at: X5, out_argument: X5, fill_then_copyto: X5, gram: X6,
    solve_outer: X5, logsumexp: X5, recursive: X5, callee_writes: X5, list_append: X5,
    early_return: X5, det2: X5, softplus: X5, running: X5, norm_cubed: X5, heat: X6,
    where_branches: X5, tridiagonal: X5, reaction_stencil: X6, view_nonlinear: X5,
    checkpointed_steps: X6,
}


# Vector-valued functions (Jacobians)


def rhs_inplace(y, k):
    """An ODE right-hand side written into a buffer (a chain of reactions)."""
    dy = np.empty_like(y)
    dy[0] = -k * y[0]
    for i in range(1, y.shape[0]):
        dy[i] = k * y[i - 1] - (k + 0.5) * y[i] * y[i]
    return dy


def stencil_vector(x):
    u = x.copy()
    for k in range(2):
        u[1:-1] += 0.25 * (u[2:] - 2.0 * u[1:-1] + u[:-2])
    return u * u


def view_vector(x):
    out = np.zeros(x.shape[0] + 2)
    inner = out[1:-1]
    inner[...] = np.tanh(x)
    inner *= x
    return out


def reduce_vector(x):
    a = x.reshape(2, 3)
    return np.concatenate([np.sum(a ** 2, axis=0), np.prod(a, axis=1)])


VECTOR = {
    stencil_vector: (X5,), view_vector: (X5,), reduce_vector: (X6,),
}
SCALARS = {scalar_cubic: 0.7, scalar_loop: 0.4}


def out_of_constant(x):
    """out= whose inputs carry no derivative, into a buffer that had one (found by the fuzzer:
    the tangent read the result's name before the call bound it)."""
    v1 = np.full(x.shape[0], 0.125)
    v2 = np.empty_like(x)
    for i in range(x.shape[0]):
        v2[i] = np.tanh(x[i])
    np.exp(v1, out=v2)
    return np.sum(v2 * v2 * x)


SCALAR[out_of_constant] = X5
