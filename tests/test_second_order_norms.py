"""Second derivatives through np.linalg.norm with an ord (hessian, hvp, jacfwd / jacrev of
grad): vector norms (ord 1, 2, inf, -inf, p, None, along an axis), matrix norms ('fro',
'nuc', 2, -2, 1, -1, inf, -inf), against central differences of the gradient and against
jax.hessian where jax is installed; and what happens where the norm is not twice
differentiable: a zero vector is refused (RuleError naming the line; the 0 the gradient takes
there is a subgradient, whose derivative would be a wrong Hessian), a zero component of the
1-norm and a tie of the inf-norm give the derivative of the branch the gradient took, as
JAX does."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import adgen

RNG = np.random.default_rng(7)
X = np.array([0.8, -1.3, 0.45, 2.1])          # no zero, no tie in |x|
A = np.array([[0.9, -0.4, 1.3],
              [0.2, 1.7, -0.6],
              [-1.1, 0.5, 0.35]])               # distinct singular values, sums, row sums


def _hessian_by_differences(f, x, eps=1e-5):
    g = adgen.grad(f)
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = eps
        e = e.reshape(x.shape)
        cols.append(((g(x + e) - g(x - e)) / (2 * eps)).ravel())
    return np.array(cols).T.reshape(x.shape + x.shape)


def _every_second_derivative(f, x, want, atol):
    np.testing.assert_allclose(adgen.hessian(f)(x.copy()), want, atol=atol)
    v = RNG.standard_normal(x.shape)
    np.testing.assert_allclose(adgen.hvp(f)(x.copy(), v),
                               np.tensordot(want, v, axes=v.ndim), atol=atol)
    np.testing.assert_allclose(adgen.jacfwd(adgen.grad(f))(x.copy()), want, atol=atol)
    np.testing.assert_allclose(adgen.jacrev(adgen.grad(f))(x.copy()), want, atol=atol)


VECTOR_ORDS = [1, 2, np.inf, -np.inf, 3, 1.5, -1, 0.5, None]


@pytest.mark.parametrize("ord", VECTOR_ORDS, ids=str)
def test_vector_norms_against_central_differences(ord):
    def f(x):
        n = np.linalg.norm(x, ord)
        return n ** 2 + np.sin(n) * np.sum(x ** 3)

    _every_second_derivative(f, X, _hessian_by_differences(f, X), atol=1e-6)


@pytest.mark.parametrize("ord", [1, 2, np.inf, 3])
@pytest.mark.parametrize("keepdims", [False, True])
def test_norms_along_an_axis(ord, keepdims):
    def f(x):
        m = x.reshape(2, 3)
        n = np.linalg.norm(m, ord, axis=1, keepdims=keepdims)
        return np.sum(n ** 3) * np.sum(np.cos(m)) + np.sum(np.reshape(n, (2, 1)) * m)

    x = np.array([0.8, -1.3, 0.45, 2.1, -0.7, 1.15])
    _every_second_derivative(f, x, _hessian_by_differences(f, x), atol=1e-6)


MATRIX_ORDS = ["fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf]


@pytest.mark.parametrize("ord", MATRIX_ORDS, ids=str)
def test_matrix_norms_against_central_differences(ord):
    def f(a):
        n = np.linalg.norm(a, ord)
        return n ** 2 + n * np.sum(a)

    _every_second_derivative(f, A, _hessian_by_differences(f, A), atol=1e-5)


class Regularised:
    """A user's class: a least-squares loss with a p-norm penalty, written as users do."""

    def __init__(self, data, target, p):
        self.data, self.target, self.p = data, target, p

    def loss(self, w):
        r = self.data @ w - self.target
        return 0.5 * r @ r + 0.1 * np.linalg.norm(w, ord=self.p) ** 2


def test_a_method_and_a_lambda():
    model = Regularised(RNG.standard_normal((5, 4)), RNG.standard_normal(5), 3)
    want = _hessian_by_differences(model.loss, X)
    np.testing.assert_allclose(adgen.hessian(model.loss)(X.copy()), want, atol=1e-6)
    f = lambda w: np.linalg.norm(w, np.inf) * np.linalg.norm(w, 1)  # noqa: E731
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), _hessian_by_differences(f, X),
                               atol=1e-6)


