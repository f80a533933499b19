"""``np.gradient`` as PDE codes call it: on a non-uniform grid (a 1-D coordinate array, the
second-order formula numpy uses), one spacing per axis (``np.gradient(U, dx, dy)``), and a
mix of both. A coordinate array was refused with RuleError ("coordinate arrays as spacing are
not differentiated") even where it is a constant of the model, and a spacing per axis raised
Python's TypeError ("gradient_forward() takes from 1 to 2 positional arguments"). The
reference implementation now takes numpy's ``*varargs``; the coordinates get a gradient too."""
import numpy as np
import pytest

import adgen
from tests.gradcheck import check_grad, numerical_grad, numerical_jvp

X = np.array([0.0, 0.1, 0.25, 0.3, 0.5, 0.8, 1.0])


def diffusion_on_a_stretched_grid(u0, kappa):
    u = u0.copy()
    for _ in range(5):
        u += 1e-3 * kappa * np.gradient(np.gradient(u, X), X)
    return np.sum(u ** 2)


def second_order_edges(u):
    return np.sum(np.gradient(u, X, edge_order=2) ** 3)


def slope_energy(x, u):
    return np.sum(np.gradient(u, x, edge_order=2) ** 2)


def vorticity_like(U):
    gx, gy = np.gradient(U, 0.5, 2.0)
    return np.sum(gx * gy) + np.sum(np.gradient(U, 0.5, 2.0, edge_order=2)[1] ** 2)


def mixed_spacings(U):
    gx, gy = np.gradient(U, np.array([0.0, 0.2, 0.5, 0.6]), 0.7)
    return np.sum(gx ** 2 + np.sin(gy))


U0 = np.sin(3.0 * X) + 0.2
GRID = np.cos(np.arange(20.0)).reshape(4, 5)
CASES = [
    (diffusion_on_a_stretched_grid, (U0, 0.8), 0),
    (diffusion_on_a_stretched_grid, (U0, 0.8), 1),
    (second_order_edges, (U0,), 0),
    (slope_energy, (X, U0), 0),
    (slope_energy, (X, U0), 1),
    (vorticity_like, (GRID,), 0),
    (mixed_spacings, (GRID,), 0),
]
IDS = [f"{f.__name__}-{n}" for f, _, n in CASES]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("fun, args, argnum", CASES, ids=IDS)
def test_gradient_against_central_differences(fun, args, argnum, mutation):
    # strict may refuse the in-place step u += ... (refused, never wrong)
    check_grad(fun, args, argnum, mutation=mutation, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fun, args, argnum", CASES, ids=IDS)
def test_jvp_against_central_differences(fun, args, argnum):
    tangents = [None] * len(args)
    tangents[argnum] = 0.6 if np.ndim(args[argnum]) == 0 else \
        np.cos(np.arange(np.size(args[argnum])) + 1.0).reshape(np.shape(args[argnum]))
    _, t = adgen.jvp(fun, args, tuple(tangents))
    np.testing.assert_allclose(t, numerical_jvp(fun, args, tuple(tangents)), rtol=1e-6,
                               atol=1e-8)


def test_values_are_numpys():
    value, _ = adgen.value_and_grad(slope_energy, argnums=(0, 1))(X, U0)
    assert value == pytest.approx(slope_energy(X, U0), rel=1e-13)


def test_hessian_of_a_quadratic_slope_energy():
    # sum(D u)^2 with D numpy's (linear) gradient operator: the Hessian is 2 D^T D
    D = np.stack([np.gradient(e, X, edge_order=2) for e in np.eye(len(X))], axis=1)
    H = adgen.hessian(slope_energy, 1)(X, U0)
    np.testing.assert_allclose(H, 2.0 * D.T @ D, rtol=1e-10, atol=1e-8)
    assert numerical_grad(slope_energy, (X, U0), 1).shape == (7,)
