"""``mutation="strict"`` on a method or helper whose guard fires only for arguments its calls
do not pass.

``g.scale(3.0)`` with ``def scale(self, c): self.u *= c``: compiled for any arguments, the
gradient of ``self.u *= c`` with respect to ``c`` reads the ``self.u`` the line overwrites,
so strict guarded the write and refused every call when it ran ("self.u *= c overwrites
self.u, which the gradient of line .. reads"), though ``3.0`` has no derivative. Since
session 24 a callee strict guards (or whose pullback reads a parameter) is compiled again for
what the calls pass where some argument is a constant or has no derivative
(transforms/callee_activity.for_calls); the calls of it get their gradient under strict.
Where ``c`` carries a derivative the refusal stays and names the line. Gradients against
central differences (and by hand) under both policies, the arguments' final state checked.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad, numerical_grad

import adgen

POLICIES = ["save", "strict"]
U0 = np.array([0.3, -0.5, 0.9])


class Grid:
    def __init__(self, u):
        self.u = u.copy()

    def scale(self, c):
        self.u *= c


def scaled_then_written(u0):
    g = Grid(u0)
    g.scale(3.0)
    g.u[1:] *= 2
    return np.sum(g.u ** 2)


def scaled_then_read(u0):
    g = Grid(u0)
    g.scale(3.0)
    g.u[1:] *= 2
    return np.sum(np.sin(g.u))


def factor_in_a_name(u0):
    g = Grid(u0)
    c = 3.0
    for _ in range(2):
        g.scale(c)
    return np.sum(g.u ** 3)


def scale_array(u, c):
    u *= c


def helper_scales(u0):
    u = u0 * 1.0
    scale_array(u, 3.0)
    u[0] = u[0] * u[1]
    return np.sum(u ** 2)


def scaled_by_a_variable(u0, c):
    g = Grid(u0)
    g.scale(c)
    g.u[1:] *= 2
    return np.sum(g.u ** 2)


def given_grid(g, w):
    g.u += w
    g.scale(3.0)
    return np.sum(g.u ** 2)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", [scaled_then_written, scaled_then_read, factor_in_a_name,
                               helper_scales])
def test_constant_factor(f, policy):
    check_grad(f, (U0,), mutation=policy, strict_must_compute=True)


def test_by_hand():
    # u = 3 u0 with u[1:] doubled: d/du0 sum(u^2) = 2 * 9 * (1, 4, 4) * u0
    want = 18 * np.array([1.0, 4.0, 4.0]) * U0
    np.testing.assert_allclose(numerical_grad(scaled_then_written, (U0,), 0), want, rtol=1e-6)
    np.testing.assert_allclose(adgen.grad(scaled_then_written, mutation="strict")(U0), want,
                               rtol=1e-12)


@pytest.mark.parametrize("policy", POLICIES)
def test_object_given(policy):
    w = np.array([0.1, 0.2, -0.4])
    g = adgen.grad(given_grid, argnums=1, mutation=policy)(Grid(U0), w)
    # sum((3 (u0 + w))^2): 18 (u0 + w)
    np.testing.assert_allclose(g, 18 * (U0 + w), rtol=1e-12)
    np.testing.assert_allclose(g, numerical_grad(lambda v: given_grid(Grid(U0), v), (w,), 0),
                               rtol=1e-6)
    grid = Grid(U0)
    adgen.grad(given_grid, argnums=1, mutation=policy)(grid, w)
    np.testing.assert_allclose(grid.u, 3 * (U0 + w), rtol=1e-15)


def test_factor_with_a_derivative_stays_refused():
    # d/dc reads the u that self.u *= c overwrites: strict must refuse, save must be right
    for argnum in (0, 1):
        check_grad(scaled_by_a_variable, (U0, 3.0), argnum, mutation="save")
    with pytest.raises(adgen.MutationError) as info:
        adgen.grad(scaled_by_a_variable, argnums=(0, 1), mutation="strict")(U0, 3.0)
    assert "self.u *= c" in str(info.value)
    assert info.value.location.file == __file__