@pytest.mark.parametrize("ord", VECTOR_ORDS + ["fro", "nuc", "m2", "m1", "minf"], ids=str)
def test_against_jax(ord):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    jax.config.update("jax_enable_x64", True)
    matrix = {"m2": 2, "m1": 1, "minf": np.inf}
    x = A if ord in ("fro", "nuc") or ord in matrix else X
    ord = matrix.get(ord, ord)

    def f(z):
        return np.linalg.norm(z, ord) ** 2 * np.sum(z)

    def fj(z):
        return jnp.linalg.norm(z, ord) ** 2 * jnp.sum(z)

    np.testing.assert_allclose(adgen.hessian(f)(x.copy()), np.asarray(jax.hessian(fj)(x)),
                               atol=1e-10)


# --- where the norm is not twice differentiable -----------------------------------------------

@pytest.mark.parametrize("ord", [None, 2, 3, 1.5])
def test_a_zero_vector_is_refused_naming_the_line(ord):
    def f(x):
        n = np.linalg.norm(x, ord)  # the line the refusal names
        return n ** 2

    z = np.zeros(4)
    assert np.all(adgen.grad(f)(z) == 0.0)  # the first derivative: the subgradient 0
    # (jacrev(grad(f)): reverse over reverse, whose code is generated code compiled again)
    for second in (adgen.hessian(f), lambda x: adgen.hvp(f)(x, np.ones(4)),
                   adgen.jacrev(adgen.grad(f))):
        with pytest.raises(adgen.RuleError, match="second derivatives at a zero vector") as err:
            second(z.copy())
        assert "n = np.linalg.norm(x, ord)" in str(err.value)
        assert "<adgen" not in str(err.value)


def test_a_zero_matrix_is_refused():
    with pytest.raises(adgen.RuleError, match="zero vector"):
        adgen.hessian(lambda a: np.linalg.norm(a, "fro") ** 2)(np.zeros((2, 2)))


def test_forward_mode_at_a_zero_vector_takes_the_gradient_s_subgradient():
    # the 2-norm's tangent divided by the zero norm: NaN before, 0 now as grad gives
    z = np.zeros(3)
    _, dot = adgen.jvp(lambda x: np.linalg.norm(x), (z,), (np.ones(3),))
    assert dot == 0.0
    assert np.all(adgen.grad(lambda x: np.linalg.norm(x))(z) == 0.0)


def test_a_zero_component_of_the_one_norm_takes_sign_0_as_its_gradient_does():
    x = np.array([0.5, 0.0, -1.0, 2.0])
    s = np.sign(x)  # sign(0) = 0: the gradient's choice at the kink
    f = lambda z: np.linalg.norm(z, 1) ** 2  # noqa: E731
    np.testing.assert_array_equal(adgen.grad(f)(x.copy()), 2 * np.sum(np.abs(x)) * s)
    np.testing.assert_allclose(adgen.hessian(f)(x.copy()), 2 * np.outer(s, s), atol=1e-12)
    np.testing.assert_allclose(adgen.jacrev(adgen.grad(f))(x.copy()), 2 * np.outer(s, s),
                               atol=1e-12)


def test_a_tie_of_the_inf_norm_splits_as_its_gradient_does():
    x = np.array([2.0, -2.0, 1.0, 0.5])
    g = np.array([0.5, -0.5, 0.0, 0.0])  # the subgradient split evenly between the tied
    f = lambda z: np.linalg.norm(z, np.inf) ** 2  # noqa: E731
    np.testing.assert_allclose(adgen.grad(f)(x.copy()), 2 * 2.0 * g)
    np.testing.assert_allclose(adgen.hessian(f)(x.copy()), 2 * np.outer(g, g), atol=1e-12)


def test_a_zero_component_of_a_p_norm_below_2_has_an_infinite_second_derivative():
    # |x| ** (p - 1) with 1 < p < 2 has an infinite derivative at 0: NaN there, with
    # NumPy's warning, as in JAX; the other entries are right
    x = np.array([0.5, 0.0, -1.0, 2.0])
    f = lambda z: np.linalg.norm(z, 1.5) ** 2  # noqa: E731
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        h = adgen.hessian(f)(x.copy())
    assert np.isnan(h[1, 1]) and any(issubclass(w.category, RuntimeWarning) for w in seen)
    keep = [0, 2, 3]
    y = x[keep]
    np.testing.assert_allclose(h[np.ix_(keep, keep)],
                               _hessian_by_differences(
                                   lambda z: np.linalg.norm(z, 1.5) ** 2, y), atol=1e-6)
