"""Second and third derivatives of a function with keyword-only and default parameters left
to their defaults or given constants, in every nesting of jacfwd, jacrev, grad, hessian and
hvp, at a negative x, where ``x ** p``'s derivative in ``p`` (``x ** p * log(x)``) is NaN.

A parameter without a direction is a constant (as in JAX): no tangent flows from it. Three
spellings gave NaN for finite second derivatives:

- ``jacfwd(jacfwd(f))``, ``jacfwd(jacrev(f))``, ``jacfwd(hessian(f))`` of ``def f(x, *,
  p=2)``: the outer jvp called the inner jvp code ``f_jvp(x, *, p, x_dot, p_dot)`` with its
  tangents by keyword, and compile_tangent's ``wrt`` could not name a keyword-only
  parameter, so the inner jvp was compiled for every parameter, ``p`` given a zero tangent:
  ``0 * nan``;
- ``jacrev(grad(f))`` and ``grad(grad(f))`` with ``p`` left to its default: ``grad(f)`` in x
  was compiled for every parameter (the compile cache took ``wrt=(0,)`` for "all of them",
  counting positional parameters only), so its pullback computed ``p``'s adjoint, which
  reverse over reverse differentiated again.

Checked against the hand formula ``p (p - 1) x ** (p - 2)`` and ``jax`` where installed.
"""

import numpy as np
import pytest

import adgen

X = np.array([-0.5, -1.0, 2.0])
V = np.array([1.0, 2.0, -3.0])


def powers(x, *, p=2):
    return x ** p


def powers_default(x, p=2):
    return x ** p


def powers_no_default(x, *, p):
    return x ** p


def energy(x, *, p=3):
    return np.sum(x ** p)


def energy_default(x, p=3):
    return np.sum(x ** p)


def energy_no_default(x, *, p):
    return np.sum(x ** p)


def energy_through_helper(x, *, p=3):
    return helper(x, p=p) + helper(x, p=2)


def helper(x, *, p):
    return np.sum(x ** p)


def _second(p, x):
    return p * (p - 1) * x ** (p - 2)


VECTOR = {
    "jacfwd(jacfwd)": lambda f: adgen.jacfwd(adgen.jacfwd(f)),
    "jacfwd(jacrev)": lambda f: adgen.jacfwd(adgen.jacrev(f)),
    "jacrev(jacfwd)": lambda f: adgen.jacrev(adgen.jacfwd(f)),
    "jacrev(jacrev)": lambda f: adgen.jacrev(adgen.jacrev(f)),
}


@pytest.mark.parametrize("given", [{}, {"p": 2}], ids=["default", "passed"])
@pytest.mark.parametrize("spelling", list(VECTOR))
@pytest.mark.parametrize("f", [powers, powers_default, powers_no_default],
                         ids=lambda f: f.__name__)
def test_second_derivatives_of_a_vector_function(f, spelling, given):
    if f is powers_no_default and not given:
        given = {"p": 2}
    with np.errstate(invalid="ignore", divide="ignore"):
        T = VECTOR[spelling](f)(X, **given)
    expected = np.zeros((3, 3, 3))
    for i in range(3):
        expected[i, i, i] = _second(2, X[i])
    assert np.allclose(T, expected), T


SCALAR = {
    "hessian": lambda f, m: adgen.hessian(f, mutation=m),
    "jacfwd(grad)": lambda f, m: adgen.jacfwd(adgen.grad(f, mutation=m)),
    "jacrev(grad)": lambda f, m: adgen.jacrev(adgen.grad(f, mutation=m), mutation=m),
    "jacfwd(jacfwd)": lambda f, m: adgen.jacfwd(adgen.jacfwd(f)),
    "jacfwd(jacrev)": lambda f, m: adgen.jacfwd(adgen.jacrev(f, mutation=m)),
    "jacrev(jacfwd)": lambda f, m: adgen.jacrev(adgen.jacfwd(f), mutation=m),
    "jacrev(jacrev)": lambda f, m: adgen.jacrev(adgen.jacrev(f, mutation=m), mutation=m),
}


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("given", [{}, {"p": 3}], ids=["default", "passed"])
@pytest.mark.parametrize("spelling", list(SCALAR))
@pytest.mark.parametrize("f", [energy, energy_default, energy_no_default,
                               energy_through_helper], ids=lambda f: f.__name__)
def test_hessians(f, spelling, given, mutation):
    if f is energy_no_default and not given:
        given = {"p": 3}
    with np.errstate(invalid="ignore", divide="ignore"):
        H = SCALAR[spelling](f, mutation)(X, **given)
    expected = np.diag(_second(3, X))
    if f is energy_through_helper:
        expected = expected + np.diag(_second(2, X))
    assert np.allclose(H, expected), H


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [energy, energy_default, energy_through_helper],
                         ids=lambda f: f.__name__)
def test_hvp(f, mutation):
    with np.errstate(invalid="ignore", divide="ignore"):
        hv = adgen.hvp(f, mutation=mutation)(X, V)
    expected = _second(3, X) * V + (_second(2, X) * V if f is energy_through_helper else 0)
    assert np.allclose(hv, expected)


@pytest.mark.parametrize("spelling", ["jacfwd(hessian)", "jacrev(hessian)"])
@pytest.mark.parametrize("f", [energy, energy_default], ids=lambda f: f.__name__)
def test_third_derivatives(f, spelling):
    outer = adgen.jacfwd if spelling.startswith("jacfwd") else adgen.jacrev
    with np.errstate(invalid="ignore", divide="ignore"):
        T = outer(adgen.hessian(f))(X)
    expected = np.zeros((3, 3, 3))
    for i in range(3):
        expected[i, i, i] = 6.0  # d3/dx3 of x ** 3
    assert np.allclose(T, expected), T


def cube(x, *, p=3):
    return x ** p


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_grad_of_grad_of_a_number(mutation):
    g = adgen.grad(adgen.grad(cube, mutation=mutation), mutation=mutation)
    with np.errstate(invalid="ignore", divide="ignore"):
        assert g(-0.5) == pytest.approx(6 * -0.5)
        assert g(-0.5, p=3) == pytest.approx(6 * -0.5)
        assert adgen.grad(adgen.grad(adgen.grad(cube)))(-0.5) == pytest.approx(6.0)


def test_as_jax_gives_them():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def energy_j(x, *, p=3):
        return jnp.sum(x ** p)

    with np.errstate(invalid="ignore", divide="ignore"):
        for a, j in [(adgen.jacfwd(adgen.jacfwd(energy)), jax.jacfwd(jax.jacfwd(energy_j))),
                     (adgen.jacrev(adgen.grad(energy)), jax.jacrev(jax.grad(energy_j))),
                     (adgen.jacfwd(adgen.hessian(energy)), jax.jacfwd(jax.hessian(energy_j)))]:
            assert np.allclose(a(X), np.asarray(j(X)))
