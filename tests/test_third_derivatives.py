"""Third derivatives, written as JAX users write them: ``jacfwd(hessian(f))``,
``jacrev(hessian(f))``, ``jvp(hessian(f), (x,), (v,))``, ``jvp(hvp(f), (x, v), (w, u))``,
``vjp(hessian(f), x)``, the Jacobians of ``jacfwd(grad(f))`` / ``jacrev(grad(f))``,
``grad(grad(grad(f)))`` of a function of a number (and one more grad); and second
derivatives of a vector function, ``jacfwd(jacfwd(f))``. All were refused ("is already a
derivative made by adgen ... no third derivatives").

References: central differences of the Hessian (adgen.hessian, checked against central
differences of the gradient by the second-order tests) at random points, hand formulas, and
jax.jacfwd(jax.hessian(f)) where jax is installed."""

from __future__ import annotations

import math

import numpy as np
import pytest

import adgen

RNG = np.random.default_rng(11)


def smooth(x):
    return np.sum(np.sin(x) * x ** 3) + (x @ x) ** 2


def stencil(x):
    """In-place updates of a view, in a loop (the reverse pass keeps shadow memory)."""
    u = x.copy()
    for _ in range(2):
        u[1:-1] += 0.1 * (u[2:] - 2.0 * u[1:-1] + u[:-2])
    return np.sum(u ** 4) + np.sum(np.exp(u) * u)


def allocate_then_fill(x):
    h = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        h[i] = np.tanh(x[i] * x[(i + 1) % x.shape[0]])
    return np.sum(h ** 3) + x[0] * x[1] * np.cos(x[2])


class Potential:
    """A user's class: a pair potential whose third derivative is wanted (Taylor terms)."""

    def __init__(self, k):
        self.k = k

    def energy(self, x):
        d = x[1:] - x[:-1]
        return np.sum(self.k * d ** 4 + np.cos(d))


FUNCTIONS = [smooth, stencil, allocate_then_fill, Potential(1.5).energy,
             lambda x: np.sum(np.exp(x[:-1] * x[1:])) + np.linalg.norm(x, 3) ** 2]
IDS = ["smooth", "stencil", "fill", "method", "lambda"]


def third_by_differences(f, x, eps=1e-4):
    """T[i, j, k] = d H[i, j] / d x[k], by central differences of adgen's Hessian."""
    h = adgen.hessian(f)
    return np.stack([(h(x + eps * e) - h(x - eps * e)) / (2 * eps) for e in np.eye(x.size)],
                    axis=-1)


@pytest.mark.parametrize("f", FUNCTIONS, ids=IDS)
def test_every_spelling_of_the_third_derivative(f):
    x = RNG.standard_normal(4)
    want = third_by_differences(f, x)
    spellings = {
        "jacfwd(hessian)": adgen.jacfwd(adgen.hessian(f)),
        "jacrev(hessian)": adgen.jacrev(adgen.hessian(f)),
        "jacobian(hessian)": adgen.jacobian(adgen.hessian(f)),
        "jacfwd(jacfwd(grad))": adgen.jacfwd(adgen.jacfwd(adgen.grad(f))),
        "jacfwd(jacrev(grad))": adgen.jacfwd(adgen.jacrev(adgen.grad(f))),
        "jacrev(jacfwd(grad))": adgen.jacrev(adgen.jacfwd(adgen.grad(f))),
    }
    for name, third in spellings.items():
        np.testing.assert_allclose(third(x.copy()), want, rtol=1e-6, atol=2e-6, err_msg=name)


@pytest.mark.parametrize("f", FUNCTIONS[:3], ids=IDS[:3])
def test_jvp_and_vjp_of_hessian_and_hvp(f):
    x, v, w, u = RNG.standard_normal((4, 5))
    t = third_by_differences(f, x)
    h = adgen.hessian(f)(x.copy())
    out, dot = adgen.jvp(adgen.hessian(f), (x.copy(),), (w,))
    np.testing.assert_allclose(out, h, atol=1e-12)
    np.testing.assert_allclose(dot, t @ w, rtol=1e-6, atol=2e-6)
    # hvp(f)(x, v) = H(x) v: its derivative along (w, u) is T[., ., w] v + H u
    out, dot = adgen.jvp(adgen.hvp(f), (x.copy(), v), (w, u))
    np.testing.assert_allclose(out, h @ v, atol=1e-12)
    np.testing.assert_allclose(dot, np.einsum("ijk,j,k->i", t, v, w) + h @ u, rtol=1e-6, atol=2e-6)
    c = RNG.standard_normal((5, 5))
    out, pullback = adgen.vjp(adgen.hessian(f), x.copy())
    (ct,) = pullback(c)
    np.testing.assert_allclose(ct, np.einsum("ij,ijk->k", c, t), rtol=1e-6, atol=2e-6)
    np.testing.assert_allclose(pullback(c)[0], ct, atol=0)  # reusable
    out, pullback = adgen.vjp(adgen.hvp(f), x.copy(), v)
    cx, cv = pullback(w)
    np.testing.assert_allclose(cx, np.einsum("i,ijk,j->k", w, t, v), rtol=1e-6, atol=2e-6)
    np.testing.assert_allclose(cv, h.T @ w, atol=1e-10)


