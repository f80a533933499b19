"""A nested helper that writes its array argument in place, as a simulation script writes
boundary conditions and relaxation steps:

    def simulate(u0, left):
        def apply_bc(u):          # reads left from the enclosing function
            u[0] = left
            u[-1] = 0.0
        u = u0.copy()
        for _ in range(n):
            apply_bc(u)
            u = u + r * laplacian(u)

Problem a new user ran into: where the helper read a value of the enclosing function (``left``,
``omega``), its write into the argument was left out of the gradient: silently wrong (the
gradient through ``u[0]`` went on to ``u0[0]``, and ``left`` got none). The enclosing
function's analyses did not see that the call writes ``u`` (a nested def is not resolved to
a function there), and the closure's pullback left the argument's adjoint in shadow memory,
which the caller did not read. Without a value of the enclosing function read, the same helper
was refused when the gradient ran ('writes an array argument ... called through a variable, a
method or a closure').

Now a nested def (or lambda) bound once, that writes one of its own parameters in place and
is only called as a statement or as the value of an assignment, is written out where it is
called (transforms/inlined_closures.py), so the write is the enclosing function's own.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad, numerical_grad

import adgen

POLICIES = ["save", "strict"]


def diffuse(u0, left, nsteps=4, r=0.2):
    def apply_bc(u):
        u[0] = left
        u[-1] = 0.0

    u = u0.copy()
    for _ in range(nsteps):
        apply_bc(u)
        lap = np.zeros_like(u)
        lap[1:-1] = u[2:] - 2 * u[1:-1] + u[:-2]
        u = u + r * lap
    return np.sum(u ** 2)


def diffuse_fixed_walls(u0, nsteps=4, r=0.2):
    def apply_bc(u):
        u[0] = 1.0
        u[-1] = 0.0

    u = u0.copy()
    for _ in range(nsteps):
        apply_bc(u)
        lap = np.zeros_like(u)
        lap[1:-1] = u[2:] - 2 * u[1:-1] + u[:-2]
        u = u + r * lap
    return np.sum(u ** 2)


def relaxed_norm(x, omega):
    def relax(y):
        y *= omega
        return np.sum(y)

    z = x.copy()
    total = relax(z)
    return total + np.sum(z ** 2)


def relaxed_energy(x, omega):
    def relax(y):
        y *= omega
        return np.sum(y ** 2)

    return relax(x.copy())          # in a return: not written out


def damped(x, c):
    damp = lambda v: np.multiply(v, c, out=v)  # noqa: E731
    z = x ** 2
    damp(z)
    return np.sum(z * x)


rng = np.random.default_rng(3)
U0 = np.linspace(0.0, 1.0, 7) ** 2 + 0.1 * rng.standard_normal(7)


@pytest.mark.parametrize("mutation", POLICIES)
def test_boundary_helper_reading_an_argument(mutation):
    check_grad(diffuse, (U0, 0.7), (0, 1), mutation=mutation, strict_must_compute=True,
               rtol=1e-6, atol=1e-8)
    # u0[0] and u0[-1] are overwritten before they are read: no gradient
    g0 = adgen.grad(diffuse, mutation=mutation)(U0.copy(), 0.7)
    assert g0[0] == 0.0 and g0[-1] == 0.0


@pytest.mark.parametrize("mutation", POLICIES)
def test_boundary_helper_with_constants(mutation):
    g = adgen.grad(diffuse_fixed_walls, mutation=mutation)(U0.copy())
    np.testing.assert_allclose(g, numerical_grad(diffuse_fixed_walls, (U0,), 0), rtol=1e-6,
                               atol=1e-8)


def test_relaxation_helper_whose_result_is_used():
    x = rng.standard_normal(5)
    gx, gw = adgen.grad(relaxed_norm, argnums=(0, 1))(x, 1.5)
    # total = omega * sum(x), z = omega * x: d/dx = omega + 2 omega^2 x
    np.testing.assert_allclose(gx, 1.5 + 2 * 1.5 ** 2 * x, rtol=1e-12)
    np.testing.assert_allclose(gw, np.sum(x) + 2 * 1.5 * np.sum(x ** 2), rtol=1e-12)
    np.testing.assert_allclose(gx, numerical_grad(relaxed_norm, (x, 1.5), 0), rtol=1e-6)
    x_before = x.copy()
    adgen.grad(relaxed_norm)(x, 1.5)
    np.testing.assert_array_equal(x, x_before)  # the copy is written, as in the plain call


def test_relaxation_helper_strict_names_the_call():
    # y *= omega overwrites the y that omega's derivative reads: strict refuses, at the call
    with pytest.raises(adgen.MutationError, match=r"relax\(z\)") as err:
        adgen.grad(relaxed_norm, argnums=(0, 1), mutation="strict")(np.ones(3), 1.5)
    assert err.value.location.line == relaxed_norm.__code__.co_firstlineno + 6


def test_lambda_writing_its_argument_with_out():
    x = rng.standard_normal(4)
    gx, gc = adgen.grad(damped, argnums=(0, 1))(x, 0.5)
    np.testing.assert_allclose(gx, 3 * 0.5 * x ** 2, rtol=1e-12)
    np.testing.assert_allclose(gc, np.sum(x ** 3), rtol=1e-12)
    with pytest.raises(adgen.MutationError, match=r"damp\(z\)"):
        adgen.grad(damped, argnums=(0, 1), mutation="strict")(x, 0.5)
    # with c held fixed nothing reads what the write overwrites: strict differentiates it
    g = adgen.grad(damped, mutation="strict")(x, 0.5)
    np.testing.assert_allclose(g, 3 * 0.5 * x ** 2, rtol=1e-12)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_call_not_written_out_is_refused_at_the_call(mutation):
    with pytest.raises(adgen.UnsupportedError, match="relax") as err:
        adgen.grad(relaxed_energy, argnums=(0, 1), mutation=mutation)(np.ones(3), 1.5)
    assert err.value.location.file == __file__
    assert err.value.location.line == relaxed_energy.__code__.co_firstlineno + 5
    assert "is a statement" in err.value.hint


def with_constant_defaults(u0, left, nsteps=3, r=0.2):
    def apply_bc(u, right=0.0, scale=1.0):
        u[0] = left * scale
        u[-1] = right

    u = u0.copy()
    for _ in range(nsteps):
        apply_bc(u, scale=0.5)         # a keyword, and a default left as it is
        lap = np.zeros_like(u)
        lap[1:-1] = u[2:] - 2 * u[1:-1] + u[:-2]
        u = u + r * lap
    return np.sum(u ** 2)


def with_a_computed_default(u0, left):
    def apply_bc(u, right=left / 2):   # evaluated where the def runs: not written out
        u[0] = left
        u[-1] = right

    u = u0.copy()
    apply_bc(u)
    return np.sum(u ** 2)


@pytest.mark.parametrize("mutation", POLICIES)
def test_constant_defaults_and_keywords(mutation):
    check_grad(with_constant_defaults, (U0, 0.7), (0, 1), mutation=mutation,
               strict_must_compute=True, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_helper_with_a_computed_default_is_refused_saying_why(mutation):
    with pytest.raises(adgen.UnsupportedError, match="apply_bc") as err:
        adgen.grad(with_a_computed_default, mutation=mutation)(U0.copy(), 0.7)
    assert err.value.location.line == with_a_computed_default.__code__.co_firstlineno + 6
    assert "defaults only constants" in err.value.hint