def test_the_hand_third_derivative_of_a_quartic():
    # f = sum(x^4) + (a . x)^3: T = diag3(24 x) + 6 a (x) a (x) a
    a = np.array([0.5, -1.0, 2.0])

    def f(x):
        return np.sum(x ** 4) + (a @ x) ** 3

    x = np.array([0.3, -0.2, 0.7])
    want = 6.0 * np.einsum("i,j,k->ijk", a, a, a)
    want[np.arange(3), np.arange(3), np.arange(3)] += 24.0 * x
    np.testing.assert_allclose(adgen.jacfwd(adgen.hessian(f))(x), want, atol=1e-10)
    np.testing.assert_allclose(adgen.jacrev(adgen.hessian(f))(x), want, atol=1e-10)


def s(x):
    return x ** 3 * math.sin(x) + math.exp(2.0 * x)


def s3(x):  # the hand third derivative
    return (-x ** 3 * math.cos(x) - 9 * x ** 2 * math.sin(x) + 18 * x * math.cos(x)
            + 6 * math.sin(x) + 8 * math.exp(2 * x))


def s4(x):  # and the fourth
    return (x ** 3 * math.sin(x) - 12 * x ** 2 * math.cos(x) - 36 * x * math.sin(x)
            + 24 * math.cos(x) + 16 * math.exp(2 * x))


@pytest.mark.parametrize("x", [0.7, -0.3, 1.9])
def test_grad_of_grad_of_grad_of_a_function_of_a_number(x):
    g3 = adgen.grad(adgen.grad(adgen.grad(s)))
    assert g3(x) == pytest.approx(s3(x), rel=1e-12)
    assert adgen.jacfwd(adgen.grad(adgen.grad(s)))(x) == pytest.approx(s3(x), rel=1e-12)
    assert adgen.jacrev(adgen.grad(adgen.grad(s)))(x) == pytest.approx(s3(x), rel=1e-12)
    assert adgen.grad(g3)(x) == pytest.approx(s4(x), rel=1e-10)
    _, dot = adgen.jvp(adgen.grad(adgen.grad(s)), (x,), (2.0,))
    assert dot == pytest.approx(2.0 * s3(x), rel=1e-12)


def test_hessian_of_a_gradient_of_a_number_and_what_explain_says():
    x = 0.7
    assert float(adgen.hessian(adgen.grad(s))(x)) == pytest.approx(s3(x), rel=1e-10)
    assert float(adgen.hvp(adgen.grad(s))(x, 2.0)) == pytest.approx(2 * s3(x), rel=1e-10)
    route = adgen.explain(adgen.grad(adgen.grad(s)), x, file=None).route
    assert route.startswith("third derivatives, as second derivatives of the generated")


def test_mixed_third_derivatives_of_numbers_with_argnums():
    def f(a, b):
        return a ** 3 * b ** 2 + math.sin(a * b)

    a, b = 0.4, -1.3
    # d/db d/da d/da f = 12 a b - d/db (b^2 sin(ab)) = 12 a b - 2 b sin(ab) - a b^2 cos(ab)
    got = adgen.grad(adgen.grad(adgen.grad(f, 0), 0), 1)(a, b)
    assert got == pytest.approx(12 * a * b - 2 * b * math.sin(a * b)
                                - a * b * b * math.cos(a * b), rel=1e-12)


def test_a_third_derivative_with_data_and_keyword_arguments():
    data = RNG.standard_normal((6, 3))

    def loss(w, x, scale=1.0):
        return scale * np.sum(np.log1p(np.exp(x @ w)))

    w = RNG.standard_normal(3)
    want = third_by_differences(lambda z: loss(z, data, scale=2.0), w)
    got = adgen.jacfwd(adgen.hessian(loss))(w, data, scale=2.0)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=2e-6)
    # argnums=(0, 1): one block per argument
    blocks = adgen.jacfwd(adgen.hessian(loss), argnums=(0,))(w, data, scale=2.0)
    assert isinstance(blocks, tuple) and np.allclose(blocks[0], got)


def test_an_argument_written_in_place_ends_as_one_call_leaves_it():
    def doubled(x):
        x *= 2.0
        return np.sum(x ** 4)

    y = np.array([0.5, -1.0, 2.0])
    for third in (adgen.jacfwd(adgen.hessian(doubled)), adgen.jacrev(adgen.hessian(doubled))):
        x = y.copy()
        got = third(x)
        want = np.zeros((3, 3, 3))
        want[np.arange(3), np.arange(3), np.arange(3)] = 16 * 24 * y  # (2x)^4 = 16 x^4
        np.testing.assert_allclose(got, want, atol=1e-9)
        np.testing.assert_allclose(x, 2 * y)  # written once, as doubled(x) writes it


def test_second_derivatives_of_a_vector_function():
    def vec(x):
        return np.array([np.sin(x[0]) * x[1], x[0] ** 2 * x[1] ** 3, np.exp(x[0] * x[1])])

    z = np.array([0.4, -0.8])
    jac = adgen.jacfwd(vec)
    want = np.stack([(jac(z + 1e-5 * e) - jac(z - 1e-5 * e)) / 2e-5 for e in np.eye(2)], -1)
    for second in (adgen.jacfwd(adgen.jacfwd(vec)), adgen.jacfwd(adgen.jacrev(vec)),
                   adgen.jacrev(adgen.jacfwd(vec))):
        np.testing.assert_allclose(second(z), want, atol=1e-8)


def test_fourth_derivatives_of_arrays_are_refused_by_name():
    with pytest.raises(adgen.UnsupportedError, match="up to third derivatives"):
        adgen.jacfwd(adgen.jacfwd(adgen.hessian(smooth)))(np.ones(3))
    with pytest.raises(adgen.NonDifferentiableError, match="returns an array"):
        adgen.grad(adgen.grad(adgen.grad(smooth)))(np.ones(3))


def test_third_derivatives_through_np_prod_and_cumprod():
    # forward mode over np.prod's adjoint (its source) took the counter a comprehension over
    # range(a.ndim) appends for a loop variable carrying a derivative (activity: lst.append(v)
    # changes lst, not v); refused before
    def f(x):
        return np.prod(x) ** 2 + np.sum(np.prod(x.reshape(2, 2), axis=0) ** 2) + \
            np.sum(np.cumprod(x) * x)

    x = np.array([0.5, -1.0, 2.0, 0.7])
    want = third_by_differences(f, x)
    np.testing.assert_allclose(adgen.jacfwd(adgen.hessian(f))(x), want, rtol=1e-6, atol=2e-6)
    # by hand: prod(x)^2 = p^2, T[i, j, k] = d3 p^2 for distinct i, j, k: 8 p^2 / (x_i x_j x_k)
    p2 = np.prod(x) ** 2
    got = adgen.jacfwd(adgen.hessian(lambda z: np.prod(z) ** 2))(x)
    assert got[0, 1, 2] == pytest.approx(8 * p2 / (x[0] * x[1] * x[2]), rel=1e-12)


def test_third_derivatives_through_the_median():
    # refused until the tangent's derivatives were read from their source (piecewise
    # polynomial between ties, as JAX's sort-based median): here m ** 3 has T = 6 at the
    # middle element, plus 6 on the diagonal of sum(x ** 3)
    def robust(x):
        m = np.median(x)
        return m ** 3 + np.sum(x ** 3)

    x = np.array([0.3, -0.7, 1.1])
    T = adgen.jacfwd(adgen.hessian(robust))(x)
    expected = np.zeros((3, 3, 3))
    for i in range(3):
        expected[i, i, i] = 6.0
    expected[0, 0, 0] += 6.0  # x[0] = 0.3 is the median
    np.testing.assert_allclose(T, expected, atol=1e-12)
    np.testing.assert_allclose(T, third_by_differences(robust, x), atol=1e-6)


def test_against_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    jax.config.update("jax_enable_x64", True)

    def fj(x):
        return jnp.sum(jnp.sin(x) * x ** 3) + (x @ x) ** 2

    x = RNG.standard_normal(4)
    want = np.asarray(jax.jacfwd(jax.hessian(fj))(x))
    np.testing.assert_allclose(adgen.jacfwd(adgen.hessian(smooth))(x), want, atol=1e-10)
    np.testing.assert_allclose(adgen.jacrev(adgen.hessian(smooth))(x), want, atol=1e-10)
